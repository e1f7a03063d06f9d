// etcd's gateway JSON (etcd/json_codec.h): what etcd 3.4's grpc-gateway
// writes (proto names, 64-bit integers as strings, base64 bytes, enums by
// name, defaults left out, a set oneof member even when zero) and what it
// reads (either name style, integers as strings or numbers, null as absent,
// unknown members skipped), and refusals with a reason.
#include "etcd/json_codec.h"

#include <gtest/gtest.h>

#include <string>

namespace tenure::etcd {
namespace {

using state::EtcdCompare;
using state::EtcdCompareTarget;
using state::EtcdRequestOp;
using state::EtcdTxnRequest;

template <typename M>
std::string Json(const M& m) {
  std::string out;
  EncodeJson(m, &out);
  return out;
}

template <typename M>
M Read(std::string_view text) {
  M m;
  EXPECT_EQ(DecodeJson(text, &m), "") << text;
  return m;
}

template <typename M>
std::string Refusal(std::string_view text) {
  M m;
  return DecodeJson(text, &m);
}

TEST(EtcdJsonTest, NamesAreCamelCasedAsProtobufDoes) {
  EXPECT_EQ(JsonCamelName("range_end"), "rangeEnd");
  EXPECT_EQ(JsonCamelName("min_mod_revision"), "minModRevision");
  EXPECT_EQ(JsonCamelName("TTL"), "TTL");
  EXPECT_EQ(JsonCamelName("key"), "key");
}

TEST(EtcdJsonTest, AResponseIsWrittenAsTheGatewayWritesIt) {
  TxnResponse response;
  response.header = {1, 2, 300, 4};
  response.body.succeeded = true;
  state::EtcdResponseOp op;
  op.kind = EtcdRequestOp::Kind::kRange;
  op.range.kvs.push_back({"k", 5, 6, 2, "v", 0});
  op.range.count = 1;
  op.revision = 300;
  response.body.responses.push_back(op);
  EXPECT_EQ(Json(response),
            R"({"header":{"cluster_id":"1","member_id":"2","revision":"300","raft_term":"4"},)"
            R"("succeeded":true,"responses":[{"response_range":{"header":{"revision":"300"},)"
            R"("kvs":[{"key":"aw==","create_revision":"5","mod_revision":"6","version":"2",)"
            R"("value":"dg=="}],"count":"1"}}]})");
  EXPECT_EQ(Read<TxnResponse>(Json(response)), response) << "the op's revision is read back";
  // Everything at its default: an empty object.
  EXPECT_EQ(Json(PutResponse{}), R"({"header":{}})");
  EXPECT_EQ(Json(state::EtcdPutRequest{}), "{}");
}

TEST(EtcdJsonTest, ACompareWritesItsSetMemberEvenWhenZero) {
  EtcdCompare absent;
  absent.target = EtcdCompareTarget::kCreate;
  absent.range.key = "k";
  EXPECT_EQ(Json(absent), R"({"target":"CREATE","key":"aw==","create_revision":"0"})");
  EXPECT_EQ(Read<EtcdCompare>(Json(absent)), absent);
}

TEST(EtcdJsonTest, RequestsAreReadInEitherNameStyle) {
  // As etcd3gw and curl users write them.
  state::EtcdPutRequest put = Read<state::EtcdPutRequest>(
      R"({"key": "Zm9v", "value": "YmFy", "lease": "7", "prevKv": true, "ignore_lease": false})");
  EXPECT_EQ(put, (state::EtcdPutRequest{"foo", "bar", 7, true, false, false}));
  // Integers as numbers, enums by name or number, null as absent, an
  // unknown member skipped, URL-safe and unpadded base64.
  state::EtcdRangeRequest range = Read<state::EtcdRangeRequest>(
      R"({"key":"YQ","range_end":"-_8=","limit":10,"sort_order":"DESCEND","sortTarget":3,)"
      R"("revision":null,"no_such_field":{"x":[1]},"max_create_revision":"-1"})");
  EXPECT_EQ(range.range.key, "a");
  EXPECT_EQ(range.range.end, "\xfb\xff");
  EXPECT_EQ(range.limit, 10);
  EXPECT_EQ(range.sort_order, state::EtcdSortOrder::kDescend);
  EXPECT_EQ(range.sort_target, state::EtcdSortTarget::kMod);
  EXPECT_EQ(range.max_create_revision, -1);
  EXPECT_EQ(Read<state::EtcdRangeRequest>(R"({"limit":"-9223372036854775808"})").limit, INT64_MIN);
}

TEST(EtcdJsonTest, ATxnRoundTrips) {
  EtcdTxnRequest txn;
  EtcdCompare value;
  value.result = state::EtcdCompareResult::kNotEqual;
  value.target = EtcdCompareTarget::kValue;
  value.range = {"k", std::string(1, '\0')};
  value.value = std::string("\0\xff", 2);
  txn.compare.push_back(value);
  EtcdRequestOp put;
  put.kind = EtcdRequestOp::Kind::kPut;
  put.put = {"p", "v", -3, true, true, true};
  EtcdRequestOp nested;
  nested.kind = EtcdRequestOp::Kind::kTxn;
  nested.txn.emplace_back().failure.push_back(put);
  EtcdRequestOp del;
  del.kind = EtcdRequestOp::Kind::kDeleteRange;
  del.delete_range = {{"a", "b"}, true};
  txn.success = {put, nested, EtcdRequestOp{}};
  txn.failure = {del};
  const std::string text = Json(txn);
  EXPECT_EQ(Read<EtcdTxnRequest>(text), txn) << text;
  EXPECT_EQ(Json(Read<EtcdTxnRequest>(text)), text);
}

TEST(EtcdJsonTest, BadInputIsRefusedWithAReason) {
  using Put = state::EtcdPutRequest;
  EXPECT_EQ(Refusal<Put>(R"({"key":)"), "malformed JSON");
  EXPECT_EQ(Refusal<Put>(R"([1])"), "expected an object");
  EXPECT_EQ(Refusal<Put>(R"({"key":"not base64!"})"), "bad base64 in key");
  EXPECT_EQ(Refusal<Put>(R"({"key":7})"), "bad base64 in key");
  EXPECT_EQ(Refusal<Put>(R"({"lease":"7x"})"), "bad value 7x of lease");
  EXPECT_EQ(Refusal<Put>(R"({"lease":1.5})"), "bad value 1.5 of lease");
  EXPECT_EQ(Refusal<Put>(R"({"lease":"9223372036854775808"})"),
            "bad value 9223372036854775808 of lease");
  EXPECT_EQ(Refusal<Put>(R"({"prev_kv":"yes"})"), "bad value yes of prev_kv");
  EXPECT_EQ(Refusal<state::EtcdRangeRequest>(R"({"sort_order":"SIDEWAYS"})"),
            "unknown value SIDEWAYS of sort_order");
  EXPECT_EQ(Refusal<state::EtcdRangeRequest>(R"({"sort_order":3})"),
            "unknown value 3 of sort_order");
  EXPECT_EQ(Refusal<EtcdTxnRequest>(R"({"success":{}})"), "success is not a list");
  std::string many = R"({"success":[)";
  for (std::size_t i = 0; i < kMaxJsonObjects; ++i) many += "{},";
  many += "{}]}";
  EXPECT_EQ(Refusal<EtcdTxnRequest>(many), "too many messages");
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += R"({"success":[{"request_txn":)";
  deep += "{}";
  for (int i = 0; i < 40; ++i) deep += "}]}";
  EXPECT_EQ(Refusal<EtcdTxnRequest>(deep), "messages nested too deep");
}

}  // namespace
}  // namespace tenure::etcd
