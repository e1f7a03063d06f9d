// Transport: tenure's own raft_uv_transport (decision 0012), in place of
// libraft's raft_uv_tcp, so that nothing reaches libraft from the network
// that tenure has not checked:
//
//   - every connection starts with the handshake of wire/handshake.h; with a
//     cluster key (-raft-key-file) both ends prove they hold it before a
//     raft byte flows, and the dialer must be a server of the configuration
//     at the address it advertises;
//   - inbound, libraft reads from one end of a socketpair; the transport
//     reads the network, passes each message through a wire::MessageGate
//     (types, lengths, counts, sizes, entries, vote rate) and writes what
//     passed into the other end. Outbound, once the handshake is done, the
//     socket itself is handed to libraft (it only writes on it);
//   - bounded everything: handshakes in progress and their time, connections
//     per peer and in all, a message's stall time;
//   - a join request (purpose join) from an authenticated server is handed
//     to the node, which adds it if it leads or names the leader;
//   - what each authenticated peer says about itself (name, HTTP address) is
//     kept for the leader's member records.
//
// Callbacks into libraft (accept, connect, close) are delivered from inside
// uv_run through a zero-delay uv timer, as libraft's own transport does; the
// rest runs in asio handlers. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/status.h"
#include "common/types.h"
#include "raft/raft_c.h"
#include "raft/wire/cluster_key.h"
#include "raft/wire/handshake.h"
#include "tls/context.h"

namespace boost::asio {
class io_context;
}

namespace tenure::raft {

struct TransportOptions {
  std::uint64_t id = 0;
  std::string address;       // this server's raft address, as the others dial it
  std::string bind_address;  // where to listen, when not `address`
  std::string node_name;     // sent in the handshake (member records)
  std::string http_address;  // likewise
  std::string etcd_address;  // likewise ("" when it serves no etcd API)
  std::string zk_address;    // likewise ("" when it serves no ZooKeeper port)
  wire::ClusterKey key;      // empty: no authentication (docs/security.md)
  // Mutual TLS for every raft connection (docs/tls.md), both or neither:
  // accepted links require a certificate from the CA, dialled ones present
  // this server's and check the peer's. Null: raft in clear.
  std::shared_ptr<const tls::Context> tls_accept;
  std::shared_ptr<const tls::Context> tls_dial;
  DurationMs election_timeout_ms = 500;
  // What the message gates allow (wire::GateLimits); tests shrink them.
  DurationMs message_time_ms = limits::kRaftMessageTimeMs;
  std::uint64_t inbound_bytes_max = limits::kRaftInboundBytesMax;
};

// What an authenticated peer said about itself in its latest handshake.
struct PeerAdvert {
  std::uint64_t id = 0;
  std::string raft_address;
  std::string node_name;
  std::string http_address;
  std::string etcd_address;
  std::string zk_address;
};

struct TransportCounters {
  std::uint64_t handshakes_refused = 0;  // failed or refused handshakes
  std::uint64_t links_cut = 0;           // raft connections closed for a bad message or a stall
  std::uint64_t votes_dropped = 0;       // RequestVotes over the rate
  std::uint64_t links_open = 0;
  std::uint64_t peers_lost = 0;  // times a peer's last raft link closed under us (LinkLost)
  // Filled by Node, not the transport: times this follower forgot its leader
  // because that leader's raft connections all closed (decision 0031).
  std::uint64_t leaders_forgotten = 0;
};

class Transport {
 public:
  struct Hooks {
    // Decides whether an authenticated raft connection from hello.id may
    // go on: "" yes, otherwise the reason (sent to the dialer and logged).
    std::function<std::string(const wire::Hello&)> admit;
    // A join request; `answer` must be called once (it may be later).
    std::function<void(const wire::Hello&, std::function<void(wire::JoinAnswer)> answer)> join;
    // libuv has new work queued from outside uv_run.
    std::function<void()> poke;
  };

  Transport(boost::asio::io_context& io, uv_loop_t* loop, TransportOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  void set_hooks(Hooks hooks);
  // For raft_uv_init.
  struct raft_uv_transport* raw();
  // Binds the listening socket now (before raft_start) so that an address in
  // use fails the start with the address and the system's reason.
  Status Listen();
  // The port actually bound (after Listen).
  std::uint16_t port() const;

  // New certificates (SIGHUP): connections made from now on use them.
  // REQUIRES: TLS was on from the start (both set), and both still set.
  void SetTls(std::shared_ptr<const tls::Context> accept, std::shared_ptr<const tls::Context> dial);

  std::vector<PeerAdvert> Adverts() const;
  // True while an authenticated raft connection of a member comes from
  // `ip` ("10.0.0.2", "::1"; IPv4-mapped IPv6 counts as its IPv4): that
  // host is a member of the cluster (the HTTP per-client limit lets a
  // follower's forwarded requests through). Without a cluster key or mutual
  // TLS anyone who reaches the raft port can be such a member
  // (docs/security.md).
  bool HasLinkFrom(const std::string& ip) const;
  const TransportCounters& counters() const;
  // Milliseconds since a raft message from server `id` last passed the gate
  // (any inbound connection of it); -1 if none since this transport started.
  DurationMs SinceHeardMs(std::uint64_t id) const;
  // True while server `id` counts as gone: its last inbound raft connection
  // ended from its side (EOF, reset), its TLS end of an outbound one did, or
  // a dial to it failed to connect (refused), with no inbound connection of
  // it open; until it opens a new one. A process killed with -9 gets there
  // at once (its kernel closes its sockets). `why` gets what happened.
  // The node forgets a leader that is gone (decision 0031).
  bool LinkLost(std::uint64_t id, std::string* why = nullptr) const;

  // Asks the server at raft `address` to add this one (purpose join).
  void Join(const std::string& address, std::function<void(Result<wire::JoinAnswer>)> done);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace tenure::raft
