// ZooKeeper's writes (create, create2, createContainer, createTTL, delete,
// setData, check, setACL, multi) as one ZkWrite entry (decision 0056 section 4),
// and their answers from what the entry applied to. What ZooKeeper checks
// before its tree is looked at (a create's mode, a TTL, the path's shape,
// the ACL list's shape) is checked here, in ZooKeeper's order, so the
// entry is not proposed at all; the rest the Store checks as it applies.
// Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "state/zk_tree.h"
#include "zk/protocol.h"
#include "zk/request.h"

namespace tenure::acl {
class Authorizer;
}
namespace tenure::state {
struct ApplyResult;
}

namespace tenure::zk {

// Whether `type` is a write: it needs a log entry.
bool IsWrite(std::int32_t type);

// A write request as the entry to propose, or the op refused before it.
struct PlannedWrite {
  state::ZkWrite write;
  // Set: the op (its index; 0 for a single op) refused before proposing,
  // and ZooKeeper's code. A multi with one is answered without proposing:
  // 0 for the ops before it, the code, RUNTIMEINCONSISTENCY after (an op
  // before it that would have failed in the tree is not looked at: a
  // difference docs/zookeeper-compat.md lists).
  std::optional<std::pair<std::size_t, ErrorCode>> refused;
};

// `session`: the connection's session (the ephemerals' owner; 0: none).
// `authenticated`: the connection presented an identity with auth, which
// an ACL of scheme "auth" needs (ZooKeeper answers INVALIDACL without).
// REQUIRES: IsWrite(request.header.type) and request.error == kOk.
PlannedWrite PlanWrite(const DecodedRequest& request, std::int64_t session, bool authenticated);

// Whether tenure's ACLs let `can` make every op of `write`: key:write on a
// created, deleted or changed path (setACL's too: ZooKeeper asks ADMIN), key:read on a checked one
// (decision 0056 section 7). Else the request answers NOAUTH whole.
bool MayWrite(const acl::Authorizer& can, const state::ZkWrite& write);

// The reply frame for a request answered whole with `code` (NOAUTH, a
// refused single op, SESSIONEXPIRED): the header alone.
std::string AnswerCode(std::int32_t xid, std::int64_t zxid, ErrorCode code);

// The reply frame for a plan refused before proposing.
std::string AnswerRefused(const DecodedRequest& request, const PlannedWrite& plan,
                          std::int64_t zxid);

// The reply frame for the entry's outcome (its index is the reply's zxid):
// create's path, create2's and createContainer's path and Stat, setData's
// and setACL's Stat, a header alone for delete and check, each op's result for a multi
// (whose header's err is 0 whatever its ops answered, as ZooKeeper's).
std::string AnswerApplied(const DecodedRequest& request, const state::ApplyResult& result);

}  // namespace tenure::zk
