#include "state/codec.h"

namespace tenure::state {
namespace {

// Counts come from untrusted bytes: never reserve more than could possibly
// be present, so a corrupt count cannot allocate gigabytes.
std::uint64_t ReadCount(ByteReader& r) {
  std::uint64_t n = r.GetVarint();
  if (n > r.remaining()) {  // each element takes at least one byte
    r.Fail();
    return 0;
  }
  return n;
}

}  // namespace

void EncodeKvEntry(const KvEntry& entry, ByteWriter& w) {
  w.PutBytes(entry.key);
  w.PutBytes(entry.value);
  w.PutVarint(entry.flags);
  w.PutIndex(entry.create_index);
  w.PutIndex(entry.modify_index);
  w.PutVarint(entry.lock_index);
  EncodeSessionId(entry.session, w);
  w.PutIndex(entry.fence);
}

KvEntry DecodeKvEntry(ByteReader& r) {
  KvEntry entry;
  entry.key = r.GetString();
  entry.value = r.GetString();
  entry.flags = r.GetVarint();
  entry.create_index = r.GetIndex();
  entry.modify_index = r.GetIndex();
  entry.lock_index = r.GetVarint();
  entry.session = DecodeSessionId(r);
  entry.fence = r.GetIndex();
  return entry;
}

void EncodeSession(const Session& s, ByteWriter& w) {
  EncodeSessionId(s.id, w);
  w.PutBytes(s.name);
  w.PutBytes(s.node);
  w.PutSignedVarint(s.lock_delay_ns);
  w.PutU8(static_cast<std::uint8_t>(s.behavior));
  w.PutBytes(s.ttl);
  w.PutSignedVarint(s.ttl_ns);
  w.PutVarint(s.node_checks.size());
  for (const auto& c : s.node_checks) w.PutBytes(c);
  w.PutVarint(s.service_checks.size());
  for (const auto& c : s.service_checks) {
    w.PutBytes(c.id);
    w.PutBytes(c.ns);
  }
  w.PutVarint(s.checks.size());
  for (const auto& c : s.checks) w.PutBytes(c);
  w.PutIndex(s.create_index);
  w.PutIndex(s.modify_index);
}

Session DecodeSession(ByteReader& r) {
  Session s;
  s.id = DecodeSessionId(r);
  s.name = r.GetString();
  s.node = r.GetString();
  s.lock_delay_ns = r.GetSignedVarint();
  std::uint8_t behavior = r.GetU8();
  if (behavior > 1) r.Fail();
  s.behavior = behavior == 1 ? Behavior::kDelete : Behavior::kRelease;
  s.ttl = r.GetString();
  s.ttl_ns = r.GetSignedVarint();
  for (std::uint64_t n = ReadCount(r); n > 0 && !r.failed(); --n)
    s.node_checks.push_back(r.GetString());
  for (std::uint64_t n = ReadCount(r); n > 0 && !r.failed(); --n) {
    ServiceCheck c;
    c.id = r.GetString();
    c.ns = r.GetString();
    s.service_checks.push_back(std::move(c));
  }
  for (std::uint64_t n = ReadCount(r); n > 0 && !r.failed(); --n) s.checks.push_back(r.GetString());
  s.create_index = r.GetIndex();
  s.modify_index = r.GetIndex();
  return s;
}

void EncodeTxnOp(const TxnOp& op, ByteWriter& w) {
  w.PutU8(static_cast<std::uint8_t>(op.verb));
  w.PutBytes(op.key);
  w.PutBytes(op.value);
  w.PutVarint(op.flags);
  w.PutIndex(op.index);
  EncodeSessionId(op.session, w);
}

TxnOp DecodeTxnOp(ByteReader& r) {
  TxnOp op;
  std::uint8_t verb = r.GetU8();
  if (verb > static_cast<std::uint8_t>(TxnVerb::kCheckFence)) r.Fail();
  op.verb = static_cast<TxnVerb>(verb);
  op.key = r.GetString();
  op.value = r.GetString();
  op.flags = r.GetVarint();
  op.index = r.GetIndex();
  op.session = DecodeSessionId(r);
  return op;
}

}  // namespace tenure::state
