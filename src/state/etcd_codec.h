// The log format of an etcd txn (EtcdTxn, docs/formats.md): a compare or
// op's fields in order, int64s as zigzag varints, enums as a byte checked
// against the .proto's values, nesting bounded by kEtcdTxnDepthMax. Pure.
#pragma once

#include "common/coding.h"
#include "state/etcd_request.h"

namespace tenure::state {

void EncodeEtcdTxn(const EtcdTxnRequest& txn, ByteWriter& w);
// Fails `r` on an unknown enum value, a count larger than the bytes left,
// more than kEtcdTxnItemsMax compares and ops in all (so a hostile entry
// allocates at most that many), or nesting deeper than kEtcdTxnDepthMax.
EtcdTxnRequest DecodeEtcdTxn(ByteReader& r);

}  // namespace tenure::state
