// FsmBridge: libraft's `struct raft_fsm` (version 1) over a state::Store.
//
// apply   decodes the framed entry (entry_codec.h) and applies it to the Store
//         at index raft_last_applied(r) + 1 (libraft does not pass the
//         index), or after the Store's applied index once a snapshot
//         restore carried it past the log (decision 0024). The ApplyResult goes into one member
//         slot, and the `void* result` handed back to libraft points at that slot: libraft passes
//         it to the raft_apply callback right after apply, and only on the node that proposed the
//         entry. On every other node it is simply dropped, so a per-entry heap allocation would
//         leak; the slot is overwritten by the next apply instead. A non-zero return halts all
//         applying for good, so it is used only for an undecodable entry
//         (divergence, a bug or corruption): domain failures are ApplyResults.
//         With applies deferred (decision 0062; Node's), apply only decodes
//         an ordinary entry and queues it with a slot of its own; the Store
//         changes in ApplyDeferred, which Node calls after every loop turn,
//         so that libraft submits the next log write first. A restore, a
//         snapshot and a snapshot install apply the queue before anything else.
// snapshot version 3 (buffers ours, freed by snapshot_finalize): with snapshots in a child process
//         (Node's), snapshot forks a child that encodes the Store as it is
//         at this index (raft/forked_snapshot.h), snapshot_async waits for
//         it on libuv's pool and maps its bytes, snapshot_finalize unmaps
//         them. Otherwise, or when the fork fails, snapshot encodes in place
//         (Store::EncodeSnapshot into a buffer of ours) and snapshot_async
//         has nothing to do: the simulation and the fixture tests, whose
//         "asynchronous" work runs later on the same thread, stay exact.
//         While the Store stages a large restore (decision 0050) snapshot
//         answers RAFT_BUSY, and libraft tries again at a later apply: a
//         staging is never in a snapshot.
// restore Store::DecodeSnapshot replaces the Store; the buffer is freed here
//         on success, as libraft expects.
//
// Used by Node with raft_uv and by tests with raft_fixture. Loop thread only.
// Callbacks are noexcept: nothing may unwind through libraft's C frames, and
// an exception in apply would leave the replica half-applied, so it ends the
// process (std::terminate) instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/histogram.h"
#include "raft/forked_snapshot.h"
#include "raft/raft_c.h"
#include "raft/restore_decoder.h"
#include "raft/snapshot_metrics.h"
#include "state/store.h"

namespace tenure::raft {

// A copy of `bytes` in memory from raft_malloc, as raft_apply takes an entry
// and the FSM hands over a snapshot (libraft frees it once it owns it; free
// it with raft_free otherwise). base is nullptr when raft_malloc failed; an
// empty copy still gets a byte, as raft_malloc(0) may answer nullptr.
struct raft_buffer CopyToRaftBuffer(std::string_view bytes);
// EncodeEntry's framed bytes for `command`, written straight into memory
// from raft_malloc: a restore's state (up to 64 MiB) is copied once, not
// three times, on the loop thread (decision 0046). base is nullptr when
// raft_malloc failed.
struct raft_buffer EncodeToRaftBuffer(const state::Command& command);

// libraft's state as Consul's Stats names it: "Leader", "Candidate",
// "Follower", or "Unavailable".
std::string RaftStateName(const struct raft& r);

class FsmBridge {
 public:
  explicit FsmBridge(state::Store* store);
  FsmBridge(const FsmBridge&) = delete;
  FsmBridge& operator=(const FsmBridge&) = delete;

  struct raft_fsm* fsm() {
    return &fsm_;
  }
  // The raft instance whose last_applied numbers the entries. Must be set
  // before the instance starts (raft_start may apply and restore).
  void set_raft(struct raft* r) { raft_ = r; }

  // In a raft_apply callback: the result of the entry just applied, taken
  // from the `result` pointer libraft passes (which points at our slot).
  static state::ApplyResult TakeResult(void* result);

  // Decision 0062: apply queues ordinary entries instead of applying them.
  // Off (the default: raft_fixture tests, the simulation, whose checkers
  // read the Store at every apply) every entry is applied inside apply.
  void set_defer_applies(bool defer) { defer_applies_ = defer; }
  // Applies the queued entries in order. Call before anything reads the
  // Store after libraft ran: Node does at the start of every loop turn's
  // polling, after raft_start and before a synchronous close.
  void ApplyDeferred();
  // Drops the applied entries' slots once every raft_apply callback that
  // points at one has run (Node: after the turn's callbacks). Keeps them
  // while any entry is still queued.
  void ForgetAppliedSlots();
  std::size_t deferred_pending() const { return deferred_.size() - deferred_applied_; }

  // Bumped by every apply and restore: "the Store changed".
  std::uint64_t generation() const { return generation_; }
  // True once an entry could not be decoded; libraft applies nothing more.
  bool apply_halted() const { return apply_halted_; }
  std::uint64_t restores() const { return restores_; }
  // Metrics (docs/metrics.md): each apply observes how long decoding and
  // applying its entry took. Null: not measured.
  void set_apply_histogram(Histogram* histogram) { apply_histogram_ = histogram; }
  void set_snapshot_metrics(SnapshotMetrics* metrics) { snapshot_metrics_ = metrics; }
  // Where a RestoreState entry's state may already be decoded (Node's);
  // null: every restore is decoded at its apply, on the loop thread.
  void set_restore_decoder(RestoreDecoder* decoder) { restore_decoder_ = decoder; }
  // Encode raft snapshots in a child process (decision 0049). Off: in place,
  // and libraft's snapshot is synchronous (no snapshot_async: fixture ios
  // have no async_work). Before raft_init, which reads the fsm once.
  void set_snapshot_in_child(bool in_child) {
    fsm_.snapshot_async = in_child ? &FsmBridge::SnapshotAsync : nullptr;
  }
  // Kills a snapshot's child still encoding: the server is stopping.
  void AbandonSnapshot() { forked_.Abandon(); }
  // How the io's write of the snapshot being taken ended (0: written), for
  // the metrics; unreported, a snapshot counts once encoded.
  void NoteSnapshotWritten(int status) { put_status_ = status; }
  // Where a replaced state goes to be destroyed (a million keys take
  // 150 ms to free): Node hands it to a background thread. Null: here.
  void set_retire_state(std::function<void(std::shared_ptr<state::Store>)> retire) {
    retire_state_ = std::move(retire);
  }

 private:
  static int Apply(struct raft_fsm* fsm, const struct raft_buffer* buf, void** result) noexcept;
  static int Snapshot(struct raft_fsm* fsm, struct raft_buffer* bufs[], unsigned* n_bufs) noexcept;
  static int SnapshotAsync(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                           unsigned* n_bufs) noexcept;
  static int SnapshotFinalize(struct raft_fsm* fsm, struct raft_buffer* bufs[],
                              unsigned* n_bufs) noexcept;
  void RecordSnapshotTaken(std::chrono::steady_clock::duration took, std::size_t bytes);
  // Hands a replaced state to retire_state_ (or destroys it here).
  void Retire(Result<state::Store> replaced);
  static int Restore(struct raft_fsm* fsm, struct raft_buffer* buf) noexcept;
  std::optional<state::ApplyResult>* ApplyDecodedRestore(std::string_view framed, LogIndex index);
  // The slot of an entry applied inside apply: result_, or with applies
  // deferred one of its own in deferred_ (decision 0062).
  std::optional<state::ApplyResult>* ImmediateSlot(LogIndex index);
  // The state a RestoreStaged `command` swaps in, for its slot: the
  // decoder's for the staged bytes, or decoded here; nullopt when the Store
  // will refuse it (Store::StagingFor).
  std::optional<Result<state::Store>> DecodeStaged(const state::Command& command);

  state::Store* store_;
  struct raft* raft_ = nullptr;
  struct raft_fsm fsm_ {};
  std::optional<state::ApplyResult> result_;  // the slot; see the header comment
  // Decision 0062: queued entries, and the applied ones whose slots may
  // still be taken; deque, so a slot's address outlives later pushes.
  struct Deferred {
    state::Command command;
    LogIndex index;
    std::optional<state::ApplyResult> result;
    std::chrono::steady_clock::duration decode_time{};
  };
  std::deque<Deferred> deferred_;
  std::size_t deferred_applied_ = 0;  // the first ones are applied
  bool defer_applies_ = false;
  // The index the next entry gets, as Apply computes it.
  LogIndex NextIndex() const;
  std::uint64_t generation_ = 0;
  std::uint64_t restores_ = 0;
  bool apply_halted_ = false;
  Histogram* apply_histogram_ = nullptr;
  SnapshotMetrics* snapshot_metrics_ = nullptr;
  RestoreDecoder* restore_decoder_ = nullptr;
  std::function<void(std::shared_ptr<state::Store>)> retire_state_;
  // The snapshot being taken (libraft takes one at a time).
  ForkedSnapshot forked_;
  bool snapshot_forked_ = false;  // this one is the child's
  bool child_failed_ = false;     // the last child failed: encode the next here
  std::string child_error_;       // why, from the pool thread to finalize
  std::chrono::steady_clock::duration encode_time_{};
  static constexpr int kPutUnreported = -1;
  int put_status_ = kPutUnreported;
  std::string snapshot_in_place_;       // or encoded here
  struct raft_buffer snapshot_buf_ {};  // what bufs[0] points at
};

}  // namespace tenure::raft
