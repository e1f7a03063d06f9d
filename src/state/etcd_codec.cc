#include "state/etcd_codec.h"

#include <cstdint>
#include <string>
#include <vector>

#include "state/etcd_check.h"

namespace tenure::state {
namespace {

// Bits of a Range's flags byte and a Put's.
constexpr std::uint8_t kSerializable = 1;
constexpr std::uint8_t kKeysOnly = 2;
constexpr std::uint8_t kCountOnly = 4;
constexpr std::uint8_t kPrevKv = 1;
constexpr std::uint8_t kIgnoreValue = 2;
constexpr std::uint8_t kIgnoreLease = 4;

void PutRange(const KeyRange& range, ByteWriter& w) {
  w.PutBytes(range.key);
  w.PutBytes(range.end);
}
KeyRange GetRange(ByteReader& r) {
  KeyRange range;
  range.key = r.GetString();
  range.end = r.GetString();
  return range;
}

// An enum's byte, failing `r` past `max`.
template <typename E>
E GetEnum(ByteReader& r, E max) {
  const std::uint8_t v = r.GetU8();
  if (v > static_cast<std::uint8_t>(max)) r.Fail();
  return static_cast<E>(v);
}

void EncodeOp(const EtcdRequestOp& op, ByteWriter& w) {
  w.PutU8(static_cast<std::uint8_t>(op.kind));
  switch (op.kind) {
    case EtcdRequestOp::Kind::kEmpty:
      return;
    case EtcdRequestOp::Kind::kRange: {
      const EtcdRangeRequest& q = op.range;
      PutRange(q.range, w);
      w.PutSignedVarint(q.limit);
      w.PutSignedVarint(q.revision);
      w.PutU8(static_cast<std::uint8_t>(q.sort_order));
      w.PutU8(static_cast<std::uint8_t>(q.sort_target));
      w.PutU8(static_cast<std::uint8_t>((q.serializable ? kSerializable : 0) |
                                        (q.keys_only ? kKeysOnly : 0) |
                                        (q.count_only ? kCountOnly : 0)));
      w.PutSignedVarint(q.min_mod_revision);
      w.PutSignedVarint(q.max_mod_revision);
      w.PutSignedVarint(q.min_create_revision);
      w.PutSignedVarint(q.max_create_revision);
      return;
    }
    case EtcdRequestOp::Kind::kPut: {
      const EtcdPutRequest& p = op.put;
      w.PutBytes(p.key);
      w.PutBytes(p.value);
      w.PutSignedVarint(p.lease);
      w.PutU8(static_cast<std::uint8_t>((p.prev_kv ? kPrevKv : 0) |
                                        (p.ignore_value ? kIgnoreValue : 0) |
                                        (p.ignore_lease ? kIgnoreLease : 0)));
      return;
    }
    case EtcdRequestOp::Kind::kDeleteRange:
      PutRange(op.delete_range.range, w);
      w.PutBool(op.delete_range.prev_kv);
      return;
    case EtcdRequestOp::Kind::kTxn:
      EncodeEtcdTxn(op.txn.empty() ? EtcdTxnRequest() : op.txn.front(), w);
      return;
  }
}

// What a decode may still take: compares and ops at all levels.
struct Budget {
  std::size_t items_left = kEtcdTxnItemsMax;
  // Takes n items; fails `r` when fewer are left.
  bool Take(ByteReader& r, std::uint64_t n) {
    if (n > items_left || n > r.remaining()) {
      r.Fail();
      return false;
    }
    items_left -= static_cast<std::size_t>(n);
    return true;
  }
};

EtcdTxnRequest DecodeTxnAt(ByteReader& r, int depth, Budget* budget);

EtcdRequestOp DecodeOp(ByteReader& r, int depth, Budget* budget) {
  EtcdRequestOp op;
  op.kind = GetEnum(r, EtcdRequestOp::Kind::kTxn);
  switch (op.kind) {
    case EtcdRequestOp::Kind::kEmpty:
      break;
    case EtcdRequestOp::Kind::kRange: {
      EtcdRangeRequest& q = op.range;
      q.range = GetRange(r);
      q.limit = r.GetSignedVarint();
      q.revision = r.GetSignedVarint();
      q.sort_order = GetEnum(r, EtcdSortOrder::kDescend);
      q.sort_target = GetEnum(r, EtcdSortTarget::kValue);
      const std::uint8_t flags = r.GetU8();
      if ((flags & ~(kSerializable | kKeysOnly | kCountOnly)) != 0) r.Fail();
      q.serializable = (flags & kSerializable) != 0;
      q.keys_only = (flags & kKeysOnly) != 0;
      q.count_only = (flags & kCountOnly) != 0;
      q.min_mod_revision = r.GetSignedVarint();
      q.max_mod_revision = r.GetSignedVarint();
      q.min_create_revision = r.GetSignedVarint();
      q.max_create_revision = r.GetSignedVarint();
      break;
    }
    case EtcdRequestOp::Kind::kPut: {
      EtcdPutRequest& p = op.put;
      p.key = r.GetString();
      p.value = r.GetString();
      p.lease = r.GetSignedVarint();
      const std::uint8_t flags = r.GetU8();
      if ((flags & ~(kPrevKv | kIgnoreValue | kIgnoreLease)) != 0) r.Fail();
      p.prev_kv = (flags & kPrevKv) != 0;
      p.ignore_value = (flags & kIgnoreValue) != 0;
      p.ignore_lease = (flags & kIgnoreLease) != 0;
      break;
    }
    case EtcdRequestOp::Kind::kDeleteRange:
      op.delete_range.range = GetRange(r);
      op.delete_range.prev_kv = r.GetBool();
      break;
    case EtcdRequestOp::Kind::kTxn:
      op.txn.push_back(DecodeTxnAt(r, depth + 1, budget));
      break;
  }
  return op;
}

std::vector<EtcdRequestOp> DecodeOps(ByteReader& r, int depth, Budget* budget) {
  std::vector<EtcdRequestOp> ops;
  std::uint64_t n = r.GetVarint();
  if (!budget->Take(r, n)) return ops;  // every op takes at least one byte
  for (; n > 0 && !r.failed(); --n) ops.push_back(DecodeOp(r, depth, budget));
  return ops;
}

EtcdTxnRequest DecodeTxnAt(ByteReader& r, int depth, Budget* budget) {
  EtcdTxnRequest txn;
  if (depth > kEtcdTxnDepthMax) {
    r.Fail();
    return txn;
  }
  std::uint64_t n = r.GetVarint();
  if (!budget->Take(r, n)) return txn;
  for (; n > 0 && !r.failed(); --n) {
    EtcdCompare c;
    c.result = GetEnum(r, EtcdCompareResult::kNotEqual);
    c.target = GetEnum(r, EtcdCompareTarget::kLease);
    c.range = GetRange(r);
    c.number = r.GetSignedVarint();
    c.value = r.GetString();
    txn.compare.push_back(std::move(c));
  }
  txn.success = DecodeOps(r, depth, budget);
  txn.failure = DecodeOps(r, depth, budget);
  return txn;
}

}  // namespace

void EncodeEtcdTxn(const EtcdTxnRequest& txn, ByteWriter& w) {
  w.PutVarint(txn.compare.size());
  for (const EtcdCompare& c : txn.compare) {
    w.PutU8(static_cast<std::uint8_t>(c.result));
    w.PutU8(static_cast<std::uint8_t>(c.target));
    PutRange(c.range, w);
    w.PutSignedVarint(c.number);
    w.PutBytes(c.value);
  }
  for (const auto* branch : {&txn.success, &txn.failure}) {
    w.PutVarint(branch->size());
    for (const EtcdRequestOp& op : *branch) EncodeOp(op, w);
  }
}

EtcdTxnRequest DecodeEtcdTxn(ByteReader& r) {
  Budget budget;
  return DecodeTxnAt(r, 1, &budget);
}

}  // namespace tenure::state
