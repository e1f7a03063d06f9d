#include "client/lock_keys.h"

#include <nlohmann/json.hpp>

#include "client/blocking_read.h"
#include "client/response.h"

namespace tenure::client {

std::string CleanPrefix(std::string_view prefix) {
  while (!prefix.empty() && prefix.front() == '/') prefix.remove_prefix(1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  return std::string(prefix);
}

std::string LockKeyOf(std::string_view prefix) { return std::string(prefix) + "/.lock"; }

Result<SemaphoreLock> DecodeSemaphoreLock(std::string_view value) {
  SemaphoreLock lock;
  if (value.empty()) return lock;
  nlohmann::json doc = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Corruption("lock decoding failed: not a JSON object");
  }
  if (auto limit = doc.find("Limit"); limit != doc.end() && !limit->is_null()) {
    if (!limit->is_number_integer() || limit->get<std::int64_t>() < 0 ||
        limit->get<std::int64_t>() > 1'000'000'000) {
      return Status::Corruption("lock decoding failed: Limit is not a count");
    }
    lock.limit = static_cast<int>(limit->get<std::int64_t>());
  }
  if (auto holders = doc.find("Holders"); holders != doc.end() && !holders->is_null()) {
    if (!holders->is_object()) return Status::Corruption("lock decoding failed: Holders");
    for (const auto& [id, held] : holders->items()) {
      if (!held.is_boolean()) return Status::Corruption("lock decoding failed: Holders");
      lock.holders[id] = held.get<bool>();
    }
  }
  return lock;
}

std::string EncodeSemaphoreLock(const SemaphoreLock& lock) {
  nlohmann::json holders = nlohmann::json::object();
  for (const auto& [id, held] : lock.holders) holders[id] = held;
  // Go writes a struct's fields in their order (Limit, Holders) and a map's
  // keys sorted; nlohmann sorts every object, so the outer one is by hand.
  return "{\"Limit\":" + std::to_string(lock.limit) + ",\"Holders\":" + holders.dump() + "}";
}

void PruneHolders(const std::vector<KvPair>& pairs, SemaphoreLock* lock) {
  std::map<std::string, bool> alive;
  for (const KvPair& pair : pairs) {
    if (!pair.session.empty()) alive[pair.session] = true;
  }
  for (auto it = lock->holders.begin(); it != lock->holders.end();) {
    if (alive.count(it->first) == 0) {
      it = lock->holders.erase(it);
    } else {
      ++it;
    }
  }
}

Result<PairsRead> ReadPairs(const Result<net::ClientResponse>& result, std::uint64_t waited,
                            const std::string& what) {
  if (!result.ok()) {
    return Status::Unavailable(what + ": " + std::string(result.status().message()));
  }
  if (result->status != 200 && result->status != 404) {
    return Status::Unavailable(what + ": " + UnexpectedResponse(*result));
  }
  PairsRead read;
  if (result->status == 200) {
    auto pairs = ParseKvPairs(result->body);
    if (!pairs.ok()) return Status::Corruption(what + ": " + std::string(pairs.status().message()));
    read.pairs = std::move(*pairs);
  }
  auto next = NextWaitIndex(*result, waited);
  if (!next.ok()) return Status::Corruption(what + ": " + std::string(next.status().message()));
  read.next_index = *next;
  return read;
}

const KvPair* FindPair(const std::vector<KvPair>& pairs, const std::string& key) {
  for (const KvPair& pair : pairs) {
    if (pair.key == key) return &pair;
  }
  return nullptr;
}

}  // namespace tenure::client
