// AnswerBuilder: builds large answer bodies (JSON of up to 64 MiB) on
// threads of their own, so that the loop thread, which also carries raft's
// heartbeats, spends on a large read only the copy of what it reads
// (decision 0046). A handler that finds its answer large copies the entries
// out of the Store (a consistent view: the copy is made in one loop turn)
// and sets HttpResponse::build_body; Call::Reply hands that here and sends
// the answer once built. Builders run at a lower CPU priority than the loop.
//
// Loop thread only, apart from the jobs; `done` runs on the loop. The
// destructor waits for the jobs running and drops those queued.
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tenure::http {

class AnswerBuilder {
 public:
  // One builder thread per core but the loop's, at least one.
  static constexpr std::size_t kThreadsMax = 2;
  // Answers whose JSON is larger than this are built here; smaller ones on
  // the loop, where they cost less than a hand-off.
  static constexpr std::size_t kOffLoopBytes = 256 * 1024;

  // What a large answer refused for want of room gets (429), as the unsent
  // output budget words it: the same contract for clients.
  static constexpr std::string_view kBusyText =
      "Too many large responses are waiting for slow clients; retry later";

  explicit AnswerBuilder(boost::asio::io_context& io);
  ~AnswerBuilder();
  AnswerBuilder(const AnswerBuilder&) = delete;
  AnswerBuilder& operator=(const AnswerBuilder&) = delete;

  // Answers being copied and built count against the unsent-output budget's
  // size (limits::kHttpUnsentBytesMax, or its test override): true, and
  // `bytes` reserved until the answer is built, if they fit or nothing else
  // is being built. False: answer 429 (kBusyText) instead.
  bool Admit(std::size_t bytes);
  // Gives back what Admit reserved, for an answer that will not be built.
  void Release(std::size_t bytes);
  // Calls `step` once per loop turn (each time after what else is ready)
  // until it returns true, then `then`: a copy out of the Store cut into
  // slices (http/prefix_copy.h, decision 0051). Nothing more is called once
  // the builder is gone.
  void Gather(std::function<bool()> step, std::function<void()> then);
  // REQUIRES: `bytes` admitted.
  void Build(std::function<std::string()> build, std::function<void(std::string)> done,
             std::size_t bytes);

 private:
  struct Job {
    std::function<std::string()> build;
    std::function<void(std::string)> done;
  };
  void Work();

  boost::asio::io_context& io_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  std::size_t bytes_in_flight_ = 0;  // loop thread only
  std::size_t bytes_max_;
  std::shared_ptr<AnswerBuilder*> alive_ = std::make_shared<AnswerBuilder*>(this);
};

}  // namespace tenure::http
