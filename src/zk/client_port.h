// ZooKeeper's client port (decision 0056): a TCP listener on the server's
// loop whose connections speak ZooKeeper's protocol over the Server. It
// owns the connections (zk/connection.h), opens and reopens sessions (a
// ZooKeeper session is a numbered tenure session, its password derived
// from the replicated secret, zk/session_auth.h), and counts what srvr and
// mntr report. Loop thread only.
//
// The leader also deletes the containers that had children and have none
// (ZooKeeper's ContainerManager), every container_sweep_ms.
//
// The leader serves; a follower splices each new client connection to the
// leader's port (zk/leader_splice.h), or closes it unanswered while it
// knows no leader with a ZooKeeper address, as a ZooKeeper server that is
// not serving does, and the client tries the next server of its connect
// string (docs/zookeeper-compat.md).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "zk/client_port_options.h"
#include "zk/connection_table.h"
#include "zk/four_letter.h"
#include "zk/ready_set.h"
#include "zk/records.h"
#include "zk/watch_table.h"

namespace tenure::server {
class Server;
}
namespace tenure::state {
struct Changes;
}

namespace tenure::zk {

class Connection;

class ClientPort {
 public:
  ClientPort(server::Server& server, boost::asio::io_context& io);
  ~ClientPort();
  ClientPort(const ClientPort&) = delete;
  ClientPort& operator=(const ClientPort&) = delete;

  // Opens the listeners the options ask for (clear text, TLS or both), all
  // or none; *clear_text_failed says whether the clear-text one was the
  // one that could not open (-dev's 2181 gives way, the TLS port does not).
  Status Listen(const ClientPortOptions& options, bool* clear_text_failed = nullptr);
  std::uint16_t port() const;      // the clear-text listener's, 0 if none
  std::uint16_t tls_port() const;  // the TLS listener's, 0 if none
  // New TLS connections use `context` (SIGHUP's reload); open ones keep theirs.
  void SetTlsContext(std::shared_ptr<const tls::Context> context);
  // New splices to the leader dial with `context` (SIGHUP's reload).
  void SetLeaderTls(std::shared_ptr<const tls::Context> context);
  // Stops accepting and closes every connection (their sessions stay, as a
  // ZooKeeper server's shutdown leaves them to expire or move).
  void Stop();
  std::size_t connection_count() const { return connections_.size(); }

  // --- For connections ---------------------------------------------------
  server::Server& server() { return server_; }
  boost::asio::io_context& io() { return io_; }
  const ClientPortOptions& options() const { return options_; }
  // Every read lands here first (one buffer for all connections).
  char* scratch() { return scratch_.get(); }
  static constexpr std::size_t kScratchBytes = 64 * 1024;
  // Whether this server serves ZooKeeper requests now (it leads).
  bool Serving() const;

  // Opens a session for `request` (sessionId 0) or reopens one, as
  // ZooKeeper's processConnectRequest does; `done` gets the answer (timeOut
  // 0 for a session that cannot be reopened) or an error: the connection
  // then ends unanswered. `connection` is recorded as the session's, and an
  // older connection of it on this server is closed.
  using ConnectDone = std::function<void(Result<ConnectResponse>)>;
  void Connect(const ConnectRequest& request, const std::shared_ptr<Connection>& connection,
               ConnectDone done);
  void Forget(const Connection* connection);  // it closed
  // Adds a connection's socket to the port's ready set; false if it could
  // not be (the connection closes).
  bool JoinReadySet(int fd, std::uint64_t number) { return ready_.Add(fd, number); }
  void LeaveReadySet(int fd) { ready_.Remove(fd); }

  // Watches (decision 0056 section 5): the table every connection sets its
  // watches in, by its number; events go out as changes apply.
  WatchTable& watches() { return watches_; }
  // Runs `then` once the watch events of the entry at `index` went out (at
  // once if they have), so that a write's answer follows the events it
  // caused on its own connection, as ZooKeeper's does.
  void AfterEventsOf(LogIndex index, std::function<void()> then);

  PortFacts Facts() const;
  // The metrics' gauges (connections, watches) brought up to date.
  void UpdateGauges();
  void CountReceived() { ++received_; }
  void CountSent() { ++sent_; }
  void CountLatency(DurationMs ms);

 private:
  void Accept(boost::asio::ip::tcp::acceptor& acceptor, bool tls);
  void EnsureSecret(std::function<void(Status)> done);
  void CreateSession(const ConnectRequest& request, std::int32_t timeout_ms,
                     const std::shared_ptr<Connection>& connection, ConnectDone done);
  void Adopt(std::int64_t session, const std::shared_ptr<Connection>& connection);
  void OnChanges(const state::Changes& changes);
  // Runs `run` every `every_ms` on `timer` until Stop.
  void ArmEvery(boost::asio::steady_timer& timer, DurationMs every_ms, void (ClientPort::*run)());
  void SweepContainers();
  void CheckLiveness();
  void Deliver(const std::vector<WatchTable::Fired>& fired);

  server::Server& server_;
  boost::asio::io_context& io_;
  ClientPortOptions options_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;      // clear text
  std::unique_ptr<boost::asio::ip::tcp::acceptor> tls_acceptor_;  // TLS
  boost::asio::steady_timer sweep_timer_;
  // Every kLivenessCheckMs the port closes what ZooKeeper's server would:
  // a connection that has not opened its session within the handshake's
  // time, and one whose session ended (its timeout passed with no request,
  // or another connection closed it) or whose server stopped leading, and
  // one spliced to a server that no longer leads. One
  // timer for all, so an idle connection holds none; sessions are looked
  // up only after the sessions table changed.
  static constexpr DurationMs kLivenessCheckMs = 500;
  boost::asio::steady_timer liveness_timer_;
  bool sessions_changed_ = false;
  bool stopped_ = false;
  std::unique_ptr<char[]> scratch_;
  ConnectionTable<Connection> connections_;  // by number, and by session
  ReadySet ready_;                           // every connection's socket, by number
  WatchTable watches_;
  std::uint64_t change_listener_ = 0;
  LogIndex events_through_;  // the applied index whose events went out
  std::vector<std::pair<LogIndex, std::function<void()>>> after_events_;
  std::vector<std::function<void(Status)>> secret_waiters_;
  MonoMs opened_ms_;
  std::int64_t received_ = 0;
  std::int64_t sent_ = 0;
  std::int64_t latency_count_ = 0;
  std::int64_t latency_sum_ms_ = 0;
  std::int64_t latency_min_ms_ = 0;
  std::int64_t latency_max_ms_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tenure::zk
