#include "zk/watch_table.h"

#include "state/zk_path.h"

namespace tenure::zk {
namespace {

std::size_t Index(WatchTable::Kind kind) { return kind == WatchTable::Kind::kData ? 0 : 1; }

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
  auto mine = by_owner_.find(owner);
  mine->second.erase({kind, std::string(path)});
  if (mine->second.empty()) by_owner_.erase(mine);
  --count_;
  return true;
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

void WatchTable::Take(Kind kind, std::string_view path, EventType type, std::vector<Fired>* fired) {
  auto& table = table_[Index(kind)];
  auto it = table.find(path);
  if (it == table.end()) return;
  for (Owner owner : it->second) {
    fired->push_back(Fired{owner, type, std::string(path)});
    auto mine = by_owner_.find(owner);
    mine->second.erase({kind, std::string(path)});
    if (mine->second.empty()) by_owner_.erase(mine);
    --count_;
  }
  table.erase(it);
}

void WatchTable::Created(std::string_view path, std::vector<Fired>* fired) {
  Take(Kind::kData, path, EventType::kNodeCreated, fired);
  if (path != "/")
    Take(Kind::kChild, state::ZkParentOf(path), EventType::kNodeChildrenChanged, fired);
}

void WatchTable::Deleted(std::string_view path, std::vector<Fired>* fired) {
  Take(Kind::kData, path, EventType::kNodeDeleted, fired);
  Take(Kind::kChild, path, EventType::kNodeDeleted, fired);
  if (path != "/")
    Take(Kind::kChild, state::ZkParentOf(path), EventType::kNodeChildrenChanged, fired);
}

void WatchTable::Changed(std::string_view path, std::vector<Fired>* fired) {
  Take(Kind::kData, path, EventType::kNodeDataChanged, fired);
}

void WatchTable::FireAll(EventType data, EventType child, std::vector<Fired>* fired) {
  std::vector<std::string> paths;
  for (const auto& [path, owners] : table_[0]) paths.push_back(path);
  for (const std::string& path : paths) Take(Kind::kData, path, data, fired);
  paths.clear();
  for (const auto& [path, owners] : table_[1]) paths.push_back(path);
  for (const std::string& path : paths) Take(Kind::kChild, path, child, fired);
}

}  // namespace tenure::zk
