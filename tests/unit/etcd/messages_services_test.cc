// etcd's messages beyond KV (etcd/messages_services.h) in both codings:
// the shapes the clients send (Patroni's watch, etcdctl's lease calls, the
// election and lock services the oracle test cannot generate) and what the
// gateway writes back.
#include "etcd/messages_services.h"

#include <gtest/gtest.h>

#include <string>

#include "etcd/json_codec.h"
#include "etcd/proto_codec.h"
#include "unit/state/golden_hex.h"

namespace tenure::etcd {
namespace {

using state::testing::Hex;
using state::testing::Unhex;

template <typename M>
std::string Proto(const M& m) {
  std::string out;
  EncodeProto(m, &out);
  return out;
}
template <typename M>
std::string Json(const M& m) {
  std::string out;
  EncodeJson(m, &out);
  return out;
}

// The fuzzer's find (corpus/etcd_proto/crash-watch-oneof-member-read-before-
// the-last): a create then a cancel is a cancel, with nothing of the create.
TEST(EtcdServiceMessagesTest, AWatchRequestKeepsOnlyTheMemberReadLast) {
  WatchRequest watch;
  ASSERT_EQ(
      DecodeJson(R"({"create_request": {"key": "YQ=="}, "cancel_request": {"watch_id": "7"}})",
                 &watch),
      "");
  EXPECT_EQ(watch.kind, WatchRequest::Kind::kCancel);
  EXPECT_EQ(watch.cancel.watch_id, 7);
  EXPECT_EQ(watch.create, WatchCreateRequest()) << "the create read first is dropped";
}

TEST(EtcdServiceMessagesTest, AWatchCreateAsPatroniSendsIt) {
  WatchRequest watch;
  ASSERT_EQ(DecodeJson(R"({"create_request": {"key": "L3NlcnZpY2Uv", "range_end": "L3NlcnZpY2Uw",)"
                       R"( "start_revision": "42", "filters": ["NODELETE"]}})",
                       &watch),
            "");
  EXPECT_EQ(watch.kind, WatchRequest::Kind::kCreate);
  EXPECT_EQ(watch.create.range.key, "/service/");
  EXPECT_EQ(watch.create.range.end, "/service0");
  EXPECT_EQ(watch.create.start_revision, 42);
  ASSERT_EQ(watch.create.filters.size(), 1u);
  EXPECT_EQ(watch.create.filters[0], WatchFilter::kNoDelete);
  // Filters are packed in protobuf, and read one by one too.
  WatchCreateRequest create;
  create.filters = {WatchFilter::kNoPut, WatchFilter::kNoDelete};
  EXPECT_EQ(Hex(Proto(create)), "2a020001");
  EXPECT_EQ(ProtoSize(create), 4u) << "ProtoSize counts a packed list as it is written";
  WatchRequest wrapped;
  wrapped.kind = WatchRequest::Kind::kCreate;
  wrapped.create = create;
  EXPECT_EQ(ProtoSize(wrapped), Proto(wrapped).size());
  WatchCreateRequest unpacked;
  ASSERT_EQ(DecodeProto(Unhex("2800"
                              "2801"),
                        &unpacked),
            "");
  EXPECT_EQ(unpacked.filters, create.filters);
  WatchCreateRequest bad;
  EXPECT_EQ(DecodeProto(Unhex("2a0102"), &bad), "unknown value 2 of filters");
  EXPECT_EQ(DecodeProto(Unhex("2a0180"), &bad), "malformed protobuf");
}

TEST(EtcdServiceMessagesTest, WatchEventsAsTheGatewayStreamsThem) {
  WatchResponse response;
  response.header = {7, 8, 12, 2};
  response.body.watch_id = 0;
  response.body.created = true;
  Event put;
  put.kv = {"k", 11, 12, 2, "v", 0};
  put.has_prev_kv = true;
  put.prev_kv = {"k", 11, 11, 1, "u", 0};
  Event del;
  del.type = EventType::kDelete;
  del.kv = {"j", 0, 12, 0, "", 0};
  response.body.events = {put, del};
  EXPECT_EQ(Json(response),
            R"({"header":{"cluster_id":"7","member_id":"8","revision":"12","raft_term":"2"},)"
            R"("created":true,"events":[{"kv":{"key":"aw==","create_revision":"11",)"
            R"("mod_revision":"12","version":"2","value":"dg=="},"prev_kv":{"key":"aw==",)"
            R"("create_revision":"11","mod_revision":"11","version":"1","value":"dQ=="}},)"
            R"({"type":"DELETE","kv":{"key":"ag==","mod_revision":"12"}}]})");
  WatchResponse back;
  ASSERT_EQ(DecodeProto(Proto(response), &back), "");
  EXPECT_EQ(back, response);
}

TEST(EtcdServiceMessagesTest, LeaseCallsUseTheirUpperCaseNames) {
  LeaseGrantRequest grant;
  ASSERT_EQ(DecodeJson(R"({"TTL": 10, "ID": "0"})", &grant), "");
  EXPECT_EQ(grant, (LeaseGrantRequest{10, 0}));
  EXPECT_EQ(Json(LeaseGrantResponse{{1, 2, 3, 4}, {7587, 10, ""}}),
            R"({"header":{"cluster_id":"1","member_id":"2","revision":"3","raft_term":"4"},)"
            R"("ID":"7587","TTL":"10"})");
  LeaseTimeToLiveResponse ttl{{}, {5, -1, 0, {"a", "b"}}};
  EXPECT_EQ(Json(ttl), R"({"header":{},"ID":"5","TTL":"-1","keys":["YQ==","Yg=="]})");
  LeaseTimeToLiveResponse back;
  ASSERT_EQ(DecodeJson(Json(ttl), &back), "");
  EXPECT_EQ(back, ttl);
}

TEST(EtcdServiceMessagesTest, StatusAndMembersAsEtcdctlReadsThem) {
  StatusResponse status{{1, 2, 9, 3}, {"3.4.23", 4096, 2, 9, 3, 9, {}, 4096, false}};
  EXPECT_EQ(Json(status),
            R"({"header":{"cluster_id":"1","member_id":"2","revision":"9","raft_term":"3"},)"
            R"("version":"3.4.23","dbSize":"4096","leader":"2","raftIndex":"9","raftTerm":"3",)"
            R"("raftAppliedIndex":"9","dbSizeInUse":"4096"})");
  MemberListResponse members{
      {}, {{{2, "n2", {"http://127.0.0.1:2380"}, {"http://127.0.0.1:2379"}, false}}}};
  EXPECT_EQ(Json(members),
            R"({"header":{},"members":[{"ID":"2","name":"n2","peerURLs":["http://127.0.0.1:2380"],)"
            R"("clientURLs":["http://127.0.0.1:2379"]}]})");
  MemberListResponse back;
  ASSERT_EQ(DecodeProto(Proto(members), &back), "");
  EXPECT_EQ(back, members);
}

TEST(EtcdServiceMessagesTest, ElectionAndLockMessages) {
  CampaignRequest campaign{"my-election", 0x694d7f4a6c2b1c05, "me"};
  // name (1), lease (2), value (3).
  EXPECT_EQ(Hex(Proto(campaign)),
            "0a0b6d792d656c656374696f6e"
            "1085b8ace1a6e9dfa669"
            "1a026d65");
  CampaignRequest back;
  ASSERT_EQ(DecodeProto(Proto(campaign), &back), "");
  EXPECT_EQ(back, campaign);
  CampaignResponse answer{{}, {true, {"my-election", "my-election/694d7f4a6c2b1c05", 12, 7}}};
  EXPECT_EQ(Json(answer), R"({"header":{},"leader":{"name":"bXktZWxlY3Rpb24=","key":)"
                          R"("bXktZWxlY3Rpb24vNjk0ZDdmNGE2YzJiMWMwNQ==","rev":"12","lease":"7"}})");
  CampaignResponse answer_back;
  ASSERT_EQ(DecodeProto(Proto(answer), &answer_back), "");
  EXPECT_EQ(answer_back, answer);
  LeaderResponse none;
  EXPECT_EQ(Json(none), R"({"header":{}})");
  LockResponse lock{{}, {"lock/694d7f4a6c2b1c05"}};
  LockResponse lock_back;
  ASSERT_EQ(DecodeJson(Json(lock), &lock_back), "");
  EXPECT_EQ(lock_back, lock);
  ProclaimRequest proclaim;
  ASSERT_EQ(
      DecodeJson(R"({"leader":{"name":"YQ==","key":"Yg==","rev":"3"},"value":"Yw=="})", &proclaim),
      "");
  EXPECT_TRUE(proclaim.has_leader);
  EXPECT_EQ(proclaim.leader.rev, 3);
  EXPECT_EQ(proclaim.value, "c");
}

}  // namespace
}  // namespace tenure::etcd
