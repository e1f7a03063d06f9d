#include "state/command.h"

#include "common/coding.h"
#include "state/codec.h"

namespace tenure::state {
namespace {

// Byte format (docs/formats.md):
//   command := version:u8 type:u8 now_ms:svarint body
// Type tags are part of the log format: never renumber, only append.
constexpr std::uint8_t kFormatVersion = 1;

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
};

struct Encoder {
  ByteWriter& w;
  void operator()(const KvSet& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kKvSet));
    w.PutBytes(c.key);
    w.PutBytes(c.value);
    w.PutVarint(c.flags);
  }
  void operator()(const KvCas& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kKvCas));
    w.PutBytes(c.key);
    w.PutBytes(c.value);
    w.PutVarint(c.flags);
    w.PutVarint(c.index);
  }
  void operator()(const KvAcquire& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kKvAcquire));
    w.PutBytes(c.key);
    w.PutBytes(c.value);
    w.PutVarint(c.flags);
    w.PutBytes(c.session);
  }
  void operator()(const KvRelease& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kKvRelease));
    w.PutBytes(c.key);
    w.PutBytes(c.value);
    w.PutVarint(c.flags);
    w.PutBytes(c.session);
  }
  void operator()(const KvDelete& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kKvDelete));
    w.PutBytes(c.key);
    w.PutBool(c.has_cas);
    w.PutVarint(c.index);
  }
  void operator()(const KvDeleteTree& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kKvDeleteTree));
    w.PutBytes(c.prefix);
  }
  void operator()(const SessionCreate& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kSessionCreate));
    EncodeSession(c.session, w);
  }
  void operator()(const SessionDestroy& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kSessionDestroy));
    w.PutBytes(c.id);
    w.PutU8(static_cast<std::uint8_t>(c.reason));
  }
  void operator()(const Txn& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kTxn));
    w.PutVarint(c.ops.size());
    for (const TxnOp& op : c.ops) EncodeTxnOp(op, w);
  }
  void operator()(const ReapTombstones& c) {
    w.PutU8(static_cast<std::uint8_t>(Tag::kReapTombstones));
    w.PutVarint(c.index);
  }
};

}  // namespace

void EncodeCommand(const Command& command, std::string* out) {
  ByteWriter w(out);
  w.PutU8(kFormatVersion);
  // The tag is written by the body encoder, right after the version, and the
  // time follows the body so each encoder stays a straight list of fields.
  std::visit(Encoder{w}, command.body);
  w.PutSignedVarint(command.now_ms);
}

Result<Command> DecodeCommand(std::string_view bytes) {
  ByteReader r(bytes);
  std::uint8_t version = r.GetU8();
  if (r.failed()) return Status::Corruption("command: empty entry");
  if (version != kFormatVersion) {
    return Status::Corruption("command: unknown format version " + std::to_string(version));
  }
  Command command;
  auto tag = static_cast<Tag>(r.GetU8());
  switch (tag) {
    case Tag::kKvSet: {
      KvSet c;
      c.key = r.GetString();
      c.value = r.GetString();
      c.flags = r.GetVarint();
      command.body = std::move(c);
      break;
    }
    case Tag::kKvCas: {
      KvCas c;
      c.key = r.GetString();
      c.value = r.GetString();
      c.flags = r.GetVarint();
      c.index = r.GetVarint();
      command.body = std::move(c);
      break;
    }
    case Tag::kKvAcquire: {
      KvAcquire c;
      c.key = r.GetString();
      c.value = r.GetString();
      c.flags = r.GetVarint();
      c.session = r.GetString();
      command.body = std::move(c);
      break;
    }
    case Tag::kKvRelease: {
      KvRelease c;
      c.key = r.GetString();
      c.value = r.GetString();
      c.flags = r.GetVarint();
      c.session = r.GetString();
      command.body = std::move(c);
      break;
    }
    case Tag::kKvDelete: {
      KvDelete c;
      c.key = r.GetString();
      c.has_cas = r.GetBool();
      c.index = r.GetVarint();
      command.body = std::move(c);
      break;
    }
    case Tag::kKvDeleteTree: {
      KvDeleteTree c;
      c.prefix = r.GetString();
      command.body = std::move(c);
      break;
    }
    case Tag::kSessionCreate: {
      SessionCreate c;
      c.session = DecodeSession(r);
      command.body = std::move(c);
      break;
    }
    case Tag::kSessionDestroy: {
      SessionDestroy c;
      c.id = r.GetString();
      std::uint8_t reason = r.GetU8();
      if (reason > 1) r.Fail();
      c.reason = static_cast<DestroyReason>(reason);
      command.body = std::move(c);
      break;
    }
    case Tag::kTxn: {
      Txn c;
      std::uint64_t n = r.GetVarint();
      if (n > r.remaining()) r.Fail();
      for (; n > 0 && !r.failed(); --n) c.ops.push_back(DecodeTxnOp(r));
      command.body = std::move(c);
      break;
    }
    case Tag::kReapTombstones: {
      ReapTombstones c;
      c.index = r.GetVarint();
      command.body = std::move(c);
      break;
    }
    default:
      return Status::Corruption("command: unknown type " +
                                std::to_string(static_cast<int>(tag)));
  }
  command.now_ms = r.GetSignedVarint();
  if (r.failed()) return Status::Corruption("command: truncated or malformed entry");
  if (!r.done()) return Status::Corruption("command: trailing bytes after entry");
  return command;
}

std::string_view CommandName(const Command& command) {
  struct Namer {
    std::string_view operator()(const KvSet&) { return "kv-set"; }
    std::string_view operator()(const KvCas&) { return "kv-cas"; }
    std::string_view operator()(const KvAcquire&) { return "kv-acquire"; }
    std::string_view operator()(const KvRelease&) { return "kv-release"; }
    std::string_view operator()(const KvDelete&) { return "kv-delete"; }
    std::string_view operator()(const KvDeleteTree&) { return "kv-delete-tree"; }
    std::string_view operator()(const SessionCreate&) { return "session-create"; }
    std::string_view operator()(const SessionDestroy&) { return "session-destroy"; }
    std::string_view operator()(const Txn&) { return "txn"; }
    std::string_view operator()(const ReapTombstones&) { return "reap-tombstones"; }
  };
  return std::visit(Namer{}, command.body);
}

}  // namespace tenure::state
