// ZkConn: see zk_conn.h. Wire format (ZooKeeper's jute, big-endian):
//   frame          = int32 length, payload
//   ConnectRequest = int32 protocolVersion(0), int64 lastZxidSeen(0), int32 timeOut,
//                    int64 sessionId(0), buffer passwd(16 zero bytes), bool readOnly(0)
//   ConnectResponse= int32 protocolVersion, int32 timeOut, int64 sessionId, buffer passwd, ...
//   request        = int32 xid, int32 type, body
//   reply          = int32 xid, int64 zxid, int32 err, body (if err == 0)
//   watch event    = reply with xid -1, body: int32 type, int32 state, string path
//   string/buffer  = int32 length (-1: null), bytes
#include "zk_conn.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

namespace tenure::vs {
namespace {

constexpr int kOpCreate = 1;
constexpr int kOpDelete = 2;
constexpr int kOpExists = 3;
constexpr int kOpGetData = 4;
constexpr int kOpSetData = 5;
constexpr int kOpGetChildren = 8;
constexpr int kOpPing = 11;
constexpr int kOpCloseSession = -11;
constexpr std::int32_t kXidWatch = -1;
constexpr std::int32_t kXidPing = -2;
constexpr int kTransportError = -1000;
// Read size: small, since 10,000 watcher sessions each keep a buffer.
constexpr std::size_t kReadBytes = 4096;

void PutInt(std::string* s, std::int32_t v) {
  auto u = static_cast<std::uint32_t>(v);
  for (int shift = 24; shift >= 0; shift -= 8) s->push_back(static_cast<char>((u >> shift) & 0xff));
}
void PutLong(std::string* s, std::int64_t v) {
  auto u = static_cast<std::uint64_t>(v);
  for (int shift = 56; shift >= 0; shift -= 8) s->push_back(static_cast<char>((u >> shift) & 0xff));
}
void PutBytes(std::string* s, std::string_view b) {
  PutInt(s, static_cast<std::int32_t>(b.size()));
  s->append(b);
}
std::int32_t GetInt(std::string_view s, std::size_t at) {
  std::uint32_t u = 0;
  for (std::size_t i = 0; i < 4; ++i) u = (u << 8) | static_cast<unsigned char>(s[at + i]);
  return static_cast<std::int32_t>(u);
}
std::int64_t GetLong(std::string_view s, std::size_t at) {
  std::uint64_t u = 0;
  for (std::size_t i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(s[at + i]);
  return static_cast<std::int64_t>(u);
}
// The body of exists, getData and getChildren: the path, the watch flag.
std::string PathWatch(std::string_view path, bool watch) {
  std::string body;
  PutBytes(&body, path);
  body.push_back(watch ? '\1' : '\0');
  return body;
}
std::string Frame(const std::string& payload) {
  std::string f;
  PutInt(&f, static_cast<std::int32_t>(payload.size()));
  return f + payload;
}

}  // namespace

ZkConn::ZkConn(asio::io_context& ioc, asio::ip::tcp::endpoint endpoint)
    : ioc_(ioc), endpoint_(endpoint), socket_(ioc) {}

bool ZkConn::Connect(int session_timeout_ms, std::string* error, std::function<void(bool)> done) {
  boost::system::error_code ec;
  socket_.connect(endpoint_, ec);
  if (ec) {
    *error = "connect: " + ec.message();
    return false;
  }
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  on_connected_ = std::move(done);
  std::string req;
  PutInt(&req, 0);
  PutLong(&req, 0);
  PutInt(&req, session_timeout_ms);
  PutLong(&req, 0);
  PutBytes(&req, std::string(16, '\0'));
  req.push_back('\0');  // readOnly = false
  Write(Frame(req));
  ReadMore();
  return true;
}

void ZkConn::Send(int type, const std::string& body, Callback done) {
  if (failed_) {
    asio::post(ioc_, [done = std::move(done), e = error_] { done(kTransportError, e); });
    return;
  }
  last_send_ = std::chrono::steady_clock::now();
  std::int32_t xid = type == kOpPing ? kXidPing : next_xid_++;
  std::string payload;
  PutInt(&payload, xid);
  PutInt(&payload, type);
  payload += body;
  if (type != kOpPing) pending_.emplace_back(xid, std::move(done));
  Write(Frame(payload));
}

void ZkConn::Create(std::string_view path, std::string_view data, bool ephemeral, Callback done) {
  CreateMode(path, data, ephemeral ? 1 : 0, std::move(done));
}

void ZkConn::CreateMode(std::string_view path, std::string_view data, int flags, Callback done) {
  std::string body;
  PutBytes(&body, path);
  PutBytes(&body, data);
  PutInt(&body, 1);  // ACL list of one: OPEN_ACL_UNSAFE (all perms, world:anyone)
  PutInt(&body, 31);
  PutBytes(&body, "world");
  PutBytes(&body, "anyone");
  PutInt(&body, flags);
  Send(kOpCreate, body, std::move(done));
}

void ZkConn::Delete(std::string_view path, int version, Callback done) {
  std::string body;
  PutBytes(&body, path);
  PutInt(&body, version);
  Send(kOpDelete, body, std::move(done));
}

void ZkConn::Exists(std::string_view path, bool watch, Callback done) {
  Send(kOpExists, PathWatch(path, watch), std::move(done));
}

void ZkConn::GetChildren(std::string_view path, bool watch, Callback done) {
  Send(kOpGetChildren, PathWatch(path, watch), std::move(done));
}

void ZkConn::CloseSession(Callback done) { Send(kOpCloseSession, {}, std::move(done)); }

std::string ZkConn::ParseString(std::string_view body) {
  if (body.size() < 4) return {};
  const std::int32_t n = GetInt(body, 0);
  if (n < 0 || body.size() - 4 < static_cast<std::size_t>(n)) return {};
  return std::string(body.substr(4, static_cast<std::size_t>(n)));
}

std::vector<std::string> ZkConn::ParseStrings(std::string_view body) {
  std::vector<std::string> out;
  if (body.size() < 4) return out;
  const std::int32_t count = GetInt(body, 0);
  std::size_t at = 4;
  for (std::int32_t i = 0; i < count && body.size() - at >= 4; ++i) {
    const std::int32_t n = GetInt(body, at);
    if (n < 0 || body.size() - at - 4 < static_cast<std::size_t>(n)) break;
    out.emplace_back(body.substr(at + 4, static_cast<std::size_t>(n)));
    at += 4 + static_cast<std::size_t>(n);
  }
  return out;
}

void ZkConn::SetData(std::string_view path, std::string_view data, Callback done) {
  std::string body;
  PutBytes(&body, path);
  PutBytes(&body, data);
  PutInt(&body, -1);  // any version
  Send(kOpSetData, body, std::move(done));
}

void ZkConn::GetData(std::string_view path, bool watch, Callback done) {
  Send(kOpGetData, PathWatch(path, watch), std::move(done));
}

void ZkConn::Ping() { Send(kOpPing, {}, nullptr); }

void ZkConn::Write(std::string frame) {
  out_.push_back(std::move(frame));
  if (!writing_) StartWrite();
}

// One frame at a time; deque elements keep their address while more are
// queued behind them.
void ZkConn::StartWrite() {
  writing_ = true;
  asio::async_write(socket_, asio::buffer(out_.front()),
                    [this](const boost::system::error_code& ec, std::size_t) {
                      writing_ = false;
                      if (ec) return Fail("write: " + ec.message());
                      out_.pop_front();
                      if (!out_.empty()) StartWrite();
                    });
}

void ZkConn::ReadMore() {
  std::size_t have = in_.size();
  in_.resize(have + kReadBytes);
  socket_.async_read_some(asio::buffer(in_.data() + have, kReadBytes),
                          [this, have](const boost::system::error_code& ec, std::size_t n) {
                            in_.resize(have + (ec ? 0 : n));
                            if (ec) return Fail("read: " + ec.message());
                            Parse();
                            if (!failed_) ReadMore();
                          });
}

void ZkConn::Parse() {
  std::size_t at = 0;
  while (in_.size() - at >= 4) {
    std::int32_t len = GetInt(in_, at);
    if (len < 0 || len > 64 * 1024 * 1024) return Fail("bad frame length");
    if (in_.size() - at - 4 < static_cast<std::size_t>(len)) break;
    std::string_view p(in_.data() + at + 4, static_cast<std::size_t>(len));
    at += 4 + static_cast<std::size_t>(len);
    if (session_id_ == 0) {  // ConnectResponse
      if (p.size() < 16) return Fail("short ConnectResponse");
      session_id_ = GetLong(p, 8);
      if (session_id_ == 0) return Fail("the server refused the session");
      if (on_connected_) {
        auto cb = std::move(on_connected_);
        on_connected_ = nullptr;
        cb(true);
      }
      continue;
    }
    if (p.size() < 16) return Fail("short reply");
    std::int32_t xid = GetInt(p, 0);
    std::int32_t err = GetInt(p, 12);
    std::string_view body = p.substr(16);
    if (xid == kXidPing) continue;
    if (xid == kXidWatch) {
      if (body.size() >= 12 && on_watch_) {
        std::int32_t type = GetInt(body, 0);
        std::int32_t path_len = GetInt(body, 8);
        std::string_view path =
            path_len > 0 && body.size() >= 12 + static_cast<std::size_t>(path_len)
                ? body.substr(12, static_cast<std::size_t>(path_len))
                : std::string_view();
        on_watch_(type, path);
      }
      continue;
    }
    if (pending_.empty() || pending_.front().first != xid) {
      return Fail("reply with unexpected xid " + std::to_string(xid));
    }
    Callback cb = std::move(pending_.front().second);
    pending_.pop_front();
    if (cb) cb(err, body);
  }
  in_.erase(0, at);
}

void ZkConn::Fail(std::string why) {
  if (failed_) return;
  failed_ = true;
  error_ = std::move(why);
  boost::system::error_code ignored;
  socket_.close(ignored);  // a pending read is aborted, never performed: in_ may go
  std::string().swap(in_);
  if (on_connected_) {
    auto cb = std::move(on_connected_);
    on_connected_ = nullptr;
    cb(false);
  }
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [xid, cb] : pending) {
    if (cb) cb(kTransportError, error_);
  }
}

void ZkConn::Close() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

}  // namespace tenure::vs
