// zk's jute coding against ZooKeeper's own C client (libzookeeper_mt from
// Debian's libzookeeper-mt-dev, whose record code is generated from the
// same zookeeper.jute): random records of every kind tenure reads or
// writes are encoded by zk/records.h, read by the C library's deserializer
// and written again by its serializer; the bytes must be ours exactly, and
// ours must read them back to the record. So the two agree on every field's
// order, width and byte order; and what the C client writes for a null,
// ours reads as empty.
#include <gtest/gtest.h>

extern "C" {
#include <zookeeper/recordio.h>
#include <zookeeper/zookeeper.jute.h>
}

#include <cstdint>
#include <random>
#include <string>

#include "zk/jute.h"
#include "zk/records.h"

namespace {

namespace zk = tenure::zk;

constexpr std::uint64_t kSeed = 20261130;
constexpr int kRounds = 300;

class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}
  std::int32_t Int() { return static_cast<std::int32_t>(engine_()); }
  std::int64_t Long() { return static_cast<std::int64_t>(engine_()); }
  bool Bool() { return (engine_() & 1) != 0; }
  std::string Bytes() {
    std::string out(engine_() % 40, '\0');
    for (char& c : out) c = static_cast<char>(engine_());
    return out;
  }
  // Strings the C library handles as C strings: no NUL inside.
  std::string Text() {
    std::string out(engine_() % 30, 'a');
    for (char& c : out) c = static_cast<char>('!' + engine_() % 90);
    return out;
  }
  std::vector<std::string> Texts() {
    std::vector<std::string> out(engine_() % 5);
    for (std::string& s : out) s = Text();
    return out;
  }
  std::vector<zk::Acl> Acls() {
    std::vector<zk::Acl> out(engine_() % 4);
    for (zk::Acl& acl : out) acl = {Int(), {Text(), Text()}};
    return out;
  }
  zk::Stat Stat() {
    return {Long(), Long(), Long(), Long(), Int(), Int(), Int(), Long(), Int(), Int(), Long()};
  }

 private:
  std::mt19937_64 engine_;
};

std::string Str(const char* s) { return s == nullptr ? std::string() : std::string(s); }
std::string Buf(const buffer& b) {
  return b.len <= 0 ? std::string() : std::string(b.buff, static_cast<std::size_t>(b.len));
}
std::vector<std::string> Strs(const String_vector& v) {
  std::vector<std::string> out;
  for (std::int32_t i = 0; i < v.count; ++i) out.push_back(Str(v.data[i]));
  return out;
}
std::vector<zk::Acl> Acls(const ACL_vector& v) {
  std::vector<zk::Acl> out;
  for (std::int32_t i = 0; i < v.count; ++i) {
    out.push_back({v.data[i].perms, {Str(v.data[i].id.scheme), Str(v.data[i].id.id)}});
  }
  return out;
}
zk::Stat Ours(const ::Stat& s) {
  return {s.czxid,    s.mzxid,          s.ctime,      s.mtime,       s.version, s.cversion,
          s.aversion, s.ephemeralOwner, s.dataLength, s.numChildren, s.pzxid};
}

zk::SetWatches2 SetWatches2Of(const ::SetWatches2& c) {
  zk::SetWatches2 out;
  out.relative_zxid = c.relativeZxid;
  out.data_watches = Strs(c.dataWatches);
  out.exist_watches = Strs(c.existWatches);
  out.child_watches = Strs(c.childWatches);
  out.persistent_watches = Strs(c.persistentWatches);
  out.persistent_recursive_watches = Strs(c.persistentRecursiveWatches);
  return out;
}
zk::WhoAmIResponse WhoAmIOf(const ::WhoAmIResponse& c) {
  zk::WhoAmIResponse out;
  for (std::int32_t i = 0; i < c.clientInfo.count; ++i) {
    out.client_info.push_back(
        {Str(c.clientInfo.data[i].authScheme), Str(c.clientInfo.data[i].user)});
  }
  return out;
}
zk::CreateTtlRequest CreateTtlOf(const ::CreateTTLRequest& c) {
  zk::CreateTtlRequest out;
  static_cast<zk::CreateRequest&>(out) = {Str(c.path), Buf(c.data), Acls(c.acl), c.flags, c.ttl};
  return out;
}

// Our bytes through the C library's deserializer, whose fields (by their
// names in zookeeper.jute) must hold what ours held (`as_ours` maps the C
// struct to our record); then its serializer, whose bytes must be ours
// exactly, and which ours read back to the record.
template <typename Ours, typename C, typename AsOurs>
void ThroughC(const Ours& ours, int (*deserialize)(iarchive*, const char*, C*),
              int (*serialize)(oarchive*, const char*, C*), void (*deallocate)(C*),
              AsOurs as_ours) {
  const std::string bytes = zk::EncodeRecord(ours);
  std::string copy = bytes;  // the C reader takes a non-const buffer
  iarchive* in = create_buffer_iarchive(copy.data(), static_cast<int>(copy.size()));
  C c{};
  ASSERT_EQ(deserialize(in, "record", &c), 0);
  close_buffer_iarchive(&in);
  EXPECT_EQ(as_ours(c), ours);
  oarchive* out = create_buffer_oarchive();
  ASSERT_EQ(serialize(out, "record", &c), 0);
  const std::string from_c(get_buffer(out), static_cast<std::size_t>(get_buffer_len(out)));
  close_buffer_oarchive(&out, 1);
  deallocate(&c);
  ASSERT_EQ(from_c, bytes);
  std::string error;
  ASSERT_EQ(zk::DecodeRecord<Ours>(from_c, &error), ours) << error;
}

#define THROUGH_C(record, c_type, ...)                                               \
  ThroughC(record, &deserialize_##c_type, &serialize_##c_type, &deallocate_##c_type, \
           [](const ::c_type& c) { return __VA_ARGS__; })

TEST(ZkJuteOracleTest, RecordsMatchZooKeepersCClient) {
  Random r(kSeed);
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("seed " + std::to_string(kSeed) + " round " + std::to_string(round));
    THROUGH_C(r.Stat(), Stat, Ours(c));
    THROUGH_C((zk::RequestHeader{r.Int(), r.Int()}), RequestHeader,
              zk::RequestHeader{c.xid, c.type});
    THROUGH_C((zk::ReplyHeader{r.Int(), r.Long(), r.Int()}), ReplyHeader,
              zk::ReplyHeader{c.xid, c.zxid, c.err});
    // The C client's connect records end at the password (it appends
    // readOnly by hand); ours without readOnly are those bytes.
    THROUGH_C((zk::ConnectRequest{r.Int(), r.Long(), r.Int(), r.Long(), r.Bytes(), std::nullopt}),
              ConnectRequest,
              zk::ConnectRequest{c.protocolVersion, c.lastZxidSeen, c.timeOut, c.sessionId,
                                 Buf(c.passwd), std::nullopt});
    THROUGH_C((zk::ConnectResponse{r.Int(), r.Int(), r.Long(), r.Bytes(), std::nullopt}),
              ConnectResponse,
              zk::ConnectResponse{c.protocolVersion, c.timeOut, c.sessionId, Buf(c.passwd),
                                  std::nullopt});
    THROUGH_C((zk::WatcherEvent{r.Int(), r.Int(), r.Text()}), WatcherEvent,
              zk::WatcherEvent{c.type, c.state, Str(c.path)});
    THROUGH_C((zk::AuthPacket{r.Int(), r.Text(), r.Bytes()}), AuthPacket,
              zk::AuthPacket{c.type, Str(c.scheme), Buf(c.auth)});
    THROUGH_C((zk::MultiHeader{r.Int(), r.Bool(), r.Int()}), MultiHeader,
              zk::MultiHeader{c.type, c.done != 0, c.err});
    zk::SetWatches watches;
    watches.relative_zxid = r.Long();
    watches.data_watches = r.Texts();
    watches.exist_watches = r.Texts();
    watches.child_watches = r.Texts();
    THROUGH_C(watches, SetWatches,
              zk::SetWatches{c.relativeZxid,
                             Strs(c.dataWatches),
                             Strs(c.existWatches),
                             Strs(c.childWatches),
                             {},
                             {}});
    zk::SetWatches2 watches2;
    static_cast<zk::SetWatches&>(watches2) = watches;
    watches2.persistent_watches = r.Texts();
    watches2.persistent_recursive_watches = r.Texts();
    THROUGH_C(watches2, SetWatches2, SetWatches2Of(c));
    zk::CreateRequest create{r.Text(), r.Bytes(), r.Acls(), r.Int(), -1};
    THROUGH_C(create, CreateRequest,
              zk::CreateRequest{Str(c.path), Buf(c.data), Acls(c.acl), c.flags, -1});
    zk::CreateTtlRequest ttl;
    static_cast<zk::CreateRequest&>(ttl) = create;
    ttl.ttl_ms = r.Long();
    THROUGH_C(ttl, CreateTTLRequest, CreateTtlOf(c));
    THROUGH_C((zk::PathVersionRequest{r.Text(), r.Int()}), DeleteRequest,
              zk::PathVersionRequest{Str(c.path), c.version});
    THROUGH_C((zk::PathVersionRequest{r.Text(), r.Int()}), CheckVersionRequest,
              zk::PathVersionRequest{Str(c.path), c.version});
    THROUGH_C((zk::PathWatchRequest{r.Text(), r.Bool()}), GetDataRequest,
              zk::PathWatchRequest{Str(c.path), c.watch != 0});
    THROUGH_C((zk::PathWatchRequest{r.Text(), r.Bool()}), ExistsRequest,
              zk::PathWatchRequest{Str(c.path), c.watch != 0});
    THROUGH_C((zk::PathWatchRequest{r.Text(), r.Bool()}), GetChildren2Request,
              zk::PathWatchRequest{Str(c.path), c.watch != 0});
    THROUGH_C((zk::SetDataRequest{r.Text(), r.Bytes(), r.Int()}), SetDataRequest,
              zk::SetDataRequest{Str(c.path), Buf(c.data), c.version});
    THROUGH_C((zk::SetAclRequest{r.Text(), r.Acls(), r.Int()}), SetACLRequest,
              zk::SetAclRequest{Str(c.path), Acls(c.acl), c.version});
    THROUGH_C((zk::PathRecord{r.Text()}), SyncRequest, zk::PathRecord{Str(c.path)});
    THROUGH_C((zk::PathRecord{r.Text()}), GetACLRequest, zk::PathRecord{Str(c.path)});
    THROUGH_C((zk::PathRecord{r.Text()}), GetEphemeralsRequest, zk::PathRecord{Str(c.prefixPath)});
    THROUGH_C((zk::PathRecord{r.Text()}), CreateResponse, zk::PathRecord{Str(c.path)});
    THROUGH_C((zk::PathModeRequest{r.Text(), r.Int()}), AddWatchRequest,
              zk::PathModeRequest{Str(c.path), c.mode});
    THROUGH_C((zk::PathModeRequest{r.Text(), r.Int()}), RemoveWatchesRequest,
              zk::PathModeRequest{Str(c.path), c.type});
    THROUGH_C((zk::PathModeRequest{r.Text(), r.Int()}), CheckWatchesRequest,
              zk::PathModeRequest{Str(c.path), c.type});
    THROUGH_C((zk::ReconfigRequest{r.Text(), r.Text(), r.Text(), r.Long()}), ReconfigRequest,
              zk::ReconfigRequest{Str(c.joiningServers), Str(c.leavingServers), Str(c.newMembers),
                                  c.curConfigId});
    THROUGH_C((zk::StatRecord{r.Stat()}), ExistsResponse, zk::StatRecord{Ours(c.stat)});
    THROUGH_C((zk::StatRecord{r.Stat()}), SetDataResponse, zk::StatRecord{Ours(c.stat)});
    THROUGH_C((zk::Create2Response{r.Text(), r.Stat()}), Create2Response,
              zk::Create2Response{Str(c.path), Ours(c.stat)});
    THROUGH_C((zk::GetDataResponse{r.Bytes(), r.Stat()}), GetDataResponse,
              zk::GetDataResponse{Buf(c.data), Ours(c.stat)});
    THROUGH_C((zk::ChildrenResponse{r.Texts()}), GetChildrenResponse,
              zk::ChildrenResponse{Strs(c.children)});
    THROUGH_C((zk::Children2Response{r.Texts(), r.Stat()}), GetChildren2Response,
              zk::Children2Response{Strs(c.children), Ours(c.stat)});
    THROUGH_C((zk::GetAclResponse{r.Acls(), r.Stat()}), GetACLResponse,
              zk::GetAclResponse{Acls(c.acl), Ours(c.stat)});
    THROUGH_C((zk::ErrorResponse{r.Int()}), ErrorResponse, zk::ErrorResponse{c.err});
    THROUGH_C((zk::CountResponse{r.Int()}), GetAllChildrenNumberResponse,
              zk::CountResponse{c.totalNumber});
    THROUGH_C((zk::PathWatchRequest{r.Text(), r.Bool()}), GetChildrenRequest,
              zk::PathWatchRequest{Str(c.path), c.watch != 0});
    THROUGH_C((zk::PathRecord{r.Text()}), GetAllChildrenNumberRequest, zk::PathRecord{Str(c.path)});
    THROUGH_C((zk::PathRecord{r.Text()}), SyncResponse, zk::PathRecord{Str(c.path)});
    THROUGH_C((zk::ChildrenResponse{r.Texts()}), GetEphemeralsResponse,
              zk::ChildrenResponse{Strs(c.ephemerals)});
    zk::WhoAmIResponse who;
    for (int i = r.Int() & 3; i > 0; --i) who.client_info.push_back({r.Text(), r.Text()});
    THROUGH_C(who, WhoAmIResponse, WhoAmIOf(c));
  }
}

// Nulls as the C client writes them (a NULL string, a buffer of length -1,
// a vector of count -1; kazoo writes an empty string as -1 too): ours reads
// each as empty.
TEST(ZkJuteOracleTest, NullsFromTheCClientReadAsEmpty) {
  ::CreateRequest create{};
  create.path = nullptr;
  create.data.len = -1;
  create.data.buff = nullptr;
  create.acl.count = -1;
  create.acl.data = nullptr;
  create.flags = 3;
  oarchive* out = create_buffer_oarchive();
  ASSERT_EQ(serialize_CreateRequest(out, "record", &create), 0);
  const std::string bytes(get_buffer(out), static_cast<std::size_t>(get_buffer_len(out)));
  close_buffer_oarchive(&out, 1);
  EXPECT_EQ(bytes.substr(0, 12), std::string(12, '\xff'));  // path, data and acl: -1 each
  std::string error;
  std::optional<zk::CreateRequest> ours = zk::DecodeRecord<zk::CreateRequest>(bytes, &error);
  ASSERT_TRUE(ours.has_value()) << error;
  EXPECT_EQ(*ours, (zk::CreateRequest{"", "", {}, 3, -1}));
}

}  // namespace
