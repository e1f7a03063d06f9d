// The checks etcd makes before a KV request enters its log (etcd 3.4's
// v3rpc checkPutRequest, checkTxnRequest and checkIntervals), plus
// tenure's limits (decision 0048, section 6): each refusal is etcd's text
// and code, and a refused request is never proposed. Pure.
#pragma once

#include <cstddef>

#include "common/etcd_texts.h"
#include "state/etcd_request.h"

namespace tenure::state {

// etcd's --max-txn-ops default: compares, or ops of either branch, per txn;
// a nested txn gets what its parent left (etcd's count).
inline constexpr std::size_t kEtcdTxnOpsMax = 128;
// Nesting below this depth is refused (tenure's bound; etcd has none).
inline constexpr int kEtcdTxnDepthMax = 32;
// Compares and ops of a txn at all its levels (tenure's bound: etcd's
// per-level count lets nesting multiply it). A flat txn at etcd's limits
// has at most 384; the bound keeps the checks and the log decoder linear
// in a small number, whatever a hostile entry nests.
inline constexpr std::size_t kEtcdTxnItemsMax = 1024;

etcd_texts::EtcdError CheckEtcdRange(const EtcdRangeRequest& request);
etcd_texts::EtcdError CheckEtcdPut(const EtcdPutRequest& request);
etcd_texts::EtcdError CheckEtcdDeleteRange(const EtcdDeleteRangeRequest& request);
// The items bound, the ops count, every op and compare, and no key put
// twice or put and deleted in one branch, nested branches included (a key
// put in both branches of one nested txn is fine: only one runs). A range
// at a past revision is refused unless `past_reads`: a read-only txn
// answered from a server's history window, never one the state applies.
etcd_texts::EtcdError CheckEtcdTxn(const EtcdTxnRequest& request, bool past_reads = false);
// Whether a txn writes (any Put or DeleteRange, nested ones included):
// a read-only txn is served as a read.
bool EtcdTxnWrites(const EtcdTxnRequest& request);

}  // namespace tenure::state
