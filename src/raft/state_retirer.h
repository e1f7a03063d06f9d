// StateRetirer: destroys replaced states on a thread of its own. Freeing a
// million keys takes about 150 ms on the 2-core machine, and a snapshot
// restore or install replaces the whole state on the loop thread (decision
// 0049). Retire() is the loop thread's; the worker runs below it (nice
// +10) and is started at the first state retired. The destructor waits
// until every state handed over is destroyed.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "state/store.h"

namespace tenure::raft {

class StateRetirer {
 public:
  StateRetirer() = default;
  ~StateRetirer();
  StateRetirer(const StateRetirer&) = delete;
  StateRetirer& operator=(const StateRetirer&) = delete;

  void Retire(std::shared_ptr<state::Store> replaced);

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<state::Store>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tenure::raft
