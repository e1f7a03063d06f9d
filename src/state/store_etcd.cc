// Store: etcd's txn (EtcdTxn, decision 0048 sections 1 and 2), applied as
// etcd 3.4's applierV3backend applies one, on the keys and holders Consul's
// API shares: a lease is a numbered session, so a Put with a lease is an
// acquire by it and a key is held by at most one session of either kind.
#include <string>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "state/etcd_range.h"
#include "state/numbered_session.h"
#include "state/store.h"

namespace tenure::state {
namespace {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;

// Every compare of `txn` and of the nested txns its chosen branch runs,
// decided on the state before the entry, in the order the ops will consume
// them (etcd's compareToPath).
void DecidePaths(const Store& store, const EtcdTxnRequest& txn, std::vector<bool>* paths) {
  bool holds = true;
  for (const EtcdCompare& c : txn.compare) {
    if (!CompareHolds(c, store.ListRange(c.range))) {
      holds = false;
      break;
    }
  }
  paths->push_back(holds);
  for (const EtcdRequestOp& op : holds ? txn.success : txn.failure) {
    if (op.kind == EtcdRequestOp::Kind::kTxn && op.txn.size() == 1) {
      DecidePaths(store, op.txn.front(), paths);
    }
  }
}

EtcdError HeldByConsul(const std::string& key, const SessionId& holder) {
  return etcd_texts::Error(
      GrpcCode::kFailedPrecondition,
      "tenure: key " + GoQuote(key) + " is held by Consul session " + std::string(holder.view()));
}

EtcdError InLockDelayWindow(const std::string& key) {
  return etcd_texts::Error(GrpcCode::kFailedPrecondition,
                           "tenure: key " + GoQuote(key) +
                               " is in a lock-delay window; a lease may take it once it passes");
}

EtcdError QueueWaiting(const std::string& key) {
  return etcd_texts::Error(GrpcCode::kFailedPrecondition,
                           "tenure: key " + GoQuote(key) +
                               " has waiters in its fair-acquire queue; they are served first");
}

}  // namespace

void Store::ApplyEtcdTxn(const EtcdTxn& c, LogIndex index, ApplyResult* result) {
  std::vector<bool> paths;
  DecidePaths(*this, c.txn, &paths);
  Journal journal;
  journal_ = &journal;
  const TxnMarks marks = MarkTxn();
  EtcdAfterCommit after;
  std::size_t next_path = 0;
  EtcdError error = RunEtcdTxn(c.txn, paths, &next_path, index, &after, &result->etcd);
  journal_ = nullptr;
  if (error.ok()) {
    // Queues change only once the entry cannot roll back, as in ApplyTxn.
    for (const std::string& key : after.deleted) DropQueue(key, index, result);
    for (const std::string& key : after.released) SettleQueue(key, index, result);
    return;
  }
  RollBack(journal, marks);
  result->etcd = EtcdTxnResponse();
  result->etcd_error = std::move(error);
  result->ok = false;
}

EtcdError Store::RunEtcdTxn(const EtcdTxnRequest& txn, const std::vector<bool>& paths,
                            std::size_t* next_path, LogIndex index, EtcdAfterCommit* after,
                            EtcdTxnResponse* out) {
  out->succeeded = paths[(*next_path)++];
  for (const EtcdRequestOp& op : out->succeeded ? txn.success : txn.failure) {
    EtcdResponseOp& answer = out->responses.emplace_back();
    answer.kind = op.kind;
    switch (op.kind) {
      case EtcdRequestOp::Kind::kRange:
        answer.range = EvaluateRange(ListRange(op.range.range), op.range);
        break;
      case EtcdRequestOp::Kind::kPut:
        if (EtcdError e = EtcdPut(op.put, index, after, &answer.put); !e.ok()) return e;
        after->changed = true;
        break;
      case EtcdRequestOp::Kind::kDeleteRange:
        EtcdDeleteRange(op.delete_range, index, after, &answer.delete_range);
        if (answer.delete_range.deleted > 0) after->changed = true;
        break;
      case EtcdRequestOp::Kind::kTxn:
        if (EtcdError e = RunEtcdTxn(op.txn.front(), paths, next_path, index, after,
                                     &answer.txn.emplace_back());
            !e.ok()) {
          return e;
        }
        break;
      case EtcdRequestOp::Kind::kEmpty:
        break;  // refused before it applies (CheckEtcdTxn)
    }
    if (op.kind != EtcdRequestOp::Kind::kTxn) {
      answer.revision =
          static_cast<std::int64_t>(after->changed ? index.value() : index.value() - 1);
    }
  }
  return {};
}

// The holder rules of decision 0048 section 2: a Put with lease L is an
// acquire by L's session (kept when L holds the key already; refused where
// a Consul acquire would be: held by a Consul session, lock-delay, waiters;
// moved from another lease in this one entry); a Put without a lease lets an
// etcd lease go but keeps a Consul session; ignore_lease keeps any holder.
// Every Put is a new revision, as etcd's, even with the value unchanged.
EtcdError Store::EtcdPut(const EtcdPutRequest& put, LogIndex index, EtcdAfterCommit* after,
                         EtcdPutResponse* out) {
  auto it = kv_.find(put.key);
  const KvEntry* existing = it == kv_.end() ? nullptr : &it->second;
  if ((put.ignore_value || put.ignore_lease) && existing == nullptr) {
    return etcd_texts::KeyNotFound();
  }
  KvEntry entry;
  entry.key = put.key;
  entry.value = put.ignore_value ? existing->value : put.value;
  if (existing != nullptr) {
    entry.flags = existing->flags;
    entry.lock_index = existing->lock_index;
    entry.session = existing->session;
    entry.fence = existing->fence;
    if (put.prev_kv) {
      out->has_prev_kv = true;
      out->prev_kv = ToEtcdKeyValue(*existing);
    }
  }
  if (!put.ignore_lease) {
    if (put.lease != 0) {
      const SessionId lease = NumberedSessionId(put.lease);
      if (FindSession(lease) == nullptr) return etcd_texts::LeaseNotFound();
      if (entry.session != lease) {
        if (!entry.session.empty() && !IsNumberedSession(entry.session)) {
          return HeldByConsul(put.key, entry.session);
        }
        if (InLockDelay(put.key)) return InLockDelayWindow(put.key);
        if (QueueBlocks(put.key, lease)) return QueueWaiting(put.key);
        if (!entry.session.empty()) {
          // Moved from another lease: a release and a grant in one entry,
          // so the history ends the old grant as a handoff (decision 0048
          // section 2). One write, so the version grows by one.
          KvEntry released = entry;
          released.session = SessionId();
          released.fence = LogIndex();
          NoteHolderChange(put.key, existing, &released);
        }
        entry.session = lease;
        entry.fence = index;  // a new grant: its token is its own raft index
        entry.lock_index += 1;
      }
    } else if (IsNumberedSession(entry.session)) {
      entry.session = SessionId();
      entry.fence = LogIndex();
      after->released.push_back(put.key);
    }
  }
  PutEntry(std::move(entry), index);
  return {};
}

void Store::EtcdDeleteRange(const EtcdDeleteRangeRequest& request, LogIndex index,
                            EtcdAfterCommit* after, EtcdDeleteRangeResponse* out) {
  std::vector<std::string> keys;
  for (const KvEntry* entry : ListRange(request.range)) {
    if (request.prev_kv) out->prev_kvs.push_back(ToEtcdKeyValue(*entry));
    keys.push_back(entry->key);
  }
  for (const std::string& key : keys) {
    DeleteEntry(key, index);
    after->deleted.push_back(key);
  }
  out->deleted = static_cast<std::int64_t>(keys.size());
}

// etcd's kvstore.compact rules on our revisions: at or below the current
// compact revision is compacted; this entry's own revision or later is the
// future (the client cannot have seen it). Nothing else changes: the Store
// keeps no history, the servers' windows drop what is below it.
void Store::ApplyEtcdCompact(const EtcdCompact& c, ApplyResult* result) {
  if (c.revision <= compact_revision_) {
    result->etcd_error = etcd_texts::Compacted();
  } else if (c.revision >= applied_index_) {
    result->etcd_error = etcd_texts::FutureRevision();
  } else {
    compact_revision_ = c.revision;
    return;
  }
  result->ok = false;
}

}  // namespace tenure::state
