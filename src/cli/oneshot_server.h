// OneShotServer: accepts connections on an asio acceptor (a unix socket for
// the candidate agent, TCP for its probe), reads one request up to a
// delimiter, hands it to a handler that answers asynchronously, writes the
// answer and closes. Requests larger than max_request_bytes get the
// handler's answer to an empty request with `too_large` set; a client that
// sends nothing for idle_timeout_ms is dropped. LOOP THREAD ONLY.
#pragma once

#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace tenure::cli {

struct OneShotRequest {
  std::string text;        // up to and including the delimiter
  bool too_large = false;  // no delimiter within the size limit
};

template <typename Protocol>
class OneShotServer {
 public:
  using Reply = std::function<void(std::string answer)>;
  using Handler = std::function<void(const OneShotRequest& request, Reply reply)>;

  OneShotServer(typename Protocol::acceptor acceptor, std::string delimiter,
                std::size_t max_request_bytes, long idle_timeout_ms, Handler handler)
      : acceptor_(std::move(acceptor)),
        delimiter_(std::move(delimiter)),
        max_request_bytes_(max_request_bytes),
        idle_timeout_ms_(idle_timeout_ms),
        handler_(std::move(handler)) {
    Accept();
  }
  ~OneShotServer() {
    life_.reset();
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  }

 private:
  struct Connection {
    explicit Connection(typename Protocol::socket s)
        : socket(std::move(s)), timer(socket.get_executor()) {}
    typename Protocol::socket socket;
    boost::asio::steady_timer timer;
    std::string buffer;
    std::string answer;
  };

  void Accept() {
    acceptor_.async_accept([this, life = std::weak_ptr<char>(life_)](
                               const boost::system::error_code& ec, typename Protocol::socket s) {
      if (life.expired() || ec == boost::asio::error::operation_aborted) return;
      if (!ec) Serve(std::make_shared<Connection>(std::move(s)));
      Accept();
    });
  }

  void Serve(std::shared_ptr<Connection> conn) {
    conn->timer.expires_after(std::chrono::milliseconds(idle_timeout_ms_));
    conn->timer.async_wait([conn](const boost::system::error_code& ec) {
      if (!ec) {
        boost::system::error_code ignored;
        conn->socket.close(ignored);
      }
    });
    boost::asio::async_read_until(
        conn->socket, boost::asio::dynamic_buffer(conn->buffer, max_request_bytes_), delimiter_,
        [this, conn, life = std::weak_ptr<char>(life_)](const boost::system::error_code& ec,
                                                        std::size_t n) {
          if (life.expired()) return;
          OneShotRequest request;
          if (ec == boost::asio::error::not_found) {
            request.too_large = true;
          } else if (ec) {
            conn->timer.cancel();
            return;  // closed, reset or timed out before a whole request
          } else {
            request.text = conn->buffer.substr(0, n);
          }
          conn->timer.cancel();  // the handler answers in its own time
          handler_(request, [conn](std::string answer) {
            conn->answer = std::move(answer);
            boost::asio::async_write(conn->socket, boost::asio::buffer(conn->answer),
                                     [conn](const boost::system::error_code&, std::size_t) {
                                       boost::system::error_code ignored;
                                       conn->socket.shutdown(Protocol::socket::shutdown_both,
                                                             ignored);
                                       conn->socket.close(ignored);
                                       conn->timer.cancel();
                                     });
          });
        });
  }

  typename Protocol::acceptor acceptor_;
  std::string delimiter_;
  std::size_t max_request_bytes_;
  long idle_timeout_ms_;
  Handler handler_;
  std::shared_ptr<char> life_ = std::make_shared<char>(0);
};

}  // namespace tenure::cli
