#include "zk/writes.h"

#include <variant>
#include <vector>

#include "acl/authorizer.h"
#include "common/limits.h"
#include "state/apply_result.h"
#include "state/numbered_session.h"
#include "state/zk_path.h"
#include "zk/reads.h"

namespace tenure::zk {
namespace {

using Refusal = std::optional<ErrorCode>;

// CreateMode.fromFlag, then the TTL rules of validateCreateRequest and
// validateTTL with extended types off (ZooKeeper's default): a TTL mode is
// UNIMPLEMENTED; a TTL with another mode BADARGUMENTS. Then what
// PrepRequestProcessor makes of it: createContainer makes a container
// whatever the flags (they add only a sequence suffix), and only create and
// create2 make an ephemeral (a container flag there makes a persistent node).
Refusal CreateMode(const CreateRequest& create, OpCode type, state::ZkOp* op) {
  const bool ttl_op = type == OpCode::kCreateTtl;
  if (create.flags < 0 || create.flags > 6) return ErrorCode::kBadArguments;
  const auto mode = static_cast<zk::CreateMode>(create.flags);
  if (mode == CreateMode::kPersistentWithTtl || mode == CreateMode::kPersistentSequentialWithTtl) {
    return ErrorCode::kUnimplemented;
  }
  if (ttl_op && create.ttl_ms >= 0) return ErrorCode::kBadArguments;
  op->container = type == OpCode::kCreateContainer;
  op->ephemeral = !op->container &&
                  (mode == CreateMode::kEphemeral || mode == CreateMode::kEphemeralSequential);
  op->sequential =
      mode == CreateMode::kPersistentSequential || mode == CreateMode::kEphemeralSequential;
  return std::nullopt;
}

// An address or CIDR block of the "ip" scheme, as far as its characters go.
bool LooksLikeIp(std::string_view id) {
  if (id.empty()) return false;
  for (char c : id) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                    c == '.' || c == ':' || c == '/';
    if (!ok) return false;
  }
  return true;
}

// PrepRequestProcessor.fixupACL's refusals: an empty list, a scheme with
// no provider (the default ones: world, auth, digest, ip), an id its
// provider finds invalid, "auth" on a connection with no identity.
bool AclShapeValid(const std::vector<Acl>& acls, bool authenticated) {
  if (acls.empty()) return false;
  for (const Acl& acl : acls) {
    const std::string& scheme = acl.id.scheme;
    if (scheme == "world") {
      if (acl.id.id != "anyone") return false;
    } else if (scheme == "auth") {
      if (!authenticated) return false;
    } else if (scheme == "digest") {
      const std::size_t colon = acl.id.id.find(':');
      if (colon == std::string::npos || acl.id.id.find(':', colon + 1) != std::string::npos) {
        return false;
      }
    } else if (scheme == "ip") {
      if (!LooksLikeIp(acl.id.id)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// What tenure bounds that ZooKeeper does not: a key's bytes and a value's
// (docs/limits.md), so an entry never fails its field limits.
Refusal SizeLimits(const state::ZkOp& op) {
  if (op.path.size() > limits::kKvKeyBytesMax || op.data.size() > limits::kKvValueBytesMax) {
    return ErrorCode::kBadArguments;
  }
  return std::nullopt;
}

Refusal PlanCreate(const CreateRequest& create, OpCode type, bool authenticated, state::ZkOp* op) {
  op->kind = state::ZkOp::Kind::kCreate;
  op->path = create.path;
  op->data = create.data;
  if (Refusal refused = CreateMode(create, type, op)) return refused;
  // validatePathForCreate: a path with no '/' or with a NUL, before the ACL.
  if (create.path.find('/') == std::string::npos || create.path.find('\0') != std::string::npos) {
    return ErrorCode::kBadArguments;
  }
  if (!AclShapeValid(create.acl, authenticated)) return ErrorCode::kInvalidAcl;
  return SizeLimits(*op);
}

ReplyHeader HeaderOf(std::int32_t xid, std::int64_t zxid, ErrorCode code) {
  return ReplyHeader{xid, zxid, static_cast<std::int32_t>(code)};
}

// One applied op's result inside a multi, typed as ZooKeeper types it: a
// create2 answers as create (its path only), createContainer and createTTL
// as create2.
MultiResult MultiResultOf(std::int32_t type, const state::ZkOpResult& result) {
  MultiResult out;
  if (result.code != state::ZkCode::kOk) {
    out.type = static_cast<std::int32_t>(OpCode::kError);
    out.err = static_cast<std::int32_t>(result.code);
    return out;
  }
  switch (static_cast<OpCode>(type)) {
    case OpCode::kCreate:
    case OpCode::kCreate2:
      out.type = static_cast<std::int32_t>(OpCode::kCreate);
      out.result = PathRecord{result.path};
      break;
    case OpCode::kCreateContainer:
    case OpCode::kCreateTtl:
      out.type = static_cast<std::int32_t>(OpCode::kCreate2);
      out.result = Create2Response{result.path, ToStat(result.stat)};
      break;
    case OpCode::kSetData:
      out.type = type;
      out.result = StatRecord{ToStat(result.stat)};
      break;
    default:  // delete, check: no body
      out.type = type;
      break;
  }
  return out;
}

}  // namespace

bool IsWrite(std::int32_t type) {
  switch (static_cast<OpCode>(type)) {
    case OpCode::kCreate:
    case OpCode::kCreate2:
    case OpCode::kCreateContainer:
    case OpCode::kCreateTtl:
    case OpCode::kDelete:
    case OpCode::kSetData:
    case OpCode::kCheck:
    case OpCode::kSetAcl:
    case OpCode::kMulti:
      return true;
    default:
      return false;
  }
}

namespace {

Refusal PlanBody(std::int32_t type, const RequestBody& body, bool authenticated, state::ZkOp* op) {
  switch (static_cast<OpCode>(type)) {
    case OpCode::kCreate:
    case OpCode::kCreate2:
    case OpCode::kCreateContainer:
      return PlanCreate(std::get<CreateRequest>(body), static_cast<OpCode>(type), authenticated,
                        op);
    case OpCode::kCreateTtl:
      return PlanCreate(std::get<CreateTtlRequest>(body), OpCode::kCreateTtl, authenticated, op);
    case OpCode::kDelete:
    case OpCode::kCheck: {
      const auto& request = std::get<PathVersionRequest>(body);
      op->kind = static_cast<OpCode>(type) == OpCode::kDelete ? state::ZkOp::Kind::kDelete
                                                              : state::ZkOp::Kind::kCheck;
      op->path = request.path;
      op->version = request.version;
      return SizeLimits(*op);
    }
    case OpCode::kSetData: {
      const auto& request = std::get<SetDataRequest>(body);
      op->kind = state::ZkOp::Kind::kSetData;
      op->path = request.path;
      op->data = request.data;
      op->version = request.version;
      return SizeLimits(*op);
    }
    case OpCode::kSetAcl: {
      // PrepRequestProcessor's order: the path, then the list's shape.
      const auto& request = std::get<SetAclRequest>(body);
      op->kind = state::ZkOp::Kind::kSetAcl;
      op->path = request.path;
      op->version = request.version;
      if (!state::ZkPathError(request.path).empty()) return ErrorCode::kBadArguments;
      if (!AclShapeValid(request.acl, authenticated)) return ErrorCode::kInvalidAcl;
      return SizeLimits(*op);
    }
    default:
      return ErrorCode::kUnimplemented;
  }
}

// A multi's op body as a request body of its own kind.
RequestBody AsRequestBody(const MultiOp& op) {
  return std::visit([](const auto& body) -> RequestBody { return body; }, op.op);
}

}  // namespace

PlannedWrite PlanWrite(const DecodedRequest& request, std::int64_t session, bool authenticated) {
  PlannedWrite plan;
  if (session != 0) plan.write.session = state::NumberedSessionId(session);
  if (static_cast<OpCode>(request.header.type) != OpCode::kMulti) {
    state::ZkOp op;
    if (Refusal refused = PlanBody(request.header.type, request.body, authenticated, &op)) {
      plan.refused = {0, *refused};
      return plan;
    }
    plan.write.ops.push_back(std::move(op));
    return plan;
  }
  const auto& multi = std::get<MultiRequest>(request.body);
  plan.write.ops.reserve(multi.ops.size());
  for (std::size_t i = 0; i < multi.ops.size(); ++i) {
    state::ZkOp op;
    if (Refusal refused =
            PlanBody(multi.ops[i].type, AsRequestBody(multi.ops[i]), authenticated, &op)) {
      plan.refused = {i, *refused};
      return plan;
    }
    plan.write.ops.push_back(std::move(op));
  }
  return plan;
}

bool MayWrite(const acl::Authorizer& can, const state::ZkWrite& write) {
  for (const state::ZkOp& op : write.ops) {
    const bool allowed = op.kind == state::ZkOp::Kind::kCheck ? can.KeyRead(op.path).allowed()
                                                              : can.KeyWrite(op.path).allowed();
    if (!allowed) return false;
  }
  return true;
}

std::string AnswerCode(std::int32_t xid, std::int64_t zxid, ErrorCode code) {
  return EncodeReply(HeaderOf(xid, zxid, code));
}

std::string AnswerRefused(const DecodedRequest& request, const PlannedWrite& plan,
                          std::int64_t zxid) {
  const auto [at, code] = *plan.refused;
  if (static_cast<OpCode>(request.header.type) != OpCode::kMulti) {
    return AnswerCode(request.header.xid, zxid, code);
  }
  const auto& multi = std::get<MultiRequest>(request.body);
  std::vector<MultiResult> results(multi.ops.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    results[i].type = static_cast<std::int32_t>(OpCode::kError);
    results[i].err = static_cast<std::int32_t>(i < at    ? ErrorCode::kOk
                                               : i == at ? code
                                                         : ErrorCode::kRuntimeInconsistency);
  }
  return EncodeMultiReply(HeaderOf(request.header.xid, zxid, ErrorCode::kOk), results);
}

std::string AnswerApplied(const DecodedRequest& request, const state::ApplyResult& result) {
  const auto zxid = static_cast<std::int64_t>(result.index.value());
  const std::int32_t xid = request.header.xid;
  const auto type = static_cast<OpCode>(request.header.type);
  if (result.zk_error != state::ZkCode::kOk) {
    return AnswerCode(xid, zxid, static_cast<ErrorCode>(result.zk_error));
  }
  if (type == OpCode::kMulti) {
    const auto& multi = std::get<MultiRequest>(request.body);
    std::vector<MultiResult> results;
    results.reserve(result.zk.size());
    for (std::size_t i = 0; i < result.zk.size() && i < multi.ops.size(); ++i) {
      if (!result.ok) {
        // Failed: every op answers an error result, 0 for those before the
        // one that failed (kazoo's RolledBackError).
        MultiResult rolled_back;
        rolled_back.type = static_cast<std::int32_t>(OpCode::kError);
        rolled_back.err = static_cast<std::int32_t>(result.zk[i].code);
        results.push_back(rolled_back);
        continue;
      }
      results.push_back(MultiResultOf(multi.ops[i].type, result.zk[i]));
    }
    return EncodeMultiReply(HeaderOf(xid, zxid, ErrorCode::kOk), results);
  }
  if (result.zk.empty()) return AnswerCode(xid, zxid, ErrorCode::kSystemError);
  const state::ZkOpResult& op = result.zk.front();
  if (op.code != state::ZkCode::kOk) {
    return AnswerCode(xid, zxid, static_cast<ErrorCode>(op.code));
  }
  const ReplyHeader ok = HeaderOf(xid, zxid, ErrorCode::kOk);
  switch (type) {
    case OpCode::kCreate:
      return EncodeReply(ok, PathRecord{op.path});
    case OpCode::kCreate2:
    case OpCode::kCreateContainer:
    case OpCode::kCreateTtl:
      return EncodeReply(ok, Create2Response{op.path, ToStat(op.stat)});
    case OpCode::kSetData:
    case OpCode::kSetAcl:
      return EncodeReply(ok, StatRecord{ToStat(op.stat)});
    default:  // delete; check alone (ZooKeeper's server fails to answer it)
      return EncodeReply(ok);
  }
}

}  // namespace tenure::zk
