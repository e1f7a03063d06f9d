// The one place that includes libraft's C headers from C++.
//
// raft.h (0.15) has no extern "C" guard, so without this wrapper every raft_*
// symbol is looked up with C++ mangling and the link fails. libuv's header
// has its own guard and is included first so that the nested include inside
// the extern "C" block is a no-op. Remember that in C++ the functions
// raft_apply/raft_barrier/raft_transfer hide the structs of the same name:
// write `struct raft_apply` etc.
#pragma once

#include <uv.h>

extern "C" {
#include <raft.h>
#include <raft/uv.h>
}
