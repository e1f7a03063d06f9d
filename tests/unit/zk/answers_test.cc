// ZooKeeper's reads and writes over a Store (zk/reads.h, zk/writes.h): the
// checks ZooKeeper makes before its tree (a create's mode, a TTL, the
// path's shape, the ACL list's shape) in its order, the entry a request
// becomes, and each answer's bytes as a client reads them, for the layer's
// own nodes too. The facts are ZooKeeper 3.8.0's (docs/zookeeper-compat.md).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/limits.h"
#include "state/numbered_session.h"
#include "state/store.h"
#include "unit/state/store_fixture.h"
#include "zk/four_letter.h"
#include "zk/reads.h"
#include "zk/writes.h"

namespace tenure::zk {
namespace {

const std::vector<Acl> kOpen = {Acl{kPermAll, Id{"world", "anyone"}}};

DecodedRequest Request(OpCode type, RequestBody body, std::int32_t xid = 7) {
  DecodedRequest request;
  request.header = RequestHeader{xid, static_cast<std::int32_t>(type)};
  request.body = std::move(body);
  return request;
}

DecodedRequest Create(std::string path, std::int32_t flags = 0, std::vector<Acl> acl = kOpen,
                      OpCode type = OpCode::kCreate) {
  CreateRequest create;
  create.path = std::move(path);
  create.data = "d";
  create.acl = std::move(acl);
  create.flags = flags;
  return Request(type, create);
}

// The reply header, and the reader positioned at the body.
struct Reply {
  explicit Reply(const std::string& bytes) : bytes_(bytes), reader(bytes_) {
    reader.Record("header", header);
  }
  std::string bytes_;
  JuteReader reader;
  ReplyHeader header;
  template <typename R>
  R Body() {
    R body;
    reader.Record("body", body);
    EXPECT_FALSE(reader.failed());
    return body;
  }
};

// The refusal a lone create gets before any entry, or kOk.
ErrorCode Refusal(const DecodedRequest& request, bool authenticated = false) {
  const PlannedWrite plan = PlanWrite(request, 5, authenticated);
  return plan.refused ? plan.refused->second : ErrorCode::kOk;
}

TEST(ZkWritesTest, ACreatesModeComesFromItsFlagsAndTtlModesAreUnimplemented) {
  const PlannedWrite plan = PlanWrite(Create("/a", 3), 5, false);
  ASSERT_FALSE(plan.refused);
  ASSERT_EQ(plan.write.ops.size(), 1u);
  EXPECT_TRUE(plan.write.ops[0].ephemeral);
  EXPECT_TRUE(plan.write.ops[0].sequential);
  EXPECT_FALSE(plan.write.ops[0].container);
  EXPECT_EQ(plan.write.session, state::NumberedSessionId(5));
  // The op makes a container, not the flags (PrepRequestProcessor): create
  // with the container flag makes a persistent node, createContainer with
  // the ephemeral one a container, with the sequential one a sequential
  // container.
  EXPECT_FALSE(PlanWrite(Create("/a", 4), 5, false).write.ops[0].container);
  const auto container = [](std::int32_t flags) {
    return PlanWrite(Create("/a", flags, kOpen, OpCode::kCreateContainer), 5, false).write.ops[0];
  };
  EXPECT_TRUE(container(4).container);
  EXPECT_TRUE(container(0).container);
  EXPECT_TRUE(container(1).container);
  EXPECT_FALSE(container(1).ephemeral);
  EXPECT_TRUE(container(2).sequential);
  EXPECT_EQ(Refusal(Create("/a", 5)), ErrorCode::kUnimplemented);
  EXPECT_EQ(Refusal(Create("/a", 6)), ErrorCode::kUnimplemented);
  EXPECT_EQ(Refusal(Create("/a", 7)), ErrorCode::kBadArguments);
  EXPECT_EQ(Refusal(Create("/a", -1)), ErrorCode::kBadArguments);
  // createTTL with a mode that has no TTL and a TTL set: validateTTL's refusal.
  CreateTtlRequest ttl;
  ttl.path = "/a";
  ttl.acl = kOpen;
  ttl.ttl_ms = 100;
  EXPECT_EQ(Refusal(Request(OpCode::kCreateTtl, ttl)), ErrorCode::kBadArguments);
  ttl.ttl_ms = -1;
  EXPECT_EQ(Refusal(Request(OpCode::kCreateTtl, ttl)), ErrorCode::kOk);
}

TEST(ZkWritesTest, TheModeComesBeforeThePathAndThePathBeforeTheAcl) {
  EXPECT_EQ(Refusal(Create("nocolon", 7, {})), ErrorCode::kBadArguments);
  EXPECT_EQ(Refusal(Create("noslash", 0, {})), ErrorCode::kBadArguments);
  EXPECT_EQ(Refusal(Create(std::string("/a\0b", 4), 0, {})), ErrorCode::kBadArguments);
  EXPECT_EQ(Refusal(Create("/a", 0, {})), ErrorCode::kInvalidAcl);
  // The rest of the path's rules are the Store's, after the parent.
  EXPECT_EQ(Refusal(Create("/missing/", 0)), ErrorCode::kOk);
}

TEST(ZkWritesTest, AclListsAreCheckedForShapeAsFixupAclChecksThem) {
  auto refusal = [](Id id, bool authenticated = false) {
    return Refusal(Create("/a", 0, {Acl{kPermAll, std::move(id)}}), authenticated);
  };
  EXPECT_EQ(refusal({"world", "anyone"}), ErrorCode::kOk);
  EXPECT_EQ(refusal({"world", "someone"}), ErrorCode::kInvalidAcl);
  EXPECT_EQ(refusal({"digest", "user:hash"}), ErrorCode::kOk);
  EXPECT_EQ(refusal({"digest", "nocolon"}), ErrorCode::kInvalidAcl);
  EXPECT_EQ(refusal({"digest", "a:b:c"}), ErrorCode::kInvalidAcl);
  EXPECT_EQ(refusal({"ip", "10.0.0.0/8"}), ErrorCode::kOk);
  EXPECT_EQ(refusal({"ip", "somewhere"}), ErrorCode::kInvalidAcl);
  EXPECT_EQ(refusal({"auth", ""}), ErrorCode::kInvalidAcl);
  EXPECT_EQ(refusal({"auth", ""}, /*authenticated=*/true), ErrorCode::kOk);
  EXPECT_EQ(refusal({"x509", "CN=a"}), ErrorCode::kInvalidAcl);
}

TEST(ZkWritesTest, TenureBoundsValuesAndPathsAsItsKeys) {
  SetDataRequest set;
  set.path = "/a";
  set.data.assign(limits::kKvValueBytesMax + 1, 'x');
  EXPECT_EQ(Refusal(Request(OpCode::kSetData, set)), ErrorCode::kBadArguments);
  set.data.resize(limits::kKvValueBytesMax);
  EXPECT_EQ(Refusal(Request(OpCode::kSetData, set)), ErrorCode::kOk);
  EXPECT_EQ(Refusal(Create("/" + std::string(limits::kKvKeyBytesMax, 'k'))),
            ErrorCode::kBadArguments);
}

TEST(ZkWritesTest, AMultiRefusedBeforeItsEntryAnswersEachOpAsZooKeeperDoes) {
  MultiRequest multi;
  multi.ops.push_back(
      {static_cast<std::int32_t>(OpCode::kCreate), std::get<CreateRequest>(Create("/a").body)});
  multi.ops.push_back({static_cast<std::int32_t>(OpCode::kCreate),
                       std::get<CreateRequest>(Create("/b", 0, {}).body)});
  multi.ops.push_back({static_cast<std::int32_t>(OpCode::kDelete), PathVersionRequest{"/c", -1}});
  const DecodedRequest request = Request(OpCode::kMulti, multi, 9);
  const PlannedWrite plan = PlanWrite(request, 5, false);
  ASSERT_TRUE(plan.refused);
  EXPECT_EQ(plan.refused->first, 1u);
  Reply reply(AnswerRefused(request, plan, 42));
  EXPECT_EQ(reply.header, (ReplyHeader{9, 42, 0}));  // a multi's header says 0
  std::vector<std::pair<std::int32_t, std::int32_t>> results;
  for (int i = 0; i < 3; ++i) {
    MultiHeader header;
    reply.reader.Record("multi", header);
    ErrorResponse error;
    reply.reader.Record("error", error);
    EXPECT_EQ(header.type, -1);
    EXPECT_EQ(header.err, error.err);
    results.emplace_back(header.type, error.err);
  }
  EXPECT_EQ(results[0].second, 0);
  EXPECT_EQ(results[1].second, static_cast<std::int32_t>(ErrorCode::kInvalidAcl));
  EXPECT_EQ(results[2].second, static_cast<std::int32_t>(ErrorCode::kRuntimeInconsistency));
  MultiHeader done;
  reply.reader.Record("done", done);
  EXPECT_EQ(done, (MultiHeader{-1, true, -1}));
  EXPECT_FALSE(reply.reader.failed());
}

class ZkAnswersTest : public ::testing::Test {
 protected:
  state::ApplyResult Write(const DecodedRequest& request) {
    const PlannedWrite plan = PlanWrite(request, 0, false);
    EXPECT_FALSE(plan.refused);
    return driver_.Apply(plan.write);
  }
  std::string Read(const DecodedRequest& request) {
    return AnswerRead(driver_.store(), Reader{}, request);
  }
  state::testutil::StoreDriver driver_;
};

TEST_F(ZkAnswersTest, EachWriteAnswersWithItsOwnRecord) {
  {
    Reply reply(AnswerApplied(Create("/a"), Write(Create("/a"))));
    EXPECT_EQ(reply.header.err, 0);
    EXPECT_EQ(reply.header.zxid, static_cast<std::int64_t>(driver_.last_index().value()));
    EXPECT_EQ(reply.Body<PathRecord>().path, "/a");
  }
  {
    const DecodedRequest create2 = Create("/a/s-", 2, kOpen, OpCode::kCreate2);
    Reply reply(AnswerApplied(create2, Write(create2)));
    const auto body = reply.Body<Create2Response>();
    EXPECT_EQ(body.path, "/a/s-0000000000");
    EXPECT_EQ(body.stat.czxid, static_cast<std::int64_t>(driver_.last_index().value()));
    EXPECT_EQ(body.stat.data_length, 1);
  }
  {
    const DecodedRequest set = Request(OpCode::kSetData, SetDataRequest{"/a", "xyz", 0});
    Reply reply(AnswerApplied(set, Write(set)));
    const Stat stat = reply.Body<StatRecord>().stat;
    EXPECT_EQ(stat.version, 1);
    EXPECT_EQ(stat.data_length, 3);
  }
  {
    const DecodedRequest stale = Request(OpCode::kSetData, SetDataRequest{"/a", "", 0});
    Reply reply(AnswerApplied(stale, Write(stale)));
    EXPECT_EQ(reply.header.err, static_cast<std::int32_t>(ErrorCode::kBadVersion));
    EXPECT_EQ(reply.bytes_.size(), 16u);  // the header alone
  }
}

TEST_F(ZkAnswersTest, AMultiTypesItsResultsAsZooKeeperDoes) {
  Write(Create("/a"));
  MultiRequest multi;
  CreateRequest c2 = std::get<CreateRequest>(Create("/a/x").body);
  multi.ops.push_back({static_cast<std::int32_t>(OpCode::kCreate2), c2});
  CreateRequest container = std::get<CreateRequest>(Create("/a/c", 4).body);
  multi.ops.push_back({static_cast<std::int32_t>(OpCode::kCreateContainer), container});
  multi.ops.push_back({static_cast<std::int32_t>(OpCode::kSetData), SetDataRequest{"/a", "v", -1}});
  multi.ops.push_back({static_cast<std::int32_t>(OpCode::kCheck), PathVersionRequest{"/a", 1}});
  const DecodedRequest request = Request(OpCode::kMulti, multi);
  Reply reply(AnswerApplied(request, Write(request)));
  EXPECT_EQ(reply.header.err, 0);
  MultiHeader header;
  reply.reader.Record("h", header);
  EXPECT_EQ(header.type, 1);  // create2 in a multi answers as create
  EXPECT_EQ(reply.Body<PathRecord>().path, "/a/x");
  reply.reader.Record("h", header);
  EXPECT_EQ(header.type, 15);  // createContainer as create2
  EXPECT_EQ(reply.Body<Create2Response>().path, "/a/c");
  reply.reader.Record("h", header);
  EXPECT_EQ(header.type, 5);
  EXPECT_EQ(reply.Body<StatRecord>().stat.version, 1);
  reply.reader.Record("h", header);
  EXPECT_EQ(header.type, 13);  // check: no body
  reply.reader.Record("h", header);
  EXPECT_EQ(header, (MultiHeader{-1, true, -1}));
  EXPECT_FALSE(reply.reader.failed());
}

TEST_F(ZkAnswersTest, AFreshTreeShowsZooKeepersOwnNodes) {
  {
    Reply reply(Read(Request(OpCode::kGetChildren, PathWatchRequest{"/", false})));
    EXPECT_EQ(reply.Body<ChildrenResponse>().children, std::vector<std::string>{"zookeeper"});
  }
  {
    Reply reply(Read(Request(OpCode::kExists, PathWatchRequest{"/", false})));
    const Stat stat = reply.Body<StatRecord>().stat;
    EXPECT_EQ(stat.cversion, -1);  // 0 x 2 - 1, as a fresh ZooKeeper's
    EXPECT_EQ(stat.num_children, 1);
  }
  {
    Reply reply(Read(Request(OpCode::kGetData, PathWatchRequest{"/zookeeper", false})));
    const auto body = reply.Body<GetDataResponse>();
    EXPECT_EQ(body.data, "");
    EXPECT_EQ(body.stat.cversion, -2);
    EXPECT_EQ(body.stat.num_children, 2);
  }
  {
    Reply reply(Read(Request(OpCode::kGetChildren2, PathWatchRequest{"/zookeeper", false})));
    EXPECT_EQ(reply.Body<Children2Response>().children,
              (std::vector<std::string>{"config", "quota"}));
  }
  {
    Reply reply(Read(Request(OpCode::kExists, PathWatchRequest{"/zookeeper/config", false})));
    EXPECT_EQ(reply.Body<StatRecord>().stat.aversion, -1);
  }
  {
    Reply reply(Read(Request(OpCode::kGetAllChildrenNumber, PathRecord{"/"})));
    EXPECT_EQ(reply.Body<CountResponse>().total, 3);
  }
}

TEST_F(ZkAnswersTest, ReadsAnswerWhatTheTreeHolds) {
  Write(Create("/b"));
  Write(Create("/b/c"));
  Write(Create("/a"));
  {
    Reply reply(Read(Request(OpCode::kGetChildren, PathWatchRequest{"/", false})));
    EXPECT_EQ(reply.Body<ChildrenResponse>().children,
              (std::vector<std::string>{"a", "b", "zookeeper"}));
  }
  {
    Reply reply(Read(Request(OpCode::kExists, PathWatchRequest{"/", false})));
    const Stat stat = reply.Body<StatRecord>().stat;
    EXPECT_EQ(stat.num_children, 3);
    EXPECT_EQ(stat.cversion, 2 * 2 - 3);  // two created, three children seen
  }
  {
    Reply reply(Read(Request(OpCode::kGetData, PathWatchRequest{"/b", false})));
    const auto body = reply.Body<GetDataResponse>();
    EXPECT_EQ(body.data, "d");
    EXPECT_EQ(body.stat.num_children, 1);
    EXPECT_EQ(reply.header.xid, 7);
    EXPECT_EQ(reply.header.zxid, static_cast<std::int64_t>(driver_.last_index().value()));
  }
  {
    Reply reply(Read(Request(OpCode::kGetData, PathWatchRequest{"/missing", false})));
    EXPECT_EQ(reply.header.err, static_cast<std::int32_t>(ErrorCode::kNoNode));
  }
  {
    Reply reply(Read(Request(OpCode::kExists, PathWatchRequest{std::string("/b\0", 3), false})));
    EXPECT_EQ(reply.header.err, static_cast<std::int32_t>(ErrorCode::kBadArguments));
  }
  {
    Reply reply(Read(Request(OpCode::kGetAcl, PathRecord{"/b"})));
    const auto body = reply.Body<GetAclResponse>();
    EXPECT_EQ(body.acl, kOpen);
  }
  {
    Reply reply(Read(Request(OpCode::kGetAllChildrenNumber, PathRecord{"/b"})));
    EXPECT_EQ(reply.Body<CountResponse>().total, 1);
  }
  {
    MultiRequest multi;
    multi.ops.push_back(
        {static_cast<std::int32_t>(OpCode::kGetData), PathWatchRequest{"/a", false}});
    multi.ops.push_back(
        {static_cast<std::int32_t>(OpCode::kGetData), PathWatchRequest{"/x", false}});
    multi.ops.push_back(
        {static_cast<std::int32_t>(OpCode::kGetChildren), PathWatchRequest{"/b", false}});
    Reply reply(Read(Request(OpCode::kMultiRead, multi)));
    MultiHeader header;
    reply.reader.Record("h", header);
    EXPECT_EQ(header.type, 4);
    EXPECT_EQ(reply.Body<GetDataResponse>().data, "d");
    reply.reader.Record("h", header);
    EXPECT_EQ(header.type, -1);  // each op on its own: no rollback codes
    EXPECT_EQ(reply.Body<ErrorResponse>().err, static_cast<std::int32_t>(ErrorCode::kNoNode));
    reply.reader.Record("h", header);
    EXPECT_EQ(header.type, 8);
    EXPECT_EQ(reply.Body<ChildrenResponse>().children, std::vector<std::string>{"c"});
  }
}

TEST_F(ZkAnswersTest, KeysOtherApisWroteUnderZookeeperAreNotSeen) {
  driver_.Set("/zookeeper", "");
  driver_.Set("/zookeeper/extra", "x");
  Reply reply(Read(Request(OpCode::kExists, PathWatchRequest{"/zookeeper/extra", false})));
  EXPECT_EQ(reply.header.err, static_cast<std::int32_t>(ErrorCode::kNoNode));
}

TEST(ZkFourLetterTest, RuokSrvrAndMntrAnswerAndTheRestAreNotWhitelisted) {
  PortFacts facts;
  facts.serving = true;
  facts.mode = "standalone";
  facts.version = "1.2.3";
  facts.zxid = 255;
  facts.node_count = 7;
  EXPECT_EQ(FourLetterAnswer("ruok", facts), "imok");
  const std::string srvr = FourLetterAnswer("srvr", facts);
  EXPECT_NE(srvr.find("Zookeeper version: 3.8.0-tenure-1.2.3\n"), std::string::npos) << srvr;
  EXPECT_NE(srvr.find("Zxid: 0xff\nMode: standalone\nNode count: 7\n"), std::string::npos) << srvr;
  const std::string mntr = FourLetterAnswer("mntr", facts);
  EXPECT_EQ(mntr.rfind("zk_version\t3.8.0-tenure-1.2.3\nzk_server_state\tstandalone\n", 0), 0u)
      << mntr;
  EXPECT_EQ(FourLetterAnswer("stat", facts),
            "stat is not executed because it is not in the whitelist.\n");
  facts.serving = false;
  EXPECT_EQ(FourLetterAnswer("srvr", facts),
            "This ZooKeeper instance is not currently serving requests\n");
  EXPECT_EQ(FourLetterAnswer("ruok", facts), "imok");
}

}  // namespace
}  // namespace tenure::zk
