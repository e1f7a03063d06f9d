// Store: snapshot encoding and the state digest. Format (docs/formats.md):
//   snapshot := magic:"TNRSNAP" version:u8
//               applied_index kv_index sessions_index reaped_index :varint
//               now_ms:svarint
//               n:varint kv_entry*n   n:varint (key:bytes index:varint)*n
//               n:varint session*n    n:varint (key:bytes until:svarint)*n
//               n:varint member*n                              (versions 2-9)
//               acl                                            (version 4)
//               has_acl:u8 acl? history                        (version 5)
//               has_acl:u8 acl? has_history:u8 history?
//               queues_index:varint n:varint queue*n           (versions 6-9)
//               compact_revision:varint                        (versions 9-13)
//               n:varint zk_node*n                             (versions 11-13)
//               zk_secret:bytes                                (versions 12-13)
//               checksum:fixed32le                             (versions 3-13)
//   kv_entry := state/codec.cc; version:varint after it       (versions 8-13)
//   queue    := key:bytes n:varint waiter*n (head first)
//   waiter   := session:bytes value:bytes flags:varint since:svarint
//               enqueue_index:varint
//               checked:u8 (accessor_id:bytes default_allow:u8)?  (versions 7-13)
//   member   := id:varint name:bytes raft_address:bytes http_address:bytes
//               etcd_address:bytes                             (versions 10-13)
//               zk_address:bytes                               (version 13)
//               modify_index:varint
//   zk_node  := path:bytes ctime:svarint mtime:svarint children_created:svarint
//               children:svarint pzxid:varint aversion:svarint container:u8
//   acl      := bootstrap_index policies_index tokens_index :varint
//               n:varint policy*n  n:varint token*n            (state/acl_table.cc)
// The checksum is Crc32 (common/crc32.h) of every byte before it, so a
// changed byte anywhere (a value included) fails the restore instead of
// restoring silently. Versions 1 (no members), 2 (no checksum) and 3 (no
// ACL section) and 4 (no lock history) are still read, as an empty history:
// data dirs written before restore as they are. Version 5 is written only
// when the lock history (state/lock_history.cc) has a key, version 6 only
// once a fair-acquire queue was used (queues_index is not 0; decision 0027),
// version 7 only while a waiter carries an ACL token to check again at its
// grant (decision 0038), version 8 only while a key's version (decision
// 0048) is above 1: every key then carries it, and the sections after the
// members are written as in version 7 whatever they hold (queues_index may be
// 0, with no queue). Versions 1-7 read every key as version 1. Version 9 is
// version 8 written while the replicated compact revision (EtcdCompact) is
// not 0, which follows the queues; versions 1-8 read it as 0. Version 10 is
// version 9 written while a member has an etcd address (decision 0055):
// every member carries one ("" if none) and the compact revision is written
// even when 0; versions 1-9 read every member without one. Version 11 is
// version 10 written while ZooKeeper's node records (decision 0056) are not
// empty, which follow the compact revision; versions 1-10 read none.
// Version 12 is version 11 written while the ZooKeeper session secret is
// set (ZkSecret): the records (any number) and then its 32 bytes; versions
// 1-11 read none. Version 13 is version 12 written while a member has a
// ZooKeeper address (decision 0056): every member carries one ("" if none),
// and the secret may be "" (not made yet); versions 1-12 read every member
// without one.
// A store without ACL state still writes version 3, byte for byte as before,
// so clusters that never turn ACLs on keep their snapshots (and digests).
// Maps are written in key order, so equal states encode to equal bytes.
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/coding.h"
#include "common/crc32.h"
#include "state/codec.h"
#include "state/store.h"

namespace tenure::state {
namespace {

constexpr std::string_view kMagic = "TNRSNAP";
constexpr std::uint8_t kSnapshotVersionWithoutAcl = 3;
constexpr std::uint8_t kSnapshotVersionWithAcl = 4;
constexpr std::uint8_t kSnapshotVersionWithHistory = 5;
constexpr std::uint8_t kSnapshotVersionWithQueues = 6;
constexpr std::uint8_t kSnapshotVersionWithAuthority = 7;
constexpr std::uint8_t kSnapshotVersionWithVersions = 8;
constexpr std::uint8_t kSnapshotVersionWithCompaction = 9;
constexpr std::uint8_t kSnapshotVersionWithMemberEtcd = 10;
constexpr std::uint8_t kSnapshotVersionWithZk = 11;
constexpr std::uint8_t kSnapshotVersionWithSecret = 12;
constexpr std::uint8_t kSnapshotVersion = 13;
constexpr std::size_t kChecksumBytes = 4;

std::uint32_t ReadFixed32(std::string_view bytes) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    v |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[i])) << (8 * i);
  }
  return v;
}

}  // namespace

void Store::EncodeSnapshot(std::string* out) const {
  const std::size_t start = out->size();
  EncodeSnapshotBody(out);
  ByteWriter(out).PutFixed32(Crc32(std::string_view(*out).substr(start)));
}

Result<int> Store::CheckSnapshotBytes(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return Status::Corruption("snapshot: bad magic (not a tenure snapshot)");
  }
  if (bytes.size() <= kMagic.size()) return Status::Corruption("snapshot: truncated after magic");
  const auto version = static_cast<std::uint8_t>(bytes[kMagic.size()]);
  if (version == 1 || version == 2) return static_cast<int>(version);  // no checksum
  if (version != kSnapshotVersion && version != kSnapshotVersionWithSecret &&
      version != kSnapshotVersionWithZk && version != kSnapshotVersionWithMemberEtcd &&
      version != kSnapshotVersionWithCompaction && version != kSnapshotVersionWithVersions &&
      version != kSnapshotVersionWithAuthority && version != kSnapshotVersionWithQueues &&
      version != kSnapshotVersionWithHistory && version != kSnapshotVersionWithAcl &&
      version != kSnapshotVersionWithoutAcl) {
    return Status::Corruption("snapshot: unknown version " + std::to_string(version));
  }
  if (bytes.size() < kMagic.size() + 1 + kChecksumBytes) {
    return Status::Corruption("snapshot: truncated (" + std::to_string(bytes.size()) + " bytes)");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - kChecksumBytes);
  const std::uint32_t stored = ReadFixed32(bytes.substr(body.size()));
  const std::uint32_t actual = Crc32(body);
  if (stored != actual) {
    char text[96];
    std::snprintf(text, sizeof text, "snapshot: checksum mismatch (stored %08x, computed %08x)",
                  stored, actual);
    return Status::Corruption(text);
  }
  return static_cast<int>(version);
}

void Store::EncodeSnapshotBody(std::string* out) const {
  ByteWriter w(out);
  out->append(kMagic);
  const bool with_history = !history_.empty();
  bool with_versions = false;
  for (const auto& [key, entry] : kv_) with_versions |= entry.version > 1;
  bool with_member_zk = false;
  for (const auto& [id, member] : members_) with_member_zk |= !member.zk_address.empty();
  const bool with_secret = with_member_zk || !zk_secret_.empty();
  const bool with_zk = with_secret || !zk_nodes_.empty();
  bool any_member_etcd = false;
  for (const auto& [id, member] : members_) any_member_etcd |= !member.etcd_address.empty();
  const bool with_member_etcd = with_zk || any_member_etcd;
  const bool with_compaction = with_member_etcd || !compact_revision_.is_none();
  with_versions |= with_compaction;
  const bool with_queues = with_versions || !queues_index_.is_none();
  bool with_authority = with_versions;
  for (const auto& [key, queue] : queues_) {
    for (const QueueWaiter& waiter : queue) with_authority |= waiter.authority.checked;
  }
  w.PutU8(with_member_zk     ? kSnapshotVersion
          : with_secret      ? kSnapshotVersionWithSecret
          : with_zk          ? kSnapshotVersionWithZk
          : with_member_etcd ? kSnapshotVersionWithMemberEtcd
          : with_compaction  ? kSnapshotVersionWithCompaction
          : with_versions    ? kSnapshotVersionWithVersions
          : with_authority   ? kSnapshotVersionWithAuthority
          : with_queues      ? kSnapshotVersionWithQueues
          : with_history     ? kSnapshotVersionWithHistory
          : acl_.empty()     ? kSnapshotVersionWithoutAcl
                             : kSnapshotVersionWithAcl);
  w.PutIndex(applied_index_);
  w.PutIndex(kv_index_);
  w.PutIndex(sessions_index_);
  w.PutIndex(reaped_index_);
  w.PutSignedVarint(now_ms_.ms());
  w.PutVarint(kv_.size());
  for (const auto& [key, entry] : kv_) EncodeKvEntry(entry, with_versions, w);
  w.PutVarint(tombstones_.size());
  for (const auto& [key, index] : tombstones_) {
    w.PutBytes(key);
    w.PutIndex(index);
  }
  w.PutVarint(sessions_.size());
  for (const Session& session : sessions_) EncodeSession(session, w);
  w.PutVarint(lock_delays_.size());
  for (const auto& [key, until] : lock_delays_) {
    w.PutBytes(key);
    w.PutSignedVarint(until.ms());
  }
  w.PutVarint(members_.size());
  for (const auto& [id, member] : members_) {
    w.PutVarint(member.id);
    w.PutBytes(member.name);
    w.PutBytes(member.raft_address);
    w.PutBytes(member.http_address);
    if (with_member_etcd) w.PutBytes(member.etcd_address);
    if (with_member_zk) w.PutBytes(member.zk_address);
    w.PutIndex(member.modify_index);
  }
  if (with_queues) {
    w.PutBool(!acl_.empty());
    if (!acl_.empty()) acl_.Encode(w);
    w.PutBool(with_history);
    if (with_history) history_.Encode(w);
    w.PutIndex(queues_index_);
    w.PutVarint(queues_.size());
    for (const auto& [key, queue] : queues_) {
      w.PutBytes(key);
      w.PutVarint(queue.size());
      for (const QueueWaiter& waiter : queue) {
        w.PutBytes(waiter.session.view());
        w.PutBytes(waiter.value);
        w.PutVarint(waiter.flags);
        w.PutSignedVarint(waiter.since.ms());
        w.PutIndex(waiter.enqueue_index);
        if (with_authority) {
          w.PutBool(waiter.authority.checked);
          if (waiter.authority.checked) {
            w.PutBytes(waiter.authority.accessor_id);
            w.PutBool(waiter.authority.default_allow);
          }
        }
      }
    }
    if (with_compaction) w.PutIndex(compact_revision_);
    if (with_zk) {
      w.PutVarint(zk_nodes_.size());
      for (const auto& [path, node] : zk_nodes_) {
        w.PutBytes(path);
        w.PutSignedVarint(node.ctime.ms());
        w.PutSignedVarint(node.mtime.ms());
        w.PutSignedVarint(node.children_created);
        w.PutSignedVarint(node.children);
        w.PutIndex(node.pzxid);
        w.PutSignedVarint(node.aversion);
        w.PutBool(node.container);
      }
      if (with_secret) w.PutBytes(zk_secret_);
    }

  } else if (with_history) {
    w.PutBool(!acl_.empty());
    if (!acl_.empty()) acl_.Encode(w);
    history_.Encode(w);
  } else if (!acl_.empty()) {
    acl_.Encode(w);
  }
}

Result<Store> Store::DecodeSnapshot(std::string_view bytes) {
  Result<int> checked = CheckSnapshotBytes(bytes);
  if (!checked.ok()) return checked.status();
  const int version = *checked;
  if (version >= 3) bytes.remove_suffix(kChecksumBytes);
  ByteReader r(bytes.substr(kMagic.size()));
  r.GetU8();  // the version, checked above
  Store store;
  store.applied_index_ = r.GetIndex();
  store.kv_index_ = r.GetIndex();
  store.sessions_index_ = r.GetIndex();
  store.reaped_index_ = r.GetIndex();
  store.now_ms_ = ClusterMs(r.GetSignedVarint());

  auto count = [&r]() {
    std::uint64_t n = r.GetVarint();
    if (n > r.remaining()) r.Fail();  // every element takes at least one byte
    return r.failed() ? 0 : n;
  };
  // Keys are written in order: each goes in at the end without a search (a
  // restore of a million keys spends most of its time here). A key out of
  // order or repeated is refused, as a file the encoder never writes.
  const bool with_versions = version >= kSnapshotVersionWithVersions;
  bool any_version_above_1 = false;
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    KvEntry entry = DecodeKvEntry(r, with_versions);
    any_version_above_1 |= entry.version > 1;
    if (!store.kv_.empty() && !(store.kv_.rbegin()->first < entry.key)) {
      r.Fail();
      break;
    }
    std::string key = entry.key;
    store.kv_.emplace_hint(store.kv_.end(), std::move(key), std::move(entry));
  }
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    std::string key = r.GetString();
    LogIndex index = r.GetIndex();
    store.tombstones_.emplace(std::move(key), index);
  }
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    if (!store.sessions_.insert(DecodeSession(r)).second) r.Fail();
  }
  for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
    std::string key = r.GetString();
    ClusterMs until(r.GetSignedVarint());
    store.lock_delays_.emplace(std::move(key), until);
  }
  bool any_member_etcd = false;
  bool any_member_zk = false;
  for (std::uint64_t n = version >= 2 ? count() : 0; n > 0 && !r.failed(); --n) {
    Member member;
    member.id = r.GetVarint();
    member.name = r.GetString();
    member.raft_address = r.GetString();
    member.http_address = r.GetString();
    if (version >= kSnapshotVersionWithMemberEtcd) {
      member.etcd_address = r.GetString();
      any_member_etcd |= !member.etcd_address.empty();
    }
    if (version >= kSnapshotVersion) {
      member.zk_address = r.GetString();
      any_member_zk |= !member.zk_address.empty();
    }
    member.modify_index = r.GetIndex();
    std::uint64_t id = member.id;
    if (!store.members_.emplace(id, std::move(member)).second) r.Fail();
  }
  if (version == kSnapshotVersionWithAcl) {
    store.acl_ = AclTable::Decode(r);
    if (store.acl_.empty()) r.Fail();  // version 4 is written only with ACL state
  } else if (version == kSnapshotVersionWithHistory) {
    if (r.GetBool()) {
      store.acl_ = AclTable::Decode(r);
      if (store.acl_.empty()) r.Fail();
    }
    store.history_ = LockHistory::Decode(r);
    if (store.history_.empty()) r.Fail();  // version 5 is written only with history
  } else if (version >= kSnapshotVersionWithQueues) {
    if (r.GetBool()) {
      store.acl_ = AclTable::Decode(r);
      if (store.acl_.empty()) r.Fail();
    }
    if (r.GetBool()) {
      store.history_ = LockHistory::Decode(r);
      if (store.history_.empty()) r.Fail();
    }
    store.queues_index_ = r.GetIndex();
    // Versions 6-7 are written only with it; versions 8-9 have no queue without it.
    const bool queues_used = !store.queues_index_.is_none();
    if (!queues_used && !with_versions) r.Fail();
    bool any_checked = false;
    for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
      std::string key = r.GetString();
      std::deque<QueueWaiter> queue;
      for (std::uint64_t m = count(); m > 0 && !r.failed(); --m) {
        QueueWaiter waiter;
        waiter.session = SessionId(r.GetString());
        waiter.value = r.GetString();
        waiter.flags = r.GetVarint();
        waiter.since = UnixMs(r.GetSignedVarint());
        waiter.enqueue_index = r.GetIndex();
        if (version >= kSnapshotVersionWithAuthority && r.GetBool()) {
          waiter.authority.checked = true;
          waiter.authority.accessor_id = r.GetString();
          waiter.authority.default_allow = r.GetBool();
          any_checked = true;
        }
        queue.push_back(std::move(waiter));
      }
      if (r.failed()) break;
      if (queue.empty() || queue.size() > kQueueWaitersPerKeyMax || !queues_used) r.Fail();
      for (const QueueWaiter& waiter : queue) {
        if (!store.queued_[waiter.session].insert(key).second) r.Fail();  // twice in one queue
        ++store.queue_waiters_;
      }
      if (!store.queues_.emplace(std::move(key), std::move(queue)).second) r.Fail();
    }
    // Version 7 is written only while a waiter carries a token to check.
    if (version == kSnapshotVersionWithAuthority && !any_checked) r.Fail();
    if (version >= kSnapshotVersionWithCompaction) {
      store.compact_revision_ = r.GetIndex();
      // Version 9 is written only with it.
      if (version == kSnapshotVersionWithCompaction && store.compact_revision_.is_none()) r.Fail();
    }
    if (version >= kSnapshotVersionWithZk) {
      auto int32 = [&r]() {
        const std::int64_t v = r.GetSignedVarint();
        if (v < INT32_MIN || v > INT32_MAX) r.Fail();
        return static_cast<std::int32_t>(v);
      };
      for (std::uint64_t n = count(); n > 0 && !r.failed(); --n) {
        std::string path = r.GetString();
        ZkNode node;
        node.ctime = UnixMs(r.GetSignedVarint());
        node.mtime = UnixMs(r.GetSignedVarint());
        node.children_created = int32();
        node.children = int32();
        node.pzxid = r.GetIndex();
        node.aversion = int32();
        node.container = r.GetBool();
        if (!store.zk_nodes_.empty() && !(store.zk_nodes_.rbegin()->first < path)) r.Fail();
        store.zk_nodes_.emplace_hint(store.zk_nodes_.end(), std::move(path), node);
      }
      // Version 11 is written only with a record, version 12 with the secret.
      if (version == kSnapshotVersionWithZk && store.zk_nodes_.empty()) r.Fail();
      if (version >= kSnapshotVersionWithSecret) {
        store.zk_secret_ = r.GetString();
        // Version 13 may be written before the secret is made.
        const bool none_allowed = version == kSnapshotVersion && store.zk_secret_.empty();
        if (store.zk_secret_.size() != kZkSecretBytes && !none_allowed) r.Fail();
      }
    }
  }
  // Version 8 is written only while a key's version is above 1.
  if (version == kSnapshotVersionWithVersions && !any_version_above_1) r.Fail();
  // Version 10 is written only while a member has an etcd address.
  if (version == kSnapshotVersionWithMemberEtcd && !any_member_etcd) r.Fail();
  // Version 13 is written only while a member has a ZooKeeper address.
  if (version == kSnapshotVersion && !any_member_zk) r.Fail();
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
  // Untrusted bytes: refuse any state Apply could never have produced, and
  // one that could not grow for long (2^62 - 1 restored, say: the next
  // snapshot would break Validate and the server could not restart).
  if (Status room = store.CheckGrowthRoom(); !room.ok()) return room.Annotate("snapshot");
  if (Status valid = store.Validate(); !valid.ok()) return valid.Annotate("snapshot");
  // Whoever watches this store cannot tell what a restore changed.
  store.changes_.everything = true;
  store.replaced_at_ = store.applied_index_;
  return store;
}

std::uint64_t Store::Digest() const {
  // The body only: the checksum is a function of it, so it would add
  // nothing to equality and cost a CRC per digest.
  std::string bytes;
  EncodeSnapshotBody(&bytes);
  return Fnv1a64(bytes);
}

}  // namespace tenure::state
