// A running tenure server: the raft-backed Server, the Consul-compatible API
// and its HTTP listener on one io_context, from a checked AgentPlan
// (config.h). The command layer parses flags into an AgentConfig and calls
// RunAgent; everything from there to a serving process lives here.
#pragma once

#include "agent/config.h"
#include "common/status.h"

namespace tenure::agent {

// Starts raft (and -join's requests), then the HTTP listener, prints where it
// serves, and runs until SIGINT or SIGTERM, then stops cleanly. A dev plan
// without a data dir gets a temporary one, removed on exit. Returns the
// startup failure (naming what failed, the address or path and the cause),
// or Ok after a clean stop.
Status RunAgent(AgentPlan plan);

}  // namespace tenure::agent
