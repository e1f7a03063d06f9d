#include "server/uuid_deadlines.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/assert.h"

namespace tenure::server {

// Both halves, every bit to every bit (murmur3's finalizer): a numbered
// id's few significant bytes arrive in the high bits of its lower half as
// loaded here, and the table takes only the low bits of the result.
std::size_t UuidDeadlines::Home(const Uuid& id) const {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::memcpy(&a, id.data(), sizeof a);
  std::memcpy(&b, id.data() + sizeof a, sizeof b);
  std::uint64_t h = (a * 0x9e3779b97f4a7c15ull ^ b) + hash_key_;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<std::size_t>(h) & (slots_.size() - 1);
}

std::optional<std::uint32_t> UuidDeadlines::SlotOf(const Uuid& id) const {
  if (slots_.empty()) return std::nullopt;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = Home(id);; i = (i + 1) & mask) {
    if (heap_pos_[i] == kFree) return std::nullopt;
    if (slots_[i].id == id) return static_cast<std::uint32_t>(i);
  }
}

bool UuidDeadlines::Before(std::uint32_t a, std::uint32_t b) const {
  if (slots_[a].at_ms != slots_[b].at_ms) return slots_[a].at_ms < slots_[b].at_ms;
  return slots_[a].id < slots_[b].id;
}

void UuidDeadlines::Place(std::size_t pos, std::uint32_t slot) {
  heap_[pos] = slot;
  heap_pos_[slot] = static_cast<std::uint32_t>(pos);
}

void UuidDeadlines::SiftUp(std::size_t pos) {
  const std::uint32_t slot = heap_[pos];
  while (pos > 0) {
    const std::size_t parent = (pos - 1) / 2;
    if (!Before(slot, heap_[parent])) break;
    Place(pos, heap_[parent]);
    pos = parent;
  }
  Place(pos, slot);
}

void UuidDeadlines::SiftDown(std::size_t pos) {
  const std::uint32_t slot = heap_[pos];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(heap_[child + 1], heap_[child])) ++child;
    if (!Before(heap_[child], slot)) break;
    Place(pos, heap_[child]);
    pos = child;
  }
  Place(pos, slot);
}

void UuidDeadlines::Set(const Uuid& id, MonoMs at_ms) {
  if (std::optional<std::uint32_t> slot = SlotOf(id)) {
    const MonoMs before = slots_[*slot].at_ms;
    if (before == at_ms) return;
    slots_[*slot].at_ms = at_ms;
    if (at_ms < before) {
      SiftUp(heap_pos_[*slot]);
    } else {
      SiftDown(heap_pos_[*slot]);
    }
    return;
  }
  if (slots_.empty()) {
    Resize(kMinCapacity);
  } else if ((size() + 1) * 8 > slots_.size() * 7) {
    Resize(slots_.size() * 2);
  }
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = Home(id);
  while (heap_pos_[i] != kFree) i = (i + 1) & mask;
  slots_[i] = {id, at_ms};
  heap_.push_back(static_cast<std::uint32_t>(i));
  heap_pos_[i] = static_cast<std::uint32_t>(heap_.size() - 1);
  SiftUp(heap_.size() - 1);
}

void UuidDeadlines::Remove(std::uint32_t slot) {
  const std::size_t pos = heap_pos_[slot];
  const std::uint32_t last = heap_.back();
  heap_.pop_back();
  if (pos < heap_.size()) {
    Place(pos, last);
    if (pos > 0 && Before(last, heap_[(pos - 1) / 2])) {
      SiftUp(pos);
    } else {
      SiftDown(pos);
    }
  }
  heap_pos_[slot] = kFree;
  // Backward shift: pull later entries of the probe run into the hole when
  // the hole lies between their home and where they are, so every entry
  // stays reachable from its home without tombstones.
  const std::size_t mask = slots_.size() - 1;
  std::size_t hole = slot;
  for (std::size_t j = (hole + 1) & mask; heap_pos_[j] != kFree; j = (j + 1) & mask) {
    const std::size_t home = Home(slots_[j].id);
    if (((j - home) & mask) < ((j - hole) & mask)) continue;
    slots_[hole] = slots_[j];
    Place(heap_pos_[j], static_cast<std::uint32_t>(hole));
    heap_pos_[j] = kFree;
    hole = j;
  }
}

std::size_t UuidDeadlines::LongestProbe() const {
  std::size_t longest = 0;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (heap_pos_[i] != kFree) longest = std::max(longest, (i - Home(slots_[i].id)) & mask);
  }
  return longest;
}

void UuidDeadlines::ShrinkIfSparse() {
  if (slots_.size() > kMinCapacity && size() * 8 < slots_.size()) Resize(slots_.size() / 2);
}

bool UuidDeadlines::Erase(const Uuid& id) {
  std::optional<std::uint32_t> slot = SlotOf(id);
  if (!slot) return false;
  Remove(*slot);
  ShrinkIfSparse();
  return true;
}

void UuidDeadlines::PopTop() {
  TENURE_ASSERT(!heap_.empty());
  Remove(heap_.front());
  ShrinkIfSparse();
}

std::optional<MonoMs> UuidDeadlines::Find(const Uuid& id) const {
  std::optional<std::uint32_t> slot = SlotOf(id);
  if (!slot) return std::nullopt;
  return slots_[*slot].at_ms;
}

void UuidDeadlines::Clear() {
  std::vector<Slot>().swap(slots_);
  std::vector<std::uint32_t>().swap(heap_pos_);
  std::vector<std::uint32_t>().swap(heap_);
}

void UuidDeadlines::Resize(std::size_t capacity) {
  TENURE_ASSERT(capacity >= kMinCapacity && (capacity & (capacity - 1)) == 0);
  TENURE_ASSERT(capacity < kFree);
  std::vector<Slot> old_slots = std::exchange(slots_, std::vector<Slot>(capacity));
  std::vector<std::uint32_t>(capacity, kFree).swap(heap_pos_);
  std::vector<std::uint32_t> old_heap = std::exchange(heap_, {});
  // Room for every entry until the next doubling, and no more.
  heap_.reserve(capacity * 7 / 8);
  const std::size_t mask = capacity - 1;
  for (std::uint32_t from : old_heap) {
    std::size_t i = Home(old_slots[from].id);
    while (heap_pos_[i] != kFree) i = (i + 1) & mask;
    slots_[i] = old_slots[from];
    heap_pos_[i] = static_cast<std::uint32_t>(heap_.size());
    heap_.push_back(static_cast<std::uint32_t>(i));
  }
  // The old heap's order is still a heap: the entries kept their places.
}

}  // namespace tenure::server
