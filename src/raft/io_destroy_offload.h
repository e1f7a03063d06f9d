// Kernel AIO contexts destroyed off the loop thread (decision 0036).
//
// libraft 0.15 gives every open log segment its own AIO context and calls
// io_destroy(2) on the loop thread when the segment closes: at every
// snapshot, and whenever a segment fills. The kernel's io_destroy waits for
// RCU grace periods before it returns, 28-40 ms measured here, and the loop
// thread serves nothing meanwhile: that was the put p99 at 256 clients.
//
// This module defines the C library's `syscall`, so that libraft's calls
// (libraft.so imports syscall from glibc) resolve here first. Once the
// reaper is started, io_destroy is queued to one background thread that
// makes the real call, and returns 0 at once; every other number goes
// straight on to the C library's syscall. libraft never reuses a context it
// destroyed, and a segment's context has no write in flight when it is
// closed, so the later destroy changes nothing libraft can see.
//
// Its reach: the definition replaces glibc's `syscall` for the whole
// process (our code and every shared library that calls it, libuv as well
// as libraft), in every binary this object is linked into. The linker takes
// it from the tenure_raft archive into any binary that uses raft::Node
// (which starts the reaper) or the metrics handler (which reads
// IoDestroysReaped): the `tenure` binary, for every subcommand, and the test
// binaries whose code reaches either (unit_tests, raft_tests, api_tests and
// algos_tests as of this writing; `nm BINARY | grep ' T syscall'` tells).
// libtenure.so, the simulation, the fuzz targets and the benchmarks' load
// generators do not contain it. The reaper starts only with a Node (`tenure
// server`, tests that start one) or a test's own StartIoDestroyReaper call;
// until then every call, io_destroy included, goes straight on to the C
// library. A forked child has no reaper (fork copies only the calling
// thread): it makes its io_destroy calls itself.
#pragma once

#include <cstddef>

namespace tenure::raft {

// Starts the reaper thread (idempotent, thread-safe). Before it runs,
// io_destroy is made in the caller's thread, as the C library would.
void StartIoDestroyReaper();

// The C library's syscall, bypassing this module (for tests).
long RealSyscall(long number, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0,
                 long a6 = 0);

// How many io_destroy calls the reaper has made (for tests).
std::size_t IoDestroysReaped();

}  // namespace tenure::raft
