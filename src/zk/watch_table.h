// The one-shot watches of one server's ZooKeeper clients (decision 0056
// section 5): soft state of the server the client is connected to, as
// ZooKeeper's WatchManager. Two tables, as ZooKeeper's server keeps them:
// data watches (set by getData, and by exists whether or not the node is
// there) and child watches (getChildren, getChildren2). An event takes the
// watches it fires: each fires once. Owners are connections, by number.
// Pure.
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
  enum class Kind : std::uint8_t { kData, kChild };
  using Owner = std::uint64_t;

  // One notification to send: to `owner`, an event of `type` on `path`.
  struct Fired {
    Owner owner = 0;
    EventType type = EventType::kNone;
    std::string path;
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
  // fires the path's data watches (NodeCreated) and its parent's child
  // watches (NodeChildrenChanged); a delete the path's data and child
  // watches (NodeDeleted) and its parent's child watches; a data change
  // the path's data watches (NodeDataChanged). Appends to *fired.
  void Created(std::string_view path, std::vector<Fired>* fired);
  void Deleted(std::string_view path, std::vector<Fired>* fired);
  void Changed(std::string_view path, std::vector<Fired>* fired);
  // Every watch, fired as `data` and `child` say (the state was replaced).
  void FireAll(EventType data, EventType child, std::vector<Fired>* fired);

  std::size_t size() const { return count_; }
  std::size_t OwnerCount(Owner owner) const;

 private:
  void Take(Kind kind, std::string_view path, EventType type, std::vector<Fired>* fired);

  std::map<std::string, std::set<Owner>, std::less<>> table_[2];
  // Each owner's watches, so a closed connection's go at once.
  std::map<Owner, std::set<std::pair<Kind, std::string>>> by_owner_;
  std::size_t count_ = 0;
};

}  // namespace tenure::zk
