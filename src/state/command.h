// Commands: the only way the replicated state changes. The leader builds a
// command, stamps it with the replicated clock and its wall clock (decision
// 0037) and proposes it; every
// replica decodes the same bytes and applies them with the same result.
// Byte format: docs/formats.md. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "state/acl_table.h"
#include "state/etcd_request.h"
#include "state/txn.h"
#include "state/types.h"
#include "state/zk_tree.h"

namespace tenure::state {

// PUT /v1/kv/<key> without cas/acquire/release. Keeps the holder (locks are
// advisory); LockIndex is taken from the request, i.e. becomes 0, as Consul.
struct KvSet {
  std::string key;
  std::string value;
  std::uint64_t flags = 0;
  bool operator==(const KvSet&) const = default;
};

// PUT ?cas=N: N == 0 writes only if the key is absent; otherwise only if its
// ModifyIndex equals N.
struct KvCas {
  std::string key;
  std::string value;
  std::uint64_t flags = 0;
  LogIndex index;
  bool operator==(const KvCas&) const = default;
};

// PUT ?acquire=<session>.
struct KvAcquire {
  std::string key;
  std::string value;
  std::uint64_t flags = 0;
  SessionId session;  // empty: Consul's `missing session`
  bool operator==(const KvAcquire&) const = default;
};

// PUT ?release=<session>. By a session that waits in the key's fair-acquire
// queue and does not hold the key: it leaves the queue, true, nothing else
// written (decision 0027's addendum).
struct KvRelease {
  std::string key;
  std::string value;
  std::uint64_t flags = 0;
  SessionId session;
  bool operator==(const KvRelease&) const = default;
};

// DELETE /v1/kv/<key>[?cas=N] (has_cas) and DELETE ?recurse (KvDeleteTree).
struct KvDelete {
  std::string key;
  bool has_cas = false;
  LogIndex index;
  bool operator==(const KvDelete&) const = default;
};

struct KvDeleteTree {
  std::string prefix;
  bool operator==(const KvDeleteTree&) const = default;
};

// PUT /v1/session/create, already validated by the leader, id chosen by it.
struct SessionCreate {
  Session session;  // create_index is ignored and set on apply
  bool operator==(const SessionCreate&) const = default;
};

enum class DestroyReason : std::uint8_t { kDestroyed = 0, kExpired = 1 };

// PUT /v1/session/destroy/<id>, or the leader's TTL timer firing.
struct SessionDestroy {
  SessionId id;
  DestroyReason reason = DestroyReason::kDestroyed;
  bool operator==(const SessionDestroy&) const = default;
};

// PUT /v1/txn with at least one write verb.
struct Txn {
  std::vector<TxnOp> ops;
  bool operator==(const Txn&) const = default;
};

// Leader housekeeping: forget tombstones at or below `index` so they do not
// accumulate forever. Prefix indexes never go backwards (store.h).
struct ReapTombstones {
  LogIndex index;
  bool operator==(const ReapTombstones&) const = default;
};

// A server's own record (name, addresses), written when it is missing or
// stale: by a new leader for itself, by a follower through the leader.
struct SetMember {
  Member member;  // modify_index is ignored and set on apply
  bool operator==(const SetMember&) const = default;
};

// Written by the leader when it removes a server from the configuration.
struct RemoveMember {
  std::uint64_t id = 0;
  bool operator==(const RemoveMember&) const = default;
};

// Written by the leader now and then: every replica records the digest of
// its state as of this entry, and compares `checked_digest` with what it
// recorded at the previous checkpoint, `checked_index` (Store::divergence).
// 0/0: nothing to compare (the leader's first one).
struct Checkpoint {
  LogIndex checked_index;
  std::uint64_t checked_digest = 0;
  bool operator==(const Checkpoint&) const = default;
};

// PUT /v1/snapshot (docs/snapshots.md, decision 0024): replaces the state
// with `snapshot` (Store::EncodeSnapshot's bytes, checked by the leader
// before proposing). Every replica decodes and validates it again and
// changes nothing if it does not decode; this server's members stay (they
// describe the running cluster, not the data). Indexes never go backwards:
// the Store's applied and table indexes become at least the entry's.
struct RestoreState {
  std::string snapshot;
  bool operator==(const RestoreState&) const = default;
};

// PUT /v1/snapshot of a file larger than one chunk (decision 0050): the
// checked state's bytes in bounded entries, so that no raft entry costs a
// server's loop more than a chunk's copy and checksum, then swapped in by
// RestoreStaged. The Store keeps one staging: a chunk at offset 0 starts it
// (replacing any other); every next chunk must continue it.
struct RestoreChunk {
  std::uint64_t restore_id = 0;  // chosen by the proposing leader; never 0
  std::uint64_t offset = 0;
  std::uint64_t total = 0;  // the whole state's bytes
  std::string bytes;        // at most limits::kRestoreChunkBytesMax
  bool operator==(const RestoreChunk&) const = default;
};

// Replaces the state with the staged bytes of restore `restore_id`, by
// RestoreState's rules, once they are all `total` of them.
struct RestoreStaged {
  std::uint64_t restore_id = 0;
  std::uint64_t total = 0;
  bool operator==(const RestoreStaged&) const = default;
};

// The fair acquire (docs/leadership.md "The queue", decision 0027).
// PUT ?acquire=<session>&queue: granted at once when the key is free, not in
// lock-delay and nobody waits; otherwise the session joins the key's FIFO
// queue (once: a second enqueue keeps its place and its first value).
struct KvEnqueue {
  std::string key;
  std::string value;  // written by the grant, as an acquire's body
  std::uint64_t flags = 0;
  SessionId session;
  // Stamped by the proposing leader while its own measure of an inherited
  // lock-delay window (LockDelayGuard, decision 0010) still holds the key,
  // which the replicated clock may already say has passed: this entry
  // grants nothing (no immediate acquire, no settling of the queue); the
  // leader's KvQueueGrant does once its guard lets the key go. Encoded as its
  // own tag, so entries without it are byte for byte what they were.
  bool hold = false;
  // The token to check again when the queue grants the key (decision 0038);
  // unchecked with ACLs off. A checked one has tags of its own.
  GrantAuthority authority;
  bool operator==(const KvEnqueue&) const = default;
};

// A parked waiter's client hung up (and no other request of its session for
// the key is parked there): the session leaves the key's queue. Its outcome
// says whether the session holds the key after all (a grant applied first).
// A wait that runs out proposes nothing (decision 0027's addendum).
struct KvDequeue {
  std::string key;
  SessionId session;
  bool hold = false;  // as KvEnqueue::hold: this entry grants nothing
  bool operator==(const KvDequeue&) const = default;
};

// Leader duty: the key's lock-delay window has passed and it has waiters;
// grant it to the head of its queue (a no-op if that already happened).
struct KvQueueGrant {
  std::string key;
  bool operator==(const KvQueueGrant&) const = default;
};

// etcd's Put, DeleteRange and Txn (decision 0048): one entry, applied as
// etcd 3.4 applies a txn. Every compare, nested ones included, is decided
// on the state before the entry; then the chosen branch's ops run in
// order, a Range seeing the writes before it; an op that fails (a lease
// not found, a key held by a Consul session) rolls the whole entry back.
// A Put or DeleteRange alone is a txn of one op and no compares.
struct EtcdTxn {
  EtcdTxnRequest txn;
  bool operator==(const EtcdTxn&) const = default;
};

// etcd's Compact (decision 0048 section 1): raises the replicated compact
// revision, below which no server serves a read or a watch. Refused with
// etcd's error at or below the current one ("compacted") and above the
// state's applied index ("future revision"); it changes no key.
struct EtcdCompact {
  LogIndex revision;
  bool operator==(const EtcdCompact&) const = default;
};

// ZkWrite (state/zk_tree.h): a ZooKeeper create, delete, setData, check or
// multi, applied by ZooKeeper's rules in one entry (state/store_zk.cc).
// ZkSecret (state/zk_tree.h): the session password secret, set once.

// The ACL commands (AclBootstrap, AclSetup, AclPolicySet, AclPolicyDelete,
// AclTokenSet, AclTokenDelete) are declared with the table that applies
// them, state/acl_table.h.
using CommandBody =
    std::variant<KvSet, KvCas, KvAcquire, KvRelease, KvDelete, KvDeleteTree, SessionCreate,
                 SessionDestroy, Txn, ReapTombstones, SetMember, RemoveMember, Checkpoint,
                 AclBootstrap, AclSetup, AclPolicySet, AclPolicyDelete, AclTokenSet, AclTokenDelete,
                 RestoreState, KvEnqueue, KvDequeue, KvQueueGrant, RestoreChunk, RestoreStaged,
                 EtcdTxn, EtcdCompact, ZkWrite, ZkSecret>;

struct Command {
  // The replicated clock at the proposal: where the Store's clock stood when
  // this leader took over, plus its own monotonic time since (decision 0037).
  // Lock-delay windows are measured on it.
  ClusterMs now_ms;
  CommandBody body;
  // The proposing leader's wall clock: only for what people read (history
  // times, a token's CreateTime). A wrong one shows in those and nowhere else.
  UnixMs wall_ms;
  bool operator==(const Command&) const = default;
};

// Appends the encoding of `command` to *out. Deterministic.
void EncodeCommand(const Command& command, std::string* out);
// Decodes what EncodeCommand wrote (exactly, no trailing bytes).
Result<Command> DecodeCommand(std::string_view bytes);
// Whether `bytes` (EncodeCommand's) starts as a RestoreState does: a look at
// two bytes, so a log write can tell the rare restore from the rest without
// decoding every entry. DecodeCommand still decides what they hold.
bool LooksLikeRestore(std::string_view bytes);
// The same look for a RestoreChunk or a RestoreStaged.
bool LooksLikeStagedRestore(std::string_view bytes);
// EncodeCommand's bytes for a RestoreState, less its snapshot: *head goes
// before the snapshot's bytes and *tail after them, so a writer can put a
// state of up to 64 MiB where it belongs with a single copy.
// REQUIRES: command.body holds a RestoreState.
void EncodeRestoreAround(const Command& command, std::string* head, std::string* tail);
// A RestoreState decoded as DecodeCommand would, except that its snapshot
// bytes are left out of the Command (empty) and returned as a view into
// `bytes`: a state of up to 64 MiB is not copied to be checked or matched.
// The same acceptance as DecodeCommand's for these bytes.
Result<Command> DecodeRestoreCommand(std::string_view bytes, std::string_view* snapshot);

// Short name for logs ("kv-set", "session-destroy", ...).
std::string_view CommandName(const Command& command);

}  // namespace tenure::state
