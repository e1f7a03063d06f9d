// The settings of ZooKeeper's client port (zk/client_port.h), apart from
// the port itself so that configuration code needs no socket headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/types.h"

namespace tenure::tls {
class Context;
}

namespace tenure::zk {

struct ClientPortOptions {
  // The clear-text listener (-zk-addr); off when only the TLS one is asked.
  bool clear_text = true;
  std::string host = "127.0.0.1";
  std::uint16_t port = 2181;  // 0 picks a free port (tests)
  // ZooKeeper's secure client port (-zk-tls-addr): TLS with the server's
  // certificate, a client certificate required where the context verifies
  // incoming ones. Its context is replaced on SIGHUP (SetTlsContext).
  bool tls = false;
  std::string tls_host;
  std::uint16_t tls_port = 0;
  std::shared_ptr<const tls::Context> tls_context;
  // A client context for a follower's splice to a leader whose ZooKeeper
  // address is tls:// (the cluster's CA and this server's certificate);
  // null: such a leader cannot be reached, and connections close.
  std::shared_ptr<const tls::Context> leader_tls;
  // The negotiated session timeout's bounds (ZooKeeper's
  // minSessionTimeout and maxSessionTimeout: 2 and 20 ticks of 2 s).
  std::int32_t session_timeout_min_ms = 4000;
  std::int32_t session_timeout_max_ms = 40000;
  // Open connections in all, at most the descriptor limit less 512 (the
  // HTTP listeners, raft and files need some); the next one is closed at
  // once, as ZooKeeper closes one past maxClientCnxns.
  std::size_t connections_max = 60000;
  // A new connection's ConnectRequest (or four-letter word) must arrive
  // within this.
  DurationMs handshake_timeout_ms = 10000;
  // How often the leader deletes the containers that had children and have
  // none (ZooKeeper's containerCheckIntervalMs).
  DurationMs container_sweep_ms = 60000;
};

}  // namespace tenure::zk
