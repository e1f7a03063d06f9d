#include "raft/state_retirer.h"

#include <utility>

#include "common/background_thread.h"

namespace tenure::raft {

StateRetirer::~StateRetirer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void StateRetirer::Retire(std::shared_ptr<state::Store> replaced) {
  if (replaced == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(replaced));
  }
  if (!worker_.joinable()) worker_ = std::thread([this] { Run(); });
  wake_.notify_one();
}

void StateRetirer::Run() {
  LowerThisThreadPriority();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to destroy
    std::shared_ptr<state::Store> next = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    next.reset();  // the expensive part, outside the lock
    lock.lock();
  }
}

}  // namespace tenure::raft
