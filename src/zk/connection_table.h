// The ZooKeeper port's open connections, by number and by session. Pure:
// a container, no I/O (the port closes what it says to close).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tenure::zk {

// A slot each in one vector: 16 bytes a connection, where a std::map's node
// costs 64, for a table that holds every idle session's connection
// (docs/benchmarks-zookeeper-api-sessions.md). A connection's number is
// its slot in the lower 32 bits and a serial in the upper 32, so a number
// is not given again for 4 billion connections (ready-set events and watch
// owners name connections by number; a slot is reused, its number is
// not), and never 0. And each session's connection, for a session that
// moves to another connection (ZooKeeper closes the older one).
//
// C is the connection: it answers number() and session() (0: none yet).
template <typename C>
class ConnectionTable {
 public:
  // `last_serial`: as if that many connections had come (tests start near
  // the wrap).
  explicit ConnectionTable(std::uint32_t last_serial = 0) : serial_(last_serial) {}

  // The number Add gives next; nothing changes until Add.
  std::uint64_t NextNumber() const {
    const std::uint64_t slot = free_.empty() ? slots_.size() : free_.back();
    return (static_cast<std::uint64_t>(NextSerial()) << 32) | slot;
  }
  // REQUIRES: connection->number() == NextNumber().
  void Add(std::shared_ptr<C> connection) {
    const std::uint64_t slot = SlotOf(connection->number());
    if (free_.empty()) {
      slots_.push_back(std::move(connection));
    } else {
      free_.pop_back();
      slots_[slot] = std::move(connection);
    }
    serial_ = NextSerial();
    ++count_;
  }
  // The connection numbered `number`, or null (closed since).
  const std::shared_ptr<C>* Find(std::uint64_t number) const {
    const std::uint64_t slot = SlotOf(number);
    if (slot >= slots_.size() || slots_[slot] == nullptr || slots_[slot]->number() != number) {
      return nullptr;
    }
    return &slots_[slot];
  }
  // Takes it out (and its session's entry, if that still names it);
  // returns it, null if it was not here.
  std::shared_ptr<C> Remove(std::uint64_t number) {
    if (Find(number) == nullptr) return nullptr;
    const std::uint64_t slot = SlotOf(number);
    std::shared_ptr<C> removed = std::move(slots_[slot]);
    slots_[slot] = nullptr;
    free_.push_back(static_cast<std::uint32_t>(slot));
    --count_;
    if (auto by = by_session_.find(removed->session());
        by != by_session_.end() && by->second == number) {
      by_session_.erase(by);
    }
    if (count_ == 0) {
      // All closed: the vectors go too (the next Add starts at slot 0).
      slots_ = {};
      free_ = {};
    }
    return removed;
  }
  // Names connection `number` as `session`'s; returns the connection that
  // had the session before (to be closed), or null. A connection no longer
  // here is not recorded (it closed while its session was being made).
  std::shared_ptr<C> Adopt(std::int64_t session, std::uint64_t number) {
    if (Find(number) == nullptr) return nullptr;
    auto [entry, made] = by_session_.try_emplace(session, number);
    std::shared_ptr<C> older;
    if (!made && entry->second != number) {
      if (const std::shared_ptr<C>* had = Find(entry->second)) older = *had;
      entry->second = number;
    }
    return older;
  }
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // Every open connection, lowest slot first. `visit` must not add or
  // remove connections (close one): collect them, or use All().
  template <typename Visit>
  void ForEach(Visit&& visit) const {
    for (const std::shared_ptr<C>& connection : slots_) {
      if (connection != nullptr) visit(connection);
    }
  }
  // A copy, for a caller that closes them (a close leaves the table).
  std::vector<std::shared_ptr<C>> All() const {
    std::vector<std::shared_ptr<C>> all;
    all.reserve(count_);
    ForEach([&](const std::shared_ptr<C>& connection) { all.push_back(connection); });
    return all;
  }

 private:
  static std::uint64_t SlotOf(std::uint64_t number) { return number & 0xffff'ffffu; }
  // Serials skip 0 when they wrap (after 4 billion connections), so no
  // number is 0, which stands for none; a wrapped serial could meet a
  // connection 4 billion connections old, in the same slot, still open.
  std::uint32_t NextSerial() const { return serial_ == 0xffff'ffffu ? 1 : serial_ + 1; }

  std::vector<std::shared_ptr<C>> slots_;
  std::vector<std::uint32_t> free_;  // empty slots, the last freed on top
  std::uint32_t serial_ = 0;         // the last given
  std::size_t count_ = 0;
  std::unordered_map<std::int64_t, std::uint64_t> by_session_;  // session -> number
};

}  // namespace tenure::zk
