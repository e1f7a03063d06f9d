// Connection's watches (zk/connection.h): set by reads, set again by a
// reconnecting client's setWatches, checked and removed, and their events.
#include <fmt/format.h>

#include <variant>

#include "common/log.h"
#include "server/server.h"
#include "state/numbered_session.h"
#include "state/zk_path.h"
#include "zk/client_port.h"
#include "zk/connection.h"
#include "zk/reads.h"
#include "zk/writes.h"

namespace tenure::zk {

// A read with its watch flag sets a watch where ZooKeeper sets one: exists
// on a node or on a missing one, getData and getChildren on a node. False
// past kWatchesMax.
bool Connection::MaybeWatch(const DecodedRequest& request, const std::string& answer) {
  const auto* read = std::get_if<PathWatchRequest>(&request.body);
  if (read == nullptr || !read->watch) return true;
  const std::int32_t err = ReplyError(answer);
  const auto type = static_cast<OpCode>(request.header.type);
  WatchTable::Kind kind = WatchTable::Kind::kData;
  if (type == OpCode::kExists) {
    if (err != 0 && err != static_cast<std::int32_t>(ErrorCode::kNoNode)) return true;
  } else if (type == OpCode::kGetData) {
    if (err != 0) return true;
  } else if (type == OpCode::kGetChildren || type == OpCode::kGetChildren2) {
    if (err != 0) return true;
    kind = WatchTable::Kind::kChild;
  } else {
    return true;
  }
  return SetOwnWatch(kind, read->path);
}

// Sets this connection's watch unless that would pass kWatchesMax (false:
// the caller ends the connection; its client reconnects and sets its
// watches again).
bool Connection::SetOwnWatch(WatchTable::Kind kind, std::string_view path) {
  WatchTable& watches = port_.watches();
  if (watches.OwnerCount(number_) >= kWatchesMax && !watches.Has(number_, kind, path)) {
    log::Warn("zk", fmt::format("closing a connection from {}: more than {} watches", peer(),
                                kWatchesMax));
    return false;
  }
  watches.Add(number_, kind, path);
  return true;
}

// setWatches and setWatches2 (a reconnecting client's watches): each fires
// at once if it missed a change after relativeZxid, else is set, as
// ZooKeeper's DataTree.setWatches does; the events go before the answer.
void Connection::SetWatches(Slot& slot) {
  const auto& request =
      slot.request.header.type == static_cast<std::int32_t>(OpCode::kSetWatches2)
          ? static_cast<const zk::SetWatches&>(std::get<SetWatches2>(slot.request.body))
          : std::get<zk::SetWatches>(slot.request.body);
  const state::Store& store = port_.server().store();
  const auto zxid = static_cast<std::int64_t>(store.applied_index().value());
  const Reader reader{&caller_.can(), session_, {}, &authenticated_};
  WatchTable& watches = port_.watches();
  auto event = [&slot](EventType type, const std::string& path) {
    slot.events.push_back(EncodeNotification(
        WatcherEvent{static_cast<std::int32_t>(type),
                     static_cast<std::int32_t>(KeeperState::kSyncConnected), path}));
  };
  const std::int64_t seen = request.relative_zxid;
  std::size_t count = watches.OwnerCount(number_);
  auto room = [&count] { return ++count <= kWatchesMax; };
  for (const std::string& path : request.data_watches) {
    if (!MayReadPath(reader, path)) continue;
    const std::optional<Stat> stat = StatOf(store, path);
    if (!stat) {
      event(EventType::kNodeDeleted, path);
    } else if (stat->mzxid > seen) {
      event(EventType::kNodeDataChanged, path);
    } else if (room()) {
      watches.Add(number_, WatchTable::Kind::kData, path);
    }
  }
  for (const std::string& path : request.exist_watches) {
    if (!MayReadPath(reader, path)) continue;
    if (StatOf(store, path)) {
      event(EventType::kNodeCreated, path);
    } else if (room()) {
      watches.Add(number_, WatchTable::Kind::kData, path);
    }
  }
  for (const std::string& path : request.child_watches) {
    if (!MayListPath(reader, path)) continue;
    const std::optional<Stat> stat = StatOf(store, path);
    if (!stat) {
      event(EventType::kNodeDeleted, path);
    } else if (stat->pzxid > seen) {
      event(EventType::kNodeChildrenChanged, path);
    } else if (room()) {
      watches.Add(number_, WatchTable::Kind::kChild, path);
    }
  }
  // Persistent watches are set again as they were, with no event for what
  // they missed (ZooKeeper's setWatches does the same); their events are
  // checked against the connection's rights as they go out.
  for (const auto& [paths, kind] :
       {std::pair{&request.persistent_watches, WatchTable::Kind::kPersistent},
        std::pair{&request.persistent_recursive_watches, WatchTable::Kind::kRecursive}}) {
    for (const std::string& path : *paths) {
      if (state::ZkPathError(path).empty() && room()) watches.Add(number_, kind, path);
    }
  }
  Answer(slot, AnswerCode(slot.request.header.xid, zxid, ErrorCode::kOk));
}

// addWatch: a persistent watch (mode 0) or a persistent recursive one (1)
// on the path, whether or not it exists; answered with ZooKeeper's
// ErrorResponse of 0. Another mode is MARSHALLINGERROR, as ZooKeeper's
// server answers a request it cannot read; a path ZooKeeper's client would
// refuse is BADARGUMENTS. Past kWatchesMax the connection closes, as a read
// that would set one does.
void Connection::AddWatch(Slot& slot) {
  const auto& request = std::get<PathModeRequest>(slot.request.body);
  const auto zxid = static_cast<std::int64_t>(port_.server().store().applied_index().value());
  const std::int32_t xid = slot.request.header.xid;
  const auto mode = static_cast<AddWatchMode>(request.mode);
  if (mode != AddWatchMode::kPersistent && mode != AddWatchMode::kPersistentRecursive) {
    return Answer(slot, AnswerCode(xid, zxid, ErrorCode::kMarshallingError));
  }
  if (!state::ZkPathError(request.path).empty()) {
    return Answer(slot, AnswerCode(xid, zxid, ErrorCode::kBadArguments));
  }
  const WatchTable::Kind kind = mode == AddWatchMode::kPersistent ? WatchTable::Kind::kPersistent
                                                                  : WatchTable::Kind::kRecursive;
  if (!SetOwnWatch(kind, request.path)) return Answer(slot, "", /*ends_connection=*/true);
  Answer(slot, EncodeReply(ReplyHeader{xid, zxid, 0}, ErrorResponse{0}));
}

// checkWatches and removeWatches: the watches of the given type on the
// path (1 one-shot child, 2 one-shot data, 3 every kind, 4 persistent, 5
// persistent recursive: ZooKeeper 3.9's WatcherType, which 3.8's clients
// send 1 to 3 of), NOWATCHER if there is none; another type
// MARSHALLINGERROR, as ZooKeeper answers it.
void Connection::WatchCheck(Slot& slot, bool remove) {
  using Kind = WatchTable::Kind;
  const auto& request = std::get<PathModeRequest>(slot.request.body);
  const auto zxid = static_cast<std::int64_t>(port_.server().store().applied_index().value());
  const std::int32_t xid = slot.request.header.xid;
  std::vector<Kind> kinds;
  switch (static_cast<WatcherType>(request.mode)) {
    case WatcherType::kChildren:
      kinds = {Kind::kChild};
      break;
    case WatcherType::kData:
      kinds = {Kind::kData};
      break;
    case WatcherType::kAny:
      kinds = {Kind::kChild, Kind::kData, Kind::kPersistent, Kind::kRecursive};
      break;
    case WatcherType::kPersistent:
      kinds = {Kind::kPersistent};
      break;
    case WatcherType::kPersistentRecursive:
      kinds = {Kind::kRecursive};
      break;
    default:
      return Answer(slot, AnswerCode(xid, zxid, ErrorCode::kMarshallingError));
  }
  WatchTable& watches = port_.watches();
  bool found = false;
  for (const Kind kind : kinds) {
    found |= remove ? watches.Remove(number_, kind, request.path)
                    : watches.Has(number_, kind, request.path);
  }
  Answer(slot, AnswerCode(xid, zxid, found ? ErrorCode::kOk : ErrorCode::kNoWatcher));
}

void Connection::SendEvent(EventType type, const std::string& path, bool check_rights) {
  if (phase_ != Phase::kServing && phase_ != Phase::kClosing) return;
  if (check_rights) {
    // A persistent watch was set without a read: an event about a path this
    // connection may not read (or list, for its children) is not sent.
    const Reader reader{&caller_.can()};  // rights only: no session or identities to copy
    const bool may = type == EventType::kNodeChildrenChanged ? MayListPath(reader, path)
                                                             : MayReadPath(reader, path);
    if (!may) return;
  }
  SendFrame(EncodeNotification(WatcherEvent{static_cast<std::int32_t>(type),
                                            static_cast<std::int32_t>(KeeperState::kSyncConnected),
                                            path}));
  Flush();
}

}  // namespace tenure::zk
