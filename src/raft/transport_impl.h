// Transport::Impl and its connections, private to src/raft. Split over
// transport.cc (the libraft glue, listening, the mailbox into libraft,
// bookkeeping), transport_inbound.cc (Incoming, InboundLink) and
// transport_outbound.cc (Outgoing, OutboundLink).
//
//   Incoming  an accepted socket in its handshake (listener side); becomes an
//             InboundLink (purpose raft) or answers a join.
//   InboundLink  network -> MessageGate -> socketpair -> libraft.
//   Outgoing  a dial: connect, handshake (dialer side), then the socket goes
//             to libraft (purpose raft) or a join answer is awaited.
//
// Every connection holds a weak_ptr to the Impl and checks it in each
// handler: one that completes after the Transport is gone does nothing.
// Loop thread only.
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/log_limiter.h"
#include "raft/link_stream.h"
#include "raft/transport.h"
#include "raft/wire/message_gate.h"

namespace tenure::raft {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

MonoMs TransportNowMs();

// The peer closed or reset the connection (with TLS, possibly without
// close_notify): an ordinary end, not worth a log line.
bool PeerHungUp(const boost::system::error_code& ec);

// Shared by the inbound (transport_inbound.cc) and outbound
// (transport_outbound.cc) connections.
inline constexpr std::size_t kHandshakeReadBytes = 4096;
inline constexpr std::size_t kLinkReadBytes = 64 * 1024;
// A join answer waits for the leader to add and catch up the new server.
inline constexpr DurationMs kJoinAnswerTimeoutMs = 60'000;
// Raft connections carry small messages that should leave at once, and may
// sit idle for long: keep-alive finds a peer that vanished without a FIN.
void TuneLinkSocket(int fd);
wire::Nonce FreshNonce();

class Incoming;
class InboundLink;
class OutboundLink;
class Outgoing;

struct Transport::Impl : std::enable_shared_from_this<Transport::Impl> {
  Impl(asio::io_context& io_context, uv_loop_t* uv_loop, TransportOptions transport_options);
  ~Impl();

  // libraft's raft_uv_transport, pointing back here (raw.impl).
  static int RawInit(struct raft_uv_transport* t, raft_id id, const char* address);
  static int RawListen(struct raft_uv_transport* t, raft_uv_accept_cb cb);
  static int RawConnect(struct raft_uv_transport* t, struct raft_uv_connect* req, raft_id id,
                        const char* address, raft_uv_connect_cb cb);
  static void RawClose(struct raft_uv_transport* t, raft_uv_transport_close_cb cb);

  Status Listen();
  void Accept();
  // Runs `callback` inside uv_run, after what was posted before it.
  void PostToRaft(std::function<void()> callback);
  static void MailboxFired(uv_timer_t* timer);
  // Closes every socket; pending connects are cancelled through the mailbox.
  void ShutDownNetwork();

  // From the connections.
  // A socketpair: libraft gets one end as a uv pipe (*raft_end), the
  // transport keeps the other (*ours). "" or why it could not be made.
  std::string PipeToRaft(uv_pipe_t** raft_end, asio::local::stream_protocol::socket* ours);
  void HandshakeDone(const std::shared_ptr<Incoming>& incoming);
  void IncomingFinished(Incoming* incoming);
  void LinkClosed(InboundLink* link);
  void OutboundLinkClosed(OutboundLink* link);
  void OutgoingFinished(Outgoing* outgoing);
  std::string AdmitRaft(const wire::Hello& hello);
  void NoteDialFailure(std::uint64_t id, const std::string& address, const std::string& why);
  void NoteDialSuccess(std::uint64_t id, const std::string& address);
  // A connection with server `id` ended from its side or could not be made
  // (`why`): it is lost unless an inbound connection of it is still open.
  void NotePeerGone(std::uint64_t id, const std::string& why);

  // What every inbound link's gate enforces.
  wire::GateLimits MakeGateLimits() const;

  asio::io_context& io;
  uv_loop_t* loop;
  TransportOptions options;
  // Shared by every inbound link's gate: votes per member, bytes in progress.
  std::shared_ptr<wire::InboundLedger> ledger;
  Hooks hooks;
  struct raft_uv_transport raw {};

  tcp::acceptor acceptor;
  bool listening = false;
  bool accepting = false;
  raft_uv_accept_cb accept_cb = nullptr;
  bool raft_closing = false;

  uv_timer_t mailbox{};
  bool mailbox_initialized = false;
  bool mailbox_armed = false;
  std::vector<std::function<void()>> mail;

  std::set<std::shared_ptr<Incoming>> incoming;
  std::list<std::shared_ptr<InboundLink>> links;           // oldest first
  std::set<std::shared_ptr<OutboundLink>> outbound_links;  // over TLS only
  std::set<std::shared_ptr<Outgoing>> outgoing;
  std::map<std::uint64_t, PeerAdvert> adverts;
  TransportCounters counters;
  // When (TransportNowMs) each peer's latest raft bytes passed the gate.
  std::map<std::uint64_t, MonoMs> heard_ms;
  // Peers that count as gone (Transport::LinkLost), with what happened.
  std::map<std::uint64_t, std::string> lost;

  // Dial failures per peer: logged when the reason changes, or once a minute.
  struct DialState {
    std::string last_failure;
    MonoMs logged_at_ms = MonoMs(-1);
    bool failing = false;
  };
  std::map<std::uint64_t, DialState> dial_state;
  LogLimiter refusal_log{20, "tenure raft: "};
  LogLimiter link_log{20, "tenure raft: "};
};

// An accepted connection in its handshake.
class Incoming : public std::enable_shared_from_this<Incoming> {
 public:
  Incoming(std::weak_ptr<Transport::Impl> owner, std::unique_ptr<LinkStream> stream,
           std::string remote);
  void Start();
  void Close();
  // After a successful join handshake: writes the answer, then closes.
  void AnswerJoin(const wire::JoinAnswer& answer);

  std::unique_ptr<LinkStream> TakeStream() { return std::move(stream_); }
  const std::string& remote() const { return remote_; }
  wire::ListenerHandshake& handshake() { return *handshake_; }

 private:
  void Read();
  void Send(std::string bytes, bool then_close);
  void Refused(const std::string& why);

  std::weak_ptr<Transport::Impl> owner_;
  std::unique_ptr<LinkStream> stream_;
  asio::steady_timer timer_;
  std::string remote_;
  std::unique_ptr<wire::ListenerHandshake> handshake_;
  std::unique_ptr<char[]> buffer_;
  std::string sending_;
  bool closed_ = false;
  bool waiting_for_answer_ = false;
};

// An inbound raft connection: network -> gate -> socketpair -> libraft.
class InboundLink : public std::enable_shared_from_this<InboundLink> {
 public:
  InboundLink(std::weak_ptr<Transport::Impl> owner, std::unique_ptr<LinkStream> network,
              asio::local::stream_protocol::socket pipe, std::uint64_t peer_id, std::string remote,
              wire::GateLimits limits, std::shared_ptr<wire::InboundLedger> ledger);
  void Start(std::string leftover);
  // Closes both sockets (libraft sees EOF); logs `why` if not empty.
  void Close(const std::string& why);
  std::uint64_t peer_id() const { return peer_id_; }
  bool closed() const { return closed_; }
  const std::string& remote() const { return remote_; }  // "IP:PORT"

 private:
  void Read();
  void Process(std::string_view data);
  void WatchPipe();
  // While a message is in progress, a timer at its deadline (the gate's).
  void ArmDeadline(MonoMs now_ms);

  std::weak_ptr<Transport::Impl> owner_;
  std::unique_ptr<LinkStream> network_;
  asio::local::stream_protocol::socket pipe_;
  asio::steady_timer deadline_;
  std::uint64_t peer_id_;
  std::string remote_;
  wire::MessageGate gate_;
  std::unique_ptr<char[]> buffer_;
  std::string out_;
  std::uint64_t deadline_generation_ = 0;
  bool closed_ = false;
};

// An outbound raft connection over TLS: libraft writes into one end of a
// socketpair and this encrypts what it reads from the other end onto the
// network. libraft only writes on outbound connections; what the peer sends
// (TLS records only) is read and dropped, and an end that closes closes both.
class OutboundLink : public std::enable_shared_from_this<OutboundLink> {
 public:
  OutboundLink(std::weak_ptr<Transport::Impl> owner, std::unique_ptr<LinkStream> network,
               asio::local::stream_protocol::socket pipe, std::uint64_t peer_id);
  void Start();
  void Close(const std::string& why);

 private:
  void ReadPipe();
  void ReadNetwork();

  std::weak_ptr<Transport::Impl> owner_;
  std::unique_ptr<LinkStream> network_;
  asio::local::stream_protocol::socket pipe_;
  std::uint64_t peer_id_;
  std::unique_ptr<char[]> from_raft_;
  std::unique_ptr<char[]> from_peer_;
  bool closed_ = false;
};

// A dial: connect and handshake, then hand the socket to libraft (raft) or
// wait for the join answer (join).
class Outgoing : public std::enable_shared_from_this<Outgoing> {
 public:
  using RaftDone = std::function<void(int status, uv_stream_t* stream)>;
  using JoinDone = std::function<void(Result<wire::JoinAnswer>)>;

  Outgoing(std::weak_ptr<Transport::Impl> owner, std::uint64_t peer_id, std::string address,
           wire::Purpose purpose);
  void StartRaft(struct raft_uv_connect* req, raft_uv_connect_cb cb);
  void StartJoin(JoinDone done);
  // Cancels the dial; a raft connect gets RAFT_CANCELED through the mailbox.
  void Cancel();

 private:
  void Connect();
  // Binds the dial's source to -raft-bind-addr's IP; "" or why it failed.
  std::string BindSource(const asio::ip::address& target);
  void SecureThenHandshake();
  void Handshake();
  void Read();
  // Raft over TLS: libraft gets one end of a socketpair, an OutboundLink
  // the other. False if that could not be set up (Fail was called).
  bool HandToRaftThroughTls(Transport::Impl& owner, uv_stream_t** stream);
  void Fail(const std::string& why);
  // Closes the dial once; tells the join's caller or libraft (raft_status).
  void Finish(const std::string& why, int raft_status);
  void Succeed();

  std::weak_ptr<Transport::Impl> owner_;
  std::uint64_t peer_id_;
  std::string address_;
  wire::Purpose purpose_;
  tcp::socket socket_;                  // while connecting
  std::unique_ptr<LinkStream> stream_;  // from the TLS handshake on
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::unique_ptr<wire::DialerHandshake> handshake_;
  std::unique_ptr<char[]> buffer_;
  std::string received_;  // join: bytes after the verdict
  struct raft_uv_connect* req_ = nullptr;
  raft_uv_connect_cb cb_ = nullptr;
  JoinDone join_done_;
  bool finished_ = false;
};

}  // namespace tenure::raft
