// ChildExitWatch: reports on the loop, once, the exit code of a ChildGroup's
// command (its status descriptor turns readable when the command ends or the
// keeper dies). Shared by tenure run, tenure lock and AsyncChild's hooks.
// LOOP THREAD ONLY. The descriptor stays the ChildGroup's: stopping or
// destroying the watch never closes it.
#pragma once

#include <functional>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace tenure::cli {

class ChildGroup;

class ChildExitWatch {
 public:
  explicit ChildExitWatch(boost::asio::io_context& io);
  ~ChildExitWatch();
  ChildExitWatch(const ChildExitWatch&) = delete;
  ChildExitWatch& operator=(const ChildExitWatch&) = delete;

  // Calls `done` with the command's exit code once Reap() succeeds (a
  // wake-up before that is spurious and waits again). `group` must outlive
  // the watch or Stop(). REQUIRES: not watching.
  void Start(ChildGroup* group, std::function<void(int code)> done);
  // No callback after this; the descriptor is left open.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenure::cli
