// ZooKeeper's tree on the Store's keys (decision 0056 section 4): the node
// record that carries the Stat fields keys do not, the Stat as ZooKeeper
// answers it, and the write command its create, delete, setData, check and
// multi become. A znode at path P is the key P. Pure data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/types.h"
#include "state/types.h"

namespace tenure::state {

// What ZooKeeper keeps of a node that a key does not: kept for every key a
// ZooKeeper create made or created under, and for "/" (never a key), and
// kept current by every API's writes to the key and its children.
struct ZkNode {
  UnixMs ctime;  // the creating entry's wall clock; 0 when not known
  UnixMs mtime;  // the last change of the key's value; 0 when not known
  // Children ever created here: ZooKeeper's stored cversion, the next
  // sequence suffix. Wraps past 2^31 - 1 as ZooKeeper's int does.
  std::int32_t children_created = 0;
  std::int32_t children = 0;  // direct children now (keys that are valid paths)
  LogIndex pzxid;             // the last entry that created or deleted a child
  std::int32_t aversion = 0;  // setACL's count (decision 0056 section 7)
  bool container = false;     // a container: swept once empty
  bool operator==(const ZkNode&) const = default;
};

// ZooKeeper's Stat, all eleven fields, in zookeeper.jute's order.
struct ZkStat {
  std::int64_t czxid = 0;
  std::int64_t mzxid = 0;
  std::int64_t ctime = 0;
  std::int64_t mtime = 0;
  std::int32_t version = 0;
  std::int32_t cversion = 0;
  std::int32_t aversion = 0;
  std::int64_t ephemeral_owner = 0;
  std::int32_t data_length = 0;
  std::int32_t num_children = 0;
  std::int64_t pzxid = 0;
  bool operator==(const ZkStat&) const = default;
};

// The outcomes a ZooKeeper write can apply to, with ZooKeeper's numbers
// (KeeperException.Code; zk/protocol.h holds the full list and checks that
// these agree).
enum class ZkCode : std::int32_t {
  kOk = 0,
  kRuntimeInconsistency = -2,  // a multi's op after the one that failed
  kBadArguments = -8,
  kNoNode = -101,
  kBadVersion = -103,
  kNoChildrenForEphemerals = -108,
  kNodeExists = -110,
  kNotEmpty = -111,
  kSessionExpired = -112,
  kEphemeralOnLocalSession = -120,
};

// One write of a ZkWrite.
struct ZkOp {
  // kSetAcl: setACL, which ZooKeeper's multi does not take. The ACL list
  // is checked for shape before proposing and not stored: the node's
  // aversion counts the change (decision 0056 section 7).
  enum class Kind : std::uint8_t {
    kCreate = 0,
    kDelete = 1,
    kSetData = 2,
    kCheck = 3,
    kSetAcl = 4
  };
  Kind kind = Kind::kCreate;
  std::string path;
  std::string data;           // create, setData
  std::int32_t version = -1;  // delete, setData, check, setACL (its aversion): -1 matches any
  // create's mode (CreateMode without TTLs, which are not served).
  bool ephemeral = false;
  bool sequential = false;
  bool container = false;
  bool operator==(const ZkOp&) const = default;
};

// The most ops one ZkWrite carries (a multi's bound: zk::kMultiOpsMax).
inline constexpr std::size_t kZkWriteOpsMax = 1000;

// A ZooKeeper write or multi: one entry, all or nothing (decision 0056).
struct ZkWrite {
  // The writing client's session: a numbered session (decision 0048), the
  // owner of the ephemerals it creates. Empty: none (no ephemeral allowed).
  SessionId session;
  std::vector<ZkOp> ops;
  bool operator==(const ZkWrite&) const = default;
};

// The secret every server derives ZooKeeper session passwords from
// (zk/session_auth.h, decision 0056): drawn by the leader before its first
// ZooKeeper session, set once, kept in snapshots, shown by no API.
inline constexpr std::size_t kZkSecretBytes = 32;
struct ZkSecret {
  std::string secret;  // kZkSecretBytes random bytes
  bool operator==(const ZkSecret&) const = default;
};

// What one op of a ZkWrite did: ZooKeeper's code, the created path (with
// its sequence suffix) and the node's Stat after the op (create, setData).
struct ZkOpResult {
  ZkCode code = ZkCode::kOk;
  std::string path;
  ZkStat stat;
  bool operator==(const ZkOpResult&) const = default;
};

}  // namespace tenure::state
