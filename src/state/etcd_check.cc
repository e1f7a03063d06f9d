#include "state/etcd_check.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/limits.h"

namespace tenure::state {
namespace {

using etcd_texts::EtcdError;

EtcdError CheckKey(const std::string& key) {
  if (key.empty()) return etcd_texts::EmptyKey();
  if (key.size() > limits::kKvKeyBytesMax) {
    return etcd_texts::KeyTooLong(key.size(), limits::kKvKeyBytesMax);
  }
  return {};
}

EtcdError CheckOp(const EtcdRequestOp& op, std::size_t ops_left, int depth);

EtcdError CheckTxnAt(const EtcdTxnRequest& txn, std::size_t ops_max, int depth) {
  if (depth > kEtcdTxnDepthMax) return etcd_texts::TxnTooDeep(kEtcdTxnDepthMax);
  const std::size_t ops = std::max({txn.compare.size(), txn.success.size(), txn.failure.size()});
  if (ops > ops_max) return etcd_texts::TooManyOps();
  for (const EtcdCompare& c : txn.compare) {
    if (EtcdError e = CheckKey(c.range.key); !e.ok()) return e;
  }
  for (const auto* branch : {&txn.success, &txn.failure}) {
    for (const EtcdRequestOp& op : *branch) {
      if (EtcdError e = CheckOp(op, ops_max - ops, depth); !e.ok()) return e;
    }
  }
  return {};
}

EtcdError CheckOp(const EtcdRequestOp& op, std::size_t ops_left, int depth) {
  switch (op.kind) {
    case EtcdRequestOp::Kind::kRange:
      return CheckEtcdRange(op.range);
    case EtcdRequestOp::Kind::kPut:
      return CheckEtcdPut(op.put);
    case EtcdRequestOp::Kind::kDeleteRange:
      return CheckEtcdDeleteRange(op.delete_range);
    case EtcdRequestOp::Kind::kTxn:
      if (op.txn.size() != 1) return etcd_texts::KeyNotFound();
      return CheckTxnAt(op.txn.front(), ops_left, depth + 1);
    case EtcdRequestOp::Kind::kEmpty:
      break;
  }
  return etcd_texts::KeyNotFound();  // etcd's answer to an empty op
}

// Compares and ops at every level: linear in the request, nested no deeper
// than CheckTxnAt allowed.
std::size_t CountItems(const EtcdTxnRequest& txn) {
  std::size_t items = txn.compare.size() + txn.success.size() + txn.failure.size();
  for (const auto* branch : {&txn.success, &txn.failure}) {
    for (const EtcdRequestOp& op : *branch) {
      if (op.kind == EtcdRequestOp::Kind::kTxn && op.txn.size() == 1) {
        items += CountItems(op.txn.front());
      }
    }
  }
  return items;
}

// Whether a range at any depth names a past revision.
bool ReadsThePast(const EtcdTxnRequest& txn) {
  for (const auto* branch : {&txn.success, &txn.failure}) {
    for (const EtcdRequestOp& op : *branch) {
      if (op.kind == EtcdRequestOp::Kind::kRange && op.range.revision > 0) return true;
      if (op.kind == EtcdRequestOp::Kind::kTxn && op.txn.size() == 1 &&
          ReadsThePast(op.txn.front())) {
        return true;
      }
    }
  }
  return false;
}

// What one branch puts and deletes, its nested txns' included.
struct Writes {
  std::set<std::string> puts;
  std::vector<KeyRange> deletes;
  // etcd 3.4 puts each delete in an interval tree as [key, range_end)
  // without reading "\0" as "to the end", as the delete itself does: such an
  // interval ends before it begins and holds no key, so a put under a
  // from-key delete passes its check (and the delete then takes the put key
  // too). Ours answers as etcd does.
  bool Deletes(const std::string& key) const {
    return std::any_of(deletes.begin(), deletes.end(),
                       [&](const KeyRange& r) { return !r.unbounded() && r.Contains(key); });
  }
};

// etcd's checkIntervals: deletes of this level first, then each nested
// txn's puts (a key in both of its branches counts once), then this
// level's puts; a key put twice, or put inside a range deleted, fails.
bool CollectWrites(const std::vector<EtcdRequestOp>& ops, Writes* out) {
  for (const EtcdRequestOp& op : ops) {
    if (op.kind == EtcdRequestOp::Kind::kDeleteRange) out->deletes.push_back(op.delete_range.range);
  }
  for (const EtcdRequestOp& op : ops) {
    if (op.kind != EtcdRequestOp::Kind::kTxn || op.txn.size() != 1) continue;
    Writes then_writes;
    Writes else_writes;
    if (!CollectWrites(op.txn.front().success, &then_writes)) return false;
    if (!CollectWrites(op.txn.front().failure, &else_writes)) return false;
    for (const std::string& key : then_writes.puts) {
      if (out->puts.count(key) != 0 || out->Deletes(key)) return false;
      out->puts.insert(key);
    }
    for (const std::string& key : else_writes.puts) {
      if (out->puts.count(key) != 0 && then_writes.puts.count(key) == 0) return false;
      if (out->Deletes(key)) return false;
      out->puts.insert(key);
    }
    out->deletes.insert(out->deletes.end(), then_writes.deletes.begin(), then_writes.deletes.end());
    out->deletes.insert(out->deletes.end(), else_writes.deletes.begin(), else_writes.deletes.end());
  }
  for (const EtcdRequestOp& op : ops) {
    if (op.kind != EtcdRequestOp::Kind::kPut) continue;
    if (out->puts.count(op.put.key) != 0 || out->Deletes(op.put.key)) return false;
    out->puts.insert(op.put.key);
  }
  return true;
}

}  // namespace

EtcdError CheckEtcdRange(const EtcdRangeRequest& request) { return CheckKey(request.range.key); }

EtcdError CheckEtcdPut(const EtcdPutRequest& request) {
  if (EtcdError e = CheckKey(request.key); !e.ok()) return e;
  if (request.ignore_value && !request.value.empty()) return etcd_texts::ValueProvided();
  if (request.ignore_lease && request.lease != 0) return etcd_texts::LeaseProvided();
  if (request.value.size() > limits::kKvValueBytesMax) return etcd_texts::RequestTooLarge();
  return {};
}

EtcdError CheckEtcdDeleteRange(const EtcdDeleteRangeRequest& request) {
  return CheckKey(request.range.key);
}

EtcdError CheckEtcdTxn(const EtcdTxnRequest& request, bool past_reads) {
  if (EtcdError e = CheckTxnAt(request, kEtcdTxnOpsMax, 1); !e.ok()) return e;
  if (const std::size_t items = CountItems(request); items > kEtcdTxnItemsMax) {
    return etcd_texts::TxnTooManyItems(items, kEtcdTxnItemsMax);
  }
  for (const auto* branch : {&request.success, &request.failure}) {
    Writes writes;
    if (!CollectWrites(*branch, &writes)) return etcd_texts::DuplicateKey();
  }
  // The state machine holds no past revisions (each server's history
  // window is its own): only a txn that reads and is answered outside it
  // may name one.
  if (!past_reads && ReadsThePast(request)) return etcd_texts::PastRevisionInTxn();
  return {};
}

bool EtcdTxnWrites(const EtcdTxnRequest& request) {
  for (const auto* branch : {&request.success, &request.failure}) {
    for (const EtcdRequestOp& op : *branch) {
      if (op.kind == EtcdRequestOp::Kind::kPut || op.kind == EtcdRequestOp::Kind::kDeleteRange) {
        return true;
      }
      if (op.kind == EtcdRequestOp::Kind::kTxn && op.txn.size() == 1 &&
          EtcdTxnWrites(op.txn.front())) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace tenure::state
