#include "zk/leader_splice.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>

#include "common/host_port.h"
#include "tls/session.h"

namespace tenure::zk {
namespace asio = boost::asio;

LeaderSplice::LeaderSplice(asio::io_context& io, std::shared_ptr<const tls::Context> tls,
                           Events events)
    : io_(io), socket_(io), tls_context_(std::move(tls)), events_(std::move(events)) {}

LeaderSplice::~LeaderSplice() { Close(); }

void LeaderSplice::Close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

// Reported from the loop, so a caller of Send or Start never sees its
// connection end inside the call.
void LeaderSplice::End(const std::string& why) {
  if (closed_) return;
  Close();
  asio::post(io_, [closed = events_.closed, why] { closed(why); });
}

void LeaderSplice::Start(const std::string& address) {
  std::string_view rest = address;
  const bool tls = rest.starts_with("tls://");
  if (tls) rest.remove_prefix(6);
  Result<HostPort> where = ParseHostPort(rest);
  if (!where.ok()) return End("the leader's ZooKeeper address " + address + " does not parse");
  if (tls && tls_context_ == nullptr) {
    return End("the leader serves ZooKeeper over TLS only (" + address +
               ") and this server has no TLS certificate to dial it with");
  }
  host_ = where->host;
  address_ = address;
  dial_tls_ = tls;
  unsent_.insert(0, kRelayMark);
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(io_);
  std::weak_ptr<LeaderSplice> weak = weak_from_this();
  resolver->async_resolve(where->host, std::to_string(where->port),
                          [weak, resolver](boost::system::error_code ec,
                                           const asio::ip::tcp::resolver::results_type& results) {
                            std::shared_ptr<LeaderSplice> self = weak.lock();
                            if (self != nullptr && !self->closed_) self->Dial(ec, results);
                          });
}

void LeaderSplice::Dial(boost::system::error_code resolved,
                        const asio::ip::tcp::resolver::results_type& results) {
  if (resolved) return End("resolving " + address_ + ": " + resolved.message());
  std::weak_ptr<LeaderSplice> weak = weak_from_this();
  asio::async_connect(socket_, results,
                      [weak](boost::system::error_code ec, const asio::ip::tcp::endpoint&) {
                        std::shared_ptr<LeaderSplice> self = weak.lock();
                        if (self != nullptr && !self->closed_) self->OnConnected(ec);
                      });
}

void LeaderSplice::OnConnected(boost::system::error_code connected) {
  if (connected) return End("connecting to " + address_ + ": " + connected.message());
  if (dial_tls_) {
    auto session = tls::Session::Dial(*tls_context_, socket_.native_handle(), host_);
    if (!session.ok()) return End(std::string(session.status().message()));
    tls_ = std::move(*session);
  }
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  // Each answer goes on as it comes: no Nagle delay on the second hop.
  if (!ec) socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  if (ec) return End("setting up the link to the leader: " + ec.message());
  connected_ = true;
  Flush();
  ArmRead();
}

void LeaderSplice::Send(std::string_view bytes) {
  if (closed_) return;
  unsent_.append(bytes);
  if (connected_) Flush();
}

void LeaderSplice::Flush() {
  if (closed_ || writing_) return;
  for (;;) {
    if (sent_ == sending_.size()) {
      if (unsent_.empty()) break;
      sending_.clear();
      sending_.swap(unsent_);
      sent_ = 0;
    }
    const char* data = sending_.data() + sent_;
    const std::size_t size = sending_.size() - sent_;
    std::size_t n = 0;
    bool again = false;
    bool want_write = true;
    if (tls_ != nullptr) {
      const ssize_t wrote = tls_->Send(data, size);
      if (wrote > 0) {
        n = static_cast<std::size_t>(wrote);
      } else if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        again = true;
        want_write = tls_->wants_write();
      } else {
        return End("writing to the leader: " +
                   (tls_->error().empty() ? std::string("closed") : tls_->error()));
      }
    } else {
      boost::system::error_code ec;
      n = socket_.write_some(asio::buffer(data, size), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        again = true;
      } else if (ec) {
        return End("writing to the leader: " + ec.message());
      }
    }
    if (again) {
      writing_ = true;
      std::weak_ptr<LeaderSplice> weak = weak_from_this();
      socket_.async_wait(
          want_write ? asio::ip::tcp::socket::wait_write : asio::ip::tcp::socket::wait_read,
          [weak](boost::system::error_code ec) {
            std::shared_ptr<LeaderSplice> self = weak.lock();
            if (self == nullptr || self->closed_) return;
            self->writing_ = false;
            if (ec) return self->End("writing to the leader: " + ec.message());
            self->Flush();
          });
      return;
    }
    sent_ += n;
  }
  sending_.clear();
  sent_ = 0;
  if (finishing_) return ShutdownSending();
  asio::post(io_, [weak = weak_from_this()] {
    std::shared_ptr<LeaderSplice> self = weak.lock();
    if (self != nullptr && !self->closed_ && self->unsent() == 0) self->events_.drained();
  });
}

void LeaderSplice::FinishSending() {
  finishing_ = true;
  if (connected_ && !writing_ && unsent() == 0) ShutdownSending();
}

void LeaderSplice::ShutdownSending() {
  if (tls_ != nullptr) tls_->Shutdown();
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void LeaderSplice::ResumeReading() {
  if (connected_) ArmRead();
}

void LeaderSplice::ArmRead() {
  if (closed_ || reading_ || !events_.may_read()) return;
  reading_ = true;
  std::weak_ptr<LeaderSplice> weak = weak_from_this();
  auto readable = [weak](boost::system::error_code ec) {
    std::shared_ptr<LeaderSplice> self = weak.lock();
    if (self == nullptr || self->closed_) return;
    self->reading_ = false;
    if (ec) return self->End("reading from the leader: " + ec.message());
    self->OnReadable();
  };
  if (tls_ != nullptr && !read_starved_ && tls_->has_pending()) {
    // Records OpenSSL read ahead: no readiness announces them (a partial
    // one, after a read that wanted more, waits for readiness).
    asio::post(io_, [readable] { readable({}); });
    return;
  }
  socket_.async_wait(
      read_wants_write_ ? asio::ip::tcp::socket::wait_write : asio::ip::tcp::socket::wait_read,
      readable);
}

void LeaderSplice::OnReadable() {
  char buffer[16 * 1024];
  // A bounded number of reads per wakeup, as the connections' own reads.
  for (int i = 0; i < 16 && !closed_ && events_.may_read(); ++i) {
    std::size_t n = 0;
    if (tls_ != nullptr) {
      const ssize_t got = tls_->Receive(buffer, sizeof buffer);
      read_starved_ = got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      if (read_starved_) {
        read_wants_write_ = tls_->wants_write();
        return ArmRead();
      }
      if (got <= 0) {
        return End(got == 0 ? "the leader closed the connection"
                            : "reading from the leader: " + tls_->error());
      }
      n = static_cast<std::size_t>(got);
    } else {
      boost::system::error_code ec;
      n = socket_.read_some(asio::buffer(buffer), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) return ArmRead();
      if (ec == asio::error::eof) return End("the leader closed the connection");
      if (ec) return End("reading from the leader: " + ec.message());
    }
    events_.bytes(std::string_view(buffer, n));
  }
  if (closed_ || !events_.may_read()) return;  // ResumeReading goes on
  asio::post(io_, [weak = weak_from_this()] {
    std::shared_ptr<LeaderSplice> self = weak.lock();
    if (self != nullptr && !self->closed_) self->ArmRead();
  });
}

}  // namespace tenure::zk
