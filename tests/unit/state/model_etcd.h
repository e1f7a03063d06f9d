// ModelEtcd: the reference model's etcd txn (EtcdTxn, decision 0048
// sections 1 to 3), written from the contract, not from store_etcd.cc:
// etcd 3.4's applierV3backend.Txn (etcdserver/apply.go: compareToPath
// decides every compare on the state before the entry, checkPut checks
// every Put of the chosen path on that state, applyTxn runs the ops in
// order, a Range seeing the writes before it) and tenure's holder rules
// (a lease is a numbered session; a Put with a lease acquires the key for
// it, refused where a Consul acquire would be). Naive: copies instead of
// undo, linear scans, a Range answered by its own sort and filters. The
// refusals before proposing are state/etcd_check.h's (CheckEtcdTxn, tested
// on its own in etcd_check_test.cc), reused here. Test-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/etcd_texts.h"
#include "state/etcd_check.h"
#include "state/etcd_request.h"
#include "unit/state/model_store.h"

namespace tenure::state::testutil {

// A lease's session id, from decision 0048 section 3's definition: the
// int64's 16 lowercase hex digits (two's complement) as the low half of a
// UUID whose upper half is zero.
inline SessionId ModelLeaseId(std::int64_t lease) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(static_cast<std::uint64_t>(lease)));
  const std::string digits(hex);
  return SessionId("00000000-0000-0000-" + digits.substr(0, 4) + "-" + digits.substr(4));
}

// The lease number of a holder id; nullopt for a Consul session (or none).
inline std::optional<std::int64_t> ModelLeaseNumber(const SessionId& holder) {
  const std::string id = holder.str();
  const std::string zero = "00000000-0000-0000-";
  if (id.size() != 36 || id.compare(0, zero.size(), zero) != 0 || id[23] != '-') {
    return std::nullopt;
  }
  std::uint64_t n = 0;
  for (std::size_t i = zero.size(); i < id.size(); ++i) {
    if (i == 23) continue;
    const char c = id[i];
    const bool digit = c >= '0' && c <= '9';
    if (!digit && !(c >= 'a' && c <= 'f')) return std::nullopt;
    n = n * 16 + static_cast<std::uint64_t>(digit ? c - '0' : c - 'a' + 10);
  }
  return static_cast<std::int64_t>(n);
}

class ModelEtcd {
 public:
  static void Apply(ModelStore& m, const EtcdTxnRequest& txn, LogIndex index, ModelResult* r) {
    r->is_etcd = true;
    r->queue_events_by_key = true;
    if (const etcd_texts::EtcdError refused = CheckEtcdTxn(txn); !refused.ok()) {
      r->error = refused.message;  // refused whole, as the API would have
      return;
    }
    const ModelStore before = m;
    const Path path = Decide(before, txn);
    // etcd checks every Put of the path before any op runs; tenure's holder
    // refusals come up as the ops run. Which comes first when both fail in
    // different ops no document says: either is accepted.
    const std::optional<ModelEtcdError> checked = CheckPuts(before, txn, path);
    Run run{m, index, r, {}, std::nullopt};
    EtcdTxnResponse response;
    r->check_ok = true;
    if (!run.Txn(txn, path, &response)) {
      m = before;
      r->changed_keys.clear();
      r->ok = false;
      r->etcd_errors.push_back(*run.error);
      if (checked) r->etcd_errors.push_back(*checked);
      return;
    }
    if (checked) {
      std::fputs("model: etcd's checkPut failed but the ops ran\n", stderr);
      std::abort();
    }
    // Committed: queues change now, in op order (deleted keys drop theirs,
    // a key a lease let go goes to its queue's head).
    const ModelStore::Holders after_ops = m.HolderMap();
    for (const After& a : run.after) {
      if (a.deleted) {
        m.DropQueue(a.key, r);
      } else {
        m.Settle(a.key, index, r);
      }
    }
    ModelStore::DiffHolders(after_ops, m.HolderMap(), m.kv, EndCause::kNone, &m.history_events_);
    r->ok = true;
    r->etcd = std::move(response);
  }

 private:
  // The chosen branch of a txn and, in op order, of the txns nested in it.
  struct Path {
    bool succeeded = false;
    std::vector<Path> nested;
  };
  struct After {
    std::string key;
    bool deleted = false;  // else: a lease let it go
  };

  // Decision 0048 section 2's ranges: an empty end is the key alone, an end
  // of one zero byte every key from `key` on, else [key, end).
  static bool Inside(const KeyRange& range, const std::string& key) {
    if (range.end.empty()) return key == range.key;
    if (key < range.key) return false;
    return range.end == std::string(1, '\0') || key < range.end;
  }

  static std::vector<const KvEntry*> InRange(const ModelStore& m, const KeyRange& range) {
    std::vector<const KvEntry*> out;
    for (const auto& [key, e] : m.kv) {
      if (Inside(range, key)) out.push_back(&e);
    }
    return out;
  }

  static std::int64_t LeaseOf(const KvEntry& e) { return ModelLeaseNumber(e.session).value_or(0); }

  static EtcdKeyValue ToKv(const KvEntry& e, bool keys_only) {
    EtcdKeyValue kv;
    kv.key = e.key;
    kv.create_revision = static_cast<std::int64_t>(e.create_index.value());
    kv.mod_revision = static_cast<std::int64_t>(e.modify_index.value());
    kv.version = static_cast<std::int64_t>(e.version);
    if (!keys_only) kv.value = e.value;
    kv.lease = LeaseOf(e);
    return kv;
  }

  // etcd's compareKV: the entry against the compare's operand, where a
  // missing key has zero revisions, version and lease.
  static int Order(const EtcdCompare& c, const KvEntry* e) {
    auto order = [](std::int64_t a, std::int64_t b) { return a < b ? -1 : (a > b ? 1 : 0); };
    const KvEntry none;
    const KvEntry& x = e != nullptr ? *e : none;
    switch (c.target) {
      case EtcdCompareTarget::kValue: {
        const int o = x.value.compare(c.value);
        return o < 0 ? -1 : (o > 0 ? 1 : 0);
      }
      case EtcdCompareTarget::kVersion:
        return order(static_cast<std::int64_t>(x.version), c.number);
      case EtcdCompareTarget::kCreate:
        return order(static_cast<std::int64_t>(x.create_index.value()), c.number);
      case EtcdCompareTarget::kMod:
        return order(static_cast<std::int64_t>(x.modify_index.value()), c.number);
      case EtcdCompareTarget::kLease:
        return order(LeaseOf(x), c.number);
    }
    return 0;
  }

  static bool Holds(const EtcdCompare& c, const KvEntry* e) {
    const int o = Order(c, e);
    switch (c.result) {
      case EtcdCompareResult::kEqual:
        return o == 0;
      case EtcdCompareResult::kNotEqual:
        return o != 0;
      case EtcdCompareResult::kGreater:
        return o > 0;
      case EtcdCompareResult::kLess:
        return o < 0;
    }
    return true;
  }

  // etcd's applyCompare: every key of the range must pass; no key compares
  // as a missing one, except that a value compare then fails.
  static bool CompareHolds(const ModelStore& m, const EtcdCompare& c) {
    const std::vector<const KvEntry*> entries = InRange(m, c.range);
    if (entries.empty()) return c.target != EtcdCompareTarget::kValue && Holds(c, nullptr);
    for (const KvEntry* e : entries) {
      if (!Holds(c, e)) return false;
    }
    return true;
  }

  static const std::vector<EtcdRequestOp>& Branch(const EtcdTxnRequest& txn, const Path& path) {
    return path.succeeded ? txn.success : txn.failure;
  }

  static Path Decide(const ModelStore& m, const EtcdTxnRequest& txn) {
    Path path;
    path.succeeded = std::all_of(txn.compare.begin(), txn.compare.end(),
                                 [&](const EtcdCompare& c) { return CompareHolds(m, c); });
    for (const EtcdRequestOp& op : Branch(txn, path)) {
      if (op.kind == EtcdRequestOp::Kind::kTxn) path.nested.push_back(Decide(m, op.txn.front()));
    }
    return path;
  }

  static ModelEtcdError Exact(etcd_texts::GrpcCode code, std::string text) {
    return ModelEtcdError{code, std::move(text), true, ""};
  }

  // etcd's checkPut on `m`: ignore_value and ignore_lease need the key, a
  // lease must exist.
  static std::optional<ModelEtcdError> CheckPut(const ModelStore& m, const EtcdPutRequest& put) {
    if ((put.ignore_value || put.ignore_lease) && m.Find(put.key) == nullptr) {
      return Exact(etcd_texts::GrpcCode::kInvalidArgument, "etcdserver: key not found");
    }
    if (put.lease != 0 && m.sessions.count(ModelLeaseId(put.lease)) == 0) {
      return Exact(etcd_texts::GrpcCode::kNotFound, "etcdserver: requested lease not found");
    }
    return std::nullopt;
  }

  static std::optional<ModelEtcdError> CheckPuts(const ModelStore& m, const EtcdTxnRequest& txn,
                                                 const Path& path) {
    std::size_t nested = 0;
    for (const EtcdRequestOp& op : Branch(txn, path)) {
      std::optional<ModelEtcdError> e;
      if (op.kind == EtcdRequestOp::Kind::kTxn) {
        e = CheckPuts(m, op.txn.front(), path.nested[nested++]);
      } else if (op.kind == EtcdRequestOp::Kind::kPut) {
        e = CheckPut(m, op.put);
      }
      if (e) return e;
    }
    return std::nullopt;
  }

  // The ops of one entry on the model itself.
  struct Run {
    ModelStore& m;
    LogIndex index;
    ModelResult* r;
    std::vector<After> after;
    std::optional<ModelEtcdError> error;
    // etcd's applier: a write txn's ops answer at its begin revision until
    // one changes a key, at the new revision from then on.
    bool changed = false;

    std::int64_t Revision() const {
      return static_cast<std::int64_t>(changed ? index.value() : index.value() - 1);
    }

    bool Txn(const EtcdTxnRequest& txn, const Path& path, EtcdTxnResponse* out) {
      out->succeeded = path.succeeded;
      std::size_t nested = 0;
      for (const EtcdRequestOp& op : Branch(txn, path)) {
        // The history sees each write's holder changes (a key granted, then
        // deleted by a later op, was granted); a nested txn's, its own ops'.
        const ModelStore::Holders before_op = m.HolderMap();
        struct DiffAfter {
          ModelStore& w;
          const ModelStore::Holders& before;
          bool nested;
          ~DiffAfter() {
            if (nested) return;
            ModelStore::DiffHolders(before, w.HolderMap(), w.kv, EndCause::kNone,
                                    &w.history_events_);
          }
        } diff_after{m, before_op, op.kind == EtcdRequestOp::Kind::kTxn};
        EtcdResponseOp& answer = out->responses.emplace_back();
        answer.kind = op.kind;
        switch (op.kind) {
          case EtcdRequestOp::Kind::kRange:
            answer.range = Range(op.range);
            answer.revision = Revision();
            break;
          case EtcdRequestOp::Kind::kPut:
            if (!Put(op.put, &answer.put)) return false;
            changed = true;
            answer.revision = Revision();
            break;
          case EtcdRequestOp::Kind::kDeleteRange:
            DeleteRange(op.delete_range, &answer.delete_range);
            changed = changed || answer.delete_range.deleted > 0;
            answer.revision = Revision();
            break;
          case EtcdRequestOp::Kind::kTxn:
            if (!Txn(op.txn.front(), path.nested[nested++], &answer.txn.emplace_back())) {
              return false;
            }
            break;
          case EtcdRequestOp::Kind::kEmpty:
            std::fputs("model: an empty op passed CheckEtcdTxn\n", stderr);
            std::abort();
        }
      }
      return true;
    }

    // etcd's Range: count is the whole range; then the revision filters,
    // the sort (ascending by default for a target other than the key; ties
    // in key order, as Go's sort leaves so few keys), the limit.
    EtcdRangeResponse Range(const EtcdRangeRequest& q) const {
      EtcdRangeResponse out;
      std::vector<KvEntry> entries;
      for (const KvEntry* e : InRange(m, q.range)) entries.push_back(*e);
      out.count = static_cast<std::int64_t>(entries.size());
      if (q.count_only) return out;
      // Unless the request names a sort order or a revision filter, etcd's
      // store hands over only the first limit + 1 keys (in key order), and
      // a sort by another target sorts just those.
      const bool filtered = q.min_mod_revision != 0 || q.max_mod_revision != 0 ||
                            q.min_create_revision != 0 || q.max_create_revision != 0;
      if (q.sort_order == EtcdSortOrder::kNone && !filtered && q.limit > 0 &&
          entries.size() > static_cast<std::size_t>(q.limit) + 1) {
        entries.resize(static_cast<std::size_t>(q.limit) + 1);
      }
      auto rev = [](LogIndex i) { return static_cast<std::int64_t>(i.value()); };
      std::erase_if(entries, [&](const KvEntry& e) {
        return (q.min_mod_revision != 0 && rev(e.modify_index) < q.min_mod_revision) ||
               (q.max_mod_revision != 0 && rev(e.modify_index) > q.max_mod_revision) ||
               (q.min_create_revision != 0 && rev(e.create_index) < q.min_create_revision) ||
               (q.max_create_revision != 0 && rev(e.create_index) > q.max_create_revision);
      });
      EtcdSortOrder order = q.sort_order;
      if (order == EtcdSortOrder::kNone && q.sort_target != EtcdSortTarget::kKey) {
        order = EtcdSortOrder::kAscend;
      }
      auto less = [&](const KvEntry& a, const KvEntry& b) {
        switch (q.sort_target) {
          case EtcdSortTarget::kKey:
            return a.key < b.key;
          case EtcdSortTarget::kVersion:
            return a.version < b.version;
          case EtcdSortTarget::kCreate:
            return a.create_index < b.create_index;
          case EtcdSortTarget::kMod:
            return a.modify_index < b.modify_index;
          case EtcdSortTarget::kValue:
            return a.value < b.value;
        }
        return false;
      };
      if (order == EtcdSortOrder::kAscend) std::stable_sort(entries.begin(), entries.end(), less);
      if (order == EtcdSortOrder::kDescend) {
        std::stable_sort(entries.begin(), entries.end(),
                         [&](const KvEntry& a, const KvEntry& b) { return less(b, a); });
      }
      if (q.limit > 0 && entries.size() > static_cast<std::size_t>(q.limit)) {
        entries.resize(static_cast<std::size_t>(q.limit));
        out.more = true;
      }
      for (const KvEntry& e : entries) out.kvs.push_back(ToKv(e, q.keys_only));
      return out;
    }

    bool Fail(ModelEtcdError e) {
      error = std::move(e);
      return false;
    }

    // A Put: a new revision and version always; the holder rules of
    // decision 0048 section 2.
    bool Put(const EtcdPutRequest& put, EtcdPutResponse* out) {
      if (std::optional<ModelEtcdError> e = CheckPut(m, put)) return Fail(*e);
      const KvEntry* old = m.Find(put.key);
      KvEntry e;
      if (old != nullptr) {
        e = *old;
        if (put.prev_kv) {
          out->has_prev_kv = true;
          out->prev_kv = ToKv(*old, false);
        }
      } else {
        e.key = put.key;
        e.create_index = index;
      }
      if (!put.ignore_value) e.value = put.value;
      const std::string where = "tenure: key " + GoQuote(put.key);
      if (!put.ignore_lease && put.lease != 0 && e.session != ModelLeaseId(put.lease)) {
        // An acquire by the lease: refused where a Consul acquire would be
        // (the decision's order: a Consul holder, lock-delay, waiters);
        // another lease's key moves to this one.
        if (!e.session.empty() && !ModelLeaseNumber(e.session)) {
          return Fail(Exact(etcd_texts::GrpcCode::kFailedPrecondition,
                            where + " is held by Consul session " + e.session.str()));
        }
        if (m.ActiveLockDelay(put.key)) {
          return Fail(ModelEtcdError{etcd_texts::GrpcCode::kFailedPrecondition, where, false,
                                     "lock-delay"});
        }
        if (m.queues.count(put.key) != 0) {
          return Fail(
              Exact(etcd_texts::GrpcCode::kFailedPrecondition,
                    where + " has waiters in its fair-acquire queue; they are served first"));
        }
        e.session = ModelLeaseId(put.lease);
        e.fence = index;
        e.lock_index += 1;
      } else if (!put.ignore_lease && put.lease == 0 && ModelLeaseNumber(e.session)) {
        // No lease: an etcd lease lets the key go (a Consul holder stays).
        e.session = SessionId();
        e.fence = LogIndex();
        after.push_back({put.key, false});
      }
      m.Write(std::move(e), index, &r->changed_keys);
      return true;
    }

    void DeleteRange(const EtcdDeleteRangeRequest& d, EtcdDeleteRangeResponse* out) {
      std::vector<std::string> doomed;
      for (const KvEntry* e : InRange(m, d.range)) {
        doomed.push_back(e->key);
        if (d.prev_kv) out->prev_kvs.push_back(ToKv(*e, false));
      }
      for (const std::string& key : doomed) {
        m.Erase(key, index, &r->changed_keys);
        after.push_back({key, true});
      }
      out->deleted = static_cast<std::int64_t>(doomed.size());
    }
  };
};

inline void ModelStore::ApplyBody(const EtcdTxn& c, LogIndex index, ModelResult* r) {
  ModelEtcd::Apply(*this, c.txn, index, r);
}

}  // namespace tenure::state::testutil
