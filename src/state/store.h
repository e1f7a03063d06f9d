// Store: the pure, deterministic replicated state machine. KV entries,
// sessions, locks, tombstones and lock-delays, with Consul's semantics
// (docs/consul-api.md sections 1, 2, 4 and 11).
//
// Replicated: every replica applies the same commands at the same indexes and
// ends byte-identical (Digest()). No clock, randomness or I/O: time enters only
// as Command::now_ms and wall_ms, stamped by the leader. Single-threaded.
//
// Index rules (what X-Consul-Index reports):
//  - a single existing key: its ModifyIndex;
//  - a missing key: the KV table index (last index any KV entry changed);
//  - a prefix: the highest ModifyIndex or tombstone index under it, never
//    lower than the last tombstone reap, and the KV table index for "";
//  - sessions: the sessions table index.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/etcd_texts.h"
#include "common/status.h"
#include "common/types.h"
#include "state/acl_table.h"
#include "state/apply_result.h"
#include "state/command.h"
#include "state/key_range.h"
#include "state/kv_event.h"
#include "state/lock_history.h"
#include "state/txn.h"
#include "state/types.h"
#include "state/zk_tree.h"

namespace tenure::state {

// A large restore's staging (RestoreChunk, decision 0050): the bytes staged
// so far, and where and when its last chunk applied.
struct RestoreStaging {
  std::uint64_t id = 0;
  std::uint64_t total = 0;
  std::string bytes;
  LogIndex last_chunk;
  ClusterMs last_chunk_ms;  // the replicated clock at it
};

// Test-only (tests/unit/state/forged_states.h): sets fields behind Apply's
// back, to build the states a forged snapshot carries.
class TEST_StoreEditor;

class Store {
 public:
  Store() = default;

  // Applies `command` as raft entry `index`.
  // REQUIRES: index > applied_index().
  ApplyResult Apply(const Command& command, LogIndex index);
  // The same, for a RestoreState whose bytes were decoded off the loop
  // (raft/restore_decoder.h): *decoded is used instead of decoding them
  // again, and the outcome is Apply's, byte for byte. If the restore applies,
  // *decoded then holds the state it replaced, for the caller to destroy.
  ApplyResult Apply(const Command& command, LogIndex index, Result<Store>* decoded);

  // --- KV reads -------------------------------------------------------------
  const KvEntry* FindKv(std::string_view key) const;
  // Entries whose key starts with prefix, in key byte order.
  std::vector<const KvEntry*> ListKv(std::string_view prefix) const;
  // At most `max` of those whose key sorts after `after` ("" = from the
  // first): a large prefix read copied in slices (http/prefix_copy.h).
  std::vector<const KvEntry*> ListKvAfter(std::string_view prefix, std::string_view after,
                                          std::size_t max) const;
  // Entries inside `range`, in key byte order (etcd's ranges).
  std::vector<const KvEntry*> ListRange(const KeyRange& range) const;
  // Keys under prefix; with a non-empty separator each key is cut just after
  // the first separator found past the prefix, and duplicates are dropped.
  std::vector<std::string> ListKeys(std::string_view prefix, std::string_view separator) const;
  // X-Consul-Index for a single-key read (see the rules above).
  LogIndex KeyIndex(std::string_view key) const;
  // X-Consul-Index for a prefix read (recurse or keys).
  LogIndex PrefixIndex(std::string_view prefix) const;
  LogIndex kv_index() const { return kv_index_; }
  std::size_t kv_count() const { return kv_.size(); }
  std::size_t tombstone_count() const { return tombstones_.size(); }

  // A read-only transaction (no write verbs), evaluated against the current
  // state without changing it.
  TxnOutcome ReadTxn(const std::vector<TxnOp>& ops) const;

  // --- Sessions -------------------------------------------------------------
  const Session* FindSession(const SessionId& id) const;
  std::vector<const Session*> ListSessions() const;  // by id
  std::vector<const Session*> NodeSessions(std::string_view node) const;
  LogIndex sessions_index() const { return sessions_index_; }
  std::size_t session_count() const { return sessions_.size(); }
  // Keys currently held by a session.
  const std::set<std::string>* HeldKeys(const SessionId& session_id) const;

  // --- Time and lock-delay --------------------------------------------------
  // The replicated clock (decision 0037): the largest now_ms of any applied
  // command. It never runs backwards, and it advances only as fast as the
  // leaders' monotonic clocks: no wall clock moves it.
  ClusterMs now_ms() const { return now_ms_; }
  // The last applied entry's wall clock (Command::wall_ms): the times people
  // read. May go back from one leader to the next.
  UnixMs wall_ms() const { return wall_ms_; }
  // End of the key's lock-delay window on the replicated clock; ClusterMs()
  // if none.
  ClusterMs LockDelayUntil(std::string_view key) const;
  // Every recorded window (key -> end), expired ones possibly included.
  const std::map<std::string, ClusterMs, std::less<>>& lock_delays() const { return lock_delays_; }

  // --- Fair-acquire queues (decision 0027) ------------------------------------
  // Bounds, part of the replicated semantics (an enqueue past them fails).
  static constexpr std::size_t kQueueWaitersPerKeyMax = 1024;
  static constexpr std::size_t kQueueWaitersMax = 100'000;
  // Keys one session may wait for at once: an election or a lock waits in
  // one; the bound keeps one client's sessions from filling the queues.
  static constexpr std::size_t kQueueKeysPerSessionMax = 16;
  // The waiters of `key`, head first; nullptr if none wait.
  const std::deque<QueueWaiter>* FindQueue(std::string_view key) const;
  // `session`'s place in `key`'s queue, 1 for the head; 0 if it does not wait.
  std::size_t QueuePosition(std::string_view key, const SessionId& session) const;
  // `session`'s entry in `key`'s queue; nullptr if it does not wait there.
  const QueueWaiter* FindWaiter(std::string_view key, const SessionId& session) const;
  const std::map<std::string, std::deque<QueueWaiter>, std::less<>>& queues() const {
    return queues_;
  }
  std::size_t queue_waiter_count() const { return queue_waiters_; }
  // The last index any queue changed (a table index, as kv_index).
  LogIndex queues_index() const { return queues_index_; }
  // X-Consul-Index for GET /v1/tenure/queue/<key>: the larger of the key's
  // index and the queues table index, so it never goes backwards.
  LogIndex QueueIndex(std::string_view key) const { return std::max(KeyIndex(key), queues_index_); }

  // --- Lock history (docs/history.md) ---------------------------------------
  // The recorded grants of `key`, oldest first; nullptr if the key never held
  // a lock (or its history was bounded out).
  const LockHistory::KeyHistory* FindHistory(std::string_view key) const {
    return history_.Find(key);
  }
  const LockHistory& history() const { return history_; }

  // --- ZooKeeper's tree (decision 0056 section 4, state/store_zk.cc) ---------
  // Whether `path` is a znode: "/", or a key that is a valid ZooKeeper path
  // whose parent is a znode.
  bool IsZnode(std::string_view path) const;
  // The Stat ZooKeeper would answer for znode `path`; nullopt if it is not
  // one. "/" is answered from its record alone (the layer adds /zookeeper).
  std::optional<ZkStat> ZkStatOf(std::string_view path) const;
  // The names of `path`'s children that are znodes, in byte order (O(their
  // number x log keys): each child's own subtree is skipped).
  std::vector<std::string_view> ZkChildren(std::string_view path) const;
  const ZkNode* FindZkNode(std::string_view path) const;
  const std::map<std::string, ZkNode, std::less<>>& zk_nodes() const { return zk_nodes_; }
  // The session password secret (ZkSecret); empty until the first is set.
  const std::string& zk_secret() const { return zk_secret_; }

  // --- Cluster members (decision 0008) -------------------------------------
  const Member* FindMember(std::uint64_t id) const;
  std::vector<const Member*> ListMembers() const;  // by id

  // The index of the last command applied. Equal to the raft index of its
  // entry until a snapshot restore (RestoreState) carries it past the raft
  // log; the next command then takes the index after it (raft/fsm.h).
  LogIndex applied_index() const { return applied_index_; }

  // The replicated compact revision (EtcdCompact, decision 0048 section 1):
  // no read or watch below it is served. None until a Compact applies; kept
  // in snapshots, and a restore never lowers it.
  LogIndex compact_revision() const { return compact_revision_; }

  // What the applies since the last call touched.
  Changes TakeChanges();

  // Whether applies record each key change in Changes::events, for the
  // history window an etcd listener serves (decision 0048): off unless
  // asked, so a Consul-only server copies nothing. Not state: a restore
  // keeps it, a decoded snapshot starts without it.
  void RecordEvents(bool on) { record_events_ = on; }
  bool recording_events() const { return record_events_; }

  // --- A large restore's staging (RestoreChunk, decision 0050) -------------
  // Not part of the state a snapshot carries: no snapshot is taken while a
  // staging exists (raft/fsm.h), and every replica stages the same entries.
  // Dropped by the first command whose replicated clock is more than
  // kStagingIdleMs past the last chunk's (a leader that died mid-restore):
  // time, not entries, so a busy cluster keeps a restore in progress and an
  // idle-looking one drops it.
  using RestoreStaging = state::RestoreStaging;
  static constexpr DurationMs kStagingIdleMs = 10'000;
  const RestoreStaging* staging() const { return staging_ ? &*staging_ : nullptr; }
  // The staging a RestoreStaged in `command` swaps in when applied next:
  // complete, its id, not lapsed by the command's clock; else nullptr.
  const RestoreStaging* StagingFor(const Command& command) const;

  // The applied index at which this state was last replaced whole (a
  // restore, or a decoded snapshot); none for a state built by applies
  // alone. Not state: it only grows, so a reader that spans loop turns
  // (http/prefix_copy.h) can tell that every entry changed under it.
  LogIndex replaced_at() const { return replaced_at_; }

  // --- Integrity ------------------------------------------------------------
  // The first broken internal invariant, as kCorruption naming it, or the
  // first field past the live API's limits (state/field_limits.h), as
  // kInvalidArgument naming the field and its value. O(state size).
  Status Validate() const;
  // Aborts if Validate() fails: for tests and debug checks after Apply.
  void CheckInvariants() const;
  // Equal states have equal digests; the digest covers everything a
  // snapshot carries.
  std::uint64_t Digest() const;

  // Replicas compared at run time (Checkpoint commands): the digest this
  // replica recorded at the last checkpoint it applied ({0, 0}: none since
  // it started or restored a snapshot), and, once a checkpoint's digest
  // disagreed with this replica's record, what disagreed (empty until then;
  // sticky: a diverged state never heals). Neither is part of the state.
  // `unchecked`: other commands were applied between the previous checkpoint
  // and this one, so the digest records a state no checkpoint has compared
  // yet, and the leader writes one more even on an idle cluster.
  struct CheckpointRecord {
    LogIndex index;
    std::uint64_t digest = 0;
    bool unchecked = false;
  };
  const CheckpointRecord& checkpoint() const { return checkpoint_; }
  // Whether the leader has anything for a next checkpoint to compare: entries
  // applied since the last one, or a last one that recorded an unchecked
  // state. False on an idle cluster once its last write has been compared.
  bool CheckpointDue() const { return applied_index_ > checkpoint_.index || checkpoint_.unchecked; }
  const std::string& divergence() const { return divergence_; }

  // ACL tokens, policies and the bootstrap record (state/acl_table.h).
  const AclTable& acl() const { return acl_; }
  // Test hook: changes the value of `key` behind the log's back, as a bad
  // disk or a bug would, so that tests see a diverged replica caught.
  void TEST_Corrupt(std::string_view key, std::string value);

  // Snapshot format: docs/formats.md. DecodeSnapshot verifies the checksum
  // (version 3) before it decodes anything.
  void EncodeSnapshot(std::string* out) const;
  static Result<Store> DecodeSnapshot(std::string_view bytes);
  // Magic, version and (version 3) checksum only, without decoding: the
  // version (1 and 2 carry no checksum), or kCorruption saying what is
  // wrong. For the data-dir check (raft/disk), which must not restore.
  static Result<int> CheckSnapshotBytes(std::string_view bytes);

 private:
  friend class TEST_StoreEditor;
  void EncodeSnapshotBody(std::string* out) const;  // everything but the checksum
  // Validate's part for the limits on each field (store_limits.cc).
  Status CheckFieldLimits() const;
  // A decoded state's room to grow: indexes and LockIndexes at most
  // limits::kSnapshotIndexMax, far below Validate's bound for a live state.
  Status CheckGrowthRoom() const;

  // Outcome of one KV operation, shared by the single-op commands and /v1/txn.
  struct KvOutcome {
    Status error;    // Consul's error text (txn "What", or HTTP 500 for single ops)
    bool ok = true;  // the Consul true/false
    LogIndex fence;
  };
  // Undo log for an in-progress transaction: the state of every key before
  // the transaction first touched it.
  struct JournalEntry {
    std::string key;
    std::optional<KvEntry> entry;
    std::optional<LogIndex> tombstone;
  };
  // A txn's undo log, each key once (a DeleteRange may write any number),
  // and each ZooKeeper node record once.
  struct Journal {
    std::vector<JournalEntry> entries;
    std::set<std::string, std::less<>> keys;
    std::vector<std::pair<std::string, std::optional<ZkNode>>> zk_nodes;
    std::set<std::string, std::less<>> zk_paths;
  };

  // KV operations (store_kv.cc). `index` is the raft index being applied.
  KvOutcome SetKv(const std::string& key, const std::string& value, std::uint64_t flags,
                  LogIndex index);
  KvOutcome CasKv(const std::string& key, const std::string& value, std::uint64_t flags,
                  LogIndex cas_index, LogIndex index);
  KvOutcome AcquireKv(const std::string& key, const std::string& value, std::uint64_t flags,
                      const SessionId& session, LogIndex index);
  KvOutcome ReleaseKv(const std::string& key, const std::string& value, std::uint64_t flags,
                      const SessionId& session, LogIndex index);
  bool DeleteKvCas(const std::string& key, LogIndex cas_index, LogIndex index);
  void DeleteKvTree(std::string_view prefix, LogIndex index);

  // Writes `entry` at `index` (creating or replacing), keeping the holder
  // index and tombstones in step. No no-op detection: callers decide.
  void PutEntry(KvEntry entry, LogIndex index);
  // Deletes `key` at `index`, leaving a tombstone. Returns true if it existed.
  bool DeleteEntry(std::string_view key, LogIndex index);
  void SetHolder(const std::string& key, const SessionId& old_session,
                 const SessionId& new_session);
  // True while `key` is inside a lock-delay window; forgets expired windows.
  bool InLockDelay(std::string_view key);
  void RememberForRollback(std::string_view key);
  // Lock history (lock_history_apply.cc): holder changes are noted as they
  // happen and recorded, with their causes, once the apply is final.
  void NoteHolderChange(const std::string& key, const KvEntry* before, const KvEntry* after);
  void RecordHistory(LogIndex index, ApplyResult* result);

  // Fair-acquire queues (store_queue.cc).
  void ApplyEnqueue(const KvEnqueue& c, LogIndex index, ApplyResult* result);
  void ApplyDequeue(const KvDequeue& c, LogIndex index, ApplyResult* result);
  // Grants `key` to the head of its queue if the key is free and out of
  // lock-delay; at most one grant. A head whose token no longer allows it
  // leaves the queue without the key, and the next is asked.
  void SettleQueue(const std::string& key, LogIndex index, ApplyResult* result);
  // Whether a grant resting on `authority` may be made now (decision 0038):
  // its token still exists, has not expired by this entry's wall clock, and
  // may write `key`.
  bool GrantAllowed(const GrantAuthority& authority, std::string_view key) const;
  // Removes every waiter of `key` (the key was deleted).
  void DropQueue(std::string_view key, LogIndex index, ApplyResult* result);
  void DropQueuesUnder(std::string_view prefix, LogIndex index, ApplyResult* result);
  // Removes `session` from every queue it waits in (it was destroyed).
  void DropSessionWaits(const SessionId& session, LogIndex index, ApplyResult* result);
  // Removes `session` from `key`'s queue (a dequeue, a release or txn unlock
  // by a waiter); false if it did not wait there. Grants nothing.
  bool LeaveQueue(const std::string& key, const SessionId& session, LogIndex index,
                  ApplyResult* result);
  // The holder's choice of successor (a txn [unlock by the holder, lock for
  // a waiter]): `session`, now holding `key`, leaves its queue with a grant.
  void HandOffToWaiter(const std::string& key, const SessionId& session, LogIndex index,
                       ApplyResult* result);
  // Removes `session` from `key`'s queue without an event; false if absent.
  bool RemoveWaiter(const std::string& key, const SessionId& session, LogIndex index);
  // True if `session` waits in `key`'s queue.
  bool IsQueued(std::string_view key, const SessionId& session) const;
  // True if waiters exist that `session` (not the holder) would jump.
  bool QueueBlocks(std::string_view key, const SessionId& session) const;
  void TouchQueue(const std::string& key, LogIndex index);

  // Commands (store.cc, store_session.cc, store_txn.cc).
  void ApplySessionCreate(const SessionCreate& c, LogIndex index, ApplyResult* result);
  void ApplySessionDestroy(const SessionDestroy& c, LogIndex index, ApplyResult* result);
  void ApplyTxn(const Txn& c, LogIndex index, ApplyResult* result);
  // store_etcd.cc: etcd's txn, its ops, and the undo of a txn of either kind.
  void ApplyEtcdTxn(const EtcdTxn& c, LogIndex index, ApplyResult* result);
  void ApplyEtcdCompact(const EtcdCompact& c, ApplyResult* result);
  // Where a txn started, for RollBack.
  struct TxnMarks {
    LogIndex kv_index;
    std::size_t changes = 0;
    std::size_t events = 0;
    std::size_t holder_changes = 0;
  };
  TxnMarks MarkTxn() const;
  // Restores every key of `journal`, newest first, as it was before the txn.
  void RollBack(const Journal& journal, const TxnMarks& marks);
  // What an etcd txn's writes leave for after it commits: keys deleted
  // (their queues go) and keys an etcd lease let go (their queues' heads may
  // take them); and whether an op so far changed a key (the revision each
  // op's answer carries, EtcdResponseOp::revision).
  struct EtcdAfterCommit {
    std::vector<std::string> deleted;
    std::vector<std::string> released;
    bool changed = false;
  };
  etcd_texts::EtcdError RunEtcdTxn(const EtcdTxnRequest& txn, const std::vector<bool>& paths,
                                   std::size_t* next_path, LogIndex index, EtcdAfterCommit* after,
                                   EtcdTxnResponse* out);
  etcd_texts::EtcdError EtcdPut(const EtcdPutRequest& put, LogIndex index, EtcdAfterCommit* after,
                                EtcdPutResponse* out);
  void EtcdDeleteRange(const EtcdDeleteRangeRequest& request, LogIndex index,
                       EtcdAfterCommit* after, EtcdDeleteRangeResponse* out);
  // store_zk.cc: ZooKeeper's writes, and the node records every API's
  // writes keep current (called by PutEntry and DeleteEntry).
  void ApplyZkWrite(const ZkWrite& c, LogIndex index, ApplyResult* result);
  void ApplyZkSecret(const ZkSecret& c, ApplyResult* result);
  ZkCode ZkCreate(const ZkOp& op, const SessionId& session, LogIndex index, ZkOpResult* out);
  ZkCode ZkDelete(const ZkOp& op, LogIndex index, std::vector<std::string>* deleted);
  ZkCode ZkSetData(const ZkOp& op, LogIndex index, ZkOpResult* out);
  ZkCode ZkCheck(const ZkOp& op) const;
  ZkCode ZkSetAcl(const ZkOp& op, ZkOpResult* out);
  void ZkNoteCreated(const std::string& key, LogIndex index);
  void ZkNoteChanged(const std::string& key);
  void ZkNoteDeleted(std::string_view key, LogIndex index);
  // The record of `path`, made (ctime and mtime unknown, children counted)
  // if it has none. REQUIRES: path is "/" or a key.
  ZkNode& ZkRecord(std::string_view path);
  // ZkStatOf for a path known to be a znode (its checks made once).
  ZkStat ZkStatOfZnode(std::string_view path) const;
  void RememberZkForRollback(std::string_view path);
  // The session number of `entry`'s holder when it is ZooKeeper's
  // ephemeral owner (a numbered session that deletes its keys), else 0.
  std::int64_t EphemeralOwner(const KvEntry& entry) const;
  void ApplyReapTombstones(const ReapTombstones& c);
  void ApplySetMember(const SetMember& c, LogIndex index, ApplyResult* result);
  void ApplyCheckpoint(const Checkpoint& c, LogIndex index);
  // store_restore.cc: RestoreState's bytes, or RestoreStaged's.
  void ApplyRestore(std::string_view snapshot, LogIndex index, Result<Store>* decoded,
                    ApplyResult* result);
  void ApplyRestoreChunk(const RestoreChunk& c, LogIndex index, ApplyResult* result);
  void ApplyRestoreStaged(const RestoreStaged& c, LogIndex index, Result<Store>* decoded,
                          ApplyResult* result);
  // What the restore's adjustments (indexes raised, the clock and lock-delay
  // windows moved up, this cluster's members) can break in a state that
  // passed Validate; the rest stays true (store_restore.cc says why).
  Status CheckRestoreAdjustments() const;
  // Moves the replicated clock up to `to` (if behind) and every lock-delay
  // window with it, keeping each window's remaining length. Fails on an
  // overflow.
  Status RaiseClock(ClusterMs to);
  // Evaluates a read verb against the current state (get, check-*, ...).
  KvOutcome ReadOp(const TxnOp& op, std::vector<TxnResultEntry>* results) const;

  std::map<std::string, KvEntry, std::less<>> kv_;
  std::map<std::string, LogIndex, std::less<>> tombstones_;  // deleted key -> delete index
  // ZooKeeper's node records, by path (state/zk_tree.h).
  std::map<std::string, ZkNode, std::less<>> zk_nodes_;
  std::string zk_secret_;  // empty or kZkSecretBytes
  // Sessions by id, each id kept once: in its Session (decision 0033).
  struct SessionById {
    using is_transparent = void;
    static std::string_view Id(const Session& s) { return s.id.view(); }
    static std::string_view Id(const SessionId& id) { return id.view(); }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Id(a) < Id(b);
    }
  };
  std::set<Session, SessionById> sessions_;
  // session id -> keys it holds (derived from kv_, kept for O(held) invalidation)
  std::map<SessionId, std::set<std::string>> held_;
  std::map<std::string, ClusterMs, std::less<>> lock_delays_;  // key -> window end
  std::map<std::uint64_t, Member> members_;
  // Fair-acquire queues: key -> waiters, head first (never empty).
  std::map<std::string, std::deque<QueueWaiter>, std::less<>> queues_;
  LogIndex queues_index_;                              // last index any queue changed
  std::map<SessionId, std::set<std::string>> queued_;  // derived: session -> keys it waits for
  std::size_t queue_waiters_ = 0;                      // derived
  LogIndex kv_index_;
  LogIndex sessions_index_;
  LogIndex reaped_index_;  // highest tombstone index reaped so far (<= kv_index_)
  LogIndex applied_index_;
  LogIndex compact_revision_;  // <= applied_index_
  ClusterMs now_ms_;
  // The wall clock of the command being applied (Command::wall_ms), for what
  // it records for people to read. Not state: set by every Apply.
  UnixMs wall_ms_;
  Changes changes_;
  CheckpointRecord checkpoint_;
  AclTable acl_;
  bool changed_since_checkpoint_ = false;
  std::string divergence_;
  Journal* journal_ = nullptr;  // non-null while applying a txn
  LockHistory history_;
  struct HolderChange {
    std::string key;
    SessionId old_session;
    LogIndex old_fence;
    SessionId new_session;
    LogIndex new_fence;
    bool deleted = false;
  };
  std::optional<RestoreStaging> staging_;
  LogIndex replaced_at_;
  // Whether a command stamped with replicated clock `now` finds the staging
  // lapsed.
  bool StagingLapsedAt(ClusterMs now) const;
  // Lists a key an apply changed, and how, in changes_ (PutEntry,
  // DeleteEntry).
  void NoteKey(const std::string& key, KeyChange change);
  // Records a change of one key at `index` when recording (PutEntry,
  // DeleteEntry); null `after` is a delete.
  void NoteEvent(const KvEntry* before, const KvEntry* after, LogIndex index);
  // The first event this entry (at `index`) recorded for `before`'s key;
  // null when the entry had not written it yet.
  const KvEvent* EarlierEventInEntry(const KvEntry& before, LogIndex index) const;
  bool record_events_ = false;
  std::vector<HolderChange> holder_changes_;      // this apply's, until RecordHistory
  EndCause session_end_cause_ = EndCause::kNone;  // set while a SessionDestroy applies
};

}  // namespace tenure::state
