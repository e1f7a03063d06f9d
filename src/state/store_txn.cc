// Store: /v1/txn. Write transactions run the same KV operations as the
// single-op commands, with an undo journal so that any failing op rolls the
// whole transaction back (docs/consul-api.md section 4).
#include <algorithm>
#include <set>

#include "common/assert.h"
#include "common/consul_texts.h"
#include "common/strings.h"
#include "state/acquire_rule.h"
#include "state/store.h"

namespace tenure::state {

void Store::RememberForRollback(std::string_view key) {
  if (journal_ == nullptr) return;
  if (!journal_->keys.emplace(key).second) return;  // the first state is the one to restore
  JournalEntry j;
  j.key = std::string(key);
  if (auto it = kv_.find(key); it != kv_.end()) j.entry = it->second;
  if (auto it = tombstones_.find(key); it != tombstones_.end()) j.tombstone = it->second;
  journal_->entries.push_back(std::move(j));
}

Store::KvOutcome Store::ReadOp(const TxnOp& op, std::vector<TxnResultEntry>* results) const {
  KvOutcome outcome;
  const KvEntry* entry = nullptr;
  switch (op.verb) {
    case TxnVerb::kGet:
      entry = FindKv(op.key);
      if (entry == nullptr) {
        outcome.error = Status::Conflict("key " + GoQuote(op.key) + " doesn't exist");
        return outcome;
      }
      results->push_back({*entry, true});
      return outcome;
    case TxnVerb::kGetOrEmpty: {
      entry = FindKv(op.key);
      KvEntry empty;
      empty.key = op.key;
      results->push_back({entry ? *entry : empty, true});
      return outcome;
    }
    case TxnVerb::kGetTree:
      for (const KvEntry* e : ListKv(op.key)) results->push_back({*e, true});
      return outcome;
    case TxnVerb::kCheckIndex:
      entry = FindKv(op.key);
      if (entry == nullptr) {
        outcome.error = Status::Conflict(consul::TxnCheckMissing("index", op.key));
      } else if (entry->modify_index != op.index) {
        outcome.error = Status::Conflict("failed index check for key " + GoQuote(op.key) +
                                         ", current modify index " +
                                         std::to_string(entry->modify_index.value()) +
                                         " != " + std::to_string(op.index.value()));
      }
      break;
    case TxnVerb::kCheckSession:
      entry = FindKv(op.key);
      if (entry == nullptr) {
        outcome.error = Status::Conflict(consul::TxnCheckMissing("session", op.key));
      } else if (entry->session != op.session) {
        outcome.error = Status::Conflict("failed session check for key " + GoQuote(op.key) +
                                         ", current session " + GoQuote(entry->session.view()) +
                                         " != " + GoQuote(op.session.view()));
      }
      break;
    case TxnVerb::kCheckFence:
      entry = FindKv(op.key);
      if (entry == nullptr) {
        outcome.error = Status::Conflict(consul::TxnCheckMissing("fence", op.key));
      } else if (entry->session.empty()) {
        outcome.error = Status::Conflict("failed fence check for key " + GoQuote(op.key) +
                                         ", lock is not held");
      } else if (entry->fence != op.index) {
        outcome.error = Status::Conflict("failed fence check for key " + GoQuote(op.key) +
                                         ", current fence " + std::to_string(entry->fence.value()) +
                                         " != " + std::to_string(op.index.value()));
      }
      break;
    case TxnVerb::kCheckNotExists:
      if (FindKv(op.key) != nullptr) {
        outcome.error = Status::Conflict("key " + GoQuote(op.key) + " exists");
      }
      return outcome;
    default:
      TENURE_ASSERT(false && "ReadOp called with a write verb");
  }
  if (outcome.error.ok() && entry != nullptr) results->push_back({*entry, false});
  return outcome;
}

TxnOutcome Store::ReadTxn(const std::vector<TxnOp>& ops) const {
  TxnOutcome txn;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    TENURE_ASSERT(!IsWriteVerb(ops[i].verb));
    KvOutcome outcome = ReadOp(ops[i], &txn.results);
    if (!outcome.error.ok()) txn.errors.push_back({i, std::string(outcome.error.message())});
  }
  if (!txn.ok()) txn.results.clear();
  return txn;
}

void Store::ApplyTxn(const Txn& c, LogIndex index, ApplyResult* result) {
  TxnOutcome& txn = result->txn;
  RefuseLockDelayedTxnOps(
      c, [this](std::string_view key) { return InLockDelay(key); }, &txn);
  if (!txn.ok()) return;

  Journal journal;
  journal_ = &journal;
  // A txn is one raft entry, so every grant in it gets the same fencing
  // token; a second new grant of a key in the same txn would hand out a
  // token no larger than the first one's. Refuse it (docs/fencing.md).
  std::set<std::string, std::less<>> granted_keys;
  const TxnMarks marks = MarkTxn();
  // What the txn does to queues, done once it cannot roll back any more: a
  // delete drops the key's queue, an unlock hands the key to its head, a
  // waiter's unlock leaves the queue (first, so that an unlock by the holder
  // in the same txn does not hand the key to a waiter that is leaving).
  struct QueueAction {
    bool drop = false;
    bool tree = false;
    std::string key;
  };
  std::vector<QueueAction> queue_actions;
  std::vector<std::pair<std::string, SessionId>> queue_leaves;
  // The holder's choice of successor (decision 0027's second addendum): a
  // key its holder unlocked earlier in this txn may be locked for one of its
  // waiters, which leaves the queue at commit (after the leaves, before the
  // hand-offs to heads); the rest of the queue keeps its order.
  std::set<std::string, std::less<>> unlocked_by_holder;
  std::vector<std::pair<std::string, SessionId>> handoffs;
  auto leaving = [&](const std::string& key, const SessionId& session) {
    return std::find(queue_leaves.begin(), queue_leaves.end(), std::make_pair(key, session)) !=
           queue_leaves.end();
  };

  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    const TxnOp& op = c.ops[i];
    KvOutcome outcome;
    std::string failure;  // Consul's text for a false outcome
    switch (op.verb) {
      case TxnVerb::kSet:
        outcome = SetKv(op.key, op.value, op.flags, index);
        break;
      case TxnVerb::kCas:
        outcome = CasKv(op.key, op.value, op.flags, op.index, index);
        failure = consul::TxnCasStale(op.key);
        break;
      case TxnVerb::kLock: {
        const KvEntry* current = FindKv(op.key);
        bool new_grant = current == nullptr || current->session != op.session;
        bool chosen = false;  // a waiter the holder chose, after its unlock
        if (QueueBlocks(op.key, op.session)) {
          chosen = unlocked_by_holder.count(op.key) != 0 && current != nullptr &&
                   current->session.empty() && IsQueued(op.key, op.session) &&
                   !leaving(op.key, op.session) && granted_keys.count(op.key) == 0;
          if (!chosen) {
            // Waiters in the key's queue come first (decision 0027).
            txn.errors.push_back({i, consul::TxnLockHeld(op.key)});
            continue;
          }
          // The chosen waiter's own token is asked again, as for any queued
          // grant (decision 0038).
          if (!GrantAllowed(FindWaiter(op.key, op.session)->authority, op.key)) {
            txn.errors.push_back({i, "failed to lock key " + GoQuote(op.key) +
                                         ", the waiter's ACL token no longer allows it"});
            continue;
          }
        }
        if (new_grant && granted_keys.count(op.key) != 0) {
          txn.errors.push_back({i, "failed to lock key " + GoQuote(op.key) +
                                       ", it was already granted in this transaction"});
          continue;
        }
        outcome = AcquireKv(op.key, op.value, op.flags, op.session, index);
        failure = consul::TxnLockHeld(op.key);
        if (outcome.error.ok() && outcome.ok && outcome.fence == index) granted_keys.insert(op.key);
        if (chosen && outcome.error.ok() && outcome.ok) {
          unlocked_by_holder.erase(op.key);
          handoffs.emplace_back(op.key, op.session);
          // The grant replaces the head's that the holder's unlock queued.
          for (auto a = queue_actions.rbegin(); a != queue_actions.rend(); ++a) {
            if (!a->drop && a->key == op.key) {
              queue_actions.erase(std::next(a).base());
              break;
            }
          }
        }
        break;
      }
      case TxnVerb::kUnlock:
        if (std::any_of(handoffs.begin(), handoffs.end(),
                        [&](const auto& h) { return h.first == op.key; })) {
          // Its release would grant the head too: a second new holder, and
          // token, in one entry (docs/fencing.md).
          txn.errors.push_back({i, "failed to unlock key " + GoQuote(op.key) +
                                       ", it was handed to a waiter in this transaction"});
          continue;
        }
        outcome = ReleaseKv(op.key, op.value, op.flags, op.session, index);
        failure = consul::TxnUnlockNotHeld(op.key);
        if (outcome.error.ok() && outcome.ok) {
          queue_actions.push_back({false, false, op.key});
          unlocked_by_holder.insert(op.key);
        } else if (outcome.error.ok() && IsQueued(op.key, op.session)) {
          // A waiter gives up its place (decision 0027's addendum): the op
          // succeeds, writes nothing, and reports the key as it stands (an
          // empty entry if a delete left only its queue).
          queue_leaves.emplace_back(op.key, op.session);
          const KvEntry* entry = FindKv(op.key);
          KvEntry shown;
          shown.key = op.key;
          txn.results.push_back({entry != nullptr ? *entry : shown, false});
          continue;
        }
        break;
      case TxnVerb::kDelete:
        unlocked_by_holder.erase(op.key);
        DeleteEntry(op.key, index);
        queue_actions.push_back({true, false, op.key});
        continue;  // no result
      case TxnVerb::kDeleteTree:
        std::erase_if(unlocked_by_holder,
                      [&](const std::string& k) { return StartsWith(k, op.key); });
        DeleteKvTree(op.key, index);
        queue_actions.push_back({true, true, op.key});
        continue;
      case TxnVerb::kDeleteCas:
        if (!DeleteKvCas(op.key, op.index, index)) {
          txn.errors.push_back({i, consul::TxnDeleteCasStale(op.key)});
        } else {
          unlocked_by_holder.erase(op.key);
          queue_actions.push_back({true, false, op.key});
        }
        continue;
      default:
        outcome = ReadOp(op, &txn.results);
        if (!outcome.error.ok()) txn.errors.push_back({i, std::string(outcome.error.message())});
        continue;
    }
    if (!outcome.error.ok()) {
      txn.errors.push_back({i, std::string(outcome.error.message())});
    } else if (!outcome.ok) {
      txn.errors.push_back({i, std::move(failure)});
    } else {
      // Write verbs report the resulting entry without its value.
      const KvEntry* entry = FindKv(op.key);
      TENURE_ASSERT(entry != nullptr);
      txn.results.push_back({*entry, false});
    }
  }
  journal_ = nullptr;

  if (txn.ok()) {
    for (const auto& [key, session] : queue_leaves) LeaveQueue(key, session, index, result);
    for (const auto& [key, session] : handoffs) HandOffToWaiter(key, session, index, result);
    for (const QueueAction& a : queue_actions) {
      if (!a.drop) {
        SettleQueue(a.key, index, result);
      } else if (a.tree) {
        DropQueuesUnder(a.key, index, result);
      } else {
        DropQueue(a.key, index, result);
      }
    }
    return;
  }
  txn.results.clear();
  RollBack(journal, marks);
}

Store::TxnMarks Store::MarkTxn() const {
  return {kv_index_, changes_.keys.size(), changes_.events.size(), holder_changes_.size()};
}

void Store::RollBack(const Journal& journal, const TxnMarks& marks) {
  for (auto it = journal.entries.rbegin(); it != journal.entries.rend(); ++it) {
    auto current = kv_.find(it->key);
    SessionId current_session = current != kv_.end() ? current->second.session : SessionId();
    SessionId old_session = it->entry ? it->entry->session : SessionId();
    SetHolder(it->key, current_session, old_session);
    if (it->entry) {
      kv_.insert_or_assign(it->key, *it->entry);
    } else if (current != kv_.end()) {
      kv_.erase(current);
    }
    if (it->tombstone) {
      tombstones_.insert_or_assign(it->key, *it->tombstone);
    } else {
      tombstones_.erase(it->key);
    }
  }
  for (auto it = journal.zk_nodes.rbegin(); it != journal.zk_nodes.rend(); ++it) {
    if (it->second) {
      zk_nodes_.insert_or_assign(it->first, *it->second);
    } else {
      zk_nodes_.erase(it->first);
    }
  }
  kv_index_ = marks.kv_index;
  changes_.keys.resize(marks.changes);
  changes_.key_changes.resize(marks.changes);
  changes_.events.resize(marks.events);
  holder_changes_.resize(marks.holder_changes);
}

}  // namespace tenure::state
