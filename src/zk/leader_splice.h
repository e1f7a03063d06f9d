// A follower's link to the leader's ZooKeeper port for one client
// connection (decision 0056, "Followers"): the client's bytes go to the
// leader as they came, the leader's come back as they are, so the leader
// sees an ordinary client: it opens or reopens the session, decides every
// request by the client's own auth packets and ends the session by its
// timeout. The follower adds nothing and gains no right: it sends the
// relay mark first (kRelayMark), which only tells the leader not to splice
// the connection again, so a stale view of who leads never makes a loop.
//
// Clear text, or TLS for a tls:// address (the follower presents its own
// certificate where the leader verifies incoming ones). Back-pressure both
// ways: the connection stops reading its client while unsent() is past its
// limit, and the splice stops reading the leader while may_read() says
// the client's side is full (ResumeReading restarts it). Loop thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace tenure::tls {
class Context;
class Session;
}  // namespace tenure::tls

namespace tenure::zk {

// The first 4 bytes of a spliced connection. As a frame length it is far
// past kFrameBytesMax, so no ZooKeeper client sends it.
inline constexpr std::string_view kRelayMark = "tnrl";

class LeaderSplice : public std::enable_shared_from_this<LeaderSplice> {
 public:
  struct Events {
    std::function<void(std::string_view)> bytes;     // from the leader, in order
    std::function<bool()> may_read;                  // false: the client's side is full
    std::function<void()> drained;                   // unsent() fell to 0
    std::function<void(const std::string&)> closed;  // the leader's side ended (why)
  };
  // `tls`: a client context for tls:// addresses (null: such an address
  // cannot be dialled, and the splice ends at once).
  LeaderSplice(boost::asio::io_context& io, std::shared_ptr<const tls::Context> tls, Events events);
  ~LeaderSplice();
  LeaderSplice(const LeaderSplice&) = delete;
  LeaderSplice& operator=(const LeaderSplice&) = delete;

  // Dials `address` (host:port or tls://host:port) and sends the mark, then
  // what Send gave. Events come from the loop, never inside a call.
  void Start(const std::string& address);
  void Send(std::string_view bytes);
  std::size_t unsent() const { return unsent_.size() + sending_.size() - sent_; }
  void ResumeReading();
  // The client closed its side: what it sent goes on, then this side of
  // the link closes too (the leader then ends the connection).
  void FinishSending();
  // Ends the link; no event comes after. Idempotent.
  void Close();

 private:
  void Dial(boost::system::error_code resolved,
            const boost::asio::ip::tcp::resolver::results_type& results);
  void OnConnected(boost::system::error_code connected);
  void Flush();
  void ArmRead();
  void OnReadable();
  void End(const std::string& why);
  void ShutdownSending();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::socket socket_;
  std::shared_ptr<const tls::Context> tls_context_;
  std::unique_ptr<tls::Session> tls_;
  Events events_;
  std::string address_;  // as Start was given it, for messages
  std::string host_;     // the name the leader's certificate must show
  bool dial_tls_ = false;
  bool connected_ = false;
  bool closed_ = false;
  bool reading_ = false;
  bool writing_ = false;
  bool read_wants_write_ = false;
  bool read_starved_ = false;  // as Connection's: a partial TLS record waits
  bool finishing_ = false;
  std::string sending_;  // OpenSSL retries a write from the same bytes
  std::size_t sent_ = 0;
  std::string unsent_;
};

}  // namespace tenure::zk
