// AsyncChild: runs a hook or a health check (/bin/sh -c CMD) under a
// ChildGroup (own process group, killed if we die) and reports its exit code
// on the io_context, with an optional time limit after which the group is
// SIGKILLed (code 137). LOOP THREAD ONLY. Destroying it kills the group.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/types.h"

namespace boost::asio {
class io_context;
}

namespace tenure::cli {

class AsyncChild {
 public:
  explicit AsyncChild(boost::asio::io_context& io);
  ~AsyncChild();
  AsyncChild(const AsyncChild&) = delete;
  AsyncChild& operator=(const AsyncChild&) = delete;

  // Starts `command` with /bin/sh -c and `env` ("K=V") added. `done` gets the
  // shell-convention exit code once it ends (137 when killed at the limit;
  // limit_ms 0 = none). Errors (fork failed) are returned, `done` not called.
  // REQUIRES: not running.
  Status Start(const std::string& command, const std::vector<std::string>& env, DurationMs limit_ms,
               std::function<void(int code)> done);
  bool running() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenure::cli
