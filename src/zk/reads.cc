#include "zk/reads.h"

#include <algorithm>
#include <set>
#include <variant>

#include "acl/authorizer.h"
#include "state/numbered_session.h"
#include "state/store.h"
#include "state/zk_path.h"

namespace tenure::zk {
namespace {

constexpr std::string_view kZookeeper = "/zookeeper";
constexpr std::string_view kQuota = "/zookeeper/quota";
constexpr std::string_view kConfig = "/zookeeper/config";

// "/zookeeper" or a path under it: the layer's, never the Store's (a key
// another API wrote there is not seen through ZooKeeper).
bool InZookeeperTree(std::string_view path) {
  return path == kZookeeper || path.starts_with("/zookeeper/");
}

std::int64_t Zxid(const state::Store& store) {
  return static_cast<std::int64_t>(store.applied_index().value());
}

bool MayRead(const Reader& reader, std::string_view path) {
  if (reader.can == nullptr || path == "/" || InZookeeperTree(path)) return true;
  return reader.can->KeyRead(path).allowed();
}

// Listing children reads every key under `path` (all or nothing).
bool MayList(const Reader& reader, std::string_view path) {
  if (reader.can == nullptr || InZookeeperTree(path)) return true;
  const std::string prefix = path == "/" ? std::string("/") : std::string(path) + "/";
  return reader.can->KeyReadPrefix(prefix).allowed();
}

std::string Header(const state::Store& store, std::int32_t xid, ErrorCode code) {
  return EncodeReply(ReplyHeader{xid, Zxid(store), static_cast<std::int32_t>(code)});
}

template <typename Body>
std::string Answer(const state::Store& store, std::int32_t xid, const Body& body) {
  return EncodeReply(ReplyHeader{xid, Zxid(store), 0}, body);
}

// getData's answer for `path`, or the code that stands instead.
ErrorCode DataOf(const state::Store& store, const Reader& reader, std::string_view path,
                 GetDataResponse* out) {
  if (!MayRead(reader, path)) return ErrorCode::kNoAuth;
  const std::optional<Stat> stat = StatOf(store, path);
  if (!stat) return ErrorCode::kNoNode;
  out->stat = *stat;
  out->data.clear();
  if (path != "/" && !InZookeeperTree(path)) {
    if (const state::KvEntry* entry = store.FindKv(path); entry != nullptr)
      out->data = entry->value;
  }
  return ErrorCode::kOk;
}

ErrorCode ChildrenAnswer(const state::Store& store, const Reader& reader, std::string_view path,
                         std::vector<std::string>* names) {
  if (!MayList(reader, path)) return ErrorCode::kNoAuth;
  std::optional<std::vector<std::string>> children = ChildrenOf(store, path);
  if (!children) return ErrorCode::kNoNode;
  *names = std::move(*children);
  return ErrorCode::kOk;
}

// Every znode below `path` (getAllChildrenNumber).
std::int32_t Descendants(const state::Store& store, std::string_view path) {
  if (path == kZookeeper) return 2;
  if (InZookeeperTree(path)) return 0;
  std::int64_t count = path == "/" ? 3 : 0;  // "/zookeeper" and its two
  const std::string prefix = path == "/" ? std::string("/") : std::string(path) + "/";
  for (const state::KvEntry* entry : store.ListKv(prefix)) {
    if (!InZookeeperTree(entry->key) && store.IsZnode(entry->key)) ++count;
  }
  return static_cast<std::int32_t>(std::min<std::int64_t>(count, INT32_MAX));
}

bool HasNul(std::string_view path) { return path.find('\0') != std::string_view::npos; }

std::string AnswerMultiRead(const state::Store& store, const Reader& reader, std::int32_t xid,
                            const MultiRequest& multi) {
  std::vector<MultiResult> results;
  results.reserve(multi.ops.size());
  for (const MultiOp& op : multi.ops) {
    const auto& path = std::get<PathWatchRequest>(op.op).path;
    MultiResult result;
    ErrorCode code;
    if (op.type == static_cast<std::int32_t>(OpCode::kGetData)) {
      GetDataResponse data;
      code = DataOf(store, reader, path, &data);
      result.result = std::move(data);
    } else {
      ChildrenResponse children;
      code = ChildrenAnswer(store, reader, path, &children.children);
      result.result = std::move(children);
    }
    result.type = op.type;
    if (code != ErrorCode::kOk) {
      result.type = static_cast<std::int32_t>(OpCode::kError);
      result.err = static_cast<std::int32_t>(code);
      result.result = NoBody{};
    }
    results.push_back(std::move(result));
  }
  return EncodeMultiReply(ReplyHeader{xid, Zxid(store), 0}, results);
}

}  // namespace

bool MayReadPath(const Reader& reader, std::string_view path) { return MayRead(reader, path); }
bool MayListPath(const Reader& reader, std::string_view path) { return MayList(reader, path); }

Stat ToStat(const state::ZkStat& s) {
  return Stat{s.czxid,    s.mzxid,           s.ctime,       s.mtime,        s.version, s.cversion,
              s.aversion, s.ephemeral_owner, s.data_length, s.num_children, s.pzxid};
}

std::optional<Stat> StatOf(const state::Store& store, std::string_view path) {
  if (path == kZookeeper) {
    Stat stat;
    stat.cversion = -2;
    stat.num_children = 2;
    return stat;
  }
  if (path == kQuota) return Stat{};
  if (path == kConfig) {
    Stat stat;
    stat.aversion = -1;
    return stat;
  }
  if (InZookeeperTree(path)) return std::nullopt;
  const std::optional<state::ZkStat> stored = store.ZkStatOf(path);
  if (!stored) return std::nullopt;
  Stat stat = ToStat(*stored);
  if (path == "/") {
    // "/zookeeper" is a child ZooKeeper never counts as created.
    const bool key_there = store.FindKv(kZookeeper) != nullptr;
    if (!key_there) {
      stat.num_children += 1;
      stat.cversion -= 1;
    }
  }
  return stat;
}

std::optional<std::vector<std::string>> ChildrenOf(const state::Store& store,
                                                   std::string_view path) {
  if (path == kZookeeper) return std::vector<std::string>{"config", "quota"};
  if (path == kQuota || path == kConfig) return std::vector<std::string>{};
  if (InZookeeperTree(path) || !store.IsZnode(path)) return std::nullopt;
  std::vector<std::string> names;
  for (std::string_view name : store.ZkChildren(path)) names.emplace_back(name);
  if (path == "/") {
    auto at = std::lower_bound(names.begin(), names.end(), "zookeeper");
    if (at == names.end() || *at != "zookeeper") names.insert(at, "zookeeper");
  }
  return names;
}

bool IsRead(std::int32_t type) {
  switch (static_cast<OpCode>(type)) {
    case OpCode::kExists:
    case OpCode::kGetData:
    case OpCode::kGetChildren:
    case OpCode::kGetChildren2:
    case OpCode::kGetAcl:
    case OpCode::kGetEphemerals:
    case OpCode::kGetAllChildrenNumber:
    case OpCode::kMultiRead:
    case OpCode::kWhoAmI:
      return true;
    default:
      return false;
  }
}

std::string AnswerRead(const state::Store& store, const Reader& reader,
                       const DecodedRequest& request) {
  const std::int32_t xid = request.header.xid;
  const auto type = static_cast<OpCode>(request.header.type);
  if (type == OpCode::kMultiRead) {
    return AnswerMultiRead(store, reader, xid, std::get<MultiRequest>(request.body));
  }
  if (type == OpCode::kWhoAmI) {
    WhoAmIResponse who;
    if (!reader.peer.empty()) who.client_info.push_back(ClientInfo{"ip", std::string(reader.peer)});
    if (reader.authenticated != nullptr) {
      who.client_info.insert(who.client_info.end(), reader.authenticated->begin(),
                             reader.authenticated->end());
    }
    return Answer(store, xid, who);
  }
  if (type == OpCode::kGetEphemerals) {
    const std::string& prefix = std::get<PathRecord>(request.body).path;
    ChildrenResponse mine;
    const state::SessionId id = state::NumberedSessionId(reader.session);
    if (const std::set<std::string>* held = store.HeldKeys(id); held != nullptr) {
      for (const std::string& key : *held) {
        if (key.starts_with(prefix) && store.IsZnode(key)) mine.children.push_back(key);
      }
    }
    return Answer(store, xid, mine);
  }
  const std::string& path = type == OpCode::kGetAcl || type == OpCode::kGetAllChildrenNumber
                                ? std::get<PathRecord>(request.body).path
                                : std::get<PathWatchRequest>(request.body).path;
  if (HasNul(path)) return Header(store, xid, ErrorCode::kBadArguments);
  switch (type) {
    case OpCode::kExists: {
      if (!MayRead(reader, path)) return Header(store, xid, ErrorCode::kNoAuth);
      const std::optional<Stat> stat = StatOf(store, path);
      if (!stat) return Header(store, xid, ErrorCode::kNoNode);
      return Answer(store, xid, StatRecord{*stat});
    }
    case OpCode::kGetData: {
      GetDataResponse data;
      const ErrorCode code = DataOf(store, reader, path, &data);
      return code == ErrorCode::kOk ? Answer(store, xid, data) : Header(store, xid, code);
    }
    case OpCode::kGetChildren: {
      ChildrenResponse children;
      const ErrorCode code = ChildrenAnswer(store, reader, path, &children.children);
      return code == ErrorCode::kOk ? Answer(store, xid, children) : Header(store, xid, code);
    }
    case OpCode::kGetChildren2: {
      Children2Response children;
      ErrorCode code = ChildrenAnswer(store, reader, path, &children.children);
      if (code == ErrorCode::kOk) children.stat = *StatOf(store, path);
      return code == ErrorCode::kOk ? Answer(store, xid, children) : Header(store, xid, code);
    }
    case OpCode::kGetAcl: {
      if (!MayRead(reader, path)) return Header(store, xid, ErrorCode::kNoAuth);
      const std::optional<Stat> stat = StatOf(store, path);
      if (!stat) return Header(store, xid, ErrorCode::kNoNode);
      // ACL records are not stored (decision 0056 section 7): every node is
      // open as far as ZooKeeper's ACLs go; tenure's decide.
      const std::int32_t perms = path == kConfig ? kPermRead : kPermAll;
      return Answer(store, xid, GetAclResponse{{Acl{perms, Id{"world", "anyone"}}}, *stat});
    }
    case OpCode::kGetAllChildrenNumber: {
      if (!MayList(reader, path)) return Header(store, xid, ErrorCode::kNoAuth);
      if (!StatOf(store, path)) return Header(store, xid, ErrorCode::kNoNode);
      return Answer(store, xid, CountResponse{Descendants(store, path)});
    }
    default:
      return Header(store, xid, ErrorCode::kUnimplemented);
  }
}

}  // namespace tenure::zk
