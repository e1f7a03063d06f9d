// Threads that do the loop thread's heavy lifting (decoding a restored
// state, building a large answer) run below it: on a machine with few cores
// the loop, which carries raft's heartbeats, keeps its turn (decision 0046).
#pragma once

namespace tenure {

// Lowers the calling thread's scheduling priority (nice +10). Call first
// thing in a background thread. Best effort: a refusal changes nothing else.
void LowerThisThreadPriority();

}  // namespace tenure
