// The watches of one server's ZooKeeper clients (decision 0056 section 5):
// soft state of the server the client is connected to, as ZooKeeper's
// WatchManager. Four kinds: one-shot data watches (set by getData, and by
// exists whether or not the node is there), one-shot child watches
// (getChildren, getChildren2), and addWatch's persistent watches (a path's
// data and child events, kept after they fire) and persistent recursive
// ones (data events of a path and every path under it, kept). An event
// goes once to each owner it concerns however many of its watches match,
// as ZooKeeper sends one notification per connection. Owners are
// connections, by number. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zk/protocol.h"

namespace tenure::zk {

class WatchTable {
 public:
  enum class Kind : std::uint8_t { kData, kChild, kPersistent, kRecursive };
  static constexpr std::size_t kKinds = 4;
  using Owner = std::uint64_t;

  // One notification to send: to `owner`, an event of `type` on `path`.
  // `persistent`: it fired only through persistent watches, which are set
  // without a read, so the connection checks its rights before sending.
  struct Fired {
    Owner owner = 0;
    EventType type = EventType::kNone;
    std::string path;
    bool persistent = false;
    bool operator==(const Fired&) const = default;
  };

  // Sets a watch; setting it again changes nothing (ZooKeeper keeps a set).
  void Add(Owner owner, Kind kind, std::string_view path);
  bool Has(Owner owner, Kind kind, std::string_view path) const;
  // Removes `owner`'s watch of `kind` on `path`; false if it had none.
  bool Remove(Owner owner, Kind kind, std::string_view path);
  // Every watch of a connection that closed.
  void RemoveOwner(Owner owner);

  // What a change to `path` fires, ZooKeeper's rules (DataTree): a create
  // fires the path's data side (NodeCreated) and its parent's child side
  // (NodeChildrenChanged); a delete the path's data and child sides
  // (NodeDeleted) and its parent's child side; a data change the path's
  // data side (NodeDataChanged). A path's data side is its one-shot data
  // watches, its persistent watches and the recursive ones on it or above
  // it; its child side its one-shot child and its persistent watches.
  // Appends to *fired.
  void Created(std::string_view path, std::vector<Fired>* fired);
  void Deleted(std::string_view path, std::vector<Fired>* fired);
  void Changed(std::string_view path, std::vector<Fired>* fired);
  // Every one-shot watch, fired as `data` and `child` say, and gone (the
  // state was replaced). Persistent watches are left to the caller: no
  // event could say what changed below a recursive one
  // (PersistentOwners).
  void FireAll(EventType data, EventType child, std::vector<Fired>* fired);
  // The owners that hold a persistent or recursive watch.
  std::set<Owner> PersistentOwners() const;

  std::size_t size() const { return count_; }
  std::size_t OwnerCount(Owner owner) const;

 private:
  using Owners = std::set<Owner>;
  // Fires and takes the one-shot watches of `kind` on `path`, each owner
  // once, none in *already (which gains them).
  void TakeOneShot(Kind kind, std::string_view path, EventType type, Owners* already,
                   std::vector<Fired>* fired);
  // Fires the persistent watches on `path` and, with `recursive`, the
  // recursive ones on it or above it, to the owners not in *already. After
  // TakeOneShot, so that an owner whose one-shot watch fired gets an event
  // that needs no rights check.
  void FireKept(std::string_view path, EventType type, bool recursive, Owners* already,
                std::vector<Fired>* fired);
  // The child side of `child`'s parent: NodeChildrenChanged ("/" has none).
  void ChildrenChanged(std::string_view child, std::vector<Fired>* fired);
  void Unlist(Owner owner, Kind kind, std::string_view path);

  std::map<std::string, Owners, std::less<>> table_[kKinds];
  // Each owner's watches, so a closed connection's go at once.
  std::map<Owner, std::set<std::pair<Kind, std::string>, std::less<>>> by_owner_;
  std::size_t count_ = 0;
};

}  // namespace tenure::zk
