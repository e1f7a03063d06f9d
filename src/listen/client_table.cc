#include "listen/client_table.h"

#include <arpa/inet.h>

#include <cstring>

#include "common/assert.h"

namespace tenure::listen {
namespace {

constexpr std::array<std::uint8_t, 12> kV4MappedPrefix = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

}  // namespace

ClientAddress ClientAddress::V4(const std::array<std::uint8_t, 4>& v4) {
  ClientAddress address;
  std::memcpy(address.bytes.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size());
  std::memcpy(address.bytes.data() + kV4MappedPrefix.size(), v4.data(), v4.size());
  return address;
}

std::string ClientAddress::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (std::memcmp(bytes.data(), kV4MappedPrefix.data(), kV4MappedPrefix.size()) == 0) {
    ::inet_ntop(AF_INET, bytes.data() + kV4MappedPrefix.size(), text, sizeof(text));
  } else {
    ::inet_ntop(AF_INET6, bytes.data(), text, sizeof(text));
  }
  return text;
}

std::size_t ClientTable::Hash::operator()(const ClientAddress& address) const {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  std::memcpy(&high, address.bytes.data(), 8);
  std::memcpy(&low, address.bytes.data() + 8, 8);
  // Mixed so that addresses differing only in their last bytes spread.
  return static_cast<std::size_t>((low * 0x9E3779B97F4A7C15ull) ^ (high + (low >> 29)));
}

std::size_t ClientTable::Count(const ClientAddress& address) const {
  const auto it = index_.find(address);
  return it == index_.end() ? 0 : entries_[it->second].connections;
}

ClientTable::Slot ClientTable::Add(const ClientAddress& address) {
  const auto [it, inserted] = index_.try_emplace(address, kNoSlot);
  if (inserted) {
    if (!free_.empty()) {
      it->second = free_.back();
      free_.pop_back();
    } else {
      it->second = static_cast<Slot>(entries_.size());
      entries_.emplace_back();
    }
    entries_[it->second] = Entry{address, 0};
  }
  ++entries_[it->second].connections;
  return it->second;
}

void ClientTable::Remove(Slot slot) {
  TENURE_ASSERT(slot < entries_.size());
  Entry& entry = entries_[slot];
  TENURE_ASSERT(entry.connections > 0);
  if (--entry.connections > 0) return;
  index_.erase(entry.address);
  free_.push_back(slot);
}

}  // namespace tenure::listen
