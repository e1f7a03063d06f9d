// UuidDeadlines: a deadline per 16-byte id in flat arrays, earliest first.
//
// Where SessionTimers keeps the leader's UUID-named sessions (decision
// 0066): an open-addressing table of (id, deadline), linear probing with
// backward-shift deletion (no tombstones), and an indexed binary min-heap of
// slot numbers ordered by (deadline, id), each slot knowing its place in
// the heap. A renewal moves its own entry (O(log n), nothing stale left
// behind). About 41 bytes a session at 100,000 (28 a slot at 3/4 load, 4 in
// the heap) where a hash node, its bucket and a lazily pruned heap of
// (deadline, id) took about 77. The table doubles past 7/8 full and halves
// below 1/8, so a leader that held many sessions gives the memory back.
//
// Deterministic: the heap's order is total, so pops come in (deadline, id)
// order whatever the table's layout. The layout follows from the calls and
// the hash key: a client may choose its etcd lease's number, and the server
// keys the hash with a random number so that nobody can choose numbers that
// share a home and make every probe walk them all (the simulation and the
// tests pass a fixed key).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/types.h"

namespace tenure::server {

class UuidDeadlines {
 public:
  using Uuid = std::array<std::uint8_t, 16>;

  explicit UuidDeadlines(std::uint64_t hash_key = 0) : hash_key_(hash_key) {}

  // Sets id's deadline, adding id if it is not here.
  void Set(const Uuid& id, MonoMs at_ms);
  // Removes id; false if it was not here.
  bool Erase(const Uuid& id);
  std::optional<MonoMs> Find(const Uuid& id) const;
  bool Contains(const Uuid& id) const { return SlotOf(id).has_value(); }
  std::size_t size() const { return heap_.size(); }
  bool empty() const { return heap_.empty(); }
  // The earliest deadline and its id (ties: the smaller id). REQUIRES: !empty().
  MonoMs top_at() const { return slots_[heap_.front()].at_ms; }
  const Uuid& top_id() const { return slots_[heap_.front()].id; }
  void PopTop();
  void Clear();
  // Slots in the table (a power of two, or 0): for tests of the memory bound.
  std::size_t slot_capacity() const { return slots_.size(); }
  // The farthest any entry sits from its home slot: for tests of the hash.
  std::size_t LongestProbe() const;

 private:
  static constexpr std::uint32_t kFree = UINT32_MAX;  // heap_pos_ of an empty slot
  static constexpr std::size_t kMinCapacity = 16;
  struct Slot {
    Uuid id;
    MonoMs at_ms;
  };

  std::size_t Home(const Uuid& id) const;
  std::optional<std::uint32_t> SlotOf(const Uuid& id) const;
  // True when slot a's entry comes out of the heap before slot b's.
  bool Before(std::uint32_t a, std::uint32_t b) const;
  void Place(std::size_t pos, std::uint32_t slot);
  void SiftUp(std::size_t pos);
  void SiftDown(std::size_t pos);
  // Takes the entry in `slot` out of the heap and the table.
  void Remove(std::uint32_t slot);
  void ShrinkIfSparse();
  // Moves every entry into a table of `capacity` slots and rebuilds the heap.
  void Resize(std::size_t capacity);

  std::uint64_t hash_key_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> heap_pos_;  // per slot: its place in heap_, kFree if empty
  std::vector<std::uint32_t> heap_;      // slot numbers, a min-heap by (deadline, id)
};

}  // namespace tenure::server
