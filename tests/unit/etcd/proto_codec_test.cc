// etcd's KV messages in protobuf (etcd/messages.h, etcd/proto_codec.h):
// bytes as protobuf's proto3 rules write them (checked by hand here, and
// against protoc's own code in tests/etcd_oracle), every message back from
// its bytes, unknown fields skipped, and every malformed input refused with
// a reason, within bounds on depth and count.
#include "etcd/proto_codec.h"

#include <gtest/gtest.h>

#include <string>

#include "etcd/messages.h"
#include "unit/state/golden_hex.h"

namespace tenure::etcd {
namespace {

using state::EtcdCompare;
using state::EtcdCompareResult;
using state::EtcdCompareTarget;
using state::EtcdRequestOp;
using state::EtcdTxnRequest;
using state::testing::Hex;
using state::testing::Unhex;

template <typename M>
std::string Encode(const M& m) {
  std::string out;
  EncodeProto(m, &out);
  return out;
}

template <typename M>
M Decode(std::string_view bytes) {
  M m;
  const std::string error = DecodeProto(bytes, &m);
  EXPECT_EQ(error, "") << Hex(std::string(bytes));
  return m;
}

template <typename M>
std::string Refusal(std::string_view bytes) {
  M m;
  return DecodeProto(bytes, &m);
}

EtcdRequestOp PutOp(std::string key, std::string value, std::int64_t lease = 0) {
  EtcdRequestOp op;
  op.kind = EtcdRequestOp::Kind::kPut;
  op.put.key = std::move(key);
  op.put.value = std::move(value);
  op.put.lease = lease;
  return op;
}

// A txn with every field set somewhere: compares of each target, every op
// kind, a nested txn, negative and large numbers.
EtcdTxnRequest RichTxn() {
  EtcdTxnRequest txn;
  for (int target = 0; target <= 4; ++target) {
    EtcdCompare c;
    c.result = static_cast<EtcdCompareResult>(target % 4);
    c.target = static_cast<EtcdCompareTarget>(target);
    c.range.key = "k" + std::to_string(target);
    if (c.target == EtcdCompareTarget::kValue) {
      c.value = std::string("v\0\xff", 3);
    } else {
      c.number = target == 1 ? 0 : -5 + target * 1'000'000'007LL;
    }
    if (target == 2) c.range.end = std::string(1, '\0');
    txn.compare.push_back(c);
  }
  EtcdRequestOp range;
  range.kind = EtcdRequestOp::Kind::kRange;
  range.range.range = {"a", "z"};
  range.range.limit = 10;
  range.range.revision = 99;
  range.range.sort_order = state::EtcdSortOrder::kDescend;
  range.range.sort_target = state::EtcdSortTarget::kValue;
  range.range.serializable = true;
  range.range.keys_only = true;
  range.range.count_only = true;
  range.range.min_mod_revision = 1;
  range.range.max_mod_revision = 2;
  range.range.min_create_revision = 3;
  range.range.max_create_revision = 4;
  EtcdRequestOp put = PutOp("p", "", -1);
  put.put.prev_kv = true;
  put.put.ignore_value = true;
  put.put.ignore_lease = true;
  EtcdRequestOp del;
  del.kind = EtcdRequestOp::Kind::kDeleteRange;
  del.delete_range.range = {"d", ""};
  del.delete_range.prev_kv = true;
  EtcdRequestOp nested;
  nested.kind = EtcdRequestOp::Kind::kTxn;
  EtcdTxnRequest inner;
  inner.success.push_back(PutOp("inner", "x"));
  inner.failure.push_back(del);
  nested.txn.push_back(inner);
  txn.success = {range, put, nested};
  txn.failure = {del, PutOp("f", "y", 7)};
  return txn;
}

TEST(EtcdProtoTest, APutRequestIsProtobufsBytes) {
  state::EtcdPutRequest put{"foo", "bar", 7, true, false, false};
  // key (1, bytes), value (2, bytes), lease (3, varint), prev_kv (4, varint).
  EXPECT_EQ(Hex(Encode(put)),
            "0a03666f6f1203626172180720"
            "01");
  EXPECT_EQ(Decode<state::EtcdPutRequest>(Encode(put)), put);
  // Defaults are absent: an empty request is no bytes.
  EXPECT_EQ(Encode(state::EtcdPutRequest{}), "");
  // A negative int64 is ten bytes of two's complement, as Go writes it.
  state::EtcdPutRequest negative;
  negative.lease = -1;
  EXPECT_EQ(Hex(Encode(negative)), "18ffffffffffffffffff01");
  EXPECT_EQ(Decode<state::EtcdPutRequest>(Encode(negative)).lease, -1);
}

TEST(EtcdProtoTest, ASetOneofMemberIsWrittenEvenWhenZero) {
  // The recipes' "key absent" compare: CREATE == 0.
  EtcdCompare absent;
  absent.target = EtcdCompareTarget::kCreate;
  absent.range.key = "k";
  EXPECT_EQ(Hex(Encode(absent)),
            "1001"
            "1a016b"
            "2800");
  // VERSION is the target's default (0): only its member says it was set.
  EtcdCompare version;
  version.range.key = "k";
  EXPECT_EQ(Hex(Encode(version)),
            "1a016b"
            "2000");
  EtcdCompare value;
  value.target = EtcdCompareTarget::kValue;
  value.range.key = "k";
  EXPECT_EQ(Hex(Encode(value)),
            "1003"
            "1a016b"
            "3a00");
  EXPECT_EQ(Decode<EtcdCompare>(Encode(value)), value);
}

// etcd compares by the member its target names; a member of another
// target counts as zero, and of two members the one read last is set.
TEST(EtcdProtoTest, OnlyTheCompareMemberItsTargetNamesCounts) {
  // target CREATE (2: 1), create_revision (5) 7.
  EXPECT_EQ(Decode<EtcdCompare>(Unhex("1001"
                                      "2807"))
                .number,
            7);
  // target CREATE, but mod_revision (6) 7: zero.
  EXPECT_EQ(Decode<EtcdCompare>(Unhex("1001"
                                      "3007"))
                .number,
            0);
  // The target after its member reads the same.
  EXPECT_EQ(Decode<EtcdCompare>(Unhex("2807"
                                      "1001"))
                .number,
            7);
  // create_revision 7, then value "x": the value is set, CREATE reads zero.
  EtcdCompare two =
      Decode<EtcdCompare>(Unhex("1001"
                                "2807"
                                "3a0178"));
  EXPECT_EQ(two.number, 0);
  EXPECT_EQ(two.value, "");
  EtcdCompare value =
      Decode<EtcdCompare>(Unhex("1003"
                                "2807"
                                "3a0178"));
  EXPECT_EQ(value.number, 0);
  EXPECT_EQ(value.value, "x");
}

// The fuzzer's find (corpus/etcd_proto/crash-oneof-member-read-before-the-
// last): an op naming two members kept the first's fields beside the
// second, so it did not read back as it was written.
TEST(EtcdProtoTest, AnOpKeepsOnlyTheOneofMemberReadLast) {
  // request_range {key "a"}, then request_put {key "b"}.
  const EtcdRequestOp op =
      Decode<EtcdRequestOp>(Unhex("0a030a0161"
                                  "12030a0162"));
  EXPECT_EQ(op.kind, EtcdRequestOp::Kind::kPut);
  EXPECT_EQ(op.put.key, "b");
  EXPECT_EQ(op.range, state::EtcdRangeRequest()) << "the range read first is dropped";
  EXPECT_EQ(Decode<EtcdRequestOp>(Encode(op)), op);
}

TEST(EtcdProtoTest, EveryRequestRoundTrips) {
  const EtcdTxnRequest txn = RichTxn();
  const std::string bytes = Encode(txn);
  EXPECT_EQ(Decode<EtcdTxnRequest>(bytes), txn);
  EXPECT_EQ(Encode(Decode<EtcdTxnRequest>(bytes)), bytes);
  CompactionRequest compact{123, true};
  EXPECT_EQ(Hex(Encode(compact)), "087b1001");
  EXPECT_EQ(Decode<CompactionRequest>(Encode(compact)), compact);
}

TEST(EtcdProtoTest, AResponseCarriesItsHeaderAndNestedHeaders) {
  TxnResponse response;
  response.header = {1, 2, 300, 4};
  response.body.succeeded = true;
  state::EtcdResponseOp op;
  op.kind = EtcdRequestOp::Kind::kRange;
  op.range.kvs.push_back({"k", 5, 6, 2, "v", 0});
  op.range.count = 1;
  op.revision = 300;
  response.body.responses.push_back(op);
  const std::string bytes = Encode(response);
  // header {1:1 2:2 3:300 4:4}, succeeded, responses [response_range
  // {header {3:300}, kvs [{k, 5, 6, 2, v}], count 1}]: the op's header holds
  // only its revision, as etcd's applier writes it.
  EXPECT_EQ(Hex(bytes),
            "0a090801100218ac022004"
            "1001"
            "1a17"
            "0a15"
            "0a0318ac02"
            "120c0a016b1005180620022a0176"
            "2001");
  EXPECT_EQ(Decode<TxnResponse>(bytes), response) << "a nested header's revision is read back";
  // An op with no revision (a nested txn's answer never has one) has an
  // empty header, as etcd's.
  response.body.responses.front().revision = 0;
  EXPECT_EQ(Hex(Encode(response)).substr(26, 16), "1a140a120a00120c") << Hex(Encode(response));
  EXPECT_EQ(Decode<TxnResponse>(Encode(response)), response);
}

// A nested message is written in place and its length after it: one of
// 128 bytes or more moves its body up for the length's extra bytes, at
// every level, after whatever the buffer held.
TEST(EtcdProtoTest, LongNestedMessagesTakeLongerLengths) {
  RangeResponse response;
  response.header = {1, 2, 3, 4};
  response.body.kvs.push_back({"k", 5, 6, 2, std::string(20000, 'v'), 0});
  response.body.count = 1;
  const std::string bytes = Encode(response);
  // header {1 2 3 4}, then kvs: 20,013 bytes (a 3-byte length, ad 9c 01):
  // key k, create 5, mod 6, version 2, then the value's 20,000 (a0 9c 01);
  // then count 1.
  EXPECT_EQ(Hex(bytes.substr(0, 27)),
            "0a080801100218032004"
            "12ad9c01"
            "0a016b100518062002"
            "2aa09c01");
  EXPECT_EQ(bytes.size(), 10u + 4u + 20013u + 2u);
  EXPECT_EQ(Hex(bytes.substr(bytes.size() - 2)), "2001");
  EXPECT_EQ(Decode<RangeResponse>(bytes), response);
  // Appended after other bytes, the same bytes.
  std::string after = "prefix";
  EncodeProto(response, &after);
  EXPECT_EQ(after, "prefix" + bytes);
  // Two levels that both need longer lengths: a txn's range answer.
  TxnResponse txn;
  state::EtcdResponseOp op;
  op.kind = EtcdRequestOp::Kind::kRange;
  op.range = response.body;
  txn.body.responses.push_back(op);
  const std::string nested = Encode(txn);
  EXPECT_EQ(Decode<TxnResponse>(nested), txn);
  EXPECT_EQ(Encode(Decode<TxnResponse>(nested)), nested);
}

// ProtoSize counts what EncodeProto writes (etcd's request-size rule
// measures a request by it): requests and answers, empty and set fields,
// lengths of one to three bytes, nested txns and packed enums.
TEST(EtcdProtoTest, ProtoSizeIsTheEncodingsLength) {
  const auto same = [](const auto& m) { EXPECT_EQ(ProtoSize(m), Encode(m).size()); };
  same(state::EtcdPutRequest{});
  same(state::EtcdPutRequest{"k", "v", 7, true, false, false});
  for (const std::size_t n : {127u, 128u, 16383u, 16384u, 1572840u}) {
    same(state::EtcdPutRequest{"k", std::string(n, 'v'), 0, false, false, false});
  }
  same(RichTxn());
  EtcdTxnRequest nested = RichTxn();
  EtcdRequestOp inner;
  inner.kind = EtcdRequestOp::Kind::kTxn;
  inner.txn.push_back(RichTxn());
  inner.txn.front().success.push_back(PutOp("big", std::string(200000, 'b')));
  nested.failure.push_back(inner);
  same(nested);
  same(CompactionRequest{123, true});
  RangeResponse range;
  range.header = {1, 2, 3, 4};
  range.body.kvs.push_back({"k", 5, 6, 2, std::string(20000, 'v'), 0});
  range.body.count = 1;
  same(range);
  TxnResponse txn;
  state::EtcdResponseOp op;
  op.kind = EtcdRequestOp::Kind::kRange;
  op.range = range.body;
  op.revision = 300;
  txn.body.responses.push_back(op);
  same(txn);
}

TEST(EtcdProtoTest, UnknownFieldsAreSkippedOfEveryWireType) {
  state::EtcdPutRequest put{"k", "v", 0, false, false, false};
  std::string bytes = Encode(put);
  bytes += Unhex("f80601");  // field 111, varint
  bytes += Unhex(
      "fd060102030"
      "4");                                // field 111, fixed32
  bytes += Unhex("f9060102030405060708");  // field 111, fixed64
  bytes += Unhex("fa0603616263");          // field 111, 3 bytes
  EXPECT_EQ(Decode<state::EtcdPutRequest>(bytes), put);
}

TEST(EtcdProtoTest, MalformedBytesAreRefusedWithAReason) {
  using Put = state::EtcdPutRequest;
  EXPECT_EQ(Refusal<Put>(Unhex("0a05666f")), "malformed protobuf") << "a length past the end";
  EXPECT_EQ(Refusal<Put>(Unhex("18ff")), "malformed protobuf") << "a varint cut short";
  EXPECT_EQ(Refusal<Put>(Unhex("18ffffffffffffffffffff01")), "malformed protobuf") << "11 bytes";
  EXPECT_EQ(Refusal<Put>(Unhex("0801")), "malformed protobuf") << "key as a varint";
  EXPECT_EQ(Refusal<Put>(Unhex("1a0101")), "malformed protobuf") << "lease as bytes";
  EXPECT_EQ(Refusal<Put>(Unhex("0b")), "malformed protobuf") << "a group";
  EXPECT_EQ(Refusal<Put>(Unhex("0001")), "malformed protobuf") << "field 0";
  EXPECT_EQ(Refusal<Put>(Unhex("fd0601")), "malformed protobuf") << "a fixed32 cut short";
  // An enum value the .proto does not define.
  EXPECT_EQ(Refusal<EtcdCompare>(Unhex("0804")), "unknown value 4 of result");
  EXPECT_EQ(Refusal<EtcdCompare>(Unhex("1005")), "unknown value 5 of target");
  EXPECT_EQ(Refusal<state::EtcdRangeRequest>(Unhex("2803")), "unknown value 3 of sort_order");
  EXPECT_EQ(Refusal<state::EtcdRangeRequest>(Unhex("30ffffffffffffffffff01")),
            "unknown value -1 of sort_target");
  // A nested message that is malformed fails the whole request.
  EXPECT_EQ(Refusal<EtcdTxnRequest>(Unhex("1204"
                                          "1202"
                                          "0a05")),
            "malformed protobuf");
}

TEST(EtcdProtoTest, NestingAndCountAreBounded) {
  // success: [request_txn: {success: [request_txn: ...]}], each level two
  // messages, built from the inside out.
  auto nest = [](int levels) {
    std::string bytes;
    for (int i = 0; i < levels; ++i) {
      std::string txn;
      ProtoWriter(&txn).LengthField(4, bytes);  // RequestOp.request_txn
      std::string op;
      ProtoWriter(&op).LengthField(2, txn);  // TxnRequest.success
      bytes = op;
    }
    return bytes;
  };
  EtcdTxnRequest deep;
  EXPECT_EQ(DecodeProto(nest(kMaxProtoDepth / 2 - 1), &deep), "");
  EtcdTxnRequest deeper;
  EXPECT_EQ(DecodeProto(nest(kMaxProtoDepth / 2 + 1), &deeper), "messages nested too deep");
  // Empty ops are two bytes each: a request of 10 KiB cannot be 5,000 ops.
  std::string wide;
  for (std::size_t i = 0; i < kMaxProtoMessages; ++i) wide += Unhex("1200");
  EtcdTxnRequest at_bound;
  EXPECT_EQ(DecodeProto(wide, &at_bound), "");
  EXPECT_EQ(at_bound.success.size(), kMaxProtoMessages);
  wide += Unhex("1200");
  EtcdTxnRequest past;
  EXPECT_EQ(DecodeProto(wide, &past), "too many messages");
}

}  // namespace
}  // namespace tenure::etcd
