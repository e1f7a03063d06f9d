// ClientTable: the open connections of each client address, for the
// per-client connection limit (limits::kHttpConnectionsPerClientDefault,
// Consul's limits.http_max_conns_per_client). One table is shared by a
// server's HTTP and HTTPS listeners, as Consul's one limiter is, so a client
// holds at most the limit over both. An address is the exact IP, as Consul
// keys it (IPv4 as its IPv4-mapped IPv6 form): a /64 would lump together
// every host of an IPv6 LAN.
//
// A connection takes a Slot when it is served and gives it back when it
// closes; the address is forgotten with its last connection, so the table
// holds one entry per address with a connection open. A Slot is 4 bytes, kept
// in the connection (decision 0035 counts its bytes). Pure, no I/O; loop
// thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tenure::listen {

struct ClientAddress {
  std::array<std::uint8_t, 16> bytes{};  // IPv6, or ::ffff:a.b.c.d

  static ClientAddress V4(const std::array<std::uint8_t, 4>& v4);
  static ClientAddress V6(const std::array<std::uint8_t, 16>& v6) { return {v6}; }
  bool operator==(const ClientAddress& other) const = default;
  // "127.0.0.2", "::1": for logs.
  std::string ToString() const;
};

class ClientTable {
 public:
  using Slot = std::uint32_t;
  static constexpr Slot kNoSlot = UINT32_MAX;

  // Connections open from `address`.
  std::size_t Count(const ClientAddress& address) const;
  // Counts one more connection from `address`; its Slot, for Remove.
  Slot Add(const ClientAddress& address);
  // Counts one connection less. REQUIRES: `slot` came from Add and was not
  // removed since.
  void Remove(Slot slot);
  // Addresses with a connection open.
  std::size_t addresses() const { return index_.size(); }

 private:
  struct Hash {
    std::size_t operator()(const ClientAddress& address) const;
  };
  struct Entry {
    ClientAddress address;
    std::uint32_t connections = 0;  // 0: the slot is free
  };
  std::unordered_map<ClientAddress, Slot, Hash> index_;
  std::vector<Entry> entries_;
  std::vector<Slot> free_;
};

}  // namespace tenure::listen
