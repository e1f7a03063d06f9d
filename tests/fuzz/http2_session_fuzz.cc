// Fuzz target: bytes an HTTP/2 client sends after the preface, into a real
// listener Connection (decision 0053) over a socketpair: the preface sniffed,
// an Http2Session over nghttp2, requests assembled and answered by a handler,
// gRPC streams echoed by a router that consumes what it reads, then the
// client's end of the stream. The first byte picks how the bytes arrive
// (reads of 1-256 bytes as the socket delivers them).
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "listen/client_table.h"
#include "listen/connection.h"
#include "listen/stream.h"

namespace {

using tenure::listen::ClientTable;
using tenure::listen::Connection;
using tenure::listen::HttpRequest;
using tenure::listen::HttpResponse;
using tenure::listen::Responder;
using tenure::listen::ServerShared;
using tenure::listen::Stream;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

struct Harness {
  boost::asio::io_context io;
  std::shared_ptr<ServerShared> shared;

  Harness() {
    shared = std::make_shared<ServerShared>(
        io, [](HttpRequest request, std::shared_ptr<Responder> responder) {
          responder->Send(HttpResponse::Text(200, request.method + " " + request.path));
        });
    shared->request_read_timeout_ms = 60'000;
    shared->idle_timeout_ms = 60'000;
    shared->first_byte_timeout_ms = 60'000;
    shared->connections_max = 16;
    shared->clients = std::make_shared<ClientTable>();
    shared->unsent_bytes_max = 1 << 20;
    shared->stalled_writer_ms = 60'000;
    shared->http2 = true;
    shared->http2_streams_max = 8;
    shared->http2_ping_after_ms = 60'000;
    shared->http2_ping_timeout_ms = 60'000;
    shared->stream_router = [](std::shared_ptr<Stream> stream) {
      stream->OnData([stream](std::string_view data, bool end) {
        stream->Consume(data.size());
        stream->SendData(data);
        if (end) stream->SendTrailers({{"grpc-status", "0"}});
      });
    };
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static Harness* harness = new Harness();
  const std::size_t read_size = std::size_t{data[0]} + 1;
  std::string input(kPreface);
  input.append(reinterpret_cast<const char*>(data) + 1, size - 1);

  int fds[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
  boost::asio::ip::tcp::socket socket(harness->io);
  socket.assign(boost::asio::ip::tcp::v4(), fds[0]);
  auto connection = std::make_shared<Connection>(harness->shared, std::move(socket));
  connection->Start(ClientTable::kNoSlot);

  // Feed it in reads of read_size, reading (and dropping) what it answers.
  std::size_t at = 0;
  bool shut = false;
  char sink[65536];
  for (int turn = 0; turn < 100'000 && harness->shared->open > 0; ++turn) {
    if (at < input.size()) {
      const std::size_t n = std::min(read_size, input.size() - at);
      const ssize_t sent = ::send(fds[1], input.data() + at, n, MSG_NOSIGNAL);
      if (sent > 0) at += static_cast<std::size_t>(sent);
    } else if (!shut) {
      ::shutdown(fds[1], SHUT_WR);  // the client's end: the connection closes
      shut = true;
    }
    harness->io.poll();
    harness->io.restart();
    while (::recv(fds[1], sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
  }
  connection->Close();  // stuck (it should not be): ended here, and checked below
  harness->io.poll();
  harness->io.restart();
  connection.reset();
  ::close(fds[1]);
  FUZZ_CHECK(harness->shared->open == 0);
  FUZZ_CHECK(harness->shared->unsent_bytes == 0);
  return 0;
}
