// Connection's watches (zk/connection.h): set by reads, set again by a
// reconnecting client's setWatches, checked and removed, and their events.
#include <fmt/format.h>

#include <variant>

#include "common/log.h"
#include "server/server.h"
#include "state/numbered_session.h"
#include "zk/client_port.h"
#include "zk/connection.h"
#include "zk/reads.h"

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
  WatchTable& watches = port_.watches();
  if (watches.OwnerCount(number_) >= kWatchesMax && !watches.Has(number_, kind, read->path)) {
    return false;
  }
  watches.Add(number_, kind, read->path);
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
  if (!request.persistent_watches.empty() || !request.persistent_recursive_watches.empty()) {
    // Persistent watches are not served (addWatch answers UNIMPLEMENTED).
    return Answer(slot, AnswerCode(slot.request.header.xid, zxid, ErrorCode::kUnimplemented));
  }
  const Reader reader{&caller_.can(), session_, identities_};
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
  Answer(slot, AnswerCode(slot.request.header.xid, zxid, ErrorCode::kOk));
}

// checkWatches and removeWatches: the watch of the given type (1 children,
// 2 data, 3 either) on the path, NOWATCHER if there is none; another type
// MARSHALLINGERROR, as ZooKeeper answers it.
void Connection::WatchCheck(Slot& slot, bool remove) {
  const auto& request = std::get<PathModeRequest>(slot.request.body);
  const auto zxid = static_cast<std::int64_t>(port_.server().store().applied_index().value());
  const std::int32_t xid = slot.request.header.xid;
  if (request.mode < 1 || request.mode > 3) {
    return Answer(slot, AnswerCode(xid, zxid, ErrorCode::kMarshallingError));
  }
  WatchTable& watches = port_.watches();
  bool found = false;
  for (const WatchTable::Kind kind : {WatchTable::Kind::kChild, WatchTable::Kind::kData}) {
    const bool wanted =
        request.mode == 3 || (request.mode == 1) == (kind == WatchTable::Kind::kChild);
    if (!wanted) continue;
    found |= remove ? watches.Remove(number_, kind, request.path)
                    : watches.Has(number_, kind, request.path);
  }
  Answer(slot, AnswerCode(xid, zxid, found ? ErrorCode::kOk : ErrorCode::kNoWatcher));
}

void Connection::SendEvent(EventType type, const std::string& path) {
  if (phase_ != Phase::kServing && phase_ != Phase::kClosing) return;
  SendFrame(EncodeNotification(WatcherEvent{static_cast<std::int32_t>(type),
                                            static_cast<std::int32_t>(KeeperState::kSyncConnected),
                                            path}));
  Flush();
}

}  // namespace tenure::zk
