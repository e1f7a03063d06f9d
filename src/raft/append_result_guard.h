// AppendResultGuard: a follower tells a leader it holds entries only up to
// where its log is known to match that leader's. Works around a libraft 0.15
// safety bug at the raft_io boundary, for raft_uv (Node) and raft_fixture
// (the simulation).
//
// The bug. A successful AppendEntries result carries the follower's last
// stored index, r->last_stored, and the leader takes it as the follower's
// match index, capped only by its own last index (replication.c:701-714).
// Raft's match index is prevLogIndex + len(entries) of the request answered:
// what the follower stores after that may be entries of an older term that
// the leader's log has other entries at. libraft sends last_stored
//  - when it answers an AppendEntries that needs no write (a heartbeat, or
//    entries it already holds) at once (recv_append_entries.c:128): a new
//    leader's first heartbeat reaching a follower with an old leader's
//    uncommitted entries;
//  - when a write completes (replication.c:908), to the leader it knows now,
//    in its current term: an old leader's entries whose write completes
//    after the follower heard from a new leader.
// The leader then counts the follower towards a quorum for entries it does
// not hold, commits them, and two replicas apply different commands at one
// index (docs/simulation.md, "A stale follower's entries counted as
// matched"). Still in canonical/raft 0.18.1.
//
// The workaround. It wraps the io's start (to see each message libraft is
// handed), append and send. An AppendEntries of term T that libraft accepts
// (answers with success, or writes entries for) shows that this log matches
// the leader of T through prevLogIndex + n_entries, for the rest of T: that
// leader only appends, and this follower only truncates what conflicts with
// it. Every successful AppendEntries result of term T then reports at most
// the highest such index, or the commit index (entries every later leader
// holds) if that is more. Lowering a match index is always safe: the leader
// sends from there again and the follower truncates what conflicts. Results
// of an InstallSnapshot report the snapshot's index, which is right, and
// pass unchanged; but one answered at once because this log already held
// the snapshot's entries reports the commit index if that is more, or a
// leader that counted this follower that far would wait for the install for
// ever (SendSnapshotNoop).
//
// Install before raft_start (which calls io->start, and starts the guard
// afresh: a restarted instance has proven nothing yet). The guard restores
// the io's methods when destroyed. Loop thread of its io only; guards of
// different ios may live on different threads. The callbacks are noexcept
// (nothing unwinds through libraft's C frames), and so must on_lowered be.
#pragma once

#include <cstdint>
#include <functional>

#include "raft/raft_c.h"

namespace tenure::raft {

class AppendResultGuard {
 public:
  // What a lowered result said and says now, and to whom it went.
  struct Lowered {
    raft_id leader = 0;
    raft_term term = 0;
    raft_index stored = 0;    // libraft's last_log_index: its last stored index
    raft_index reported = 0;  // what is known to match the leader of `term`
  };
  using OnLowered = std::function<void(const Lowered&)>;

  AppendResultGuard() = default;
  ~AppendResultGuard();
  AppendResultGuard(const AppendResultGuard&) = delete;
  AppendResultGuard& operator=(const AppendResultGuard&) = delete;

  // Wraps io's start, append and send. REQUIRES: not installed; no other
  // guard on io.
  void Install(struct raft_io* io, OnLowered on_lowered = nullptr);
  std::uint64_t lowered() const { return lowered_; }
  // Answers to an InstallSnapshot this log already held, raised to the
  // commit index (append_result_guard.cc, SendSnapshotNoop).
  std::uint64_t raised() const { return raised_; }

 private:
  enum class Handling { kNothing, kAppendEntries, kInstallSnapshot };

  static AppendResultGuard* Of(struct raft_io* io);
  static int Start(struct raft_io* io, unsigned msecs, raft_io_tick_cb tick_cb,
                   raft_io_recv_cb recv_cb) noexcept;
  static void Recv(struct raft_io* io, struct raft_message* message) noexcept;
  static int Append(struct raft_io* io, struct raft_io_append* req,
                    const struct raft_entry entries[], unsigned n, raft_io_append_cb cb) noexcept;
  static int Send(struct raft_io* io, struct raft_io_send* req, const struct raft_message* message,
                  raft_io_send_cb cb) noexcept;
  // The AppendEntries being handled was accepted.
  void Matched();
  int SendSnapshotNoop(struct raft_io* io, struct raft_io_send* req,
                       const struct raft_message* message, raft_io_send_cb cb) noexcept;

  struct raft_io* io_ = nullptr;
  decltype(raft_io::start) start_ = nullptr;
  decltype(raft_io::append) append_ = nullptr;
  decltype(raft_io::send) send_ = nullptr;
  raft_io_recv_cb recv_cb_ = nullptr;  // libraft's, given to start
  OnLowered on_lowered_;
  // The message libraft is handling, and for an AppendEntries its term and
  // prevLogIndex + n_entries.
  Handling handling_ = Handling::kNothing;
  raft_term handling_term_ = 0;
  raft_index handling_end_ = 0;
  // This log matches the leader of matched_term_ through matched_index_.
  raft_term matched_term_ = 0;
  raft_index matched_index_ = 0;
  std::uint64_t lowered_ = 0;
  std::uint64_t raised_ = 0;
};

}  // namespace tenure::raft
