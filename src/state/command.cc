// The raft log's command format: every command's encoder and decoder.
// Why one file over 500 lines: both directions come from one field list
// per command (Fields below), so the two cannot drift apart; the restore
// command's view decoder sits beside them for the same reason.
#include "state/command.h"

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "common/coding.h"
#include "state/codec.h"
#include "state/etcd_codec.h"

namespace tenure::state {
namespace {

// Byte format (docs/formats.md):
//   command := version:u8 tag:u8 body now_ms:svarint [wall_ms:svarint]
// wall_ms from version 2 on (decision 0037). A version 1 command was stamped
// with the leader's wall clock alone, which served as both clocks.
// Type tags are part of the log format: never renumber, only append.
constexpr std::uint8_t kFormatVersion = 2;
constexpr std::uint8_t kFormatVersionWallInNow = 1;

enum class Tag : std::uint8_t {
  kKvSet = 1,
  kKvCas = 2,
  kKvAcquire = 3,
  kKvRelease = 4,
  kKvDelete = 5,
  kKvDeleteTree = 6,
  kSessionCreate = 7,
  kSessionDestroy = 8,
  kTxn = 9,
  kReapTombstones = 10,
  kSetMember = 11,
  kRemoveMember = 12,
  kCheckpoint = 13,
  kAclBootstrap = 14,
  kAclSetup = 15,
  kAclPolicySet = 16,
  kAclPolicyDelete = 17,
  kAclTokenSet = 18,
  kAclTokenDelete = 19,
  kRestoreState = 20,
  kKvEnqueue = 21,
  kKvDequeue = 22,
  kKvQueueGrant = 23,
  // KvEnqueue / KvDequeue with `hold` set (the same fields; the tag is the flag).
  kKvEnqueueHeld = 24,
  kKvDequeueHeld = 25,
  // KvEnqueue with a checked GrantAuthority (its fields follow the others).
  kKvEnqueueChecked = 26,
  kKvEnqueueCheckedHeld = 27,
  kRestoreChunk = 28,
  kRestoreStaged = 29,
  kEtcdTxn = 30,
  kEtcdCompact = 31,
  // SetMember of a server with an etcd address (it follows the others), so
  // members without one keep their bytes (decision 0055).
  kSetMemberEtcd = 32,
  kZkWrite = 33,
  kZkSecret = 34,
  // SetMember of a server with a ZooKeeper address: the etcd address ("" if
  // none) and then it follow the others (decision 0056).
  kSetMemberZk = 35,
};

// Each command's fields, in wire order, listed once for both directions:
// `io` is a FieldWriter or a FieldReader. C is the command, const or not.
template <typename C, typename T>
concept Is = std::same_as<std::remove_const_t<C>, T>;

template <typename Io, Is<KvSet> C>
void Fields(Io& io, C& c) {
  io(c.key), io(c.value), io(c.flags);
}
template <typename Io, Is<KvCas> C>
void Fields(Io& io, C& c) {
  io(c.key), io(c.value), io(c.flags), io(c.index);
}
template <typename Io, Is<KvAcquire> C>
void Fields(Io& io, C& c) {
  io(c.key), io(c.value), io(c.flags), io(c.session);
}
template <typename Io, Is<KvRelease> C>
void Fields(Io& io, C& c) {
  io(c.key), io(c.value), io(c.flags), io(c.session);
}
template <typename Io, Is<KvDelete> C>
void Fields(Io& io, C& c) {
  io(c.key), io(c.has_cas), io(c.index);
}
template <typename Io, Is<KvDeleteTree> C>
void Fields(Io& io, C& c) {
  io(c.prefix);
}
template <typename Io, Is<SessionCreate> C>
void Fields(Io& io, C& c) {
  io(c.session);
}
template <typename Io, Is<SessionDestroy> C>
void Fields(Io& io, C& c) {
  io(c.id), io(c.reason);
}
template <typename Io, Is<Txn> C>
void Fields(Io& io, C& c) {
  io(c.ops);
}
template <typename Io, Is<ReapTombstones> C>
void Fields(Io& io, C& c) {
  io(c.index);
}
template <typename Io, Is<SetMember> C>
void Fields(Io& io, C& c) {
  io(c.member.id), io(c.member.name), io(c.member.raft_address), io(c.member.http_address);
}
template <typename Io, Is<RemoveMember> C>
void Fields(Io& io, C& c) {
  io(c.id);
}
template <typename Io, Is<Checkpoint> C>
void Fields(Io& io, C& c) {
  io(c.checked_index), io(c.checked_digest);
}
template <typename Io, Is<AclBootstrap> C>
void Fields(Io& io, C& c) {
  io(c.token), io(c.reset_index);
}
template <typename Io, Is<AclSetup> C>
void Fields(Io& io, C& c) {
  io(c.initial_management);
}
template <typename Io, Is<AclPolicySet> C>
void Fields(Io& io, C& c) {
  io(c.policy);
}
template <typename Io, Is<AclPolicyDelete> C>
void Fields(Io& io, C& c) {
  io(c.id);
}
template <typename Io, Is<AclTokenSet> C>
void Fields(Io& io, C& c) {
  io(c.token);
}
template <typename Io, Is<AclTokenDelete> C>
void Fields(Io& io, C& c) {
  io(c.accessor_id), io(c.reason);
}
template <typename Io, Is<RestoreState> C>
void Fields(Io& io, C& c) {
  io(c.snapshot);
}
template <typename Io, Is<KvEnqueue> C>
void Fields(Io& io, C& c) {
  io(c.key), io(c.value), io(c.flags), io(c.session);
}
// After a checked KvEnqueue's fields (tags 26 and 27).
template <typename Io, Is<GrantAuthority> C>
void Fields(Io& io, C& c) {
  io(c.accessor_id), io(c.default_allow);
}
template <typename Io, Is<KvDequeue> C>
void Fields(Io& io, C& c) {
  io(c.key), io(c.session);
}
template <typename Io, Is<KvQueueGrant> C>
void Fields(Io& io, C& c) {
  io(c.key);
}
template <typename Io, Is<RestoreChunk> C>
void Fields(Io& io, C& c) {
  io(c.restore_id), io(c.offset), io(c.total), io(c.bytes);
}
template <typename Io, Is<RestoreStaged> C>
void Fields(Io& io, C& c) {
  io(c.restore_id), io(c.total);
}

template <typename Io, Is<EtcdTxn> C>
void Fields(Io& io, C& c) {
  io(c.txn);
}
template <typename Io, Is<EtcdCompact> C>
void Fields(Io& io, C& c) {
  io(c.revision);
}

template <typename Io, Is<ZkWrite> C>
void Fields(Io& io, C& c) {
  io(c.session), io(c.ops);
}

template <typename Io, Is<ZkSecret> C>
void Fields(Io& io, C& c) {
  io(c.secret);
}

template <typename T>
constexpr Tag kTagOf = Tag{0};
template <>
constexpr Tag kTagOf<KvSet> = Tag::kKvSet;
template <>
constexpr Tag kTagOf<KvCas> = Tag::kKvCas;
template <>
constexpr Tag kTagOf<KvAcquire> = Tag::kKvAcquire;
template <>
constexpr Tag kTagOf<KvRelease> = Tag::kKvRelease;
template <>
constexpr Tag kTagOf<KvDelete> = Tag::kKvDelete;
template <>
constexpr Tag kTagOf<KvDeleteTree> = Tag::kKvDeleteTree;
template <>
constexpr Tag kTagOf<SessionCreate> = Tag::kSessionCreate;
template <>
constexpr Tag kTagOf<SessionDestroy> = Tag::kSessionDestroy;
template <>
constexpr Tag kTagOf<Txn> = Tag::kTxn;
template <>
constexpr Tag kTagOf<ReapTombstones> = Tag::kReapTombstones;
template <>
constexpr Tag kTagOf<SetMember> = Tag::kSetMember;
template <>
constexpr Tag kTagOf<RemoveMember> = Tag::kRemoveMember;
template <>
constexpr Tag kTagOf<Checkpoint> = Tag::kCheckpoint;
template <>
constexpr Tag kTagOf<AclBootstrap> = Tag::kAclBootstrap;
template <>
constexpr Tag kTagOf<AclSetup> = Tag::kAclSetup;
template <>
constexpr Tag kTagOf<AclPolicySet> = Tag::kAclPolicySet;
template <>
constexpr Tag kTagOf<AclPolicyDelete> = Tag::kAclPolicyDelete;
template <>
constexpr Tag kTagOf<AclTokenSet> = Tag::kAclTokenSet;
template <>
constexpr Tag kTagOf<AclTokenDelete> = Tag::kAclTokenDelete;
template <>
constexpr Tag kTagOf<RestoreState> = Tag::kRestoreState;
template <>
constexpr Tag kTagOf<KvEnqueue> = Tag::kKvEnqueue;
template <>
constexpr Tag kTagOf<KvDequeue> = Tag::kKvDequeue;
template <>
constexpr Tag kTagOf<KvQueueGrant> = Tag::kKvQueueGrant;
template <>
constexpr Tag kTagOf<RestoreChunk> = Tag::kRestoreChunk;
template <>
constexpr Tag kTagOf<RestoreStaged> = Tag::kRestoreStaged;
template <>
constexpr Tag kTagOf<EtcdTxn> = Tag::kEtcdTxn;
template <>
constexpr Tag kTagOf<EtcdCompact> = Tag::kEtcdCompact;
template <>
constexpr Tag kTagOf<ZkWrite> = Tag::kZkWrite;
template <>
constexpr Tag kTagOf<ZkSecret> = Tag::kZkSecret;

// A ZkOp's mode flags in one byte.
constexpr std::uint8_t kZkEphemeral = 1;
constexpr std::uint8_t kZkSequential = 2;
constexpr std::uint8_t kZkContainer = 4;

struct FieldWriter {
  ByteWriter& w;
  void operator()(const std::string& v) { w.PutBytes(v); }
  void operator()(const SessionId& v) { EncodeSessionId(v, w); }
  void operator()(std::uint64_t v) { w.PutVarint(v); }
  void operator()(LogIndex v) { w.PutIndex(v); }
  void operator()(bool v) { w.PutBool(v); }
  void operator()(DestroyReason v) { w.PutU8(static_cast<std::uint8_t>(v)); }
  void operator()(const Session& v) { EncodeSession(v, w); }
  void operator()(const AclToken& v) { EncodeAclToken(v, w); }
  void operator()(const AclPolicy& v) { EncodeAclPolicy(v, w); }
  void operator()(const std::optional<AclToken>& v) {
    w.PutBool(v.has_value());
    if (v) EncodeAclToken(*v, w);
  }
  void operator()(AclTokenDeleteReason v) { w.PutU8(static_cast<std::uint8_t>(v)); }
  void operator()(const std::vector<TxnOp>& ops) {
    w.PutVarint(ops.size());
    for (const TxnOp& op : ops) EncodeTxnOp(op, w);
  }
  void operator()(const EtcdTxnRequest& txn) { EncodeEtcdTxn(txn, w); }
  void operator()(const std::vector<ZkOp>& ops) {
    w.PutVarint(ops.size());
    for (const ZkOp& op : ops) {
      w.PutU8(static_cast<std::uint8_t>(op.kind));
      w.PutBytes(op.path);
      w.PutBytes(op.data);
      w.PutSignedVarint(op.version);
      w.PutU8(static_cast<std::uint8_t>((op.ephemeral ? kZkEphemeral : 0) |
                                        (op.sequential ? kZkSequential : 0) |
                                        (op.container ? kZkContainer : 0)));
    }
  }
};

struct FieldReader {
  ByteReader& r;
  void operator()(std::string& v) { v = r.GetString(); }
  void operator()(SessionId& v) { v = DecodeSessionId(r); }
  void operator()(std::uint64_t& v) { v = r.GetVarint(); }
  void operator()(LogIndex& v) { v = r.GetIndex(); }
  void operator()(bool& v) { v = r.GetBool(); }
  void operator()(DestroyReason& v) {
    std::uint8_t reason = r.GetU8();
    if (reason > static_cast<std::uint8_t>(DestroyReason::kExpired)) r.Fail();
    v = static_cast<DestroyReason>(reason);
  }
  void operator()(Session& v) { v = DecodeSession(r); }
  void operator()(AclToken& v) { v = DecodeAclToken(r); }
  void operator()(AclPolicy& v) { v = DecodeAclPolicy(r); }
  void operator()(std::optional<AclToken>& v) {
    if (r.GetBool()) v = DecodeAclToken(r);
  }
  void operator()(AclTokenDeleteReason& v) {
    std::uint8_t reason = r.GetU8();
    if (reason > static_cast<std::uint8_t>(AclTokenDeleteReason::kExpired)) r.Fail();
    v = static_cast<AclTokenDeleteReason>(reason);
  }
  void operator()(std::vector<TxnOp>& ops) {
    std::uint64_t n = r.GetVarint();
    if (n > r.remaining()) r.Fail();  // every op takes at least one byte
    for (; n > 0 && !r.failed(); --n) ops.push_back(DecodeTxnOp(r));
  }
  void operator()(EtcdTxnRequest& txn) { txn = DecodeEtcdTxn(r); }
  void operator()(std::vector<ZkOp>& ops) {
    std::uint64_t n = r.GetVarint();
    if (n > r.remaining()) r.Fail();  // every op takes at least one byte
    for (; n > 0 && !r.failed(); --n) {
      ZkOp& op = ops.emplace_back();
      const std::uint8_t kind = r.GetU8();
      if (kind > static_cast<std::uint8_t>(ZkOp::Kind::kSetAcl)) r.Fail();
      op.kind = static_cast<ZkOp::Kind>(kind);
      op.path = r.GetString();
      op.data = r.GetString();
      const std::int64_t version = r.GetSignedVarint();
      if (version < INT32_MIN || version > INT32_MAX) r.Fail();
      op.version = static_cast<std::int32_t>(version);
      const std::uint8_t mode = r.GetU8();
      if (mode > (kZkEphemeral | kZkSequential | kZkContainer)) r.Fail();
      op.ephemeral = (mode & kZkEphemeral) != 0;
      op.sequential = (mode & kZkSequential) != 0;
      op.container = (mode & kZkContainer) != 0;
    }
  }
};

template <typename T>
CommandBody DecodeBody(ByteReader& r) {
  T body;
  FieldReader reader{r};
  Fields(reader, body);
  return body;
}

}  // namespace

void EncodeCommand(const Command& command, std::string* out) {
  ByteWriter w(out);
  w.PutU8(kFormatVersion);
  std::visit(
      [&w](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        Tag tag = kTagOf<T>;
        if constexpr (std::is_same_v<T, KvEnqueue>) {
          if (body.authority.checked) {
            tag = body.hold ? Tag::kKvEnqueueCheckedHeld : Tag::kKvEnqueueChecked;
          } else if (body.hold) {
            tag = Tag::kKvEnqueueHeld;
          }
        } else if constexpr (std::is_same_v<T, KvDequeue>) {
          if (body.hold) tag = Tag::kKvDequeueHeld;
        } else if constexpr (std::is_same_v<T, SetMember>) {
          if (!body.member.zk_address.empty()) {
            tag = Tag::kSetMemberZk;
          } else if (!body.member.etcd_address.empty()) {
            tag = Tag::kSetMemberEtcd;
          }
        }
        w.PutU8(static_cast<std::uint8_t>(tag));
        FieldWriter writer{w};
        Fields(writer, body);
        if constexpr (std::is_same_v<T, KvEnqueue>) {
          if (body.authority.checked) Fields(writer, body.authority);
        } else if constexpr (std::is_same_v<T, SetMember>) {
          if (tag != Tag::kSetMember) writer(body.member.etcd_address);
          if (tag == Tag::kSetMemberZk) writer(body.member.zk_address);
        }
      },
      command.body);
  w.PutSignedVarint(command.now_ms.ms());
  w.PutSignedVarint(command.wall_ms.ms());
}

namespace {

// What follows every body: the stamps (format 1 had one clock for both),
// then the end of the entry.
Result<Command> FinishDecode(ByteReader& r, std::uint8_t version, Command command) {
  command.now_ms = ClusterMs(r.GetSignedVarint());
  command.wall_ms = version == kFormatVersionWallInNow ? UnixMs(command.now_ms.ms())
                                                       : UnixMs(r.GetSignedVarint());
  if (r.failed()) return Status::Corruption("command: truncated or malformed entry");
  if (!r.done()) return Status::Corruption("command: trailing bytes after entry");
  return command;
}

}  // namespace

Result<Command> DecodeRestoreCommand(std::string_view bytes, std::string_view* snapshot) {
  ByteReader r(bytes);
  const std::uint8_t version = r.GetU8();
  if (r.failed() || (version != kFormatVersion && version != kFormatVersionWallInNow) ||
      static_cast<Tag>(r.GetU8()) != Tag::kRestoreState) {
    return Status::Corruption("command: not a restore-state entry");
  }
  *snapshot = r.GetBytes();
  Command command;
  command.body = RestoreState{};
  return FinishDecode(r, version, std::move(command));
}

void EncodeRestoreAround(const Command& command, std::string* head, std::string* tail) {
  const auto& restore = std::get<RestoreState>(command.body);
  head->clear();
  tail->clear();
  ByteWriter h(head);
  h.PutU8(kFormatVersion);
  h.PutU8(static_cast<std::uint8_t>(Tag::kRestoreState));
  h.PutVarint(restore.snapshot.size());  // PutBytes' length, as FieldWriter writes it
  ByteWriter t(tail);
  t.PutSignedVarint(command.now_ms.ms());
  t.PutSignedVarint(command.wall_ms.ms());
}

bool LooksLikeRestore(std::string_view bytes) {
  if (bytes.size() < 2) return false;
  const auto version = static_cast<std::uint8_t>(bytes[0]);
  return (version == kFormatVersion || version == kFormatVersionWallInNow) &&
         static_cast<Tag>(bytes[1]) == Tag::kRestoreState;
}

bool LooksLikeStagedRestore(std::string_view bytes) {
  if (bytes.size() < 2 || static_cast<std::uint8_t>(bytes[0]) != kFormatVersion) return false;
  const auto tag = static_cast<Tag>(bytes[1]);
  return tag == Tag::kRestoreChunk || tag == Tag::kRestoreStaged;
}

Result<Command> DecodeCommand(std::string_view bytes) {
  ByteReader r(bytes);
  std::uint8_t version = r.GetU8();
  if (r.failed()) return Status::Corruption("command: empty entry");
  if (version != kFormatVersion && version != kFormatVersionWallInNow) {
    return Status::Corruption("command: unknown format version " + std::to_string(version));
  }
  Command command;
  auto tag = static_cast<Tag>(r.GetU8());
  switch (tag) {
    case Tag::kKvSet:
      command.body = DecodeBody<KvSet>(r);
      break;
    case Tag::kKvCas:
      command.body = DecodeBody<KvCas>(r);
      break;
    case Tag::kKvAcquire:
      command.body = DecodeBody<KvAcquire>(r);
      break;
    case Tag::kKvRelease:
      command.body = DecodeBody<KvRelease>(r);
      break;
    case Tag::kKvDelete:
      command.body = DecodeBody<KvDelete>(r);
      break;
    case Tag::kKvDeleteTree:
      command.body = DecodeBody<KvDeleteTree>(r);
      break;
    case Tag::kSessionCreate:
      command.body = DecodeBody<SessionCreate>(r);
      break;
    case Tag::kSessionDestroy:
      command.body = DecodeBody<SessionDestroy>(r);
      break;
    case Tag::kTxn:
      command.body = DecodeBody<Txn>(r);
      break;
    case Tag::kReapTombstones:
      command.body = DecodeBody<ReapTombstones>(r);
      break;
    case Tag::kSetMember:
      command.body = DecodeBody<SetMember>(r);
      break;
    case Tag::kSetMemberEtcd: {
      SetMember body;
      FieldReader reader{r};
      Fields(reader, body);
      reader(body.member.etcd_address);
      if (body.member.etcd_address.empty()) r.Fail();  // written only with one
      command.body = std::move(body);
      break;
    }
    case Tag::kSetMemberZk: {
      SetMember body;
      FieldReader reader{r};
      Fields(reader, body);
      reader(body.member.etcd_address);
      reader(body.member.zk_address);
      if (body.member.zk_address.empty()) r.Fail();  // written only with one
      command.body = std::move(body);
      break;
    }
    case Tag::kRemoveMember:
      command.body = DecodeBody<RemoveMember>(r);
      break;
    case Tag::kCheckpoint:
      command.body = DecodeBody<Checkpoint>(r);
      break;
    case Tag::kAclBootstrap:
      command.body = DecodeBody<AclBootstrap>(r);
      break;
    case Tag::kAclSetup:
      command.body = DecodeBody<AclSetup>(r);
      break;
    case Tag::kAclPolicySet:
      command.body = DecodeBody<AclPolicySet>(r);
      break;
    case Tag::kAclPolicyDelete:
      command.body = DecodeBody<AclPolicyDelete>(r);
      break;
    case Tag::kAclTokenSet:
      command.body = DecodeBody<AclTokenSet>(r);
      break;
    case Tag::kAclTokenDelete:
      command.body = DecodeBody<AclTokenDelete>(r);
      break;
    case Tag::kRestoreState:
      command.body = DecodeBody<RestoreState>(r);
      break;
    case Tag::kKvEnqueue:
      command.body = DecodeBody<KvEnqueue>(r);
      break;
    case Tag::kKvDequeue:
      command.body = DecodeBody<KvDequeue>(r);
      break;
    case Tag::kKvQueueGrant:
      command.body = DecodeBody<KvQueueGrant>(r);
      break;
    case Tag::kRestoreChunk:
      command.body = DecodeBody<RestoreChunk>(r);
      break;
    case Tag::kRestoreStaged:
      command.body = DecodeBody<RestoreStaged>(r);
      break;
    case Tag::kEtcdTxn:
      command.body = DecodeBody<EtcdTxn>(r);
      break;
    case Tag::kEtcdCompact:
      command.body = DecodeBody<EtcdCompact>(r);
      break;
    case Tag::kZkWrite:
      command.body = DecodeBody<ZkWrite>(r);
      break;
    case Tag::kZkSecret:
      command.body = DecodeBody<ZkSecret>(r);
      break;
    case Tag::kKvEnqueueHeld: {
      KvEnqueue body;
      FieldReader reader{r};
      Fields(reader, body);
      body.hold = true;
      command.body = std::move(body);
      break;
    }
    case Tag::kKvDequeueHeld: {
      KvDequeue body;
      FieldReader reader{r};
      Fields(reader, body);
      body.hold = true;
      command.body = std::move(body);
      break;
    }
    case Tag::kKvEnqueueChecked:
    case Tag::kKvEnqueueCheckedHeld: {
      KvEnqueue body;
      FieldReader reader{r};
      Fields(reader, body);
      Fields(reader, body.authority);
      body.authority.checked = true;
      body.hold = tag == Tag::kKvEnqueueCheckedHeld;
      command.body = std::move(body);
      break;
    }
    default:
      return Status::Corruption("command: unknown type " + std::to_string(static_cast<int>(tag)));
  }
  return FinishDecode(r, version, std::move(command));
}

std::string_view CommandName(const Command& command) {
  switch (std::visit([](const auto& body) { return kTagOf<std::decay_t<decltype(body)>>; },
                     command.body)) {
    case Tag::kKvSet:
      return "kv-set";
    case Tag::kKvCas:
      return "kv-cas";
    case Tag::kKvAcquire:
      return "kv-acquire";
    case Tag::kKvRelease:
      return "kv-release";
    case Tag::kKvDelete:
      return "kv-delete";
    case Tag::kKvDeleteTree:
      return "kv-delete-tree";
    case Tag::kSessionCreate:
      return "session-create";
    case Tag::kSessionDestroy:
      return "session-destroy";
    case Tag::kTxn:
      return "txn";
    case Tag::kReapTombstones:
      return "reap-tombstones";
    case Tag::kSetMember:
    case Tag::kSetMemberEtcd:
    case Tag::kSetMemberZk:
      return "set-member";
    case Tag::kRemoveMember:
      return "remove-member";
    case Tag::kCheckpoint:
      return "checkpoint";
    case Tag::kAclBootstrap:
      return "acl-bootstrap";
    case Tag::kAclSetup:
      return "acl-setup";
    case Tag::kAclPolicySet:
      return "acl-policy-set";
    case Tag::kAclPolicyDelete:
      return "acl-policy-delete";
    case Tag::kAclTokenSet:
      return "acl-token-set";
    case Tag::kAclTokenDelete:
      return "acl-token-delete";
    case Tag::kRestoreState:
      return "restore-state";
    case Tag::kKvEnqueue:
      return "kv-enqueue";
    case Tag::kKvDequeue:
      return "kv-dequeue";
    case Tag::kKvQueueGrant:
      return "kv-queue-grant";
    case Tag::kKvEnqueueHeld:
      return "kv-enqueue";
    case Tag::kKvDequeueHeld:
      return "kv-dequeue";
    case Tag::kKvEnqueueChecked:
    case Tag::kKvEnqueueCheckedHeld:
      return "kv-enqueue";
    case Tag::kRestoreChunk:
      return "restore-chunk";
    case Tag::kRestoreStaged:
      return "restore-staged";
    case Tag::kEtcdTxn:
      return "etcd-txn";
    case Tag::kEtcdCompact:
      return "etcd-compact";
    case Tag::kZkWrite:
      return "zk-write";
    case Tag::kZkSecret:
      return "zk-secret";
  }
  return "unknown";
}

}  // namespace tenure::state
