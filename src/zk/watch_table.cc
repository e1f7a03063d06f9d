#include "zk/watch_table.h"

#include "state/zk_path.h"

namespace tenure::zk {
namespace {

std::size_t Index(WatchTable::Kind kind) { return static_cast<std::size_t>(kind); }

}  // namespace

void WatchTable::Add(Owner owner, Kind kind, std::string_view path) {
  auto& owners = table_[Index(kind)][std::string(path)];
  if (!owners.insert(owner).second) return;
  by_owner_[owner].emplace(kind, std::string(path));
  ++count_;
}

bool WatchTable::Has(Owner owner, Kind kind, std::string_view path) const {
  const auto& table = table_[Index(kind)];
  auto it = table.find(path);
  return it != table.end() && it->second.contains(owner);
}

bool WatchTable::Remove(Owner owner, Kind kind, std::string_view path) {
  auto& table = table_[Index(kind)];
  auto it = table.find(path);
  if (it == table.end() || it->second.erase(owner) == 0) return false;
  if (it->second.empty()) table.erase(it);
  Unlist(owner, kind, path);
  return true;
}

void WatchTable::Unlist(Owner owner, Kind kind, std::string_view path) {
  auto mine = by_owner_.find(owner);
  mine->second.erase({kind, std::string(path)});
  if (mine->second.empty()) by_owner_.erase(mine);
  --count_;
}

void WatchTable::RemoveOwner(Owner owner) {
  auto mine = by_owner_.find(owner);
  if (mine == by_owner_.end()) return;
  for (const auto& [kind, path] : mine->second) {
    auto& table = table_[Index(kind)];
    auto it = table.find(path);
    it->second.erase(owner);
    if (it->second.empty()) table.erase(it);
    --count_;
  }
  by_owner_.erase(mine);
}

std::size_t WatchTable::OwnerCount(Owner owner) const {
  auto mine = by_owner_.find(owner);
  return mine == by_owner_.end() ? 0 : mine->second.size();
}

void WatchTable::TakeOneShot(Kind kind, std::string_view path, EventType type, Owners* already,
                             std::vector<Fired>* fired) {
  auto& table = table_[Index(kind)];
  auto it = table.find(path);
  if (it == table.end()) return;
  for (Owner owner : it->second) {
    if (already->insert(owner).second) fired->push_back(Fired{owner, type, std::string(path)});
    Unlist(owner, kind, path);
  }
  table.erase(it);
}

void WatchTable::FireKept(std::string_view path, EventType type, bool recursive, Owners* already,
                          std::vector<Fired>* fired) {
  auto fire = [&](Kind kind, std::string_view at) {
    const auto& kept = table_[Index(kind)];
    auto it = kept.find(at);
    if (it == kept.end()) return;
    for (Owner owner : it->second) {
      if (already->insert(owner).second) {
        fired->push_back(Fired{owner, type, std::string(path), /*persistent=*/true});
      }
    }
  };
  fire(Kind::kPersistent, path);
  if (!recursive || table_[Index(Kind::kRecursive)].empty()) return;
  for (std::string_view at = path;; at = state::ZkParentOf(at)) {
    fire(Kind::kRecursive, at);
    if (at == "/") break;
  }
}

void WatchTable::ChildrenChanged(std::string_view child, std::vector<Fired>* fired) {
  if (child == "/") return;
  const std::string_view parent = state::ZkParentOf(child);
  Owners owners;
  TakeOneShot(Kind::kChild, parent, EventType::kNodeChildrenChanged, &owners, fired);
  FireKept(parent, EventType::kNodeChildrenChanged, /*recursive=*/false, &owners, fired);
}

void WatchTable::Created(std::string_view path, std::vector<Fired>* fired) {
  Owners data;
  TakeOneShot(Kind::kData, path, EventType::kNodeCreated, &data, fired);
  FireKept(path, EventType::kNodeCreated, /*recursive=*/true, &data, fired);
  ChildrenChanged(path, fired);
}

void WatchTable::Deleted(std::string_view path, std::vector<Fired>* fired) {
  Owners node;  // one NodeDeleted per owner from the data and child sides
  TakeOneShot(Kind::kData, path, EventType::kNodeDeleted, &node, fired);
  TakeOneShot(Kind::kChild, path, EventType::kNodeDeleted, &node, fired);
  FireKept(path, EventType::kNodeDeleted, /*recursive=*/true, &node, fired);
  ChildrenChanged(path, fired);
}

void WatchTable::Changed(std::string_view path, std::vector<Fired>* fired) {
  Owners data;
  TakeOneShot(Kind::kData, path, EventType::kNodeDataChanged, &data, fired);
  FireKept(path, EventType::kNodeDataChanged, /*recursive=*/true, &data, fired);
}

void WatchTable::FireAll(EventType data, EventType child, std::vector<Fired>* fired) {
  for (const Kind kind : {Kind::kData, Kind::kChild}) {
    auto& table = table_[Index(kind)];
    for (const auto& [path, owners] : table) {
      for (Owner owner : owners) {
        fired->push_back(Fired{owner, kind == Kind::kData ? data : child, path});
        Unlist(owner, kind, path);
      }
    }
    table.clear();
  }
}

std::set<WatchTable::Owner> WatchTable::PersistentOwners() const {
  std::set<Owner> owners;
  for (const Kind kind : {Kind::kPersistent, Kind::kRecursive}) {
    for (const auto& [path, holders] : table_[Index(kind)])
      owners.insert(holders.begin(), holders.end());
  }
  return owners;
}

}  // namespace tenure::zk
