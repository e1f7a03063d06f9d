// Builders of etcd txn ops for the state tier's tests (etcd_check_test.cc,
// store_etcd_test.cc). Test-only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "state/etcd_request.h"

namespace tenure::state::testutil {

inline EtcdRequestOp Put(std::string key, std::string value = "v", std::int64_t lease = 0) {
  EtcdRequestOp op;
  op.kind = EtcdRequestOp::Kind::kPut;
  op.put.key = std::move(key);
  op.put.value = std::move(value);
  op.put.lease = lease;
  return op;
}
inline EtcdRequestOp Delete(std::string key, std::string end = "", bool prev_kv = false) {
  EtcdRequestOp op;
  op.kind = EtcdRequestOp::Kind::kDeleteRange;
  op.delete_range.range = KeyRange{std::move(key), std::move(end)};
  op.delete_range.prev_kv = prev_kv;
  return op;
}
inline EtcdRequestOp Get(std::string key, std::string end = "") {
  EtcdRequestOp op;
  op.kind = EtcdRequestOp::Kind::kRange;
  op.range.range = KeyRange{std::move(key), std::move(end)};
  return op;
}
inline EtcdRequestOp Nested(EtcdTxnRequest txn) {
  EtcdRequestOp op;
  op.kind = EtcdRequestOp::Kind::kTxn;
  op.txn.push_back(std::move(txn));
  return op;
}

}  // namespace tenure::state::testutil
