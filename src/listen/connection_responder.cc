// ConnectionResponder: the Responder handed to the handler with each request.
#include <boost/asio/post.hpp>
#include <exception>
#include <functional>
#include <utility>

#include "listen/connection.h"
#include "listen/connection_internal.h"

namespace tenure::listen {

using connection_detail::Log;

namespace {

// An OnClose callback that throws is logged; the others still run.
void RunOnClose(const std::function<void()>& callback) {
  try {
    callback();
  } catch (const std::exception& e) {
    Log("OnClose callback threw: {}", e.what());
  } catch (...) {
    Log("OnClose callback threw");
  }
}

}  // namespace

ConnectionResponder::ConnectionResponder(std::shared_ptr<Connection> connection)
    : connection_(std::move(connection)), io_(&connection_->io()) {}

ConnectionResponder::~ConnectionResponder() {
  if (connection_ != nullptr) connection_->Abandoned(this);
}

void ConnectionResponder::Send(HttpResponse response) {
  if (connection_ == nullptr) return;  // sent before, or the client left
  sent_ = true;
  const auto connection = std::move(connection_);
  connection->Respond(this, std::move(response));
}

void ConnectionResponder::SendShared(std::shared_ptr<const SharedAnswer> answer) {
  if (connection_ == nullptr) return;
  sent_ = true;
  const auto connection = std::move(connection_);
  connection->RespondShared(this, std::move(answer));
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
