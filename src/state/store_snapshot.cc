// Store: snapshot encoding and the state digest. Format (docs/formats.md):
//   snapshot := magic:"TNRSNAP" version:u8
//               applied_index kv_index sessions_index reaped_index :varint
//               now_ms:svarint
//               n:varint kv_entry*n   n:varint (key:bytes index:varint)*n
//               n:varint session*n    n:varint (key:bytes until:svarint)*n
//               n:varint member*n                              (version 2)
//   member   := id:varint name:bytes raft_address:bytes http_address:bytes
//               modify_index:varint
// Version 1 (no members) is still read: data dirs written before members
// existed restore with an empty member table.
// Maps are written in key order, so equal states encode to equal bytes.
#include "common/coding.h"
#include "state/codec.h"
#include "state/store.h"

namespace tenure::state {
namespace {

constexpr std::string_view kMagic = "TNRSNAP";
constexpr std::uint8_t kSnapshotVersion = 2;

}  // namespace

void Store::EncodeSnapshot(std::string* out) const {
  ByteWriter w(out);
  out->append(kMagic);
  w.PutU8(kSnapshotVersion);
  w.PutVarint(applied_index_);
  w.PutVarint(kv_index_);
  w.PutVarint(sessions_index_);
  w.PutVarint(reaped_index_);
  w.PutSignedVarint(now_ms_);
  w.PutVarint(kv_.size());
  for (const auto& [key, entry] : kv_) EncodeKvEntry(entry, w);
  w.PutVarint(tombstones_.size());
  for (const auto& [key, index] : tombstones_) {
    w.PutBytes(key);
    w.PutVarint(index);
  }
  w.PutVarint(sessions_.size());
  for (const auto& [id, session] : sessions_) EncodeSession(session, w);
  w.PutVarint(lock_delays_.size());
  for (const auto& [key, until] : lock_delays_) {
    w.PutBytes(key);
    w.PutSignedVarint(until);
  }
  w.PutVarint(members_.size());
  for (const auto& [id, member] : members_) {
    w.PutVarint(member.id);
    w.PutBytes(member.name);
    w.PutBytes(member.raft_address);
    w.PutBytes(member.http_address);
    w.PutVarint(member.modify_index);
  }
}

Result<Store> Store::DecodeSnapshot(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return Status::Corruption("snapshot: bad magic");
  }
  ByteReader r(bytes.substr(kMagic.size()));
  std::uint8_t version = r.GetU8();
  if (version != 1 && version != kSnapshotVersion) {
    return Status::Corruption("snapshot: unknown version");
  }
  Store store;
  store.applied_index_ = r.GetVarint();
  store.kv_index_ = r.GetVarint();
  store.sessions_index_ = r.GetVarint();
  store.reaped_index_ = r.GetVarint();
  store.now_ms_ = r.GetSignedVarint();

  auto count = [&r]() {
    std::uint64_t n = r.GetVarint();
    if (n > r.remaining()) r.Fail();  // every element takes at least one byte
    return r.failed() ? 0 : n;
  };
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    KvEntry entry = DecodeKvEntry(r);
    std::string key = entry.key;
    if (!store.kv_.emplace(std::move(key), std::move(entry)).second) r.Fail();
  }
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    std::string key = r.GetString();
    LogIndex index = r.GetVarint();
    store.tombstones_.emplace(std::move(key), index);
  }
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    Session session = DecodeSession(r);
    std::string id = session.id;
    if (!store.sessions_.emplace(std::move(id), std::move(session)).second) r.Fail();
  }
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    std::string key = r.GetString();
    UnixMs until = r.GetSignedVarint();
    store.lock_delays_.emplace(std::move(key), until);
  }
  for (std::uint64_t n = version >= 2 ? count() : 0; n > 0 && !r.failed(); --n) {
    Member member;
    member.id = r.GetVarint();
    member.name = r.GetString();
    member.raft_address = r.GetString();
    member.http_address = r.GetString();
    member.modify_index = r.GetVarint();
    std::uint64_t id = member.id;
    if (!store.members_.emplace(id, std::move(member)).second) r.Fail();
  }
  if (r.failed()) return Status::Corruption("snapshot: truncated or malformed");
  if (!r.done()) return Status::Corruption("snapshot: trailing bytes");

  // Rebuild the derived holder index, refusing states that break the
  // invariants rather than asserting on untrusted bytes.
  for (const auto& [key, entry] : store.kv_) {
    if (entry.session.empty()) continue;
    if (store.sessions_.find(entry.session) == store.sessions_.end()) {
      return Status::Corruption("snapshot: key held by unknown session");
    }
    store.held_[entry.session].insert(key);
  }
  // Untrusted bytes: refuse any state Apply could never have produced.
  if (Status valid = store.Validate(); !valid.ok()) return valid.Annotate("snapshot");
  // Whoever watches this store cannot tell what a restore changed.
  store.changes_.everything = true;
  return store;
}

std::uint64_t Store::Digest() const {
  std::string bytes;
  EncodeSnapshot(&bytes);
  return Fnv1a64(bytes);
}

}  // namespace tenure::state
