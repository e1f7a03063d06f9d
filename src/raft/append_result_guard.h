// AppendResultGuard: a follower reports to a leader only what it knows
// matches the leader's log. Works around a libraft 0.15 safety bug at the
// raft_io boundary, for raft_uv (Node) and raft_fixture (the simulation).
//
// The bug. A follower answers an AppendEntries that needs no write (a
// heartbeat, or entries it already holds) at once, with
// last_log_index = r->last_stored, the end of its whole stored log
// (recv_append_entries.c:128). The leader takes that as the follower's match
// index, capped only by its own last index (replication.c:701-714). Raft's
// match index is prevLogIndex + len(entries): what comes after may be entries
// of an older term that the leader's log has other entries at. A new leader
// whose first heartbeat reaches such a follower then counts it towards a
// quorum for entries it does not hold, commits them, and two replicas apply
// different commands at one index (docs/simulation.md, "A stale follower's
// entries counted as matched"). Still in canonical/raft 0.18.1.
//
// The workaround. It wraps the io's start (to see each message libraft is
// handed) and send: a successful AppendEntries result sent while libraft
// handles an AppendEntries reports at most that request's prevLogIndex +
// n_entries. Lowering a match index is always safe (the leader sends from
// there again; the follower truncates what conflicts). Results sent later,
// when a follower's write completes, are left alone: libraft truncated any
// conflicting suffix before appending, so nothing stale follows them.
//
// Install before raft_start (which calls io->start); the guard must outlive
// the io's use and restores the io's methods when destroyed. Loop thread of
// its io only; guards of different ios may live on different threads. The
// callbacks are noexcept (nothing unwinds through libraft's C frames), and so
// must on_lowered be.
#pragma once

#include <cstdint>
#include <functional>

#include "raft/raft_c.h"

namespace tenure::raft {

class AppendResultGuard {
 public:
  // What a lowered report said and says now, and to whom it went.
  struct Lowered {
    raft_id leader = 0;
    raft_index stored = 0;    // libraft's last_log_index: its last stored index
    raft_index reported = 0;  // prevLogIndex + n_entries of the request answered
  };
  using OnLowered = std::function<void(const Lowered&)>;

  AppendResultGuard() = default;
  ~AppendResultGuard();
  AppendResultGuard(const AppendResultGuard&) = delete;
  AppendResultGuard& operator=(const AppendResultGuard&) = delete;

  // Wraps io's start and send. REQUIRES: not installed; no other guard on io.
  void Install(struct raft_io* io, OnLowered on_lowered = nullptr);
  std::uint64_t lowered() const { return lowered_; }

 private:
  static AppendResultGuard* Of(struct raft_io* io);
  static int Start(struct raft_io* io, unsigned msecs, raft_io_tick_cb tick_cb,
                   raft_io_recv_cb recv_cb) noexcept;
  static void Recv(struct raft_io* io, struct raft_message* message) noexcept;
  static int Send(struct raft_io* io, struct raft_io_send* req, const struct raft_message* message,
                  raft_io_send_cb cb) noexcept;

  struct raft_io* io_ = nullptr;
  decltype(raft_io::start) start_ = nullptr;
  decltype(raft_io::send) send_ = nullptr;
  raft_io_recv_cb recv_cb_ = nullptr;  // libraft's, given to start
  OnLowered on_lowered_;
  // While libraft handles an AppendEntries: its prevLogIndex + n_entries.
  bool handling_append_ = false;
  raft_index match_max_ = 0;
  std::uint64_t lowered_ = 0;
};

}  // namespace tenure::raft
