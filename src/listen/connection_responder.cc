// ConnectionResponder: the Responder handed to the handler with each request,
// streamed answers included (connection_stream.cc).
#include <boost/asio/post.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>

#include "listen/connection.h"
#include "listen/connection_internal.h"

namespace tenure::listen {

using connection_detail::Log;

namespace {

// An OnClose or OnDrained callback that throws is logged; the others still run.
void RunResponderCallback(const std::function<void()>& callback, std::string_view what) {
  try {
    callback();
  } catch (const std::exception& e) {
    Log("{} callback threw: {}", what, e.what());
  } catch (...) {
    Log("{} callback threw", what);
  }
}

void RunOnClose(const std::function<void()>& callback) {
  RunResponderCallback(callback, "OnClose");
}

}  // namespace

ConnectionResponder::ConnectionResponder(std::shared_ptr<Connection> connection)
    : connection_(std::move(connection)), io_(&connection_->io()) {}

ConnectionResponder::~ConnectionResponder() {
  if (connection_ != nullptr) connection_->Abandoned(this);
}

void ConnectionResponder::Send(HttpResponse response) {
  // Sent before, the client left, or a stream answers instead.
  if (connection_ == nullptr || streaming_) return;
  sent_ = true;
  const auto connection = std::move(connection_);
  connection->Respond(this, std::move(response));
}

void ConnectionResponder::SendShared(std::shared_ptr<const SharedAnswer> answer) {
  if (connection_ == nullptr || streaming_) return;
  sent_ = true;
  const auto connection = std::move(connection_);
  connection->RespondShared(this, std::move(answer));
}

// A streamed answer: the connection keeps its responder (and this the
// connection) until EndStream, so a client that leaves meanwhile closes it.
// Each call holds the connection, which a Close inside may let go.
void ConnectionResponder::StartStream(int status, const HeaderFields& headers) {
  if (connection_ == nullptr || streaming_) return;
  streaming_ = true;
  const auto connection = connection_;
  connection->StartStream(this, status, headers);
}

void ConnectionResponder::SendChunk(std::string_view bytes) {
  if (connection_ == nullptr || !streaming_ || bytes.empty()) return;
  const auto connection = connection_;
  connection->StreamChunk(this, bytes);
}

void ConnectionResponder::EndStream() {
  if (connection_ == nullptr || !streaming_) return;
  sent_ = true;
  on_close_ = nullptr;  // an ended stream is answered: nothing to drop any more
  on_drained_.reset();
  const auto connection = std::move(connection_);
  connection->EndStream(this);
}

std::size_t ConnectionResponder::unsent_bytes() const {
  return connection_ != nullptr ? connection_->StreamUnsentBytes(this) : 0;
}

void ConnectionResponder::OnDrained(std::function<void()> callback) {
  if (!callback) {
    on_drained_.reset();
  } else if (on_drained_ == nullptr) {
    on_drained_ = std::make_unique<std::function<void()>>(std::move(callback));
  } else {
    *on_drained_ = std::move(callback);
  }
}

void ConnectionResponder::Drained() {
  if (on_drained_ == nullptr) return;
  boost::asio::post(*io_,
                    [callback = *on_drained_] { RunResponderCallback(callback, "OnDrained"); });
}

void ConnectionResponder::OnClose(std::function<void()> callback) {
  if (!callback || sent_) return;  // an answered request can no longer be abandoned
  if (!on_close_) {
    on_close_ = std::move(callback);
  } else {  // in the order given, each on its own (a throw stops only itself)
    on_close_ = [first = std::move(on_close_), then = std::move(callback)] {
      RunOnClose(first);
      RunOnClose(then);
    };
  }
  if (closed_) PostOnClose();
}

void ConnectionResponder::MarkClosed() {
  closed_ = true;
  connection_.reset();  // the caller (Close) holds the connection
  PostOnClose();
}

// Posted, so a callback never runs inside Close() (which may itself run inside
// a handler or Stop()) nor inside OnClose().
void ConnectionResponder::PostOnClose() {
  if (!on_close_) return;
  boost::asio::post(*io_, [callback = std::move(on_close_)] { RunOnClose(callback); });
  on_close_ = nullptr;
}

}  // namespace tenure::listen
