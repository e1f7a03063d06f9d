// Node::Impl, private to src/raft: the state behind Node (node.h).
//
// Split over node.cc (lifecycle: Start, Stop, the close path and the
// accessors), node_requests.cc (proposals, barriers, leadership and
// last-contact polling, the liveness check, the log's memory) and
// node_join.cc (who may connect, joins). Loop thread only.
//
// Lifecycle: kIdle -Start-> kRunning -Stop-> kStopping -loop drained-> kStopped
// (a failed Start goes straight to kStopped after cleaning up). kStopping
// refuses new requests, waits until the log is on disk, then raft_closes.
//
// Callbacks to the user (ProposeDone, barrier done, on_applied,
// on_leadership) never run on a libraft stack: libraft callbacks queue them
// in ready_ and AfterTurn() runs them once uv_run has returned. That keeps
// user code from re-entering raft (raft_close from a raft callback aborts the
// process, docs/architecture.md libraft pitfall 2) and gives batching for free.
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "raft/append_result_guard.h"
#include "raft/disk/dir_lock.h"
#include "raft/disk_failure.h"
#include "raft/fsm.h"
#include "raft/log_memory.h"
#include "raft/node.h"
#include "raft/raft_c.h"
#include "raft/restore_decoder.h"
#include "raft/state_retirer.h"
#include "raft/transport.h"
#include "raft/uv_driver.h"

namespace tenure::raft {

// Connect retry delay of libraft's sender. libraft's default (1000 ms)
// dominated catch-up of a restarted node in early measurements; loopback reconnects
// are cheap.
inline constexpr unsigned kConnectRetryDelayMs = 150;
// How long Stop waits for the local log writes in flight to reach disk
// before it calls raft_close anyway (see MaybeBeginClose in node.cc).
inline constexpr std::uint64_t kCloseDrainMaxMs = 3000;

struct Node::Impl {
  enum class Phase { kIdle, kRunning, kStopping, kStopped };

  // A raft_apply in flight. Heap-allocated: libraft keeps &req until its
  // callback, which deletes it. raft_close fails every outstanding request
  // synchronously, so none outlives the Impl.
  struct Proposal {
    struct raft_apply req {};
    Impl* impl = nullptr;
    ProposeDone done;
    std::uint64_t bytes = 0;  // counted in proposal_bytes_in_flight_
  };
  // A raft_barrier in flight; leadership_term != 0 marks the barrier a new
  // leader issues before reporting leadership.
  struct BarrierRequest {
    struct raft_barrier req {};
    Impl* impl = nullptr;
    std::function<void(Status)> done;
    std::uint64_t leadership_term = 0;
  };

  // A raft_transfer in flight (at most one: libraft refuses a second).
  struct TransferRequest {
    struct raft_transfer req {};
    Impl* impl = nullptr;
    std::uint64_t target = 0;
    std::function<void(Status)> done;
  };

  // A membership change in flight (raft_add, then raft_assign for a voter;
  // or raft_remove). libraft allows one at a time.
  struct ChangeRequest {
    struct raft_change req {};
    Impl* impl = nullptr;
    std::uint64_t id = 0;
    bool then_promote = false;
    std::function<void(Status)> done;
  };

  Impl(boost::asio::io_context& io, state::Store& store, NodeOptions options);
  ~Impl();

  // --- node.cc: lifecycle ---------------------------------------------------
  Status Start();
  void Stop(std::function<void()> done);
  Status OpenIo();               // loop, transport, raft_uv, raft_init
  Status FailStart(Status why);  // undoes a partial Start synchronously
  void MaybeBeginClose();        // a fresh asio turn: raft_close once drained
  bool LogPersisted() const;     // no local log write in flight
  void FinishClose();            // the uv loop drained: free libuv/raft
  void FreeIo();                 // raft_uv_close, raft_uv_tcp_close, uv_loop_close
  void CloseSynchronously();     // destructor fallback when Stop never ran
  Status LockDataDir();
  void UnlockDataDir();
  static void WrappedIoClose(struct raft_io* io, raft_io_close_cb cb);
  // The io.append wrapper times each log write (append and sync) for
  // tenure_raft_log_append_duration_seconds.
  static int WrappedIoAppend(struct raft_io* io, struct raft_io_append* req,
                             const struct raft_entry entries[], unsigned n,
                             raft_io_append_cb cb) noexcept;
  static void IoAppended(struct raft_io_append* req, int status) noexcept;

  // --- node_restore.cc: restores decoded off the loop (decision 0046) ------
  // A log write that carries a restore entry is reported written to libraft
  // only once the entry's state is decoded, and every later write waits
  // behind it (libraft expects its writes completed in order). So the entry
  // commits only once a majority holds it decoded, and applying it swaps a
  // built state in: the loop thread never spends the decode.
  std::vector<RestoreDecoder::JobPtr> StartRestoreDecodes(const struct raft_entry entries[],
                                                          unsigned n);
  // A large restore (decision 0050) arrives in chunks: each write's chunks
  // are gathered, and the write of its RestoreStaged starts the decode of
  // the whole (that write is held as a RestoreState's is). The job, or null.
  RestoreDecoder::JobPtr GatherStagedRestore(std::string_view payload);
  void CompleteAppend(struct raft_io_append* req, int status, raft_io_append_cb cb,
                      std::vector<RestoreDecoder::JobPtr> jobs);
  // Reports held writes whose decodes finished, in order; all of them
  // (decoded or not) when `all`, as before closing. The same for a held
  // snapshot install (below).
  void ReleaseHeldAppends(bool all);
  // A snapshot the leader sent (snapshot_put with no trailing entries, an
  // install) is decoded while libraft writes its file, and the write is
  // reported done only once the decode finished, so that libraft's restore
  // swaps in a built state (decision 0049).
  static int WrappedIoSnapshotPut(struct raft_io* io, unsigned trailing,
                                  struct raft_io_snapshot_put* req,
                                  const struct raft_snapshot* snapshot,
                                  raft_io_snapshot_put_cb cb) noexcept;
  static void IoSnapshotPut(struct raft_io_snapshot_put* req, int status) noexcept;
  // A snapshot this server took: its write's outcome goes to the metrics.
  static void IoSnapshotTaken(struct raft_io_snapshot_put* req, int status) noexcept;
  // Passes a put on to raft_uv with `wrapper` as its callback, recording
  // this node as the request's owner for the wrapper to find.
  int PutWrapped(struct raft_io* io, unsigned trailing, struct raft_io_snapshot_put* req,
                 const struct raft_snapshot* snapshot, raft_io_snapshot_put_cb wrapper);
  // Reports a held install whose decode finished (any, when `all`); true
  // when it did. ReleaseHeldAppends lets libraft's reaction out.
  bool ReleaseHeldSnapshotPut(bool all);
  // The io.send wrapper drops a message to no server (id 0): libraft 0.15
  // sends a follower's late AppendEntries result to the leader it knows
  // then, which may be none, and raft_uv would crash on the address.
  static int WrappedIoSend(struct raft_io* io, struct raft_io_send* req,
                           const struct raft_message* message, raft_io_send_cb cb) noexcept;
  static void IoClosedOnce(struct raft_io* io);
  static void RaftClosed(struct raft* r);

  // --- node_requests.cc: requests and polling --------------------------------
  void Propose(const state::Command& command, ProposeDone done);
  void Barrier(std::function<void(Status)> done);
  void TransferLeadership(std::uint64_t id, std::function<void(Status)> done);
  static void TransferDone(struct raft_transfer* req) noexcept;
  void AddVoter(std::uint64_t id, const std::string& address, std::function<void(Status)> done);
  void RemoveServer(std::uint64_t id, std::function<void(Status)> done);
  static void ChangeDone(struct raft_change* req, int status) noexcept;
  Status ChangeFailure(int rv, std::uint64_t id) const;
  Status CheckWritable() const;
  Status FailureFromRaft(int rv, const char* what) const;
  Status LoggedFailure(int rv, const char* what) const;  // disk_failure.h
  void IssueLeadershipBarrier(std::uint64_t term);
  static void ApplyDone(struct raft_apply* req, int status, void* result) noexcept;
  static void BarrierDone(struct raft_barrier* req, int status) noexcept;
  // After every uv_run (and after raft_close): leadership, completions,
  // on_applied, last contact.
  void AfterTurn();
  void PollLeadership();
  void PollLastContact();
  // A follower whose leader's raft links all closed (Transport::LinkLost)
  // forgets that leader and brings its election timer forward; one that
  // knows a leader again gets libraft's own timeout back (decision 0031).
  void ForgetLostLeader();
  // Libraft unavailable, or a log write failed: report once (on_broken).
  void CheckLiveness();
  void MarkBroken(Status why);
  // Mirrors the sizes of the entries libraft holds and sets its snapshot
  // threshold and trailing count from them (log_memory.h).
  void BoundLogMemory();

  // --- node_join.cc: who may connect, and joins ------------------------------
  std::string AdmitPeer(const wire::Hello& hello) const;
  void HandleJoin(const wire::Hello& hello, std::function<void(wire::JoinAnswer)> answer);
  void JoinCluster(std::vector<std::string> addresses);
  void JoinAttempt();
  void ScheduleJoin(DurationMs delay_ms);
  bool SelfVotes() const;
  bool RaftLeader() const;
  std::uint64_t UvNowMs() const;

  boost::asio::io_context& io_;
  state::Store& store_;
  NodeOptions options_;
  Phase phase_ = Phase::kIdle;

  uv_loop_t loop_{};
  std::unique_ptr<Transport> transport_;
  struct raft_io raft_io_ {};
  // Wraps raft_io_'s start and send (append_result_guard.h): declared after
  // it, so it is destroyed first.
  AppendResultGuard append_result_guard_;
  struct raft raft_ {};
  FsmBridge fsm_;
  std::unique_ptr<UvDriver> driver_;
  bool loop_initialized_ = false;
  disk::DirLock dir_lock_;                 // held from Start until the io is closed
  mutable FailureLogLimiter failure_log_;  // write failures: one line a second
  // libraft 0.15 crashes when two log writes in flight both fail (the first
  // failure truncates entries the second still references; log.c
  // refsDecr). So tenure refuses a write rather than let libraft start one
  // that would fail for want of space (CheckDiskRoom), and after a failed
  // write lets one write at a time through until one succeeds.
  Status CheckDiskRoom(std::size_t bytes);
  bool OneWriteAtATime() const;
  void NoteWriteOutcome(int status, const Status& failure);
  Status last_disk_failure_;
  bool disk_failed_ = false;
  std::uint64_t disk_free_bytes_ = 0;
  std::uint64_t disk_checked_uv_ms_ = 0;
  bool disk_checked_ = false;

  // The io.close wrapper (docs/architecture.md, libraft pitfall 3): libraft's io close callback
  // can fire twice; the second call is swallowed.
  void (*original_io_close_)(struct raft_io*, raft_io_close_cb) = nullptr;
  int (*original_io_append_)(struct raft_io*, struct raft_io_append*, const struct raft_entry[],
                             unsigned, raft_io_append_cb) = nullptr;
  int (*original_io_send_)(struct raft_io*, struct raft_io_send*, const struct raft_message*,
                           raft_io_send_cb) = nullptr;
  Histogram* append_histogram_ = nullptr;
  int (*original_io_snapshot_put_)(struct raft_io*, unsigned, struct raft_io_snapshot_put*,
                                   const struct raft_snapshot*, raft_io_snapshot_put_cb) = nullptr;
  raft_io_close_cb raft_io_close_cb_ = nullptr;
  bool io_close_fired_ = false;
  bool raft_close_called_ = false;
  bool raft_closed_ = false;
  bool close_waiting_for_disk_ = false;
  std::uint64_t close_deadline_uv_ms_ = 0;

  std::size_t proposals_in_flight_ = 0;
  std::size_t barriers_in_flight_ = 0;
  std::vector<std::function<void()>> ready_;  // user callbacks for AfterTurn
  std::vector<std::function<void()>> stop_waiters_;

  struct HeldAppend {
    struct raft_io_append* req;
    int status;
    raft_io_append_cb cb;
    std::vector<RestoreDecoder::JobPtr> jobs;
  };
  std::deque<HeldAppend> held_appends_;
  // The snapshot install in flight (libraft writes one snapshot at a time):
  // its callback, its decode, and whether its write finished (then held
  // until the decode has).
  struct SnapshotPut {
    struct raft_io_snapshot_put* req = nullptr;
    raft_io_snapshot_put_cb cb = nullptr;
    RestoreDecoder::JobPtr job;
    bool written = false;
    int status = 0;
  };
  SnapshotPut snapshot_put_;
  // The chunks of the large restore seen in this server's log writes so far
  // (one restore, at most limits::kSnapshotBytesMax bytes).
  struct StagedGather {
    std::uint64_t id = 0;
    std::uint64_t total = 0;
    std::string bytes;
  };
  std::optional<StagedGather> staged_gather_;
  raft_io_snapshot_put_cb snapshot_taken_cb_ = nullptr;  // libraft's, for a snapshot taken
  // Replaced states are destroyed here, off the loop.
  StateRetirer state_retirer_;
  // Lets a decode's worker thread reach this node through the loop only
  // while it lives (the handler it posts checks it first). Declared before
  // the decoder, whose destructor waits for its threads.
  std::shared_ptr<Impl*> alive_ = std::make_shared<Impl*>(this);
  RestoreDecoder restore_decoder_;

  std::function<void()> on_applied_;
  std::function<void(bool)> on_leadership_;
  std::function<void(Status)> on_broken_;
  bool broken_ = false;
  LogMemory log_memory_;
  std::uint64_t snapshot_index_seen_ = 0;  // libraft's last snapshot, as BoundLogMemory saw it
  std::uint64_t snapshot_seen_uv_ms_ = 0;  // when it first saw that index
  std::uint64_t proposal_bytes_in_flight_ = 0;

  // JoinCluster's state: the addresses to ask, the next one, a leader named
  // by a follower (asked next), and the retry timer.
  std::vector<std::string> join_addresses_;
  std::size_t join_next_ = 0;
  std::string join_redirect_;
  bool join_in_flight_ = false;
  std::unique_ptr<boost::asio::steady_timer> join_timer_;
  std::uint64_t notified_generation_ = 0;

  // Leadership as reported to on_leadership: leader_term_ is the term in
  // which this node was last seen leading (0 = not leader);
  // barrier_done_term_ the term whose leadership barrier completed;
  // reported_leader_ whether on_leadership(true) fired for leader_term_.
  std::uint64_t leader_term_ = 0;
  std::uint64_t barrier_done_term_ = 0;
  bool reported_leader_ = false;

  // Last contact with a leader, in libuv time (ms, monotonic; what libraft's
  // io->time returns). See LastContactMs in node.cc.
  std::uint64_t last_contact_uv_ms_ = 0;

  // ForgetLostLeader: leaders forgotten because their links closed, and
  // whether the follower's election timeout is the shortened one.
  std::uint64_t leaders_forgotten_ = 0;
  bool election_timer_shortened_ = false;
};

}  // namespace tenure::raft
