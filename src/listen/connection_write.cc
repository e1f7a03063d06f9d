// Connection, responses out: the output of one response, the unsent-output
// budget shared by every connection, and lingering after a closing answer.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/assert.h"
#include "listen/connection.h"
#include "listen/connection_internal.h"
#include "listen/wire.h"
#include "tls/session.h"

namespace tenure::listen {

using connection_detail::kOutputBudgetFull;
using connection_detail::Log;
using connection_detail::WouldBlock;

namespace {

// After a response that closes the connection, unread input is discarded for
// at most this long / this much, then the socket is closed regardless.
constexpr DurationMs kLingerMs = 1000;
constexpr std::size_t kLingerBytesMax = 4 * 1024 * 1024;
// A KV answer's head with Consul's headers is about 220 bytes.
constexpr std::size_t kHeadReserveBytes = 256;

}  // namespace

// --- Writing -------------------------------------------------------------------

Connection::Output& Connection::NewOutput() {
  ReleaseOutput();
  if (out_ == nullptr) {
    out_ = std::make_unique<Output>();
  } else {
    *out_ = Output();
  }
  return *out_;
}

void Connection::PrepareWrite(HttpResponse response, bool keep_alive) {
  const MonoMs now = wire::NowMonoMs();
  ReleaseOutput();
  // Large answers held for clients that do not read could take all memory:
  // past the budget, the answer is dropped and the client told to retry.
  if (!head_request_ && response.body.size() > limits::kHttpSmallResponseBytes &&
      !MakeRoomForOutput(response.body.size(), now)) {
    response = HttpResponse::Text(429, std::string(kOutputBudgetFull));
  }
  Output& out = NewOutput();
  // One allocation for a typical head, not four growing copies.
  out.head.reserve(kHeadReserveBytes);
  const bool with_body = wire::AppendResponseHead(
      response, wire::HeadOptions{keep_alive, http10_, head_request_}, &out.head);
  if (with_body) out.body = std::move(response.body);
  out.close_after_write = !keep_alive;
  BeginOutput(out.head.size() + out.body.size(), now);
}

void Connection::PrepareSharedWrite(std::shared_ptr<const SharedAnswer> answer, bool keep_alive) {
  const HttpResponse& response = answer->response;
  // The shared head is the one of a keep-alive HTTP/1.1 GET with a body,
  // small enough to need no room in the output budget; anything else is
  // rendered for this connection alone, from a copy.
  if (!keep_alive || http10_ || head_request_ || response.status < 200 || response.status == 204 ||
      response.status == 304 || response.body.size() > limits::kHttpSmallResponseBytes) {
    PrepareWrite(response, keep_alive);
    return;
  }
  const MonoMs now = wire::NowMonoMs();
  const std::string_view date = wire::DateHeader();
  if (answer->head == nullptr || answer->head_date != date) {
    auto head = std::make_shared<std::string>();
    head->reserve(kHeadReserveBytes);
    wire::AppendResponseHead(response, wire::HeadOptions{}, head.get());
    answer->head_date = date;
    answer->head = std::move(head);
  }
  Output& out = NewOutput();
  out.shared_head = answer->head;
  out.shared_answer = std::move(answer);
  BeginOutput(out.shared_head->size() + out.shared_answer->response.body.size(), now);
}

void Connection::BeginOutput(std::size_t bytes, MonoMs now_ms) {
  phase_ = Phase::kWriting;
  out_->accounted = bytes;
  shared_->unsent_bytes += bytes;
  out_->progress_ms = now_ms;
  SetDeadline(now_ms + shared_->request_read_timeout_ms, now_ms);  // a client that never reads
}

void Connection::ReleaseOutput() {
  if (out_ == nullptr) return;
  TENURE_ASSERT(shared_->unsent_bytes >= out_->accounted);
  shared_->unsent_bytes -= out_->accounted;
  out_->accounted = 0;
}

bool Connection::MakeRoomForOutput(std::size_t bytes, MonoMs now_ms) {
  auto fits = [&] { return shared_->unsent_bytes + bytes <= shared_->unsent_bytes_max; };
  if (fits()) return true;
  std::vector<std::pair<std::size_t, std::shared_ptr<Connection>>> stalled;
  for (Connection* c = shared_->connections; c != nullptr; c = c->next_) {
    const std::size_t accounted = c->accounted_bytes();
    if (c != this && accounted > 0 &&
        now_ms - c->output_progress_ms() >= shared_->stalled_writer_ms) {
      stalled.emplace_back(accounted, c->shared_from_this());
    }
  }
  std::sort(stalled.begin(), stalled.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [size, connection] : stalled) {
    if (fits()) break;
    Log("closing a connection whose {}-byte response made no progress for {} ms", size,
        now_ms - connection->output_progress_ms());
    connection->Close();
  }
  return fits();
}

std::size_t Connection::accounted_bytes() const {
  if ((phase_ == Phase::kWriting || phase_ == Phase::kStreaming) && out_ != nullptr) {
    return out_->accounted;
  }
  if (phase_ == Phase::kHttp2) return Http2AccountedBytes();
  return 0;
}

MonoMs Connection::output_progress_ms() const {
  if (phase_ == Phase::kHttp2) return Http2ProgressMs();
  return out_ != nullptr ? out_->progress_ms : MonoMs();
}

bool Connection::WriteStep() {
  // A shared answer's head and body are written from where they are, with
  // the same one sendmsg.
  Output& out = *out_;
  const std::string_view head = out.head_bytes();
  const std::string_view body = out.body_bytes();
  const std::size_t total = head.size() + body.size();
  while (out.offset < total) {
    iovec iov[2];
    int count = 0;
    if (out.offset < head.size()) {
      iov[count++] = {const_cast<char*>(head.data()) + out.offset, head.size() - out.offset};
      if (!body.empty()) iov[count++] = {const_cast<char*>(body.data()), body.size()};
    } else {
      const std::size_t body_offset = out.offset - head.size();
      iov[count++] = {const_cast<char*>(body.data()) + body_offset, body.size() - body_offset};
    }
    const ssize_t n = SendSome(iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (WouldBlock(errno)) {
        WaitWritable();
        return false;
      }
      Close();
      return false;
    }
    out.offset += static_cast<std::size_t>(n);
    if (out.offset < total) {
      const MonoMs now = wire::NowMonoMs();
      out.progress_ms = now;
      SetDeadline(now + shared_->request_read_timeout_ms, now);  // progress extends it
    }
  }
  return FinishOutput();
}

bool Connection::FinishOutput() {
  ReleaseOutput();
  const bool close_after_write = out_->close_after_write;
  out_.reset();  // written: a parked or idle connection holds no output
  if (close_after_write) {
    BeginLinger();
    return true;
  }
  BeginRequest();
  // An answered parked request still has its disconnect watch armed, and it
  // was armed when nothing was waiting in the socket: it will fire for the
  // next request, so reading now would only cost an EAGAIN. Unless the next
  // request already arrived with this one (pipelined, read with its body):
  // then nothing more may come to fire the watch, and it is parsed now.
  if (watching_ && pending_.empty()) return false;
  if (--turn_budget_ <= 0) {  // let other clients run; continue on a fresh turn
    PostRun();
    return false;
  }
  return true;
}

void Connection::BeginLinger() {
  phase_ = Phase::kLinger;
  reader_.reset();
  std::string().swap(pending_);
  linger_bytes_ = 0;
  if (tls_ != nullptr) tls_->Shutdown();  // close_notify; what follows is discarded raw
  ::shutdown(fd_, SHUT_WR);
  const MonoMs now = wire::NowMonoMs();
  SetDeadline(now + std::min(kLingerMs, shared_->request_read_timeout_ms), now);
}

bool Connection::LingerStep() {
  const ssize_t n = ::recv(fd_, shared_->scratch.get(), ServerShared::kScratchBytes, MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EINTR) return true;
    if (WouldBlock(errno)) {
      WaitReadable();
      return false;
    }
    Close();
    return false;
  }
  linger_bytes_ += static_cast<std::size_t>(n);
  if (n == 0 || linger_bytes_ > kLingerBytesMax) {
    Close();
    return false;
  }
  return true;
}

}  // namespace tenure::listen
