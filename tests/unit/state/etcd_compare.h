// One-line descriptions of etcd txns and their answers (state/etcd_request.h),
// and the comparison of a Store's etcd answer with the model's
// (model_etcd.h), for the state tier's randomized tests. Test-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/etcd_texts.h"
#include "state/etcd_request.h"
#include "state/store.h"
#include "unit/state/model_store.h"
#include "unit/state/store_fixture.h"

namespace tenure::state::testutil {

inline std::string Quoted(const std::string& bytes) { return "\"" + EscapeBytes(bytes) + "\""; }

inline std::string DescribeRange(const KeyRange& r) {
  if (r.end.empty()) return Quoted(r.key);
  if (r.end == std::string(1, '\0')) return "[" + Quoted(r.key) + ", end)";
  return "[" + Quoted(r.key) + ", " + Quoted(r.end) + ")";
}

inline std::string DescribeCompare(const EtcdCompare& c) {
  static const char* const kTargets[] = {"version", "create", "mod", "value", "lease"};
  static const char* const kResults[] = {"==", ">", "<", "!="};
  std::ostringstream os;
  os << kTargets[static_cast<int>(c.target) % 5] << "(" << DescribeRange(c.range) << ")"
     << kResults[static_cast<int>(c.result) % 4];
  if (c.target == EtcdCompareTarget::kValue) {
    os << Quoted(c.value);
  } else {
    os << c.number;
  }
  return os.str();
}

inline std::string DescribeTxn(const EtcdTxnRequest& t);

inline std::string DescribeOp(const EtcdRequestOp& op) {
  std::ostringstream os;
  switch (op.kind) {
    case EtcdRequestOp::Kind::kRange: {
      const EtcdRangeRequest& q = op.range;
      os << "range(" << DescribeRange(q.range);
      if (q.limit != 0) os << " limit=" << q.limit;
      if (q.revision != 0) os << " rev=" << q.revision;
      if (q.sort_order != EtcdSortOrder::kNone || q.sort_target != EtcdSortTarget::kKey) {
        os << " sort=" << static_cast<int>(q.sort_order) << "/" << static_cast<int>(q.sort_target);
      }
      if (q.keys_only) os << " keys_only";
      if (q.count_only) os << " count_only";
      if (q.min_mod_revision != 0) os << " min_mod=" << q.min_mod_revision;
      if (q.max_mod_revision != 0) os << " max_mod=" << q.max_mod_revision;
      if (q.min_create_revision != 0) os << " min_create=" << q.min_create_revision;
      if (q.max_create_revision != 0) os << " max_create=" << q.max_create_revision;
      os << ")";
      break;
    }
    case EtcdRequestOp::Kind::kPut: {
      const EtcdPutRequest& p = op.put;
      os << "put(" << Quoted(p.key) << " " << Quoted(p.value);
      if (p.lease != 0) os << " lease=" << std::hex << p.lease << std::dec;
      if (p.prev_kv) os << " prev_kv";
      if (p.ignore_value) os << " ignore_value";
      if (p.ignore_lease) os << " ignore_lease";
      os << ")";
      break;
    }
    case EtcdRequestOp::Kind::kDeleteRange:
      os << "delete(" << DescribeRange(op.delete_range.range)
         << (op.delete_range.prev_kv ? " prev_kv" : "") << ")";
      break;
    case EtcdRequestOp::Kind::kTxn:
      os << (op.txn.size() == 1 ? DescribeTxn(op.txn.front()) : "txn(?)");
      break;
    case EtcdRequestOp::Kind::kEmpty:
      os << "empty()";
      break;
  }
  return os.str();
}

inline std::string DescribeOps(const std::vector<EtcdRequestOp>& ops) {
  std::string out = "[";
  for (std::size_t i = 0; i < ops.size(); ++i) out += (i ? ", " : "") + DescribeOp(ops[i]);
  return out + "]";
}

inline std::string DescribeTxn(const EtcdTxnRequest& t) {
  std::string out = "txn(if [";
  for (std::size_t i = 0; i < t.compare.size(); ++i) {
    out += (i ? ", " : "") + DescribeCompare(t.compare[i]);
  }
  return out + "] then " + DescribeOps(t.success) + " else " + DescribeOps(t.failure) + ")";
}

inline std::string ShowKv(const EtcdKeyValue& kv) {
  std::ostringstream os;
  os << "{" << Quoted(kv.key) << " c=" << kv.create_revision << " m=" << kv.mod_revision
     << " v=" << kv.version << " " << Quoted(kv.value);
  if (kv.lease != 0) os << " lease=" << std::hex << kv.lease << std::dec;
  os << "}";
  return os.str();
}

inline std::string ShowKvs(const std::vector<EtcdKeyValue>& kvs) {
  std::string out = "[";
  for (std::size_t i = 0; i < kvs.size(); ++i) out += (i ? ", " : "") + ShowKv(kvs[i]);
  return out + "]";
}

inline std::string ShowEtcdResponse(const EtcdTxnResponse& r) {
  std::ostringstream os;
  os << (r.succeeded ? "then[" : "else[");
  for (std::size_t i = 0; i < r.responses.size(); ++i) {
    const EtcdResponseOp& op = r.responses[i];
    os << (i ? ", " : "");
    switch (op.kind) {
      case EtcdRequestOp::Kind::kRange:
        os << "range{count=" << op.range.count << (op.range.more ? " more " : " ")
           << ShowKvs(op.range.kvs) << "}";
        break;
      case EtcdRequestOp::Kind::kPut:
        os << "put{" << (op.put.has_prev_kv ? ShowKv(op.put.prev_kv) : "") << "}";
        break;
      case EtcdRequestOp::Kind::kDeleteRange:
        os << "delete{" << op.delete_range.deleted << " " << ShowKvs(op.delete_range.prev_kvs)
           << "}";
        break;
      case EtcdRequestOp::Kind::kTxn:
        os << "txn{" << (op.txn.size() == 1 ? ShowEtcdResponse(op.txn.front()) : "?") << "}";
        break;
      case EtcdRequestOp::Kind::kEmpty:
        os << "empty";
        break;
    }
    if (op.revision != 0) os << "@" << op.revision;
  }
  os << "]";
  return os.str();
}

inline std::string ShowEtcdError(const etcd_texts::EtcdError& e) {
  return "{" + std::to_string(static_cast<int>(e.code)) + " " + Quoted(e.message) + "}";
}

inline std::string ShowModelEtcdError(const ModelEtcdError& e) {
  return "{" + std::to_string(static_cast<int>(e.code)) + " " + Quoted(e.text) +
         (e.exact ? "" : "... with " + Quoted(e.part)) + "}";
}

// An EtcdTxn's answer (each op's response) or the error that rolled it back
// (code and text); no etcd answer to any other command.
inline std::string CompareEtcd(const ApplyResult& got, const ModelResult& want) {
  const bool answered = !got.etcd_error.ok() || !(got.etcd == EtcdTxnResponse());
  if (!want.is_etcd) {
    return answered ? "an etcd answer to a command that is not an etcd txn: " +
                          ShowEtcdError(got.etcd_error) + " " + ShowEtcdResponse(got.etcd)
                    : "";
  }
  if (want.ok) {
    if (!got.etcd_error.ok()) return "etcd error: got " + ShowEtcdError(got.etcd_error);
    if (!(got.etcd == want.etcd)) {
      return "etcd response: got " + ShowEtcdResponse(got.etcd) + "\n             want " +
             ShowEtcdResponse(want.etcd);
    }
    return "";
  }
  if (std::none_of(want.etcd_errors.begin(), want.etcd_errors.end(),
                   [&](const ModelEtcdError& e) { return e.Matches(got.etcd_error); })) {
    std::string out = "etcd error: got " + ShowEtcdError(got.etcd_error) + " want one of";
    for (const ModelEtcdError& e : want.etcd_errors) out += " " + ShowModelEtcdError(e);
    return out;
  }
  if (!(got.etcd == EtcdTxnResponse())) {
    return "a rolled-back etcd txn answered its ops: " + ShowEtcdResponse(got.etcd);
  }
  return "";
}

}  // namespace tenure::state::testutil
