// OffLoopWork: runs one job at a time on a thread of its own and hands its
// result to the loop thread (posted to the io_context), for work that would
// hold the loop longer than a loop turn may last: checking and decoding a
// snapshot file for PUT /v1/snapshot, about 2 s for a million keys here
// (decision 0046). The job must not touch the loop's state; the `done`
// handler runs on the loop and may. Loop thread only, apart from the job.
// The destructor waits for a running job; a result that arrives after it is
// dropped.
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <memory>
#include <thread>

#include "common/assert.h"
#include "common/background_thread.h"

namespace tenure::http {

template <typename T>
class OffLoopWork {
 public:
  explicit OffLoopWork(boost::asio::io_context& io) : io_(io) {}
  ~OffLoopWork() {
    alive_.reset();
    if (thread_.joinable()) thread_.join();
  }
  OffLoopWork(const OffLoopWork&) = delete;
  OffLoopWork& operator=(const OffLoopWork&) = delete;

  // A job runs, or its result waits for the loop.
  bool busy() const { return busy_; }

  // REQUIRES: !busy().
  void Run(std::function<T()> work, std::function<void(T)> done) {
    TENURE_ASSERT(!busy_);
    if (thread_.joinable()) thread_.join();  // the last job's, finished
    busy_ = true;
    thread_ = std::thread([this, weak = std::weak_ptr<OffLoopWork*>(alive_), work = std::move(work),
                           done = std::move(done)]() mutable {
      auto result = std::make_shared<T>(work());
      boost::asio::post(io_, [weak, result, done = std::move(done)] {
        std::shared_ptr<OffLoopWork*> self = weak.lock();
        if (self == nullptr) return;
        (*self)->busy_ = false;
        done(std::move(*result));
      });
    });
  }

 private:
  boost::asio::io_context& io_;
  std::thread thread_;
  bool busy_ = false;
  std::shared_ptr<OffLoopWork*> alive_ = std::make_shared<OffLoopWork*>(this);
};

}  // namespace tenure::http
