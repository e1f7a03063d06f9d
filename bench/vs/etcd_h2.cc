// etcd's side of tenure_vs on a light client (--client h2): gRPC's wire
// protocol spoken directly, HTTP/2 by nghttp2 on this one thread's epoll
// loop and etcd's messages by protoc's C++ classes, with nothing else
// between the workload and the socket.
//
// Why a second client: gRPC's C++ library runs about 70,000 instructions
// per unary call and hands every completion between its own threads
// (docs/benchmarks-etcd-api.md), so on a 2-core machine the load generator,
// not the server under test, set the throughput of every etcd row. This
// client sends the same requests on the same HTTP/2 streams (the same
// paths, headers, message framing and trailers a gRPC client exchanges)
// at a fraction of the cost, and both servers, tenure and etcd, are driven
// by it alike. The requests are those of etcd_side.cc, which stays the
// reference client (a real gRPC stack; TLS; watches and the other
// workloads): put, lease grant+revoke, keepalive on a LeaseKeepAlive
// stream per client, concurrency.Mutex's lock cycle (independent locks
// and one hot lock, with waitDeletes' Watch), and watch fan-out (a Watch
// stream per watcher).
//
// With --ca-file, TLS by OpenSSL (ALPN h2, the server's certificate checked
// against the CA and the address dialled or --server-name, the client's
// certificate when given), as gRPC's SSL credentials. Every wait is bounded: a connection that
// closes or a call that does not finish within the phase's limit fails the measurement with an
// error.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "driver.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"
#include "etcd_workload.h"
#include "tls/context.h"

namespace tenure::vs {
namespace {

namespace pb = etcdserverpb;
using etcd_workload::DeleteWait;

Result Failed(std::string error) {
  Result r;
  r.error = std::move(error);
  return r;
}

// OpenSSL's error queue as one line, for an error text.
std::string OpenSslErrors() {
  std::string queue = tls::TakeOpenSslErrors();
  return queue.empty() ? "no OpenSSL error queued" : queue;
}

// Every connection's TLS context: the house client context
// (tls::Context::ForClient: the CA, the client certificate, the name to
// check) offering ALPN h2; null (clear text) unless --ca-file.
std::shared_ptr<const tls::Context>& Tls() {
  static std::shared_ptr<const tls::Context> context;
  return context;
}

bool SetUpTls(const Options& o, std::string* error) {
  if (o.ca_file.empty()) return true;
  auto context = tls::Context::ForClient({.ca_file = o.ca_file,
                                          .cert_file = o.cert_file,
                                          .key_file = o.key_file,
                                          .server_name = o.server_name});
  if (!context.ok()) {
    *error = "TLS: " + std::string(context.status().message());
    return false;
  }
  static const unsigned char kAlpnH2[] = {2, 'h', '2'};
  if (SSL_CTX_set_alpn_protos((*context)->raw(), kAlpnH2, sizeof kAlpnH2) != 0) {
    *error = "TLS: cannot offer ALPN h2: " + OpenSslErrors();
    return false;
  }
  Tls() = *context;
  return true;
}

// A call's end: gRPC's status code (0 OK) and message; -1 when the stream
// ended without a grpc-status trailer (the connection or stream broke).
struct CallStatus {
  int code = -1;
  std::string message;
  bool ok() const { return code == 0; }
  std::string Text() const {
    return code < 0 ? "stream ended without a gRPC status: " + message
                    : fmt::format("gRPC {} {}", code, message);
  }
};

// One HTTP/2 stream: a unary call or a bidirectional stream.
struct H2Call {
  std::string out;  // framed request messages not yet taken by nghttp2
  std::size_t out_pos = 0;
  bool half_close = false;  // END_STREAM once `out` is sent (unary)
  std::string in;           // response bytes not yet cut into messages
  CallStatus status;
  std::function<void(std::string message)> on_message;  // each response message
  std::function<void(CallStatus status)> on_close;
};

// gRPC's message framing: a byte (0: not compressed), a 4-byte big-endian
// length, the protobuf bytes.
void AppendFramed(const google::protobuf::MessageLite& message, std::string* out) {
  std::size_t size = message.ByteSizeLong();
  char prefix[5] = {0, static_cast<char>(size >> 24), static_cast<char>(size >> 16),
                    static_cast<char>(size >> 8), static_cast<char>(size)};
  out->append(prefix, 5);
  std::size_t at = out->size();
  out->resize(at + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(out->data() + at));
}

class H2Loop;

// One TCP connection with its nghttp2 client session. Callbacks the
// workloads see run after nghttp2 has returned (H2Loop::Defer), never
// inside it, so they may submit new calls freely.
class H2Conn {
 public:
  H2Conn(H2Loop& loop, std::string authority) : loop_(loop), authority_(std::move(authority)) {}
  ~H2Conn() {
    if (session_) nghttp2_session_del(session_);
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) close(fd_);
  }
  H2Conn(const H2Conn&) = delete;
  H2Conn& operator=(const H2Conn&) = delete;

  bool Connect(const std::string& addr, std::string* error);
  // Starts a call on `path` with `call->out` as its first bytes; returns the
  // stream id (0 on failure, with on_close called with the error).
  std::int32_t Start(const char* path, std::unique_ptr<H2Call> call);
  // Queues one more framed message on an open stream; false when the
  // stream has closed or the server ended it.
  bool Send(std::int32_t stream_id, const google::protobuf::MessageLite& message);
  // Reads what the socket has and hands it to nghttp2; false when the
  // connection is gone.
  bool OnReadable();
  // Writes what nghttp2 has to send; false when the connection is gone.
  bool Flush();
  int fd() const { return fd_; }
  bool want_write() const { return !pending_.empty(); }
  bool polling_out = false;  // EPOLLOUT is set for it (H2Loop)
  const std::string& broken() const { return broken_; }

 private:
  static ssize_t ReadBody(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf,
                          std::size_t length, std::uint32_t* data_flags, nghttp2_data_source*,
                          void* user);
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                      std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                      std::uint8_t, void* user);
  static int OnData(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                    const std::uint8_t* data, std::size_t len, void* user);
  static int OnStreamClose(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                           void* user);
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user);
  // Streams the server ended (END_STREAM) while ours stayed open: a Watch
  // or LeaseKeepAlive stream whose trailers came. grpc-go's server then
  // resets the stream, tenure's does not; either way our side ends too
  // (EndOurSides), so that on_stream_close reports the status.
  void EndOurSides();
  std::vector<std::int32_t> ended_by_server_;
  void Break(const std::string& why);
  // The TLS handshake on the still blocking socket, when TLS is set up.
  bool Handshake(const std::string& host, std::string* error);
  // read(2) and send(2), or OpenSSL's over them: -1 with errno EAGAIN when
  // the socket has nothing more now.
  ssize_t ReadSome(char* buf, std::size_t size);
  ssize_t WriteSome(const char* data, std::size_t size);

  H2Loop& loop_;
  SSL* ssl_ = nullptr;
  std::string authority_;
  int fd_ = -1;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<std::int32_t, std::shared_ptr<H2Call>> calls_;
  std::string pending_;  // bytes nghttp2 produced that the socket has not taken
  std::string broken_;
};

// The thread's loop: epoll over the connections, deferred callbacks, and
// one flush of every connection after each round of reads.
class H2Loop {
 public:
  H2Loop() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {}
  ~H2Loop() { close(epoll_fd_); }
  H2Loop(const H2Loop&) = delete;
  H2Loop& operator=(const H2Loop&) = delete;

  H2Conn* Open(const std::string& addr, std::string* error) {
    // :authority is the name the certificate is checked for, as gRPC's.
    auto conn = std::make_unique<H2Conn>(
        *this, Tls() && !Tls()->server_name().empty() ? Tls()->server_name() : addr);
    if (!conn->Connect(addr, error)) return nullptr;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = conn.get();
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, conn->fd(), &ev) != 0) {
      *error = fmt::format("epoll_ctl: {}", std::strerror(errno));
      return nullptr;
    }
    conns_.push_back(std::move(conn));
    return conns_.back().get();
  }
  void Defer(std::function<void()> fn) { deferred_.push_back(std::move(fn)); }

  // Runs until done() holds (true) or `limit` passes or a connection
  // breaks (false; error() says which).
  bool RunUntil(const std::function<bool()>& done, Clock::duration limit) {
    Clock::time_point deadline = Clock::now() + limit;
    std::vector<epoll_event> events(64);
    for (;;) {
      // A flush can close streams (nghttp2 sends an END_STREAM or a reset
      // it owed) and so queue callbacks: run them before waiting.
      do {
        RunDeferred();
        if (!FlushAll()) return false;
      } while (!deferred_.empty());
      if (done()) return true;
      Clock::time_point now = Clock::now();
      if (now >= deadline) return false;
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
      int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                         static_cast<int>(std::min<long>(wait + 1, 1000)));
      if (n < 0 && errno != EINTR) {
        error_ = fmt::format("epoll_wait: {}", std::strerror(errno));
        return false;
      }
      for (int i = 0; i < n; ++i) {
        auto* conn = static_cast<H2Conn*>(events[static_cast<std::size_t>(i)].data.ptr);
        if ((events[static_cast<std::size_t>(i)].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
            !conn->OnReadable()) {
          error_ = conn->broken();
          RunDeferred();  // the broken calls' on_close
          return false;
        }
      }
    }
  }
  const std::string& error() const { return error_; }

 private:
  void RunDeferred() {
    while (!deferred_.empty()) {
      std::vector<std::function<void()>> batch;
      batch.swap(deferred_);
      for (auto& fn : batch) fn();
    }
  }
  bool FlushAll() {
    for (auto& conn : conns_) {
      if (!conn->Flush()) {
        error_ = conn->broken();
        RunDeferred();
        return false;
      }
      if (conn->want_write() == conn->polling_out) continue;
      conn->polling_out = conn->want_write();
      epoll_event ev{};
      ev.events = EPOLLIN | (conn->polling_out ? EPOLLOUT : 0u);
      ev.data.ptr = conn.get();
      epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, conn->fd(), &ev);
    }
    return true;
  }

  int epoll_fd_;
  std::vector<std::unique_ptr<H2Conn>> conns_;
  std::vector<std::function<void()>> deferred_;
  std::string error_;
};

bool H2Conn::Connect(const std::string& addr, std::string* error) {
  std::size_t colon = addr.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (colon == std::string::npos ||
      inet_pton(AF_INET, addr.substr(0, colon).c_str(), &sa.sin_addr) != 1) {
    *error = "--addr must be IPv4:PORT, got " + addr;
    return false;
  }
  int port = 0;
  const std::string port_text = addr.substr(colon + 1);
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port <= 0 ||
      port > 65535) {
    *error = "--addr must be IPv4:PORT, got " + addr;
    return false;
  }
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // The connect and the TLS handshake block, for at most 10 s each step.
  timeval limit{10, 0};
  if (fd_ >= 0) {
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  }
  if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    *error = fmt::format("connect to {}: {}", addr, std::strerror(errno));
    return false;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (Tls() != nullptr && !Handshake(addr.substr(0, colon), error)) return false;
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);

  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &H2Conn::OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &H2Conn::OnData);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &H2Conn::OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &H2Conn::OnFrameRecv);
  int rv = nghttp2_session_client_new(&session_, cbs, this);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) {
    *error = fmt::format("nghttp2_session_client_new: {}", nghttp2_strerror(rv));
    return false;
  }
  // A receive window of 1 MiB per stream and per connection, as gRPC's
  // client grows its own (BDP probing) on a fast link.
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                       {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 2);
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, 1 << 20);
  if (!Flush()) {
    *error = fmt::format("{}: {}", addr, broken_);
    return false;
  }
  return true;
}

std::int32_t H2Conn::Start(const char* path, std::unique_ptr<H2Call> call) {
  auto nv = [](const char* name, const char* value) {
    return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(name)),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(value)), std::strlen(name),
                      std::strlen(value),
                      NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
  };
  // What gRPC's clients send, in their order; a unary call carries the
  // 30 s deadline etcd_side.cc gives it, a stream none.
  const nghttp2_nv headers[] = {nv(":method", "POST"),
                                nv(":scheme", ssl_ != nullptr ? "https" : "http"),
                                nv(":path", path),
                                nv(":authority", authority_.c_str()),
                                nv("content-type", "application/grpc"),
                                nv("user-agent", "tenure_vs-h2"),
                                nv("te", "trailers"),
                                nv("grpc-timeout", "30S")};
  const std::size_t header_count = sizeof headers / sizeof headers[0] - (call->half_close ? 0 : 1);
  H2Call* raw = call.get();
  nghttp2_data_provider body{};
  body.source.ptr = raw;
  body.read_callback = &H2Conn::ReadBody;
  std::int32_t id = nghttp2_submit_request(session_, nullptr, headers, header_count, &body, raw);
  if (id < 0) {
    CallStatus st;
    st.message = fmt::format("nghttp2_submit_request: {}", nghttp2_strerror(id));
    std::shared_ptr<H2Call> failed = std::move(call);
    loop_.Defer([failed, st] { failed->on_close(st); });
    return 0;
  }
  calls_.emplace(id, std::shared_ptr<H2Call>(std::move(call)));
  return id;
}

bool H2Conn::Send(std::int32_t stream_id, const google::protobuf::MessageLite& message) {
  auto it = calls_.find(stream_id);
  if (it == calls_.end() || it->second->half_close) return false;
  AppendFramed(message, &it->second->out);
  nghttp2_session_resume_data(session_, stream_id);
  return true;
}

// nghttp2 asks for a stream's next DATA bytes: what is queued, END_STREAM
// after the last of a unary call, or "deferred" until Send queues more.
ssize_t H2Conn::ReadBody(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                         std::uint32_t* data_flags, nghttp2_data_source* source, void*) {
  auto* call = static_cast<H2Call*>(source->ptr);
  std::size_t n = std::min(length, call->out.size() - call->out_pos);
  std::memcpy(buf, call->out.data() + call->out_pos, n);
  call->out_pos += n;
  if (call->out_pos == call->out.size()) {
    call->out.clear();
    call->out_pos = 0;
    if (call->half_close) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(n);
}

int H2Conn::OnHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                     std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                     std::uint8_t, void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* self = static_cast<H2Conn*>(user);
  auto it = self->calls_.find(frame->hd.stream_id);
  if (it == self->calls_.end()) return 0;
  H2Call* call = it->second.get();
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == "grpc-status") {
    int code = -1;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), code);
    // 2 (Unknown) for a status that is not a whole number.
    call->status.code = ec == std::errc() && end == v.data() + v.size() && code >= 0 ? code : 2;
  } else if (n == "grpc-message") {
    call->status.message.assign(v);
  }
  return 0;
}

int H2Conn::OnData(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t* data,
                   std::size_t len, void* user) {
  auto* self = static_cast<H2Conn*>(user);
  auto it = self->calls_.find(stream_id);
  if (it == self->calls_.end()) return 0;
  std::shared_ptr<H2Call> call = it->second;
  call->in.append(reinterpret_cast<const char*>(data), len);
  // A stream's messages go to on_message one by one; a unary call's one
  // message waits for the stream's end (OnStreamClose).
  if (!call->on_message) return 0;
  std::size_t at = 0;
  while (call->in.size() - at >= 5) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(call->in.data() + at);
    std::size_t size = (std::size_t{p[1]} << 24) | (std::size_t{p[2]} << 16) |
                       (std::size_t{p[3]} << 8) | std::size_t{p[4]};
    if (call->in.size() - at - 5 < size) break;
    self->loop_.Defer([call, message = call->in.substr(at + 5, size)]() mutable {
      call->on_message(std::move(message));
    });
    at += 5 + size;
  }
  call->in.erase(0, at);
  return 0;
}

int H2Conn::OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    static_cast<H2Conn*>(user)->ended_by_server_.push_back(frame->hd.stream_id);
  }
  return 0;
}

void H2Conn::EndOurSides() {
  for (std::int32_t id : ended_by_server_) {
    auto it = calls_.find(id);
    if (it == calls_.end() || it->second->half_close) continue;
    it->second->half_close = true;
    nghttp2_session_resume_data(session_, id);
  }
  ended_by_server_.clear();
}

int H2Conn::OnStreamClose(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                          void* user) {
  auto* self = static_cast<H2Conn*>(user);
  auto it = self->calls_.find(stream_id);
  if (it == self->calls_.end()) return 0;
  std::shared_ptr<H2Call> call = std::move(it->second);
  self->calls_.erase(it);
  if (call->status.code < 0 && call->status.message.empty()) {
    call->status.message = fmt::format("HTTP/2 stream closed, error code {}", error_code);
  }
  self->loop_.Defer([call] { call->on_close(std::move(call->status)); });
  return 0;
}

bool H2Conn::Handshake(const std::string& host, std::string* error) {
  ssl_ = SSL_new(Tls()->raw());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    *error = "SSL_new: " + OpenSslErrors();
    return false;
  }
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
  // The house context frees idle buffers (right for a server's many idle
  // connections); a load generator reuses them on every call.
  SSL_clear_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
  const std::string& name = Tls()->server_name();
  bool named = name.empty() ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1
                            : X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0) == 1 &&
                                  SSL_set_tlsext_host_name(ssl_, name.c_str()) == 1;
  if (!named) {
    *error = "TLS: cannot set the name to verify: " + OpenSslErrors();
    return false;
  }
  if (SSL_connect(ssl_) != 1) {
    long verify = SSL_get_verify_result(ssl_);
    *error = fmt::format("TLS handshake: {}{}", OpenSslErrors(),
                         verify == X509_V_OK ? ""
                                             : std::string(" (certificate: ") +
                                                   X509_verify_cert_error_string(verify) + ")");
    return false;
  }
  const unsigned char* proto = nullptr;
  unsigned int proto_size = 0;
  SSL_get0_alpn_selected(ssl_, &proto, &proto_size);
  if (std::string_view(reinterpret_cast<const char*>(proto), proto_size) != "h2") {
    *error = "TLS: the server did not select HTTP/2 (ALPN h2)";
    return false;
  }
  return true;
}

ssize_t H2Conn::ReadSome(char* buf, std::size_t size) {
  if (ssl_ == nullptr) return read(fd_, buf, size);
  tls::ClearOpenSslErrors();  // SSL_get_error reads the queue: nothing stale in it
  int n = SSL_read(ssl_, buf, static_cast<int>(size));
  if (n > 0) return n;
  int code = SSL_get_error(ssl_, n);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  if (code == SSL_ERROR_ZERO_RETURN) return 0;
  if (code != SSL_ERROR_SYSCALL || errno == 0) errno = EPROTO;
  return -1;
}

ssize_t H2Conn::WriteSome(const char* data, std::size_t size) {
  if (ssl_ == nullptr) return send(fd_, data, size, MSG_NOSIGNAL);
  tls::ClearOpenSslErrors();
  int n = SSL_write(ssl_, data, static_cast<int>(size));
  if (n > 0) return n;
  int code = SSL_get_error(ssl_, n);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  if (code != SSL_ERROR_SYSCALL || errno == 0) errno = EPROTO;
  return -1;
}

bool H2Conn::OnReadable() {
  char buf[65536];
  for (;;) {
    ssize_t n = ReadSome(buf, sizeof buf);
    if (n > 0) {
      ssize_t used = nghttp2_session_mem_recv(session_, reinterpret_cast<std::uint8_t*>(buf),
                                              static_cast<std::size_t>(n));
      if (used < 0) {
        Break(fmt::format("HTTP/2 from the server: {}", nghttp2_strerror(static_cast<int>(used))));
        return false;
      }
      EndOurSides();
      // A short read(2) emptied the socket; OpenSSL hands out one record
      // at a time, so over TLS the loop goes on until it wants more.
      if (ssl_ == nullptr && static_cast<std::size_t>(n) < sizeof buf) return true;
    } else if (n == 0) {
      Break("the server closed the connection");
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return true;
    } else if (errno != EINTR) {
      Break(ssl_ != nullptr ? "TLS read: " + OpenSslErrors()
                            : fmt::format("read: {}", std::strerror(errno)));
      return false;
    }
  }
}

bool H2Conn::Flush() {
  if (!broken_.empty()) return false;
  for (;;) {
    // Everything nghttp2 has (a call's HEADERS and DATA frames, window
    // updates) goes out in one write, as gRPC's client writes them, up
    // to 64 KiB at a time.
    while (pending_.size() < 65536) {
      const std::uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        Break(fmt::format("nghttp2_session_mem_send: {}", nghttp2_strerror(static_cast<int>(n))));
        return false;
      }
      if (n == 0) break;
      pending_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    if (pending_.empty()) return true;
    ssize_t w = WriteSome(pending_.data(), pending_.size());
    if (w > 0) {
      pending_.erase(0, static_cast<std::size_t>(w));
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;  // EPOLLOUT (H2Loop) wakes the loop to go on
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      Break(ssl_ != nullptr ? "TLS write: " + OpenSslErrors()
                            : fmt::format("send: {}", std::strerror(errno)));
      return false;
    }
  }
}

// Every open call of a broken connection ends with the reason.
void H2Conn::Break(const std::string& why) {
  if (!broken_.empty()) return;
  broken_ = why;
  for (auto& [id, call] : calls_) {
    std::shared_ptr<H2Call> c = std::move(call);
    c->status.code = -1;
    c->status.message = why;
    loop_.Defer([c] { c->on_close(std::move(c->status)); });
  }
  calls_.clear();
}

// --- calls ------------------------------------------------------------------

// One unary call: `done` gets the status and the parsed response.
template <class Resp>
void Unary(H2Conn* conn, const char* path, const google::protobuf::MessageLite& req,
           std::function<void(const CallStatus&, Resp&)> done) {
  auto call = std::make_unique<H2Call>();
  AppendFramed(req, &call->out);
  call->half_close = true;
  H2Call* raw = call.get();
  call->on_close = [raw, done = std::move(done)](CallStatus st) {
    Resp resp;
    if (st.ok()) {
      // Exactly one uncompressed message, as etcd answers a unary call.
      const auto* p = reinterpret_cast<const std::uint8_t*>(raw->in.data());
      const bool framed = raw->in.size() >= 5 && p[0] == 0 &&
                          ((std::size_t{p[1]} << 24) | (std::size_t{p[2]} << 16) |
                           (std::size_t{p[3]} << 8) | std::size_t{p[4]}) == raw->in.size() - 5;
      if (!framed ||
          !resp.ParseFromArray(raw->in.data() + 5, static_cast<int>(raw->in.size() - 5))) {
        st.code = 13;  // Internal, as gRPC names a response it cannot parse
        st.message = fmt::format("cannot parse the {}-byte response", raw->in.size());
      }
    }
    done(st, resp);
  };
  conn->Start(path, std::move(call));
}

// --- closed loop ------------------------------------------------------------

struct Client {
  int index = 0;
  H2Conn* conn = nullptr;
  Clock::time_point op_start;
  std::uint64_t rng = 0;
  std::int64_t lease_id = 0;
  std::string prefix, my_key;
  std::vector<std::int64_t> leases;  // keepalive: the leases it renews
  std::size_t next = 0;
  std::int32_t keepalive_stream = 0;
  bool pending = false;           // keepalive: a renewal's answer awaited
  std::int64_t my_rev = 0;        // lock: the revision that created my_key
  std::int32_t watch_stream = 0;  // lock_hot: its Watch stream, once opened
  DeleteWait wait;                // lock_hot: the current waitDelete
};

// etcd_workload's closed loop on this thread's epoll loop.
class ClosedLoop : public etcd_workload::ClosedLoop<Client> {
 public:
  ClosedLoop(H2Loop& loop, const std::vector<H2Conn*>& conns, int clients)
      : etcd_workload::ClosedLoop<Client>(clients), loop_(loop) {
    for (Client& c : this->clients())
      c.conn = conns[static_cast<std::size_t>(c.index) % conns.size()];
  }

 protected:
  bool Drive(const std::function<bool()>& done, Clock::duration limit, std::string* why) override {
    if (loop_.RunUntil(done, limit)) return true;
    *why = loop_.error();
    return false;
  }
  H2Loop& loop_;
};

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

constexpr const char* kPut = "/etcdserverpb.KV/Put";
constexpr const char* kTxn = "/etcdserverpb.KV/Txn";
constexpr const char* kRange = "/etcdserverpb.KV/Range";
constexpr const char* kDeleteRange = "/etcdserverpb.KV/DeleteRange";
constexpr const char* kLeaseGrant = "/etcdserverpb.Lease/LeaseGrant";
constexpr const char* kLeaseRevoke = "/etcdserverpb.Lease/LeaseRevoke";
constexpr const char* kLeaseKeepAlive = "/etcdserverpb.Lease/LeaseKeepAlive";
constexpr const char* kWatch = "/etcdserverpb.Watch/Watch";

// --- workloads --------------------------------------------------------------

class KvPut : public ClosedLoop {
 public:
  KvPut(H2Loop& loop, const std::vector<H2Conn*>& conns, const Options& o)
      : ClosedLoop(loop, conns, o.clients), reqs_(etcd_workload::PutRequests(o)) {}

 protected:
  void StartOp(Client& c) override {
    const pb::PutRequest& req = reqs_[etcd_workload::NextPut(&c.rng, reqs_.size())];
    Unary<pb::PutResponse>(c.conn, kPut, req, [this, &c](const CallStatus& s, pb::PutResponse&) {
      FinishOp(c, s.ok() ? "" : "put: " + s.Text());
    });
  }

 private:
  std::vector<pb::PutRequest> reqs_;
};

class LeaseGranter : public ClosedLoop {
 public:
  LeaseGranter(H2Loop& loop, const std::vector<H2Conn*>& conns, int clients, std::int64_t ttl,
               std::vector<std::int64_t>* ids)
      : ClosedLoop(loop, conns, clients), ttl_(ttl), ids_(ids) {}

 protected:
  void StartOp(Client& c) override {
    pb::LeaseGrantRequest req;
    req.set_ttl(ttl_);
    Unary<pb::LeaseGrantResponse>(
        c.conn, kLeaseGrant, req, [this, &c](const CallStatus& s, pb::LeaseGrantResponse& r) {
          if (!s.ok() || !r.error().empty())
            return FinishOp(c, "lease grant: " + (s.ok() ? r.error() : s.Text()));
          if (ids_) ids_->push_back(r.id());
          c.lease_id = r.id();
          FinishOp(c, "");
        });
  }

 private:
  std::int64_t ttl_;
  std::vector<std::int64_t>* ids_;
};

class LeasePairs : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;

 protected:
  void StartOp(Client& c) override {
    pb::LeaseGrantRequest req;
    req.set_ttl(60);
    Unary<pb::LeaseGrantResponse>(
        c.conn, kLeaseGrant, req, [this, &c](const CallStatus& s, pb::LeaseGrantResponse& r) {
          if (!s.ok() || !r.error().empty())
            return FinishOp(c, "lease grant: " + (s.ok() ? r.error() : s.Text()));
          pb::LeaseRevokeRequest rev;
          rev.set_id(r.id());
          Unary<pb::LeaseRevokeResponse>(
              c.conn, kLeaseRevoke, rev,
              [this, &c](const CallStatus& s2, pb::LeaseRevokeResponse&) {
                FinishOp(c, s2.ok() ? "" : "lease revoke: " + s2.Text());
              });
        });
  }
};

class KeepAlive : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;
  // One LeaseKeepAlive stream per client, as clientv3 keeps one per client.
  void OpenStreams(std::string* broken) {
    for (Client& c : clients()) {
      auto call = std::make_unique<H2Call>();
      Client* cp = &c;
      call->on_message = [this, cp](std::string bytes) {
        pb::LeaseKeepAliveResponse r;
        std::string error;
        if (!r.ParseFromString(bytes)) {
          error = "cannot parse a keepalive response";
        } else if (r.ttl() <= 0) {
          error = fmt::format("lease {:x} expired", r.id());
        }
        if (!cp->pending) return;
        cp->pending = false;
        FinishOp(*cp, error);
      };
      call->on_close = [this, cp, broken](CallStatus st) {
        *broken = st.Text();
        if (cp->pending) {
          cp->pending = false;
          FinishOp(*cp, "keepalive stream: " + st.Text());
        }
      };
      c.keepalive_stream = c.conn->Start(kLeaseKeepAlive, std::move(call));
    }
  }

 protected:
  void StartOp(Client& c) override {
    pb::LeaseKeepAliveRequest req;
    req.set_id(c.leases[c.next]);
    c.next = (c.next + 1) % c.leases.size();
    c.pending = true;
    if (!c.conn->Send(c.keepalive_stream, req)) {
      c.pending = false;
      FinishOp(c, "keepalive stream: closed by the server");
    }
  }
};

// concurrency.Mutex's cycle, as etcd_side.cc's LockCycle: on a lock of the
// client's own (independent locks) or on one lock all clients share (hot:
// a client whose key is not the oldest waits with waitDeletes, a Range of
// the newest older key and a Watch on it until its DELETE, then looks
// again).
class LockCycle : public ClosedLoop {
 public:
  LockCycle(H2Loop& loop, const std::vector<H2Conn*>& conns, int clients, bool hot)
      : ClosedLoop(loop, conns, clients), hot_(hot) {
    for (Client& c : this->clients()) {
      c.prefix = hot ? std::string("bench/hot/") : fmt::format("bench/lock/{}/", c.index);
    }
  }
  std::uint64_t waits = 0;
  HandoffClock handoff;  // hot only

 protected:
  void StartOp(Client& c) override {
    c.my_key = fmt::format("{}{:x}", c.prefix, c.lease_id);
    Unary<pb::TxnResponse>(c.conn, kTxn,
                           etcd_workload::MutexLockTxn(c.prefix, c.my_key, c.lease_id),
                           [this, &c](const CallStatus& s, pb::TxnResponse& r) {
                             if (!s.ok()) return FinishOp(c, "lock txn: " + s.Text());
                             etcd_workload::LockTxnAnswer a = etcd_workload::ReadMutexLockTxn(r);
                             if (!a.error.empty()) return FinishOp(c, "lock txn: " + a.error);
                             c.my_rev = a.my_rev;
                             if (a.held) return Held(c);
                             if (!hot_)
                               return FinishOp(c,
                                               "lock txn: an independent lock was held by "
                                               "another key");
                             ++waits;
                             WaitDeletes(c);
                           });
  }

 private:
  // waitDeletes: the newest key created before ours, until there is none.
  void WaitDeletes(Client& c) {
    Unary<pb::RangeResponse>(c.conn, kRange, etcd_workload::OlderKeyRange(c.prefix, c.my_rev),
                             [this, &c](const CallStatus& s, pb::RangeResponse& resp) {
                               if (!s.ok()) return FinishOp(c, "lock range: " + s.Text());
                               if (resp.kvs_size() == 0) return Held(c);
                               if (c.watch_stream == 0) OpenWatch(c);
                               pb::WatchRequest create =
                                   c.wait.Create(resp.kvs(0).key(), resp.header().revision(),
                                                 [this, &c] { WaitDeletes(c); });
                               if (!c.conn->Send(c.watch_stream, create)) {
                                 c.wait.Abandon();
                                 FinishOp(c, "lock watch: the stream was closed by the server");
                               }
                             });
  }
  // The client's Watch stream, opened at its first wait and kept.
  void OpenWatch(Client& c) {
    auto call = std::make_unique<H2Call>();
    Client* cp = &c;
    call->on_message = [this, cp](std::string bytes) {
      pb::WatchResponse r;
      if (!r.ParseFromString(bytes)) {
        if (cp->wait.Abandon()) FinishOp(*cp, "lock watch: unparsable answer");
        return;
      }
      pb::WatchRequest cancel;
      if (std::function<void()> next = cp->wait.OnAnswer(r, &cancel)) {
        cp->conn->Send(cp->watch_stream, cancel);
        next();
      }
    };
    call->on_close = [this, cp](CallStatus st) {
      if (cp->wait.Abandon()) FinishOp(*cp, "lock watch: " + st.Text());
    };
    c.watch_stream = c.conn->Start(kWatch, std::move(call));
  }
  // Lock() returned: the lock is held; the cycle releases it at once.
  void Held(Client& c) {
    if (hot_) handoff.Acquired();
    if (hot_) handoff.Released();
    pb::DeleteRangeRequest del;
    del.set_key(c.my_key);
    Unary<pb::DeleteRangeResponse>(c.conn, kDeleteRange, del,
                                   [this, &c](const CallStatus& s, pb::DeleteRangeResponse&) {
                                     FinishOp(c, s.ok() ? "" : "unlock: " + s.Text());
                                   });
  }
  bool hot_;
};

bool OpenConns(H2Loop& loop, const Options& o, int clients, std::vector<H2Conn*>* conns,
               std::string* error) {
  int n = std::max(1, std::min(clients, o.conns));
  for (int i = 0; i < n; ++i) {
    H2Conn* conn = loop.Open(o.addr, error);
    if (conn == nullptr) return false;
    conns->push_back(conn);
  }
  return true;
}

// Leases for the setup of a workload (not timed): `count` of them, TTL 60 s.
bool Grant(H2Loop& loop, const std::vector<H2Conn*>& conns, int clients, int count,
           std::vector<std::int64_t>* ids, std::string* error) {
  LeaseGranter g(loop, conns, clients, 60, ids);
  Phase made = g.Run(std::chrono::seconds(60), static_cast<std::uint64_t>(count));
  if (made.errors > 0 || made.ok != static_cast<std::uint64_t>(count)) {
    *error = fmt::format("setup: granted {} of {} leases: {}", made.ok, count, made.first_error);
    return false;
  }
  return true;
}

std::string LightNote() {
  return Tls() != nullptr ? "light client (nghttp2 + protobuf, etcd_h2.cc), TLS (OpenSSL)"
                          : "light client (nghttp2 + protobuf, etcd_h2.cc)";
}

// etcd_side.cc's RunWatch on this client: W watch streams (one watch each
// on bench/wake) spread over the connections, one more connection for the
// puts, then one put per round; the same metrics.
Result RunWatch(H2Loop& loop, const Options& o) {
  std::vector<H2Conn*> conns;
  std::string error;
  if (!OpenConns(loop, o, o.watchers, &conns, &error)) return Failed(error);
  H2Conn* writer = loop.Open(o.addr, &error);
  if (writer == nullptr) return Failed(error);
  const std::string key = "bench/wake";
  etcd_workload::FanOut count(static_cast<std::size_t>(o.watchers));
  bool acked = false;
  auto put = [&](const std::string& value) {
    acked = false;
    pb::PutRequest req;
    req.set_key(key);
    req.set_value(value);
    Unary<pb::PutResponse>(writer, kPut, req, [&](const CallStatus& s, pb::PutResponse&) {
      if (!s.ok()) count.Fail("put: " + s.Text());
      acked = true;
    });
  };
  put("initial");
  if (!loop.RunUntil([&] { return acked; }, std::chrono::seconds(30)) || count.failed())
    return Failed("initial put: " + count.first_error() + loop.error());
  long rss_before = RssKiB(o.server_pid);
  for (int i = 0; i < o.watchers; ++i) {
    auto call = std::make_unique<H2Call>();
    call->on_message = [&count, i](std::string bytes) {
      pb::WatchResponse r;
      if (!r.ParseFromString(bytes))
        return count.Fail(fmt::format("watcher {}: unparsable answer", i));
      count.OnAnswer(i, r);
    };
    call->on_close = [&count, i](CallStatus st) {
      count.Fail(fmt::format("watcher {}: {}", i, st.Text()));
    };
    pb::WatchRequest req;
    req.mutable_create_request()->set_key(key);
    AppendFramed(req, &call->out);
    conns[static_cast<std::size_t>(i) % conns.size()]->Start(kWatch, std::move(call));
  }
  if (!loop.RunUntil([&] { return count.all_created() || count.failed(); },
                     std::chrono::seconds(120)) ||
      count.failed()) {
    return Failed(fmt::format("only {} of {} watches created within 120 s{}{}", count.created(),
                              o.watchers, count.failed() ? ": " + count.first_error() : "",
                              loop.error().empty() ? "" : ": " + loop.error()));
  }
  long rss_parked = RssKiB(o.server_pid);
  for (int round = 0; round < o.rounds && !count.failed(); ++round) {
    count.StartRound();
    put(fmt::format("round-{}", round));
    if (!loop.RunUntil([&] { return (acked && count.all_woken()) || count.failed(); },
                       std::chrono::seconds(60))) {
      return Failed(fmt::format("round {}: {} of {} watchers notified within 60 s of the write{}",
                                round, count.woken(), o.watchers,
                                loop.error().empty() ? "" : ": " + loop.error()));
    }
    count.EndRound();
  }
  Result r;
  count.AddTo(&r, conns.size(), rss_before, rss_parked);
  r.note = LightNote();
  return r;
}

Result Measured(Phase& p, std::size_t conns) {
  Result r;
  AddPhase(&r, p);
  r.Add("conns", static_cast<double>(conns));
  r.note = LightNote();
  return r;
}

}  // namespace

Result RunEtcdLight(const Options& o) {
  std::string tls_error;
  if (!SetUpTls(o, &tls_error)) return Failed(tls_error);
  H2Loop loop;
  if (o.workload == "watch") return RunWatch(loop, o);
  std::vector<H2Conn*> conns;
  std::string error;
  if (!OpenConns(loop, o, o.clients, &conns, &error)) return Failed(error);
  if (o.workload == "kv_put") {
    KvPut w(loop, conns, o);
    Phase p = w.Run(Seconds(o.seconds), o.max_ops);
    return Measured(p, conns.size());
  }
  if (o.workload == "session_pairs") {
    LeasePairs w(loop, conns, o.clients);
    Phase p = w.Run(Seconds(o.seconds), o.max_ops);
    return Measured(p, conns.size());
  }
  if (o.workload == "lock_many" || o.workload == "lock_hot") {
    const bool hot = o.workload == "lock_hot";
    std::vector<std::int64_t> ids;
    LockCycle w(loop, conns, o.clients, hot);
    if (!Grant(loop, conns, o.clients, o.clients, &ids, &error)) return Failed(error);
    for (std::size_t i = 0; i < w.clients().size(); ++i) w.clients()[i].lease_id = ids[i];
    Phase p = w.Run(Seconds(o.seconds), o.max_ops);
    Result r = Measured(p, conns.size());
    r.Add("refusals", static_cast<double>(w.waits));
    if (hot) w.handoff.AddTo(&r);
    return r;
  }
  if (o.workload == "keepalive") {
    std::vector<std::int64_t> ids;
    if (!Grant(loop, conns, std::min(64, o.sessions), o.sessions, &ids, &error))
      return Failed(error);
    KeepAlive w(loop, conns, o.clients);
    for (std::size_t i = 0; i < ids.size(); ++i)
      w.clients()[i % w.clients().size()].leases.push_back(ids[i]);
    for (Client& c : w.clients()) {
      if (c.leases.empty()) c.leases.push_back(ids[0]);
    }
    std::string broken;
    w.OpenStreams(&broken);
    Phase p = w.Run(Seconds(o.seconds), o.max_ops);
    Result r = Measured(p, conns.size());
    if (r.error.empty() && !broken.empty()) r.error = "keepalive stream: " + broken;
    return r;
  }
  return Failed(
      "--client h2 runs kv_put, session_pairs, lock_many, lock_hot, keepalive and "
      "watch; " +
      o.workload + " is --client grpc's");
}

}  // namespace tenure::vs
