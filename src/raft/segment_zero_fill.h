// Log segments written with zeros when they are made (decision 0059).
//
// libraft 0.15 makes each log segment ahead of use with posix_fallocate:
// on ext4 that reserves blocks as "unwritten" extents. Every later write
// into such a block must also turn the extent written, a metadata change
// that an O_DSYNC write waits for in the journal, and that a write with
// RWF_NOWAIT refuses (EAGAIN): libraft then retries the write on libuv's
// pool, a round trip through the loop and a thread. Measured here: two log
// writes in three took that path under load, and an 8 KiB O_DSYNC write
// into unwritten blocks took 390 us against 280 us into written ones.
//
// This module defines the C library's `posix_fallocate` (libraft.so imports
// it from glibc, so the executable's definition comes first, as for
// `syscall` in io_destroy_offload.h). Once enabled, a call that allocated
// goes on to write zeros over the whole blocks of the range past the file's
// old end (what was there stays, as posix_fallocate keeps it), through a
// second, O_DIRECT descriptor of the file (a cached page would make the
// later RWF_NOWAIT writes answer EAGAIN all the same, and libraft opens the
// segment without O_DIRECT when it makes it), then fdatasyncs once. The
// file reads the same (zeros) and takes the same space, and libraft's
// writes into it overwrite. Best effort: where that fails (no O_DIRECT,
// an O_APPEND or read-only descriptor) the range stays as allocated, and
// the call answers what the C library's did. It runs where libraft
// allocates, on libuv's pool, a segment (8 MiB) at a time, ahead of need.
//
// Its reach: every posix_fallocate of the process, once enabled. Only
// `tenure server` (Node, before raft_uv_init) enables it; tenure's own code
// calls posix_fallocate nowhere else. The definition is linked into the
// binaries that link Node, as io_destroy_offload.h describes.
#pragma once

namespace tenure::raft {

// From now on, posix_fallocate also writes the allocated range with zeros.
// `on` false turns it off again (for tests). Thread-safe.
void EnableSegmentZeroFill(bool on = true);

}  // namespace tenure::raft
