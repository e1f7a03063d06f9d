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
static_assert(kMultiOpsMax == state::kZkWriteOpsMax);
static_assert(static_cast<int>(state::ZkCode::kRuntimeInconsistency) ==
              static_cast<int>(ErrorCode::kRuntimeInconsistency));
static_assert(static_cast<int>(state::ZkCode::kBadArguments) ==
              static_cast<int>(ErrorCode::kBadArguments));
static_assert(static_cast<int>(state::ZkCode::kNoNode) == static_cast<int>(ErrorCode::kNoNode));
static_assert(static_cast<int>(state::ZkCode::kBadVersion) ==
              static_cast<int>(ErrorCode::kBadVersion));
static_assert(static_cast<int>(state::ZkCode::kNoChildrenForEphemerals) ==
              static_cast<int>(ErrorCode::kNoChildrenForEphemerals));
static_assert(static_cast<int>(state::ZkCode::kNodeExists) ==
              static_cast<int>(ErrorCode::kNodeExists));
static_assert(static_cast<int>(state::ZkCode::kNotEmpty) == static_cast<int>(ErrorCode::kNotEmpty));
static_assert(static_cast<int>(state::ZkCode::kSessionExpired) ==
              static_cast<int>(ErrorCode::kSessionExpired));
static_assert(static_cast<int>(state::ZkCode::kEphemeralOnLocalSession) ==
              static_cast<int>(ErrorCode::kEphemeralOnLocalSession));

}  // namespace tenure::zk
