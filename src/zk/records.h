// ZooKeeper's jute records (zookeeper.jute of 3.8) that its client protocol
// carries, each as a plain struct and one `Fields(v, r)` listing its fields
// in wire order (zk/jute.h walks it both ways). Records with one layout
// share a struct (ExistsRequest, GetDataRequest and GetChildrenRequest are
// all a path and a watch flag). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tenure::zk {

struct Id {
  std::string scheme;  // "world", "auth", "digest", "ip", "x509"...
  std::string id;
  bool operator==(const Id&) const = default;
};
template <typename V>
void Fields(V& v, Id& r) {
  v.String("scheme", r.scheme);
  v.String("id", r.id);
}

struct Acl {
  std::int32_t perms = 0;  // kPerm* bits
  Id id;
  bool operator==(const Acl&) const = default;
};
template <typename V>
void Fields(V& v, Acl& r) {
  v.Int("perms", r.perms);
  v.Record("id", r.id);
}

// A node's metadata: 68 bytes on the wire.
struct Stat {
  std::int64_t czxid = 0;  // zxid of the create
  std::int64_t mzxid = 0;  // zxid of the last data change
  std::int64_t ctime = 0;  // ms since the epoch, of the create
  std::int64_t mtime = 0;  // ... of the last data change
  std::int32_t version = 0;
  std::int32_t cversion = 0;         // changes to its children
  std::int32_t aversion = 0;         // changes to its ACL
  std::int64_t ephemeral_owner = 0;  // the session of an ephemeral, else 0
  std::int32_t data_length = 0;
  std::int32_t num_children = 0;
  std::int64_t pzxid = 0;  // zxid of the last change to its children
  bool operator==(const Stat&) const = default;
};
template <typename V>
void Fields(V& v, Stat& r) {
  v.Long("czxid", r.czxid);
  v.Long("mzxid", r.mzxid);
  v.Long("ctime", r.ctime);
  v.Long("mtime", r.mtime);
  v.Int("version", r.version);
  v.Int("cversion", r.cversion);
  v.Int("aversion", r.aversion);
  v.Long("ephemeralOwner", r.ephemeral_owner);
  v.Int("dataLength", r.data_length);
  v.Int("numChildren", r.num_children);
  v.Long("pzxid", r.pzxid);
}

// --- Sessions -------------------------------------------------------------

// The first frame of a connection. readOnly is absent from old clients.
struct ConnectRequest {
  std::int32_t protocol_version = 0;
  std::int64_t last_zxid_seen = 0;
  std::int32_t timeout_ms = 0;
  std::int64_t session_id = 0;  // 0: a new session
  std::string password;         // 16 bytes for an existing session
  std::optional<bool> read_only;
  bool operator==(const ConnectRequest&) const = default;
};
template <typename V>
void Fields(V& v, ConnectRequest& r) {
  v.Int("protocolVersion", r.protocol_version);
  v.Long("lastZxidSeen", r.last_zxid_seen);
  v.Int("timeOut", r.timeout_ms);
  v.Long("sessionId", r.session_id);
  v.Buffer("passwd", r.password);
  v.OptionalBool("readOnly", r.read_only);
}

struct ConnectResponse {
  std::int32_t protocol_version = 0;
  std::int32_t timeout_ms = 0;  // negotiated; 0: the session is gone
  std::int64_t session_id = 0;
  std::string password;
  std::optional<bool> read_only;
  bool operator==(const ConnectResponse&) const = default;
};
template <typename V>
void Fields(V& v, ConnectResponse& r) {
  v.Int("protocolVersion", r.protocol_version);
  v.Int("timeOut", r.timeout_ms);
  v.Long("sessionId", r.session_id);
  v.Buffer("passwd", r.password);
  v.OptionalBool("readOnly", r.read_only);
}

struct RequestHeader {
  std::int32_t xid = 0;
  std::int32_t type = 0;  // OpCode
  bool operator==(const RequestHeader&) const = default;
};
template <typename V>
void Fields(V& v, RequestHeader& r) {
  v.Int("xid", r.xid);
  v.Int("type", r.type);
}

struct ReplyHeader {
  std::int32_t xid = 0;
  std::int64_t zxid = 0;
  std::int32_t err = 0;  // ErrorCode
  bool operator==(const ReplyHeader&) const = default;
};
template <typename V>
void Fields(V& v, ReplyHeader& r) {
  v.Int("xid", r.xid);
  v.Long("zxid", r.zxid);
  v.Int("err", r.err);
}

struct WatcherEvent {
  std::int32_t type = 0;   // EventType
  std::int32_t state = 0;  // KeeperState
  std::string path;
  bool operator==(const WatcherEvent&) const = default;
};
template <typename V>
void Fields(V& v, WatcherEvent& r) {
  v.Int("type", r.type);
  v.Int("state", r.state);
  v.String("path", r.path);
}

struct AuthPacket {
  std::int32_t type = 0;  // always 0
  std::string scheme;
  std::string auth;
  bool operator==(const AuthPacket&) const = default;
};
template <typename V>
void Fields(V& v, AuthPacket& r) {
  v.Int("type", r.type);
  v.String("scheme", r.scheme);
  v.Buffer("auth", r.auth);
}

// SetWatches (101) and SetWatches2 (105, with the persistent lists).
struct SetWatches {
  std::int64_t relative_zxid = 0;
  std::vector<std::string> data_watches;
  std::vector<std::string> exist_watches;
  std::vector<std::string> child_watches;
  std::vector<std::string> persistent_watches;            // SetWatches2 only
  std::vector<std::string> persistent_recursive_watches;  // SetWatches2 only
  bool operator==(const SetWatches&) const = default;
};
template <typename V>
void Fields(V& v, SetWatches& r) {
  v.Long("relativeZxid", r.relative_zxid);
  v.Strings("dataWatches", r.data_watches);
  v.Strings("existWatches", r.exist_watches);
  v.Strings("childWatches", r.child_watches);
}
struct SetWatches2 : SetWatches {};
template <typename V>
void Fields(V& v, SetWatches2& r) {
  Fields(v, static_cast<SetWatches&>(r));
  v.Strings("persistentWatches", r.persistent_watches);
  v.Strings("persistentRecursiveWatches", r.persistent_recursive_watches);
}

// --- Requests ---------------------------------------------------------------

// create (1), create2 (15), createContainer (19); createTTL (21) adds ttl.
struct CreateRequest {
  std::string path;
  std::string data;
  std::vector<Acl> acl;
  std::int32_t flags = 0;    // CreateMode
  std::int64_t ttl_ms = -1;  // createTTL's; -1 for the others, as ZooKeeper passes
  bool operator==(const CreateRequest&) const = default;
};
template <typename V>
void Fields(V& v, CreateRequest& r) {
  v.String("path", r.path);
  v.Buffer("data", r.data);
  v.Records("acl", r.acl);
  v.Int("flags", r.flags);
}
struct CreateTtlRequest : CreateRequest {};
template <typename V>
void Fields(V& v, CreateTtlRequest& r) {
  Fields(v, static_cast<CreateRequest&>(r));
  v.Long("ttl", r.ttl_ms);
}

// delete (2), check (13): a path and the version it must have (-1: any).
struct PathVersionRequest {
  std::string path;
  std::int32_t version = -1;
  bool operator==(const PathVersionRequest&) const = default;
};
template <typename V>
void Fields(V& v, PathVersionRequest& r) {
  v.String("path", r.path);
  v.Int("version", r.version);
}

// exists (3), getData (4), getChildren (8), getChildren2 (12).
struct PathWatchRequest {
  std::string path;
  bool watch = false;
  bool operator==(const PathWatchRequest&) const = default;
};
template <typename V>
void Fields(V& v, PathWatchRequest& r) {
  v.String("path", r.path);
  v.Bool("watch", r.watch);
}

// sync (9), getACL (6), getEphemerals (103), getAllChildrenNumber (104);
// and the answers that are one path (create's, sync's).
struct PathRecord {
  std::string path;
  bool operator==(const PathRecord&) const = default;
};
template <typename V>
void Fields(V& v, PathRecord& r) {
  v.String("path", r.path);
}

struct SetDataRequest {
  std::string path;
  std::string data;
  std::int32_t version = -1;
  bool operator==(const SetDataRequest&) const = default;
};
template <typename V>
void Fields(V& v, SetDataRequest& r) {
  v.String("path", r.path);
  v.Buffer("data", r.data);
  v.Int("version", r.version);
}

struct SetAclRequest {
  std::string path;
  std::vector<Acl> acl;
  std::int32_t version = -1;
  bool operator==(const SetAclRequest&) const = default;
};
template <typename V>
void Fields(V& v, SetAclRequest& r) {
  v.String("path", r.path);
  v.Records("acl", r.acl);
  v.Int("version", r.version);
}

// checkWatches (17), removeWatches (18): type is a WatcherType; addWatch
// (106): mode is an AddWatchMode. One layout.
struct PathModeRequest {
  std::string path;
  std::int32_t mode = 0;
  bool operator==(const PathModeRequest&) const = default;
};
template <typename V>
void Fields(V& v, PathModeRequest& r) {
  v.String("path", r.path);
  v.Int("mode", r.mode);
}

struct ReconfigRequest {
  std::string joining_servers;
  std::string leaving_servers;
  std::string new_members;
  std::int64_t current_config_id = 0;
  bool operator==(const ReconfigRequest&) const = default;
};
template <typename V>
void Fields(V& v, ReconfigRequest& r) {
  v.String("joiningServers", r.joining_servers);
  v.String("leavingServers", r.leaving_servers);
  v.String("newMembers", r.new_members);
  v.Long("curConfigId", r.current_config_id);
}

// multi (14) and multiRead (22): before each op and after the last one.
struct MultiHeader {
  std::int32_t type = -1;  // the op's OpCode; -1 after the last
  bool done = true;
  std::int32_t err = -1;
  bool operator==(const MultiHeader&) const = default;
};
template <typename V>
void Fields(V& v, MultiHeader& r) {
  v.Int("type", r.type);
  v.Bool("done", r.done);
  v.Int("err", r.err);
}

// --- Answers ----------------------------------------------------------------

struct StatRecord {  // exists, setData, setACL
  Stat stat;
  bool operator==(const StatRecord&) const = default;
};
template <typename V>
void Fields(V& v, StatRecord& r) {
  v.Record("stat", r.stat);
}

struct Create2Response {
  std::string path;
  Stat stat;
  bool operator==(const Create2Response&) const = default;
};
template <typename V>
void Fields(V& v, Create2Response& r) {
  v.String("path", r.path);
  v.Record("stat", r.stat);
}

struct GetDataResponse {
  std::string data;
  Stat stat;
  bool operator==(const GetDataResponse&) const = default;
};
template <typename V>
void Fields(V& v, GetDataResponse& r) {
  v.Buffer("data", r.data);
  v.Record("stat", r.stat);
}

// getChildren's answer, getEphemerals' (the same layout: a list of paths).
struct ChildrenResponse {
  std::vector<std::string> children;
  bool operator==(const ChildrenResponse&) const = default;
};
template <typename V>
void Fields(V& v, ChildrenResponse& r) {
  v.Strings("children", r.children);
}

struct Children2Response {
  std::vector<std::string> children;
  Stat stat;
  bool operator==(const Children2Response&) const = default;
};
template <typename V>
void Fields(V& v, Children2Response& r) {
  v.Strings("children", r.children);
  v.Record("stat", r.stat);
}

struct GetAclResponse {
  std::vector<Acl> acl;
  Stat stat;
  bool operator==(const GetAclResponse&) const = default;
};
template <typename V>
void Fields(V& v, GetAclResponse& r) {
  v.Records("acl", r.acl);
  v.Record("stat", r.stat);
}

struct CountResponse {  // getAllChildrenNumber
  std::int32_t total = 0;
  bool operator==(const CountResponse&) const = default;
};
template <typename V>
void Fields(V& v, CountResponse& r) {
  v.Int("totalNumber", r.total);
}

struct ErrorResponse {  // a multi's failed (or not run) op
  std::int32_t err = 0;
  bool operator==(const ErrorResponse&) const = default;
};
template <typename V>
void Fields(V& v, ErrorResponse& r) {
  v.Int("err", r.err);
}

struct ClientInfo {
  std::string auth_scheme;
  std::string user;
  bool operator==(const ClientInfo&) const = default;
};
template <typename V>
void Fields(V& v, ClientInfo& r) {
  v.String("authScheme", r.auth_scheme);
  v.String("user", r.user);
}

struct WhoAmIResponse {
  std::vector<ClientInfo> client_info;
  bool operator==(const WhoAmIResponse&) const = default;
};
template <typename V>
void Fields(V& v, WhoAmIResponse& r) {
  v.Records("clientInfo", r.client_info);
}

}  // namespace tenure::zk
