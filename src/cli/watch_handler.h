// Running `tenure watch` handlers: a child process per change, with the
// entry on stdin and CONSUL_INDEX in its environment, and the stop signals
// (SIGINT, SIGTERM) that end the watch. Process-wide state: one watch per
// process, used from the main thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tenure::cli {

// From now on SIGINT/SIGTERM stop the watch: with no handler running the
// process exits 0 at once; with one, the signal is forwarded to the
// handler's process group, StopRequested() turns true, and a handler still
// alive 5 s later is killed.
void InstallStopSignalHandlers();
bool StopRequested();

// Runs the handler to completion: `command` through /bin/sh -c (its words
// joined by spaces, Consul's -shell default) or, with shell false, executed
// directly. Returns "" on exit status 0, else what went wrong ("exit
// status 3", "signal: Killed", "Error starting handler: ...").
std::string RunHandler(const std::vector<std::string>& command, bool shell, std::uint64_t index,
                       const std::string& input);

}  // namespace tenure::cli
