// ZooKeeper 3.8's client protocol numbers: operation codes, error codes,
// watch event types and session states, create modes and the special xids,
// as its Java server and C client define them (docs/zookeeper-compat.md
// lists which operations tenure serves). Pure constants and their names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tenure::zk {

// RequestHeader.type (ZooDefs.OpCode).
enum class OpCode : std::int32_t {
  kNotification = 0,
  kCreate = 1,
  kDelete = 2,
  kExists = 3,
  kGetData = 4,
  kSetData = 5,
  kGetAcl = 6,
  kSetAcl = 7,
  kGetChildren = 8,
  kSync = 9,
  kPing = 11,
  kGetChildren2 = 12,
  kCheck = 13,
  kMulti = 14,
  kCreate2 = 15,
  kReconfig = 16,
  kCheckWatches = 17,
  kRemoveWatches = 18,
  kCreateContainer = 19,
  kDeleteContainer = 20,
  kCreateTtl = 21,
  kMultiRead = 22,
  kAuth = 100,
  kSetWatches = 101,
  kSasl = 102,
  kGetEphemerals = 103,
  kGetAllChildrenNumber = 104,
  kSetWatches2 = 105,
  kAddWatch = 106,
  kWhoAmI = 107,
  kCreateSession = -10,
  kCloseSession = -11,
  kError = -1,
};

// The op's name as ZooDefs.OpCode's field names spell it ("create",
// "getChildren2", "createTTL"...), "unknown" for any other number.
std::string_view OpName(std::int32_t type);

// ReplyHeader.err (KeeperException.Code).
enum class ErrorCode : std::int32_t {
  kOk = 0,
  kSystemError = -1,
  kRuntimeInconsistency = -2,
  kDataInconsistency = -3,
  kConnectionLoss = -4,
  kMarshallingError = -5,
  kUnimplemented = -6,
  kOperationTimeout = -7,
  kBadArguments = -8,
  kUnknownSession = -12,
  kNewConfigNoQuorum = -13,
  kReconfigInProgress = -14,
  kApiError = -100,
  kNoNode = -101,
  kNoAuth = -102,
  kBadVersion = -103,
  kNoChildrenForEphemerals = -108,
  kNodeExists = -110,
  kNotEmpty = -111,
  kSessionExpired = -112,
  kInvalidCallback = -113,
  kInvalidAcl = -114,
  kAuthFailed = -115,
  kSessionMoved = -118,
  kNotReadOnly = -119,
  kEphemeralOnLocalSession = -120,
  kNoWatcher = -121,
  kRequestTimeout = -122,
  kReconfigDisabled = -123,
  kSessionClosedRequireSaslAuth = -124,
  kQuotaExceeded = -125,
  kThrottledOp = -127,
};

// "NONODE", "BADVERSION"... as KeeperException.Code's names; "UNKNOWN".
std::string_view ErrorName(ErrorCode code);

// WatcherEvent.type (Watcher.Event.EventType).
enum class EventType : std::int32_t {
  kNone = -1,
  kNodeCreated = 1,
  kNodeDeleted = 2,
  kNodeDataChanged = 3,
  kNodeChildrenChanged = 4,
  kDataWatchRemoved = 5,
  kChildWatchRemoved = 6,
  kPersistentWatchRemoved = 7,
};

// WatcherEvent.state (Watcher.Event.KeeperState).
enum class KeeperState : std::int32_t {
  kDisconnected = 0,
  kSyncConnected = 3,
  kAuthFailed = 4,
  kConnectedReadOnly = 5,
  kSaslAuthenticated = 6,
  kExpired = -112,
  kClosed = 7,
};

// CreateRequest.flags (CreateMode).
enum class CreateMode : std::int32_t {
  kPersistent = 0,
  kEphemeral = 1,
  kPersistentSequential = 2,
  kEphemeralSequential = 3,
  kContainer = 4,
  kPersistentWithTtl = 5,
  kPersistentSequentialWithTtl = 6,
};

// RemoveWatchesRequest.type and CheckWatchesRequest.type (WatcherType).
enum class WatcherType : std::int32_t {
  kChildren = 1,
  kData = 2,
  kAny = 3,
  kPersistent = 4,           // ZooKeeper 3.9
  kPersistentRecursive = 5,  // ZooKeeper 3.9
};

// AddWatchRequest.mode (AddWatchMode).
enum class AddWatchMode : std::int32_t {
  kPersistent = 0,
  kPersistentRecursive = 1,
};

// RequestHeader.xid values with a meaning of their own.
inline constexpr std::int32_t kNotificationXid = -1;
inline constexpr std::int32_t kPingXid = -2;
inline constexpr std::int32_t kAuthXid = -4;
inline constexpr std::int32_t kSetWatchesXid = -8;

// ACL permission bits (ZooDefs.Perms).
inline constexpr std::int32_t kPermRead = 1;
inline constexpr std::int32_t kPermWrite = 2;
inline constexpr std::int32_t kPermCreate = 4;
inline constexpr std::int32_t kPermDelete = 8;
inline constexpr std::int32_t kPermAdmin = 16;
inline constexpr std::int32_t kPermAll = 31;

// The largest frame (after its 4-byte length) a server accepts:
// jute.maxbuffer's default, 0xfffff bytes. Longer announced lengths end
// the connection before any of the frame is read.
inline constexpr std::size_t kFrameBytesMax = 0xfffff;

// The most operations one multi may carry. ZooKeeper bounds a multi only by
// the frame; tenure also bounds the work one log entry can hold.
inline constexpr std::size_t kMultiOpsMax = 1000;

}  // namespace tenure::zk
