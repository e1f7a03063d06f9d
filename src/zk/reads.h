// ZooKeeper's reads answered from one server's Store (decision 0056
// sections 4 and 8), as ZooKeeper's FinalRequestProcessor answers them:
// exists, getData, getChildren, getChildren2, getACL, getEphemerals,
// getAllChildrenNumber and multiRead. The layer's own nodes ("/zookeeper",
// "/zookeeper/quota", "/zookeeper/config") are answered here with
// ZooKeeper's fresh Stats, and "/" counts "/zookeeper" among its children.
// What a reader may see is tenure's ACLs' (decision 0056 section 7): a
// path needs key:read on it, a list of children key:read on every key
// under it (all or nothing, as etcd's ranges), else NOAUTH. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zk/protocol.h"
#include "zk/records.h"
#include "zk/request.h"

namespace tenure::acl {
class Authorizer;
}
namespace tenure::state {
class Store;
struct ZkStat;
}  // namespace tenure::state

namespace tenure::zk {

// A Store's Stat as the wire's record.
Stat ToStat(const state::ZkStat& stat);

// The Stat a client sees for `path`; nullopt if it is not a znode.
std::optional<Stat> StatOf(const state::Store& store, std::string_view path);

// The names of `path`'s children a client sees, in byte order; nullopt if
// `path` is not a znode.
std::optional<std::vector<std::string>> ChildrenOf(const state::Store& store,
                                                   std::string_view path);

// Who reads: tenure's rights, the session (for getEphemerals) and what
// whoAmI reports: the client's address ("ip"), then what its auth packets
// added. Borrowed from the connection for one read.
struct Reader {
  const acl::Authorizer* can = nullptr;  // nullptr: anyone may read anything
  std::int64_t session = 0;
  std::string_view peer;
  const std::vector<ClientInfo>* authenticated = nullptr;
};

// Whether `reader` may read `path` (exists, getData, a data watch) or list
// its children (getChildren, a child watch), as the table above says.
bool MayReadPath(const Reader& reader, std::string_view path);
bool MayListPath(const Reader& reader, std::string_view path);

// Whether `type` is an op this module answers (reads that need no log
// entry). Ping, sync, auth and the watch ops are the connection's.
bool IsRead(std::int32_t type);

// The reply frame (without its length) for a decoded read: the header with
// `request`'s xid and the Store's applied index as its zxid, then the
// answer, or the header alone with ZooKeeper's code (NONODE, NOAUTH,
// BADARGUMENTS for a path with a NUL byte, as ZooKeeper's server checks).
std::string AnswerRead(const state::Store& store, const Reader& reader,
                       const DecodedRequest& request);

}  // namespace tenure::zk
