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

void EncodeKvEntry(const KvEntry& entry, bool with_version, ByteWriter& w) {
  w.PutBytes(entry.key);
  w.PutBytes(entry.value);
  w.PutVarint(entry.flags);
  w.PutIndex(entry.create_index);
  w.PutIndex(entry.modify_index);
  w.PutVarint(entry.lock_index);
  EncodeSessionId(entry.session, w);
  w.PutIndex(entry.fence);
  if (with_version) w.PutVarint(entry.version);
}

KvEntry DecodeKvEntry(ByteReader& r, bool with_version) {
  KvEntry entry;
  entry.key = r.GetString();
  entry.value = r.GetString();
  entry.flags = r.GetVarint();
  entry.create_index = r.GetIndex();
  entry.modify_index = r.GetIndex();
  entry.lock_index = r.GetVarint();
  entry.session = DecodeSessionId(r);
  entry.fence = r.GetIndex();
  entry.version = with_version ? r.GetVarint() : 1;
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
  w.PutVarint(s.checks.node().size());
  for (const auto& c : s.checks.node()) w.PutBytes(c);
  w.PutVarint(s.checks.service().size());
  for (const auto& c : s.checks.service()) {
    w.PutBytes(c.id);
    w.PutBytes(c.ns);
  }
  w.PutVarint(s.checks.legacy().size());
  for (const auto& c : s.checks.legacy()) w.PutBytes(c);
  w.PutIndex(s.create_index);
  w.PutIndex(s.modify_index());  // the format keeps both
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
  // Each list is read whole and then stored, so the default node checks
  // share the one copy (SessionChecks).
  std::vector<std::string> node_checks;
  for (std::uint64_t n = ReadCount(r); n > 0 && !r.failed(); --n)
    node_checks.push_back(r.GetString());
  s.checks.set_node(std::move(node_checks));
  std::vector<ServiceCheck> service_checks;
  for (std::uint64_t n = ReadCount(r); n > 0 && !r.failed(); --n) {
    ServiceCheck c;
    c.id = r.GetString();
    c.ns = r.GetString();
    service_checks.push_back(std::move(c));
  }
  s.checks.set_service(std::move(service_checks));
  std::vector<std::string> checks;
  for (std::uint64_t n = ReadCount(r); n > 0 && !r.failed(); --n) checks.push_back(r.GetString());
  s.checks.set_legacy(std::move(checks));
  s.create_index = r.GetIndex();
  // A session's ModifyIndex is its CreateIndex (state/types.h); any other
  // pair is not a session this format writes.
  if (r.GetIndex() != s.create_index) r.Fail();
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
