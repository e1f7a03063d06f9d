// Request frames decoded by their op code, and the answer frames: each op
// a ZooKeeper client sends decodes to its record and encodes back to the
// same bytes; unknown ops, bodies that do not parse and multis past the
// limit are told apart (each gets its own error code), and every prefix of
// a frame is refused without a crash.
#include "zk/request.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tenure::zk {
namespace {

std::int32_t Op(OpCode code) { return static_cast<std::int32_t>(code); }

struct Sample {
  OpCode op;
  RequestBody body;
};

// One request of every op the decoder knows.
std::vector<Sample> EveryOp() {
  CreateRequest create{"/election/n_", "me", {{31, {"world", "anyone"}}}, 3, -1};
  CreateTtlRequest ttl;
  static_cast<CreateRequest&>(ttl) = {"/t", "", {{31, {"world", "anyone"}}}, 5, -1};
  ttl.ttl_ms = 60000;
  MultiRequest multi;
  multi.ops.push_back({Op(OpCode::kCreate), CreateRequest{"/m", "x", {}, 0, -1}});
  multi.ops.push_back({Op(OpCode::kCheck), PathVersionRequest{"/m", 0}});
  multi.ops.push_back({Op(OpCode::kSetData), SetDataRequest{"/m", "y", -1}});
  multi.ops.push_back({Op(OpCode::kDelete), PathVersionRequest{"/m", 1}});
  multi.ops.push_back({Op(OpCode::kCreateTtl), ttl});
  MultiRequest multi_read;
  multi_read.ops.push_back({Op(OpCode::kGetChildren), PathWatchRequest{"/", false}});
  multi_read.ops.push_back({Op(OpCode::kGetData), PathWatchRequest{"/m", false}});
  SetWatches watches;
  watches.relative_zxid = 42;
  watches.data_watches = {"/a", "/b"};
  watches.child_watches = {"/"};
  SetWatches2 watches2;
  static_cast<SetWatches&>(watches2) = watches;
  watches2.persistent_watches = {"/p"};
  watches2.persistent_recursive_watches = {"/r"};
  return {
      {OpCode::kPing, NoBody{}},
      {OpCode::kCloseSession, NoBody{}},
      {OpCode::kWhoAmI, NoBody{}},
      {OpCode::kCreate, create},
      {OpCode::kCreate2, create},
      {OpCode::kCreateContainer, CreateRequest{"/c", "", {}, 4, -1}},
      {OpCode::kCreateTtl, ttl},
      {OpCode::kDelete, PathVersionRequest{"/a", -1}},
      {OpCode::kCheck, PathVersionRequest{"/a", 3}},
      {OpCode::kExists, PathWatchRequest{"/a", true}},
      {OpCode::kGetData, PathWatchRequest{"/a", false}},
      {OpCode::kGetChildren, PathWatchRequest{"/", true}},
      {OpCode::kGetChildren2, PathWatchRequest{"/", false}},
      {OpCode::kSync, PathRecord{"/a"}},
      {OpCode::kGetAcl, PathRecord{"/a"}},
      {OpCode::kGetEphemerals, PathRecord{"/"}},
      {OpCode::kGetAllChildrenNumber, PathRecord{"/a"}},
      {OpCode::kDeleteContainer, PathRecord{"/c"}},
      {OpCode::kSetData, SetDataRequest{"/a", std::string(300, 'v'), 7}},
      {OpCode::kSetAcl, SetAclRequest{"/a", {{1, {"ip", "127.0.0.1"}}}, -1}},
      {OpCode::kCheckWatches, PathModeRequest{"/a", 3}},
      {OpCode::kRemoveWatches, PathModeRequest{"/a", 2}},
      {OpCode::kAddWatch, PathModeRequest{"/a", 1}},
      {OpCode::kMulti, multi},
      {OpCode::kMultiRead, multi_read},
      {OpCode::kAuth, AuthPacket{0, "digest", "bob:secret"}},
      {OpCode::kSetWatches, watches},
      {OpCode::kSetWatches2, watches2},
      {OpCode::kReconfig, ReconfigRequest{"", "", "server.1=a:1:2", -1}},
  };
}

TEST(ZkRequestTest, EveryOpDecodesToItsRecordAndBack) {
  std::int32_t xid = 1;
  for (const Sample& sample : EveryOp()) {
    SCOPED_TRACE(std::string(OpName(Op(sample.op))));
    const RequestHeader header{xid++, Op(sample.op)};
    const std::string frame = EncodeRequest(header, sample.body);
    std::string why;
    std::optional<DecodedRequest> decoded = DecodeRequest(frame, &why);
    ASSERT_TRUE(decoded.has_value()) << why;
    EXPECT_EQ(decoded->error, ErrorCode::kOk) << decoded->why;
    EXPECT_EQ(decoded->header, header);
    EXPECT_EQ(decoded->body, sample.body);
    EXPECT_EQ(EncodeRequest(decoded->header, decoded->body), frame);
  }
}

TEST(ZkRequestTest, EveryStrictPrefixOfABodyIsRefused) {
  for (const Sample& sample : EveryOp()) {
    const std::string frame = EncodeRequest({5, Op(sample.op)}, sample.body);
    for (std::size_t cut = 0; cut < frame.size(); ++cut) {
      SCOPED_TRACE(std::string(OpName(Op(sample.op))) + " cut at " + std::to_string(cut));
      std::string why;
      std::optional<DecodedRequest> decoded = DecodeRequest(frame.substr(0, cut), &why);
      if (cut < 8) {
        EXPECT_FALSE(decoded.has_value());
        EXPECT_NE(why.find("request header"), std::string::npos) << why;
        continue;
      }
      ASSERT_TRUE(decoded.has_value());
      EXPECT_EQ(decoded->header.xid, 5);
      EXPECT_EQ(decoded->error, ErrorCode::kMarshallingError);
      EXPECT_NE(decoded->why.find("jute: "), std::string::npos) << decoded->why;
      EXPECT_EQ(decoded->body, RequestBody(NoBody{}));
    }
  }
}

// ZooKeeper answers (xid, -1, UNIMPLEMENTED) and ends the connection for an
// op code it does not define, 0 and -1 (notification, error) among them.
TEST(ZkRequestTest, AnUnknownOpKeepsItsXidAndEndsTheConnection) {
  std::string why;
  for (const std::int32_t type : {0, -1, 10, 23, 99, 108, -5, 0x7fffffff}) {
    std::optional<DecodedRequest> decoded =
        DecodeRequest(EncodeRequest({77, type}, NoBody{}) + "garbage", &why);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->error, ErrorCode::kUnimplemented);
    EXPECT_EQ(decoded->header.xid, 77);
    EXPECT_TRUE(decoded->ends_connection);
    EXPECT_EQ(decoded->why, "op " + std::to_string(type) + " is not a ZooKeeper operation");
  }
}

TEST(ZkRequestTest, SaslAndCreateSessionAreRefusedAndTheConnectionStays) {
  std::string why;
  std::optional<DecodedRequest> sasl =
      DecodeRequest(EncodeRequest({5, Op(OpCode::kSasl)}, NoBody{}) + "token", &why);
  ASSERT_TRUE(sasl.has_value());
  EXPECT_EQ(sasl->error, ErrorCode::kUnimplemented);
  EXPECT_FALSE(sasl->ends_connection);
  EXPECT_NE(sasl->why.find("tenure has no SASL"), std::string::npos);
  std::optional<DecodedRequest> create_session =
      DecodeRequest(EncodeRequest({6, Op(OpCode::kCreateSession)}, NoBody{}), &why);
  ASSERT_TRUE(create_session.has_value());
  EXPECT_EQ(create_session->error, ErrorCode::kMarshallingError);
  EXPECT_FALSE(create_session->ends_connection);
}

// ZooKeeper closes a connection whose auth packet does not parse.
TEST(ZkRequestTest, AnAuthPacketThatDoesNotParseEndsTheConnection) {
  const std::string frame =
      EncodeRequest({kAuthXid, Op(OpCode::kAuth)}, AuthPacket{0, "digest", "user:secret"});
  std::string why;
  std::optional<DecodedRequest> decoded = DecodeRequest(frame.substr(0, frame.size() - 3), &why);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->error, ErrorCode::kMarshallingError);
  EXPECT_TRUE(decoded->ends_connection);
  // Any other op's bad body keeps the connection.
  decoded = DecodeRequest(EncodeRequest({1, Op(OpCode::kExists)}, NoBody{}), &why);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->error, ErrorCode::kMarshallingError);
  EXPECT_FALSE(decoded->ends_connection);
}

TEST(ZkRequestTest, AConnectRequestIgnoresBytesAfterReadOnly) {
  const ConnectRequest request{0, 5, 10000, 0, std::string(16, '\0'), false};
  std::string why;
  EXPECT_EQ(DecodeConnectRequest(EncodeRecord(request) + "xyz", &why), request);
  EXPECT_FALSE(DecodeConnectRequest(EncodeRecord(request).substr(0, 20), &why).has_value());
  EXPECT_EQ(why.rfind("connect request: jute: ", 0), 0u) << why;
}

TEST(ZkRequestTest, AMultiOfReadsOrAMultiReadOfWritesIsRefused) {
  MultiRequest reads;
  reads.ops.push_back({Op(OpCode::kGetData), PathWatchRequest{"/a", false}});
  std::string why;
  std::optional<DecodedRequest> decoded =
      DecodeRequest(EncodeRequest({1, Op(OpCode::kMulti)}, reads), &why);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->error, ErrorCode::kMarshallingError);
  EXPECT_EQ(decoded->why,
            "multi request: jute: multi op type at byte 17: 4 (getData) cannot be in a multi");

  MultiRequest writes;
  writes.ops.push_back({Op(OpCode::kDelete), PathVersionRequest{"/a", -1}});
  decoded = DecodeRequest(EncodeRequest({1, Op(OpCode::kMultiRead)}, writes), &why);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->error, ErrorCode::kMarshallingError);
}

TEST(ZkRequestTest, AMultiPastTheLimitIsBadArguments) {
  MultiRequest multi;
  for (std::size_t i = 0; i <= kMultiOpsMax; ++i) {
    multi.ops.push_back({Op(OpCode::kCheck), PathVersionRequest{"/a", -1}});
  }
  std::string why;
  std::optional<DecodedRequest> decoded =
      DecodeRequest(EncodeRequest({3, Op(OpCode::kMulti)}, multi), &why);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->error, ErrorCode::kBadArguments);
  EXPECT_EQ(decoded->why, "multi: more than 1000 ops");
  multi.ops.pop_back();  // exactly the limit
  decoded = DecodeRequest(EncodeRequest({3, Op(OpCode::kMulti)}, multi), &why);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->error, ErrorCode::kOk) << decoded->why;
  EXPECT_EQ(std::get<MultiRequest>(decoded->body).ops.size(), kMultiOpsMax);
}

TEST(ZkRequestTest, BytesAfterABodyAreIgnoredAsZooKeeperDoes) {
  std::string why;
  std::optional<DecodedRequest> decoded = DecodeRequest(
      EncodeRequest({1, Op(OpCode::kExists)}, PathWatchRequest{"/a", true}) + "xyz", &why);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->error, ErrorCode::kOk);
  EXPECT_EQ(decoded->body, RequestBody(PathWatchRequest{"/a", true}));
}

TEST(ZkRequestTest, AReplyCarriesItsBodyOnlyWithoutAnError) {
  Stat stat;
  stat.version = 2;
  const std::string ok = EncodeReply(ReplyHeader{4, 100, 0}, StatRecord{stat});
  EXPECT_EQ(ok.size(), 16u + 68u);
  EXPECT_EQ(DecodeRecord<ReplyHeader>(ok.substr(0, 16)), (ReplyHeader{4, 100, 0}));
  EXPECT_EQ(DecodeRecord<StatRecord>(ok.substr(16)), StatRecord{stat});
  const std::string failed = EncodeReply(
      ReplyHeader{4, 100, static_cast<std::int32_t>(ErrorCode::kNoNode)}, StatRecord{stat});
  EXPECT_EQ(failed.size(), 16u);
  EXPECT_EQ(EncodeReply(ReplyHeader{4, 100, -101}), failed);
}

TEST(ZkRequestTest, AMultiReplyListsEachOpThenTheClosingHeader) {
  std::vector<MultiResult> results;
  results.push_back({Op(OpCode::kCreate), 0, PathRecord{"/m"}});
  results.push_back({Op(OpCode::kError), -103, NoBody{}});
  results.push_back({Op(OpCode::kDelete), 0, NoBody{}});
  const std::string frame = EncodeMultiReply(ReplyHeader{9, 50, 0}, results);
  JuteReader reader(frame);
  ReplyHeader header;
  Fields(reader, header);
  MultiHeader h;
  Fields(reader, h);
  EXPECT_EQ(h, (MultiHeader{1, false, 0}));
  PathRecord path;
  Fields(reader, path);
  EXPECT_EQ(path.path, "/m");
  Fields(reader, h);
  EXPECT_EQ(h, (MultiHeader{-1, false, -103}));
  ErrorResponse error;
  Fields(reader, error);
  EXPECT_EQ(error.err, -103);
  Fields(reader, h);
  EXPECT_EQ(h, (MultiHeader{2, false, 0}));
  Fields(reader, h);
  EXPECT_EQ(h, (MultiHeader{-1, true, -1}));
  EXPECT_FALSE(reader.failed()) << reader.error();
  EXPECT_TRUE(reader.at_end());
}

// zxid -1 as ZooKeeper's server writes it: a client never takes a
// notification's zxid as the last one it saw.
TEST(ZkRequestTest, ANotificationIsXidAndZxidMinusOneAndItsEvent) {
  const std::string frame = EncodeNotification(
      WatcherEvent{static_cast<std::int32_t>(EventType::kNodeDeleted),
                   static_cast<std::int32_t>(KeeperState::kSyncConnected), "/a"});
  EXPECT_EQ(DecodeRecord<ReplyHeader>(frame.substr(0, 16)), (ReplyHeader{-1, -1, 0}));
  EXPECT_EQ(DecodeRecord<WatcherEvent>(frame.substr(16)), (WatcherEvent{2, 3, "/a"}));
}

TEST(ZkRequestTest, NamesOfOpsAndErrors) {
  EXPECT_EQ(OpName(Op(OpCode::kGetChildren2)), "getChildren2");
  EXPECT_EQ(OpName(12345), "unknown");
  EXPECT_EQ(ErrorName(ErrorCode::kNoNode), "NONODE");
  EXPECT_EQ(ErrorName(static_cast<ErrorCode>(-9999)), "UNKNOWN");
}

}  // namespace
}  // namespace tenure::zk
