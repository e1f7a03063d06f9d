// Node::Impl, private to src/raft: the state behind Node (node.h).
//
// Split over node.cc (lifecycle: Start, Stop, the close path and the
// accessors) and node_requests.cc (proposals, barriers, leadership and
// last-contact polling). Loop thread only.
//
// Lifecycle: kIdle -Start-> kRunning -Stop-> kStopping -loop drained-> kStopped
// (a failed Start goes straight to kStopped after cleaning up). kStopping
// refuses new requests, waits until the log is on disk, then raft_closes.
//
// Callbacks to the user (ProposeDone, barrier done, on_applied,
// on_leadership) never run on a libraft stack: libraft callbacks queue them
// in ready_ and AfterTurn() runs them once uv_run has returned. That keeps
// user code from re-entering raft (raft_close from a raft callback aborts the
// process, derisk.md pitfall 2) and gives batching for free.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "raft/disk_failure.h"
#include "raft/fsm.h"
#include "raft/node.h"
#include "raft/raft_c.h"
#include "raft/uv_driver.h"

namespace tenure::raft {

// Connect retry delay of raft_uv_tcp. libraft's default (1000 ms) dominated
// catch-up of a restarted node in derisk.md; loopback reconnects are cheap.
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
  bool RaftLeader() const;
  std::uint64_t UvNowMs() const;

  boost::asio::io_context& io_;
  state::Store& store_;
  NodeOptions options_;
  Phase phase_ = Phase::kIdle;

  uv_loop_t loop_{};
  struct raft_uv_transport transport_ {};
  struct raft_io raft_io_ {};
  struct raft raft_ {};
  FsmBridge fsm_;
  std::unique_ptr<UvDriver> driver_;
  bool loop_initialized_ = false;
  int lock_fd_ = -1;
  mutable FailureLogLimiter failure_log_;  // write failures: one line a second

  // The io.close wrapper (derisk.md Appendix A): libraft's io close callback
  // can fire twice; the second call is swallowed.
  void (*original_io_close_)(struct raft_io*, raft_io_close_cb) = nullptr;
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

  std::function<void()> on_applied_;
  std::function<void(bool)> on_leadership_;
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
};

}  // namespace tenure::raft
