#include "zk/protocol.h"

#include <utility>

#include "state/zk_tree.h"

namespace tenure::zk {
namespace {

constexpr std::pair<OpCode, std::string_view> kOpNames[] = {
    {OpCode::kNotification, "notification"},
    {OpCode::kCreate, "create"},
    {OpCode::kDelete, "delete"},
    {OpCode::kExists, "exists"},
    {OpCode::kGetData, "getData"},
    {OpCode::kSetData, "setData"},
    {OpCode::kGetAcl, "getACL"},
    {OpCode::kSetAcl, "setACL"},
    {OpCode::kGetChildren, "getChildren"},
    {OpCode::kSync, "sync"},
    {OpCode::kPing, "ping"},
    {OpCode::kGetChildren2, "getChildren2"},
    {OpCode::kCheck, "check"},
    {OpCode::kMulti, "multi"},
    {OpCode::kCreate2, "create2"},
    {OpCode::kReconfig, "reconfig"},
    {OpCode::kCheckWatches, "checkWatches"},
    {OpCode::kRemoveWatches, "removeWatches"},
    {OpCode::kCreateContainer, "createContainer"},
    {OpCode::kDeleteContainer, "deleteContainer"},
    {OpCode::kCreateTtl, "createTTL"},
    {OpCode::kMultiRead, "multiRead"},
    {OpCode::kAuth, "auth"},
    {OpCode::kSetWatches, "setWatches"},
    {OpCode::kSasl, "sasl"},
    {OpCode::kGetEphemerals, "getEphemerals"},
    {OpCode::kGetAllChildrenNumber, "getAllChildrenNumber"},
    {OpCode::kSetWatches2, "setWatches2"},
    {OpCode::kAddWatch, "addWatch"},
    {OpCode::kWhoAmI, "whoAmI"},
    {OpCode::kCreateSession, "createSession"},
    {OpCode::kCloseSession, "closeSession"},
    {OpCode::kError, "error"},
};

constexpr std::pair<ErrorCode, std::string_view> kErrorNames[] = {
    {ErrorCode::kOk, "OK"},
    {ErrorCode::kSystemError, "SYSTEMERROR"},
    {ErrorCode::kRuntimeInconsistency, "RUNTIMEINCONSISTENCY"},
    {ErrorCode::kDataInconsistency, "DATAINCONSISTENCY"},
    {ErrorCode::kConnectionLoss, "CONNECTIONLOSS"},
    {ErrorCode::kMarshallingError, "MARSHALLINGERROR"},
    {ErrorCode::kUnimplemented, "UNIMPLEMENTED"},
    {ErrorCode::kOperationTimeout, "OPERATIONTIMEOUT"},
    {ErrorCode::kBadArguments, "BADARGUMENTS"},
    {ErrorCode::kUnknownSession, "UNKNOWNSESSION"},
    {ErrorCode::kNewConfigNoQuorum, "NEWCONFIGNOQUORUM"},
    {ErrorCode::kReconfigInProgress, "RECONFIGINPROGRESS"},
    {ErrorCode::kApiError, "APIERROR"},
    {ErrorCode::kNoNode, "NONODE"},
    {ErrorCode::kNoAuth, "NOAUTH"},
    {ErrorCode::kBadVersion, "BADVERSION"},
    {ErrorCode::kNoChildrenForEphemerals, "NOCHILDRENFOREPHEMERALS"},
    {ErrorCode::kNodeExists, "NODEEXISTS"},
    {ErrorCode::kNotEmpty, "NOTEMPTY"},
    {ErrorCode::kSessionExpired, "SESSIONEXPIRED"},
    {ErrorCode::kInvalidCallback, "INVALIDCALLBACK"},
    {ErrorCode::kInvalidAcl, "INVALIDACL"},
    {ErrorCode::kAuthFailed, "AUTHFAILED"},
    {ErrorCode::kSessionMoved, "SESSIONMOVED"},
    {ErrorCode::kNotReadOnly, "NOTREADONLY"},
    {ErrorCode::kEphemeralOnLocalSession, "EPHEMERALONLOCALSESSION"},
    {ErrorCode::kNoWatcher, "NOWATCHER"},
    {ErrorCode::kRequestTimeout, "REQUESTTIMEOUT"},
    {ErrorCode::kReconfigDisabled, "RECONFIGDISABLED"},
    {ErrorCode::kSessionClosedRequireSaslAuth, "SESSIONCLOSEDREQUIRESASLAUTH"},
    {ErrorCode::kQuotaExceeded, "QUOTAEXCEEDED"},
    {ErrorCode::kThrottledOp, "THROTTLEDOP"},
};

}  // namespace

std::string_view OpName(std::int32_t type) {
  for (const auto& [code, name] : kOpNames) {
    if (static_cast<std::int32_t>(code) == type) return name;
  }
  return "unknown";
}

std::string_view ErrorName(ErrorCode code) {
  for (const auto& [known, name] : kErrorNames) {
    if (known == code) return name;
  }
  return "UNKNOWN";
}

}  // namespace tenure::zk

namespace tenure::zk {

// The state's ZooKeeper codes and bounds are these (state/zk_tree.h: the
// state layer cannot see this one).
constexpr bool SameCode(state::ZkCode a, ErrorCode b) {
  return static_cast<std::int32_t>(a) == static_cast<std::int32_t>(b);
}
static_assert(kMultiOpsMax == state::kZkWriteOpsMax);
static_assert(SameCode(state::ZkCode::kRuntimeInconsistency, ErrorCode::kRuntimeInconsistency));
static_assert(SameCode(state::ZkCode::kBadArguments, ErrorCode::kBadArguments));
static_assert(SameCode(state::ZkCode::kNoNode, ErrorCode::kNoNode));
static_assert(SameCode(state::ZkCode::kBadVersion, ErrorCode::kBadVersion));
static_assert(SameCode(state::ZkCode::kNoChildrenForEphemerals,
                       ErrorCode::kNoChildrenForEphemerals));
static_assert(SameCode(state::ZkCode::kNodeExists, ErrorCode::kNodeExists));
static_assert(SameCode(state::ZkCode::kNotEmpty, ErrorCode::kNotEmpty));
static_assert(SameCode(state::ZkCode::kSessionExpired, ErrorCode::kSessionExpired));
static_assert(SameCode(state::ZkCode::kEphemeralOnLocalSession,
                       ErrorCode::kEphemeralOnLocalSession));

}  // namespace tenure::zk
