#include "http/answer_builder.h"

#include <boost/asio/post.hpp>

#include "common/background_thread.h"
#include "listen/server.h"

namespace tenure::http {

AnswerBuilder::AnswerBuilder(boost::asio::io_context& io) : io_(io) {
  listen::HttpServerOptions budget;  // limits::kHttpUnsentBytesMax unless a test lowers it
  (void)listen::TEST_ApplyEnvironment(&budget);
  bytes_max_ = budget.TEST_unsent_bytes_max;
}

bool AnswerBuilder::Admit(std::size_t bytes) {
  if (bytes_in_flight_ > 0 && bytes_in_flight_ + bytes > bytes_max_) return false;
  bytes_in_flight_ += bytes;
  return true;
}

void AnswerBuilder::Release(std::size_t bytes) { bytes_in_flight_ -= bytes; }

void AnswerBuilder::Gather(std::function<bool()> step, std::function<void()> then) {
  boost::asio::post(io_, [weak = std::weak_ptr<AnswerBuilder*>(alive_), step = std::move(step),
                          then = std::move(then)]() mutable {
    std::shared_ptr<AnswerBuilder*> self = weak.lock();
    if (self == nullptr) return;
    if (!step()) {
      (*self)->Gather(std::move(step), std::move(then));
      return;
    }
    then();
  });
}

AnswerBuilder::~AnswerBuilder() {
  alive_.reset();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void AnswerBuilder::Build(std::function<std::string()> build, std::function<void(std::string)> done,
                          std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(build), [this, bytes, done = std::move(done)](std::string body) {
                        bytes_in_flight_ -= bytes;  // on the loop, as Admit
                        done(std::move(body));
                      }});
  }
  if (threads_.size() < kThreadsMax) {
    threads_.emplace_back([this] { Work(); });
  }
  wake_.notify_one();
}

void AnswerBuilder::Work() {
  LowerThisThreadPriority();
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    auto body = std::make_shared<std::string>(job.build());
    boost::asio::post(
        io_, [weak = std::weak_ptr<AnswerBuilder*>(alive_), body, done = std::move(job.done)] {
          if (weak.expired()) return;
          done(std::move(*body));
        });
  }
}

}  // namespace tenure::http
