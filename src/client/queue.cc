#include "client/queue.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace tenure::client {

Result<std::vector<QueueWaiter>> ParseQueue(std::string_view body) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_array()) {
    return Status::Corruption("queue: the answer is not a JSON array");
  }
  std::vector<QueueWaiter> out;
  for (const auto& row : doc) {
    if (!row.is_object()) return Status::Corruption("queue: a row is not an object");
    auto session = row.find("Session");
    if (session == row.end() || !session->is_string() || session->get<std::string>().empty()) {
      return Status::Corruption("queue: a row has no Session");
    }
    QueueWaiter waiter;
    waiter.session = session->get<std::string>();
    auto text = [&row](const char* name) {
      auto it = row.find(name);
      return it != row.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    waiter.session_name = text("SessionName");
    waiter.node = text("Node");
    waiter.since = text("Since");
    if (auto index = row.find("EnqueueIndex"); index != row.end() && index->is_number_unsigned()) {
      waiter.enqueue_index = index->get<std::uint64_t>();
    }
    out.push_back(std::move(waiter));
  }
  return out;
}

bool InQueue(const std::vector<QueueWaiter>& queue, std::string_view session) {
  return std::any_of(queue.begin(), queue.end(),
                     [session](const QueueWaiter& w) { return w.session == session; });
}

std::vector<Successor> LineOfSuccession(const std::vector<QueueWaiter>& queue,
                                        const std::vector<KvPair>& candidates,
                                        std::string_view candidates_prefix) {
  // session -> its first registration in key order.
  std::map<std::string, std::string> by_session;
  std::vector<const KvPair*> sorted;
  for (const KvPair& pair : candidates) sorted.push_back(&pair);
  std::sort(sorted.begin(), sorted.end(),
            [](const KvPair* a, const KvPair* b) { return a->key < b->key; });
  for (const KvPair* pair : sorted) {
    if (pair->session.empty()) continue;
    if (pair->key.size() <= candidates_prefix.size() ||
        pair->key.compare(0, candidates_prefix.size(), candidates_prefix) != 0) {
      continue;
    }
    std::string name = pair->key.substr(candidates_prefix.size());
    if (name.find('/') != std::string::npos) continue;  // not a registration
    by_session.emplace(pair->session, std::move(name));
  }
  std::vector<Successor> line;
  for (const QueueWaiter& waiter : queue) {
    Successor next;
    next.position = static_cast<int>(line.size()) + 1;
    next.session = waiter.session;
    if (auto it = by_session.find(waiter.session); it != by_session.end()) {
      next.candidate = it->second;
    }
    next.since = waiter.since;
    line.push_back(std::move(next));
  }
  return line;
}

}  // namespace tenure::client
