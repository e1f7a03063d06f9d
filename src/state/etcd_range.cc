#include "state/etcd_range.h"

#include <algorithm>
#include <span>
#include <string_view>

#include "state/numbered_session.h"

namespace tenure::state {
namespace {

std::int64_t Signed(LogIndex index) { return static_cast<std::int64_t>(index.value()); }

// -1, 0 or 1 as etcd's compareInt64 and bytes.Compare give.
template <typename T>
int Order(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int CompareEntry(const EtcdCompare& c, const KvEntry* entry) {
  switch (c.target) {
    case EtcdCompareTarget::kValue:
      return Order(std::string_view(entry->value), std::string_view(c.value));
    case EtcdCompareTarget::kCreate:
      return Order(entry == nullptr ? 0 : Signed(entry->create_index), c.number);
    case EtcdCompareTarget::kMod:
      return Order(entry == nullptr ? 0 : Signed(entry->modify_index), c.number);
    case EtcdCompareTarget::kVersion:
      return Order(entry == nullptr ? 0 : static_cast<std::int64_t>(entry->version), c.number);
    case EtcdCompareTarget::kLease:
      return Order(entry == nullptr ? 0 : LeaseOf(*entry), c.number);
  }
  return 0;
}

bool Holds(EtcdCompareResult result, int order) {
  switch (result) {
    case EtcdCompareResult::kEqual:
      return order == 0;
    case EtcdCompareResult::kNotEqual:
      return order != 0;
    case EtcdCompareResult::kGreater:
      return order > 0;
    case EtcdCompareResult::kLess:
      return order < 0;
  }
  return true;  // as etcd's: an unknown result holds
}

// The sort key's order of two entries.
bool Before(EtcdSortTarget target, const KvEntry* a, const KvEntry* b) {
  switch (target) {
    case EtcdSortTarget::kKey:
      return a->key < b->key;
    case EtcdSortTarget::kVersion:
      return a->version < b->version;
    case EtcdSortTarget::kCreate:
      return a->create_index < b->create_index;
    case EtcdSortTarget::kMod:
      return a->modify_index < b->modify_index;
    case EtcdSortTarget::kValue:
      return a->value < b->value;
  }
  return false;
}

}  // namespace

std::int64_t LeaseOf(const KvEntry& entry) {
  return SessionNumber(entry.session.view()).value_or(0);
}

EtcdKeyValue ToEtcdKeyValue(const KvEntry& entry, bool keys_only) {
  EtcdKeyValue kv;
  kv.key = entry.key;
  kv.create_revision = Signed(entry.create_index);
  kv.mod_revision = Signed(entry.modify_index);
  kv.version = static_cast<std::int64_t>(entry.version);
  if (!keys_only) kv.value = entry.value;
  kv.lease = LeaseOf(entry);
  return kv;
}

EtcdRangeResponse EvaluateRange(const std::vector<const KvEntry*>& in_range,
                                const EtcdRangeRequest& request) {
  EtcdRangeResponse response;
  response.count = static_cast<std::int64_t>(in_range.size());
  if (request.count_only) return response;
  // etcd 3.4 reads every key of the range only when the request names a
  // sort order or a revision filter; otherwise its store stops after
  // limit + 1 keys in key order, and a sort_target other than KEY (which
  // sorts ascending) sorts those alone before the limit cuts them.
  const bool reads_all = request.sort_order != EtcdSortOrder::kNone ||
                         request.min_mod_revision != 0 || request.max_mod_revision != 0 ||
                         request.min_create_revision != 0 || request.max_create_revision != 0;
  std::size_t read = in_range.size();
  if (!reads_all && request.limit > 0 && read > static_cast<std::uint64_t>(request.limit)) {
    read = static_cast<std::size_t>(request.limit) + 1;
  }
  std::vector<const KvEntry*> entries;
  entries.reserve(read);
  for (const KvEntry* e : std::span(in_range).first(read)) {
    const std::int64_t mod = Signed(e->modify_index);
    const std::int64_t create = Signed(e->create_index);
    if (request.max_mod_revision != 0 && mod > request.max_mod_revision) continue;
    if (request.min_mod_revision != 0 && mod < request.min_mod_revision) continue;
    if (request.max_create_revision != 0 && create > request.max_create_revision) continue;
    if (request.min_create_revision != 0 && create < request.min_create_revision) continue;
    entries.push_back(e);
  }
  EtcdSortOrder order = request.sort_order;
  if (request.sort_target != EtcdSortTarget::kKey && order == EtcdSortOrder::kNone) {
    order = EtcdSortOrder::kAscend;
  }
  const EtcdSortTarget target = request.sort_target;
  if (order == EtcdSortOrder::kAscend) {
    std::stable_sort(entries.begin(), entries.end(),
                     [&](const KvEntry* a, const KvEntry* b) { return Before(target, a, b); });
  } else if (order == EtcdSortOrder::kDescend) {
    std::stable_sort(entries.begin(), entries.end(),
                     [&](const KvEntry* a, const KvEntry* b) { return Before(target, b, a); });
  }
  if (request.limit > 0 && entries.size() > static_cast<std::uint64_t>(request.limit)) {
    entries.resize(static_cast<std::size_t>(request.limit));
    response.more = true;
  }
  response.kvs.reserve(entries.size());
  for (const KvEntry* e : entries) response.kvs.push_back(ToEtcdKeyValue(*e, request.keys_only));
  return response;
}

bool CompareHolds(const EtcdCompare& compare, const std::vector<const KvEntry*>& in_range) {
  if (in_range.empty()) {
    if (compare.target == EtcdCompareTarget::kValue) return false;
    return Holds(compare.result, CompareEntry(compare, nullptr));
  }
  for (const KvEntry* entry : in_range) {
    if (!Holds(compare.result, CompareEntry(compare, entry))) return false;
  }
  return true;
}

}  // namespace tenure::state
