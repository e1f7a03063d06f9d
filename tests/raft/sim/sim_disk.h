// SimDisk: wraps one raft_fixture server's in-memory disk (the persisting
// methods of its raft_io), for two reasons.
//
// 1. Disk errors. raft_fixture_io_fault counts every I/O request, sends
//    included, and libraft 0.15 frees an AppendEntries batch twice when the
//    reply's send fails synchronously (recv_append_entries.c frees it before
//    sending, recv.c again on the error): that crashes the process rather
//    than testing anything of ours. A disk never fails a send, so the errors
//    here fail only appends, term/vote writes (not a candidate's: see
//    TickTermOrVote) and truncations. libraft's
//    reaction is its own: a failed leader append fails that raft_apply or
//    raft_barrier; any other failed write stops the instance
//    (RAFT_UNAVAILABLE) until the process restarts.
// 2. A log that survives restarts. The fixture stores appended entries in
//    completion order, truncates by array position assuming the log starts
//    at index 1 (it does not after an InstallSnapshot: the truncation then
//    reads past the array), and ignores writes still in flight when it
//    truncates. raft_uv does what raft expects: writes land in request
//    order, a truncation after the writes before it. This wrapper keeps that
//    log itself (index -> entry, applied in request order), leaves the
//    fixture's copy to the fixture (never truncating it past its start), and
//    hands its log to the fixture just before a restart loads it.
//
// Simulation thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "raft/raft_c.h"

extern "C" {
#include <raft/fixture.h>
}

namespace tenure::sim {

enum DiskOp : unsigned {
  kDiskAppend = 1u << 0,
  kDiskTermAndVote = 1u << 1,
  kDiskTruncate = 1u << 2,
  kDiskAll = kDiskAppend | kDiskTermAndVote | kDiskTruncate,
};

class SimDisk {
 public:
  // Wraps the io methods of the fixture's server `i`, whose log is the
  // bootstrap configuration at index 1 (or empty, before raft_fixture_bootstrap).
  SimDisk(struct raft_fixture* fixture, unsigned i);
  ~SimDisk();
  SimDisk(const SimDisk&) = delete;
  SimDisk& operator=(const SimDisk&) = delete;

  // The next `after` writes of the kinds in `ops` succeed, then `times`
  // fail (times < 0: all of them, until Clear).
  void Fail(unsigned ops, int after, int times);
  void Clear() { times_ = 0; }
  std::uint64_t failures() const { return failures_; }
  // A disk that stalls: appends are accepted but not written (their
  // callbacks do not run) until ReleaseAppends, which submits them in
  // request order. Term, vote and truncation writes are not held.
  void HoldAppends() { holding_ = true; }
  void ReleaseAppends();
  std::size_t held_appends() const { return held_.size(); }

  // Whether the log's entries reach back to a snapshot at `snapshot_index`
  // (to index 1 without one).
  bool ReachesBackTo(raft_index snapshot_index) const;
  // Replaces the fixture's stored entries with this log's entries after
  // `snapshot_index`, which is where the fixture's load says they start.
  // REQUIRES: ReachesBackTo(snapshot_index); nothing in flight or held.
  void HandLogToFixture(raft_index snapshot_index);
  raft_index last_index() const { return first_index_ + entries_.size() - 1; }

 private:
  struct Entry {
    raft_term term = 0;
    unsigned short type = 0;
    std::string bytes;
  };
  struct HeldAppend {
    struct raft_io_append* req;
    const struct raft_entry* entries;  // libraft keeps them until the callback
    unsigned n;
    raft_io_append_cb cb;
  };

  static SimDisk* Of(struct raft_io* io);
  bool Tick(unsigned op);
  bool TickTermOrVote(struct raft_io* io);
  void DropFrom(raft_index index);
  static int Bootstrap(struct raft_io* io, const struct raft_configuration* conf);
  static int Append(struct raft_io* io, struct raft_io_append* req,
                    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb);
  static int SetTerm(struct raft_io* io, raft_term term);
  static int SetVote(struct raft_io* io, raft_id server_id);
  static int Truncate(struct raft_io* io, raft_index index);
  static int SnapshotPut(struct raft_io* io, unsigned trailing, struct raft_io_snapshot_put* req,
                         const struct raft_snapshot* snapshot, raft_io_snapshot_put_cb cb);

  struct raft_fixture* fixture_;
  unsigned server_;
  struct raft_io* io_;
  decltype(raft_io::bootstrap) bootstrap_;
  decltype(raft_io::append) append_;
  decltype(raft_io::set_term) set_term_;
  decltype(raft_io::set_vote) set_vote_;
  decltype(raft_io::truncate) truncate_;
  decltype(raft_io::snapshot_put) snapshot_put_;
  unsigned ops_ = 0;
  int after_ = 0;
  int times_ = 0;
  std::uint64_t failures_ = 0;
  bool holding_ = false;
  std::deque<HeldAppend> held_;
  // The persisted log, in request order: entries_[k] has index first_index_ + k.
  raft_index first_index_ = 1;
  std::deque<Entry> entries_;
};

}  // namespace tenure::sim
