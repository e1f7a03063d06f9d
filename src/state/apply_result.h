// What one Store::Apply answers (ApplyResult: outcomes, errors, the
// fencing token, what queues and sessions did, etcd's and ZooKeeper's
// answers) and what it touched (Changes: for waking blocking queries and
// watches). Pure data, apart from the Store so that store.h stays the
// Store's own interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/etcd_texts.h"
#include "common/status.h"
#include "common/types.h"
#include "state/etcd_request.h"
#include "state/kv_event.h"
#include "state/lock_history.h"
#include "state/txn.h"
#include "state/types.h"
#include "state/zk_tree.h"

namespace tenure::state {

// One waiter in a key's fair-acquire queue (decision 0027).
struct QueueWaiter {
  SessionId session;
  std::string value;  // what the grant writes, as the acquire's body
  std::uint64_t flags = 0;
  UnixMs since;              // the enqueueing entry's wall clock (Command::wall_ms)
  LogIndex enqueue_index;    // the entry that enqueued it
  GrantAuthority authority;  // checked again at the grant (decision 0038)
  bool operator==(const QueueWaiter&) const = default;
};

// What an apply did to a queue's waiter, for the server that parked its
// request: granted (holds the key with `fence`) or left the queue without it.
struct QueueEvent {
  enum class Kind : std::uint8_t { kGranted, kLeft };
  std::string key;
  SessionId session;
  Kind kind = Kind::kGranted;
  LogIndex fence;  // kGranted: the new holder's token
  bool operator==(const QueueEvent&) const = default;
};

struct ApplyResult {
  // Apply-time errors that Consul reports as HTTP 500, e.g. `invalid session
  // "x"` or `missing session`. Domain outcomes (lost CAS, lock held) are not
  // errors: they set ok = false.
  Status status;
  // The index this command applied at: its entry's revision, which etcd's
  // answers carry in their header (decision 0048 section 1).
  LogIndex index;
  bool ok = true;             // cas/acquire/release/delete-cas outcome; Consul's true/false
  bool lock_delayed = false;  // acquire refused because the key is in lock-delay
  LogIndex fence;             // acquire: the holder's fencing token
  TxnOutcome txn;             // Txn commands
  // What this apply did to the sessions table, for the leader's session
  // timers: they follow what was applied, not what was proposed.
  SessionId session_created;  // the id of a session created, empty if none
  DurationNs session_created_ttl_ns = 0;
  SessionId session_destroyed;  // the id a SessionDestroy ended (known or not)
  // Every grant and end of a lock this apply made, in order, for the
  // server's log of leadership transitions (docs/logs.md).
  std::vector<LockEvent> lock_events;
  // KvEnqueue: the session waits in the key's queue (ok = false, no error).
  bool queued = false;
  // Every grant to a waiter and every waiter that left a queue, in order.
  std::vector<QueueEvent> queue_events;
  // EtcdTxn: what its ops answered, or (ok = false) the etcd error that
  // rolled it back, with etcd's code and text.
  EtcdTxnResponse etcd;
  etcd_texts::EtcdError etcd_error;
  // ZkWrite: each op's outcome, in order. A multi that failed (ok = false)
  // answers ZooKeeper's way: kOk for the ops before the one that failed,
  // its code, then kRuntimeInconsistency; nothing of it applied.
  std::vector<ZkOpResult> zk;
  // ZkWrite refused whole before any op (its session ended): no zk results.
  ZkCode zk_error = ZkCode::kOk;
};

// How an apply changed one key: made it, wrote it again, or deleted it.
enum class KeyChange : std::uint8_t { kCreated, kChanged, kDeleted };

// What an apply touched, for waking blocking queries.
struct Changes {
  std::vector<std::string> keys;    // KV keys written or deleted (may repeat)
  bool sessions = false;            // the sessions table changed
  bool acl = false;                 // tokens or policies changed (resolved tokens are stale)
  std::vector<std::string> queues;  // keys whose fair-acquire queue changed (may repeat)
  bool everything = false;          // the whole state was replaced (snapshot restore)
  // Every key change in apply order, only while the Store records events
  // (RecordEvents); after a restore, those since it (Store::replaced_at()).
  std::vector<KvEvent> events;
  // How each of `keys` changed, index for index, in apply order: a
  // ZooKeeper watch fires at each write as ZooKeeper's do, not once per
  // batch (zk/client_port.cc).
  std::vector<KeyChange> key_changes;
};

}  // namespace tenure::state
