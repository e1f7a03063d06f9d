// The command codec: EncodeCommand -> DecodeCommand is the identity for
// every command kind with random contents (empty strings, binary bytes with
// NULs, extreme integers); truncated, extended and corrupted encodings are
// rejected with a non-OK status and never crash. Also CommandName.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/coding.h"
#include "state/command.h"
#include "state/etcd_check.h"
#include "unit/state/golden_hex.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kMaxI64 = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMinI64 = std::numeric_limits<std::int64_t>::min();
constexpr std::size_t kBodyKinds = std::variant_size_v<CommandBody>;

class RandomContents {
 public:
  explicit RandomContents(std::uint64_t seed) : rng_(seed) {}

  std::uint64_t U64() {
    switch (rng_() % 6) {
      case 0:
        return 0;
      case 1:
        return kMaxU64;
      case 2:
        return rng_() % 300;
      case 3:
        return 1ull << (rng_() % 64);
      default:
        return rng_();
    }
  }
  std::int64_t I64() {
    switch (rng_() % 6) {
      case 0:
        return 0;
      case 1:
        return kMaxI64;
      case 2:
        return kMinI64;
      case 3:
        return -static_cast<std::int64_t>(rng_() % 100000);
      default:
        return static_cast<std::int64_t>(rng_());
    }
  }
  std::string Bytes() {
    switch (rng_() % 5) {
      case 0:
        return "";
      case 1:
        return std::string(1 + rng_() % 3, '\0');
      case 2:
        return "service/batman/leader";
      default: {
        std::string s(rng_() % 300, '\0');
        for (char& c : s) c = static_cast<char>(rng_());
        return s;
      }
    }
  }
  // Any bytes: the codec does not care what a session id looks like.
  SessionId Id() { return SessionId(Bytes()); }
  std::vector<std::string> Strings() {
    std::vector<std::string> v(rng_() % 4);
    for (std::string& s : v) s = Bytes();
    return v;
  }
  bool Bool() { return rng_() % 2 == 0; }

  TxnOp Op() {
    TxnOp op;
    op.verb = static_cast<TxnVerb>(rng_() % (static_cast<int>(TxnVerb::kCheckFence) + 1));
    op.key = Bytes();
    op.value = Bytes();
    op.flags = U64();
    op.index = LogIndex(U64());
    op.session = Id();
    return op;
  }

  Session RandomSession() {
    Session s;
    s.id = Id();
    s.name = Bytes();
    s.node = Bytes();
    s.lock_delay_ns = I64();
    s.behavior = Bool() ? Behavior::kDelete : Behavior::kRelease;
    s.ttl = Bytes();
    s.ttl_ns = I64();
    s.checks.set_node(Strings());
    std::vector<ServiceCheck> service_checks(rng_() % 3);
    for (ServiceCheck& c : service_checks) {
      c.id = Bytes();
      c.ns = Bytes();
    }
    s.checks.set_service(std::move(service_checks));
    s.checks.set_legacy(Strings());
    // SessionCreate documents it as ignored on apply; a faithful codec
    // still round-trips it, but only the fields apply reads are required.
    s.create_index = LogIndex();
    return s;
  }

  CommandBody Body(std::size_t kind) {
    switch (kind) {
      case 0:
        return KvSet{Bytes(), Bytes(), U64()};
      case 1:
        return KvCas{Bytes(), Bytes(), U64(), LogIndex(U64())};
      case 2:
        return KvAcquire{Bytes(), Bytes(), U64(), Id()};
      case 3:
        return KvRelease{Bytes(), Bytes(), U64(), Id()};
      case 4:
        return KvDelete{Bytes(), Bool(), LogIndex(U64())};
      case 5:
        return KvDeleteTree{Bytes()};
      case 6:
        return SessionCreate{RandomSession()};
      case 7:
        return SessionDestroy{Id(), Bool() ? DestroyReason::kExpired : DestroyReason::kDestroyed};
      case 8: {
        Txn t;
        t.ops.resize(rng_() % 6);
        for (TxnOp& op : t.ops) op = Op();
        return t;
      }
      case 9:
        return ReapTombstones{LogIndex(U64())};
      case 10:
        return SetMember{{U64(), Bytes(), Bytes(), Bytes(), Bytes(), Bytes(), LogIndex()}};
      case 11:
        return RemoveMember{U64()};
      case 12:
        return Checkpoint{LogIndex(U64()), U64()};
      case 13:
        return AclBootstrap{Token(), LogIndex(U64())};
      case 14: {
        AclSetup setup;
        if (Bool()) setup.initial_management = Token();
        return setup;
      }
      case 15:
        return AclPolicySet{{Bytes(), Bytes(), Bytes(), Bytes(), LogIndex(), LogIndex()}};
      case 16:
        return AclPolicyDelete{Bytes()};
      case 17:
        return AclTokenSet{Token()};
      case 18:
        return AclTokenDelete{
            Bytes(), Bool() ? AclTokenDeleteReason::kExpired : AclTokenDeleteReason::kDeleted};
      case 19:
        return RestoreState{Bytes()};
      case 20:
        return KvEnqueue{Bytes(), Bytes(), U64(), Id(), Bool()};
      case 21:
        return KvDequeue{Bytes(), Id(), Bool()};
      case 22:
        return KvQueueGrant{Bytes()};
      case 23:
        return RestoreChunk{U64(), U64(), U64(), Bytes()};
      case 24:
        return RestoreStaged{U64(), U64()};
      case 25:
        return EtcdTxn{EtcdTxnAt(1)};
      case 26:
        return EtcdCompact{LogIndex(U64())};
      case 27: {
        ZkWrite write;
        write.session = Id();
        write.ops.resize(rng_() % 4);
        for (ZkOp& op : write.ops) {
          op.kind = static_cast<ZkOp::Kind>(rng_() % 4);
          op.path = Bytes();
          op.data = Bytes();
          op.version = static_cast<std::int32_t>(rng_());
          op.ephemeral = Bool();
          op.sequential = Bool();
          op.container = Bool();
        }
        return write;
      }
      default:
        return ZkSecret{Bytes()};
    }
  }

  // A random etcd txn: every op kind and field, nested up to 3 deep.
  EtcdTxnRequest EtcdTxnAt(int depth) {
    EtcdTxnRequest txn;
    txn.compare.resize(rng_() % 3);
    for (EtcdCompare& c : txn.compare) {
      c.result = static_cast<EtcdCompareResult>(rng_() % 4);
      c.target = static_cast<EtcdCompareTarget>(rng_() % 5);
      c.range = KeyRange{Bytes(), Bytes()};
      c.number = I64();
      c.value = Bytes();
    }
    for (auto* branch : {&txn.success, &txn.failure}) {
      branch->resize(rng_() % 3);
      for (EtcdRequestOp& op : *branch) {
        op.kind = static_cast<EtcdRequestOp::Kind>(rng_() % (depth < 3 ? 5 : 4));
        switch (op.kind) {
          case EtcdRequestOp::Kind::kRange:
            op.range.range = KeyRange{Bytes(), Bytes()};
            op.range.limit = I64();
            op.range.revision = I64();
            op.range.sort_order = static_cast<EtcdSortOrder>(rng_() % 3);
            op.range.sort_target = static_cast<EtcdSortTarget>(rng_() % 5);
            op.range.serializable = Bool();
            op.range.keys_only = Bool();
            op.range.count_only = Bool();
            op.range.min_mod_revision = I64();
            op.range.max_mod_revision = I64();
            op.range.min_create_revision = I64();
            op.range.max_create_revision = I64();
            break;
          case EtcdRequestOp::Kind::kPut:
            op.put = EtcdPutRequest{Bytes(), Bytes(), I64(), Bool(), Bool(), Bool()};
            break;
          case EtcdRequestOp::Kind::kDeleteRange:
            op.delete_range = EtcdDeleteRangeRequest{KeyRange{Bytes(), Bytes()}, Bool()};
            break;
          case EtcdRequestOp::Kind::kTxn:
            op.txn.push_back(EtcdTxnAt(depth + 1));
            break;
          case EtcdRequestOp::Kind::kEmpty:
            break;
        }
      }
    }
    return txn;
  }

  AclToken Token() {
    AclToken t;
    t.accessor_id = Bytes();
    t.secret_id = Bytes();
    t.description = Bytes();
    t.policy_ids.resize(rng_() % 4);
    for (std::string& id : t.policy_ids) id = Bytes();
    t.local = Bool();
    t.create_time = UnixMs(I64());
    t.expiration_time = UnixMs(I64());
    return t;
  }

  Command RandomCommand() {
    Command c;
    c.now_ms = ClusterMs(I64());
    c.wall_ms = UnixMs(I64());
    c.body = Body(rng_() % kBodyKinds);
    return c;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

std::string Encode(const Command& c) {
  std::string out;
  EncodeCommand(c, &out);
  return out;
}

TEST(CommandCodecTest, EveryKindRoundTripsWithRandomContents) {
  RandomContents gen(1);
  for (std::size_t kind = 0; kind < kBodyKinds; ++kind) {
    for (int i = 0; i < 300; ++i) {
      Command c;
      c.now_ms = ClusterMs(gen.I64());
      c.wall_ms = UnixMs(gen.I64());
      c.body = gen.Body(kind);
      const std::string bytes = Encode(c);
      Result<Command> decoded = DecodeCommand(bytes);
      ASSERT_TRUE(decoded.ok()) << "kind " << kind << ": " << decoded.status().ToString();
      ASSERT_EQ(decoded->body.index(), kind);
      ASSERT_TRUE(*decoded == c) << "kind " << kind << " iteration " << i;
      // Deterministic: the same command encodes to the same bytes.
      ASSERT_EQ(Encode(*decoded), bytes);
    }
  }
}

TEST(CommandCodecTest, ExtremeValuesRoundTrip) {
  Session s = testutil::MakeSession(SessionId(std::string("id\0\xff", 4)), "", kMinI64);
  s.ttl_ns = kMaxI64;
  s.checks.set_legacy({"", std::string(1, '\0')});
  s.checks.set_service({{"", ""}, {std::string("\0", 1), "ns"}});
  Txn txn;
  for (int v = 0; v <= static_cast<int>(TxnVerb::kCheckFence); ++v) {
    txn.ops.push_back(testutil::MakeOp(static_cast<TxnVerb>(v), std::string("k\0", 2),
                                       std::string(1000, '\xff'), kMaxU64, kMaxU64,
                                       SessionId("s")));
  }
  const std::vector<Command> commands = {
      {ClusterMs(kMaxI64), KvSet{"", "", kMaxU64}},
      {ClusterMs(kMinI64), KvSet{std::string("\0", 1), std::string("\0\0", 2), 0}},
      {ClusterMs(0), KvSet{"k", std::string(512 * 1024, 'x'), testutil::kSemaphoreFlagValue}},
      {ClusterMs(-1), KvCas{"k", "v", kMaxU64, LogIndex(kMaxU64)}},
      {ClusterMs(1), KvAcquire{"k", "", testutil::kLockFlagValue, testutil::TestSessionId(1)}},
      {ClusterMs(1), KvRelease{"k", "", 0, SessionId()}},
      {ClusterMs(1), KvDelete{"k", true, LogIndex()}},
      {ClusterMs(1), KvDelete{"k", false, LogIndex(kMaxU64)}},
      {ClusterMs(1), KvDeleteTree{""}},
      {ClusterMs(1), SessionCreate{s}},
      {ClusterMs(1), SessionDestroy{SessionId(), DestroyReason::kExpired}},
      {ClusterMs(1), Txn{}},
      {ClusterMs(1), txn},
      {ClusterMs(1), ReapTombstones{LogIndex(kMaxU64)}},
      {ClusterMs(1),
       SetMember{{kMaxU64, "", std::string("\0", 1), std::string(300, 'a'), "", "", LogIndex()}}},
      {ClusterMs(1), SetMember{{1, "n", "r:1", "h:2", std::string(300, 'e'), "", LogIndex()}}},
      {ClusterMs(1), RemoveMember{kMaxU64}},
      {ClusterMs(1), Checkpoint{LogIndex(kMaxU64), kMaxU64}},
  };
  for (const Command& c : commands) {
    Result<Command> decoded = DecodeCommand(Encode(c));
    ASSERT_TRUE(decoded.ok()) << CommandName(c) << ": " << decoded.status().ToString();
    EXPECT_TRUE(*decoded == c) << CommandName(c);
  }
}

// docs/formats.md's EtcdTxn (tag 30), field by field.
TEST(CommandCodecTest, AnEtcdTxnIsItsFieldsInOrder) {
  EtcdTxnRequest txn;
  EtcdCompare compare;
  compare.result = EtcdCompareResult::kGreater;
  compare.target = EtcdCompareTarget::kMod;
  compare.range.key = "k";
  compare.number = 5;
  txn.compare.push_back(compare);
  EtcdRequestOp put;
  put.kind = EtcdRequestOp::Kind::kPut;
  put.put = EtcdPutRequest{"k", "v", -1, true, false, false};
  txn.success.push_back(put);
  EtcdRequestOp range;
  range.kind = EtcdRequestOp::Kind::kRange;
  range.range.range = KeyRange{"a", std::string(1, '\0')};
  range.range.limit = 1;
  range.range.sort_order = EtcdSortOrder::kDescend;
  range.range.sort_target = EtcdSortTarget::kCreate;
  range.range.keys_only = true;
  range.range.max_create_revision = 9;
  txn.failure.push_back(range);
  const Command c{ClusterMs(1), EtcdTxn{txn}, UnixMs(2)};

  std::string want;
  ByteWriter w(&want);
  w.PutU8(2), w.PutU8(30);                 // format version, tag
  w.PutVarint(1), w.PutU8(1), w.PutU8(2);  // 1 compare: GREATER, MOD
  w.PutBytes("k"), w.PutBytes("");         // key, range end
  w.PutSignedVarint(5), w.PutBytes("");    // number, value
  w.PutVarint(1), w.PutU8(2);              // 1 success op: a put
  w.PutBytes("k"), w.PutBytes("v");        // key, value
  w.PutSignedVarint(-1), w.PutU8(1);       // lease, flags (prev_kv)
  w.PutVarint(1), w.PutU8(1);              // 1 failure op: a range
  w.PutBytes("a"), w.PutBytes(std::string(1, '\0'));
  w.PutSignedVarint(1), w.PutSignedVarint(0);  // limit, revision
  w.PutU8(2), w.PutU8(2), w.PutU8(2);          // DESCEND, CREATE, flags (keys_only)
  w.PutSignedVarint(0), w.PutSignedVarint(0);  // min and max mod revision
  w.PutSignedVarint(0), w.PutSignedVarint(9);  // min and max create revision
  w.PutSignedVarint(1), w.PutSignedVarint(2);  // the clocks
  EXPECT_EQ(testing::Hex(Encode(c)), testing::Hex(want));
  EXPECT_EQ(CommandName(c), "etcd-txn");

  // An enum past the .proto's values, or flags it does not define, fail.
  std::string bad = want;
  bad[3] = 4;  // compare result 4
  EXPECT_FALSE(DecodeCommand(bad).ok());
  bad = want;
  bad[4] = 5;  // compare target 5
  EXPECT_FALSE(DecodeCommand(bad).ok());
  bad = want;
  bad[bad.size() - 7] = 8;  // the range's flags byte (before 4 revisions and 2 clocks)
  EXPECT_FALSE(DecodeCommand(bad).ok());
}

TEST(CommandCodecTest, AnEtcdTxnNestedPastTheBoundIsRefused) {
  auto nested = [](int depth) {
    EtcdTxnRequest txn;
    for (int i = 1; i < depth; ++i) {
      EtcdRequestOp op;
      op.kind = EtcdRequestOp::Kind::kTxn;
      op.txn.push_back(std::move(txn));
      txn = EtcdTxnRequest();
      txn.success.push_back(std::move(op));
    }
    return Command{ClusterMs(1), EtcdTxn{std::move(txn)}, UnixMs(2)};
  };
  EXPECT_TRUE(DecodeCommand(Encode(nested(kEtcdTxnDepthMax))).ok());
  EXPECT_FALSE(DecodeCommand(Encode(nested(kEtcdTxnDepthMax + 1))).ok());
  // More compares and ops than any txn the checks accept: refused before
  // they are decoded (a 1-byte empty op decodes to a few hundred bytes).
  EtcdTxnRequest wide;
  wide.success.resize(kEtcdTxnItemsMax);
  EXPECT_TRUE(DecodeCommand(Encode(Command{ClusterMs(1), EtcdTxn{wide}, UnixMs(2)})).ok());
  wide.failure.resize(1);
  EXPECT_FALSE(DecodeCommand(Encode(Command{ClusterMs(1), EtcdTxn{wide}, UnixMs(2)})).ok());
  // 1,000 levels: refused at the bound, without decoding the rest.
  EXPECT_FALSE(DecodeCommand(Encode(nested(1'000))).ok());
}

// A member with an etcd address is tag 32, its address after the other
// fields; one without keeps tag 11 and its bytes (decision 0055). Tag 32
// with no address is never written, so it is refused.
TEST(CommandCodecTest, AMemberWithAnEtcdAddressHasATagOfItsOwn) {
  Command plain{ClusterMs(1), SetMember{{2, "n2", "r:1", "h:2", "", "", LogIndex()}}};
  Command with_etcd{ClusterMs(1), SetMember{{2, "n2", "r:1", "h:2", "e:3", "", LogIndex()}}};
  const std::string plain_bytes = Encode(plain);
  const std::string etcd_bytes = Encode(with_etcd);
  EXPECT_EQ(static_cast<int>(plain_bytes[1]), 11);
  EXPECT_EQ(static_cast<int>(etcd_bytes[1]), 32);
  Result<Command> decoded = DecodeCommand(etcd_bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(*decoded == with_etcd);
  // Tag 32 whose address is empty (its length byte 0, the text gone).
  std::string refused = etcd_bytes;
  const std::size_t at = refused.find("e:3");
  ASSERT_NE(at, std::string::npos);
  refused.replace(at - 1, 4, std::string(1, '\0'));
  EXPECT_FALSE(DecodeCommand(refused).ok());
}

// A member with a ZooKeeper address is tag 35: the etcd address ("" if
// none) and then it after the other fields (decision 0056). Tag 35 with no
// ZooKeeper address is never written, so it is refused.
TEST(CommandCodecTest, AMemberWithAZooKeeperAddressHasATagOfItsOwn) {
  Command with_zk{ClusterMs(1), SetMember{{2, "n2", "r:1", "h:2", "", "z:4", LogIndex()}}};
  const std::string zk_bytes = Encode(with_zk);
  EXPECT_EQ(static_cast<int>(zk_bytes[1]), 35);
  Result<Command> decoded = DecodeCommand(zk_bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(*decoded == with_zk);
  std::string refused = zk_bytes;
  const std::size_t at = refused.find("z:4");
  ASSERT_NE(at, std::string::npos);
  refused.replace(at - 1, 4, std::string(1, '\0'));
  EXPECT_FALSE(DecodeCommand(refused).ok());
}

TEST(CommandCodecTest, EncodingAppendsToTheOutput) {
  Command c{ClusterMs(5), KvSet{"k", "v", 1}};
  std::string out = "already here";
  EncodeCommand(c, &out);
  ASSERT_EQ(out.rfind("already here", 0), 0u);
  Result<Command> decoded = DecodeCommand(std::string_view(out).substr(12));
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(*decoded == c);
}

TEST(CommandCodecTest, DifferentCommandsEncodeDifferently) {
  const std::vector<Command> commands = {
      {ClusterMs(1), KvSet{"ab", "c", 0}},
      {ClusterMs(1), KvSet{"a", "bc", 0}},
      {ClusterMs(1), KvCas{"ab", "c", 0, LogIndex()}},
      {ClusterMs(1), KvAcquire{"ab", "c", 0, SessionId()}},
      {ClusterMs(1), KvRelease{"ab", "c", 0, SessionId()}},
      {ClusterMs(2), KvSet{"ab", "c", 0}},
      {ClusterMs(1), KvDelete{"ab", false, LogIndex()}},
      {ClusterMs(1), KvDelete{"ab", true, LogIndex()}},
      {ClusterMs(1), KvDeleteTree{"ab"}},
      {ClusterMs(1), ReapTombstones{LogIndex()}},
      {ClusterMs(1), SessionDestroy{SessionId("ab"), DestroyReason::kDestroyed}},
      {ClusterMs(1), SessionDestroy{SessionId("ab"), DestroyReason::kExpired}},
  };
  std::set<std::string> encodings;
  for (const Command& c : commands) encodings.insert(Encode(c));
  EXPECT_EQ(encodings.size(), commands.size());
}

TEST(CommandCodecTest, EmptyInputIsRejected) { EXPECT_FALSE(DecodeCommand("").ok()); }

TEST(CommandCodecTest, EveryTruncationIsRejected) {
  RandomContents gen(2);
  for (int i = 0; i < 200; ++i) {
    const Command c = gen.RandomCommand();
    const std::string bytes = Encode(c);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      Result<Command> decoded = DecodeCommand(std::string_view(bytes).substr(0, n));
      ASSERT_FALSE(decoded.ok()) << CommandName(c) << ": a " << n << "-byte prefix of "
                                 << bytes.size() << " bytes decoded";
    }
  }
}

TEST(CommandCodecTest, TrailingBytesAreRejected) {
  RandomContents gen(3);
  for (int i = 0; i < 200; ++i) {
    const Command c = gen.RandomCommand();
    std::string bytes = Encode(c);
    bytes.push_back(static_cast<char>(gen.rng()()));
    EXPECT_FALSE(DecodeCommand(bytes).ok()) << CommandName(c);
  }
}

TEST(CommandCodecTest, CorruptedEncodingsNeverCrash) {
  RandomContents gen(4);
  int rejected = 0;
  int total = 0;
  for (int i = 0; i < 4000; ++i) {
    const Command c = gen.RandomCommand();
    std::string m = Encode(c);
    auto& rng = gen.rng();
    const std::size_t pos = m.empty() ? 0 : rng() % m.size();
    switch (rng() % 4) {
      case 0:
        m[pos] = static_cast<char>(m[pos] ^ (1 << (rng() % 8)));
        break;
      case 1:
        m[pos] = static_cast<char>(rng());
        break;
      case 2:
        m.insert(pos, std::string(1 + rng() % 3, static_cast<char>(rng())));
        break;
      default:
        m.erase(pos, 1 + rng() % 3);
        break;
    }
    ++total;
    Result<Command> decoded = DecodeCommand(m);
    if (!decoded.ok()) {
      EXPECT_NE(decoded.status().code(), Code::kOk);
      EXPECT_FALSE(decoded.status().message().empty());
      ++rejected;
      continue;
    }
    // Accepted bytes must be a well-formed command: it re-encodes and
    // decodes to itself.
    Result<Command> again = DecodeCommand(Encode(*decoded));
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(*again == *decoded);
    (void)CommandName(*decoded);
  }
  // Value bytes can be flipped undetected, but inserts and deletes break the
  // framing in most cases.
  EXPECT_GT(rejected, total / 4) << rejected << " of " << total << " rejected";
}

TEST(CommandCodecTest, RandomGarbageIsMostlyRejectedAndNeverCrashes) {
  std::mt19937_64 rng(5);
  int accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string garbage(8 + rng() % 120, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    Result<Command> decoded = DecodeCommand(garbage);
    if (decoded.ok()) {
      ++accepted;
      Result<Command> again = DecodeCommand(Encode(*decoded));
      ASSERT_TRUE(again.ok());
      EXPECT_TRUE(*again == *decoded);
    }
  }
  EXPECT_LT(accepted, 40) << "random bytes should almost never frame a command exactly";
}

// docs/formats.md's EtcdCompact (tag 31): the revision, nothing else.
TEST(CommandCodecTest, AnEtcdCompactIsItsRevision) {
  const Command c{ClusterMs(1), EtcdCompact{LogIndex(300)}, UnixMs(2)};
  std::string want;
  ByteWriter w(&want);
  w.PutU8(2), w.PutU8(31), w.PutVarint(300);   // format version, tag, revision
  w.PutSignedVarint(1), w.PutSignedVarint(2);  // the clocks
  EXPECT_EQ(testing::Hex(Encode(c)), testing::Hex(want));
  EXPECT_EQ(CommandName(c), "etcd-compact");
}

// docs/formats.md's ZkWrite (tag 33): the session, then each op's kind,
// path, data, version (zig-zag) and mode bits (1 ephemeral, 2 sequential,
// 4 container).
TEST(CommandCodecTest, AZkWriteIsItsSessionAndOps) {
  ZkOp create{ZkOp::Kind::kCreate, "/l/n-", "d", -1, true, true, false};
  ZkOp check{ZkOp::Kind::kCheck, "/l", "", 3, false, false, false};
  const Command c{ClusterMs(1), ZkWrite{SessionId("s"), {create, check}}, UnixMs(2)};
  std::string want;
  ByteWriter w(&want);
  w.PutU8(2), w.PutU8(33), w.PutBytes("s"), w.PutVarint(2);  // version, tag, session, 2 ops
  w.PutU8(0), w.PutBytes("/l/n-"), w.PutBytes("d"), w.PutSignedVarint(-1), w.PutU8(3);
  w.PutU8(3), w.PutBytes("/l"), w.PutBytes(""), w.PutSignedVarint(3), w.PutU8(0);
  w.PutSignedVarint(1), w.PutSignedVarint(2);  // the clocks
  EXPECT_EQ(testing::Hex(Encode(c)), testing::Hex(want));
  EXPECT_EQ(CommandName(c), "zk-write");
  Result<Command> back = DecodeCommand(want);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
}

// setACL is op kind 4 (its version is the aversion); 5 and above are refused.
TEST(CommandCodecTest, ASetAclOpIsKindFour) {
  ZkOp set_acl{ZkOp::Kind::kSetAcl, "/l", "", 2, false, false, false};
  const Command c{ClusterMs(1), ZkWrite{SessionId("s"), {set_acl}}, UnixMs(2)};
  std::string bytes = Encode(c);
  Result<Command> back = DecodeCommand(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
  const std::size_t kind_at = bytes.find("/l") - 2;  // the kind, then the path's length
  ASSERT_EQ(bytes[kind_at], 4);
  bytes[kind_at] = 5;
  EXPECT_FALSE(DecodeCommand(bytes).ok());
}

// docs/formats.md's ZkSecret (tag 34): the secret's bytes.
TEST(CommandCodecTest, AZkSecretIsItsBytes) {
  const Command c{ClusterMs(1), ZkSecret{std::string(32, 's')}, UnixMs(2)};
  std::string want;
  ByteWriter w(&want);
  w.PutU8(2), w.PutU8(34), w.PutBytes(std::string(32, 's'));
  w.PutSignedVarint(1), w.PutSignedVarint(2);
  EXPECT_EQ(testing::Hex(Encode(c)), testing::Hex(want));
  EXPECT_EQ(CommandName(c), "zk-secret");
}

// A kind past check, a mode bit past container or a version outside int32
// is no entry any leader wrote.
TEST(CommandCodecTest, AZkWriteWithAnUnknownKindModeOrVersionIsRefused) {
  auto entry = [](std::uint8_t kind, std::int64_t version, std::uint8_t mode) {
    std::string bytes;
    ByteWriter w(&bytes);
    w.PutU8(2), w.PutU8(33), w.PutBytes(""), w.PutVarint(1);
    w.PutU8(kind), w.PutBytes("/a"), w.PutBytes(""), w.PutSignedVarint(version), w.PutU8(mode);
    w.PutSignedVarint(1), w.PutSignedVarint(2);
    return bytes;
  };
  EXPECT_TRUE(DecodeCommand(entry(3, INT32_MIN, 7)).ok());
  EXPECT_TRUE(DecodeCommand(entry(4, 0, 0)).ok());  // setACL
  EXPECT_FALSE(DecodeCommand(entry(5, 0, 0)).ok());
  EXPECT_FALSE(DecodeCommand(entry(0, 0, 8)).ok());
  EXPECT_FALSE(DecodeCommand(entry(0, std::int64_t{INT32_MAX} + 1, 0)).ok());
  EXPECT_FALSE(DecodeCommand(entry(0, std::int64_t{INT32_MIN} - 1, 0)).ok());
}

TEST(CommandNameTest, NamesAreShortDistinctAndStable) {
  RandomContents gen(6);
  std::set<std::string> names;
  for (std::size_t kind = 0; kind < kBodyKinds; ++kind) {
    Command c{ClusterMs(0), gen.Body(kind)};
    std::string name(CommandName(c));
    EXPECT_FALSE(name.empty());
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kBodyKinds);
  EXPECT_EQ(CommandName(Command{ClusterMs(0), KvSet{}}), "kv-set");
  EXPECT_EQ(CommandName(Command{ClusterMs(0), SessionDestroy{}}), "session-destroy");
}

// KvEnqueue/KvDequeue's `hold` (decision 0027, the leader's lock-delay
// guard) is carried by its own tag with the same fields, so entries without
// it keep the bytes (and the tags 21 and 22) they always had.
TEST(CommandCodecTest, QueueHoldIsItsOwnTagAndEntriesWithoutItKeepTheirBytes) {
  const SessionId session("s1");
  struct Case {
    CommandBody plain, held;
    std::uint8_t plain_tag, held_tag;
  };
  const Case cases[] = {
      {KvEnqueue{"k", "v", 7, session}, KvEnqueue{"k", "v", 7, session, true}, 21, 24},
      {KvDequeue{"k", session}, KvDequeue{"k", session, true}, 22, 25},
  };
  for (const Case& c : cases) {
    const std::string plain = Encode(Command{ClusterMs(5), c.plain});
    const std::string held = Encode(Command{ClusterMs(5), c.held});
    ASSERT_GT(plain.size(), 2u);
    EXPECT_EQ(static_cast<std::uint8_t>(plain[1]), c.plain_tag);
    EXPECT_EQ(static_cast<std::uint8_t>(held[1]), c.held_tag);
    EXPECT_EQ(plain.substr(2), held.substr(2)) << "same fields, only the tag differs";
    Result<Command> back = DecodeCommand(held);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(back->body == c.held);
    back = DecodeCommand(plain);
    ASSERT_TRUE(back.ok());
    EXPECT_TRUE(back->body == c.plain);
    EXPECT_EQ(CommandName(Command{ClusterMs(5), c.held}),
              CommandName(Command{ClusterMs(5), c.plain}));
  }
}

}  // namespace
}  // namespace tenure::state
