// Test-only HTTP/2 clients for the listener's tests: an nghttp2 client
// session over a blocking socket (or an OpenSSL connection on one), pumped
// until a condition holds or a deadline passes; and raw frames, for what a
// well-behaved client session would never send (garbage, rapid resets).
// Nothing sleeps and hopes: every wait is a poll with a deadline.
#pragma once

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tenure::listen::testing {

inline constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// One frame as bytes: a 9-byte header and its payload.
inline std::string H2Frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream_id,
                           std::string_view payload) {
  std::string frame;
  const auto size = static_cast<std::uint32_t>(payload.size());
  frame.push_back(static_cast<char>(size >> 16));
  frame.push_back(static_cast<char>(size >> 8));
  frame.push_back(static_cast<char>(size));
  frame.push_back(static_cast<char>(type));
  frame.push_back(static_cast<char>(flags));
  frame.push_back(static_cast<char>((stream_id >> 24) & 0x7f));
  frame.push_back(static_cast<char>(stream_id >> 16));
  frame.push_back(static_cast<char>(stream_id >> 8));
  frame.push_back(static_cast<char>(stream_id));
  frame.append(payload);
  return frame;
}

// The error code of the first GOAWAY among `bytes` (frames as the server
// sent them, after no preface), if any.
inline std::optional<std::uint32_t> FindGoAway(std::string_view bytes) {
  while (bytes.size() >= 9) {
    const std::size_t size = (static_cast<std::uint8_t>(bytes[0]) << 16) |
                             (static_cast<std::uint8_t>(bytes[1]) << 8) |
                             static_cast<std::uint8_t>(bytes[2]);
    if (bytes.size() < 9 + size) break;
    if (bytes[3] == 0x7 && size >= 8) {
      std::uint32_t code = 0;
      for (int i = 0; i < 4; ++i) code = (code << 8) | static_cast<std::uint8_t>(bytes[9 + 4 + i]);
      return code;
    }
    bytes.remove_prefix(9 + size);
  }
  return std::nullopt;
}

class H2Client {
 public:
  struct Result {
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers;   // the response's
    std::vector<std::pair<std::string, std::string>> trailers;  // after DATA
    std::string data;
    int header_blocks = 0;
    bool closed = false;
    std::uint32_t error = 0;  // RST_STREAM's code when closed by one

    std::optional<std::string> Header(std::string_view name) const {
      for (const auto& list : {headers, trailers}) {
        for (const auto& [key, value] : list) {
          if (key == name) return value;
        }
      }
      return std::nullopt;
    }
  };

  // Over `fd` (blocking, connected), through `ssl` when set (handshake done).
  explicit H2Client(int fd, SSL* ssl = nullptr) : fd_(fd), ssl_(ssl) {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &OnClose);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &OnFrame);
    // Header blocks past the server's limit too (the tests of that limit).
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_max_send_header_block_length(option, 1 << 20);
    nghttp2_session_client_new2(&session_, callbacks, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~H2Client() { nghttp2_session_del(session_); }
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  // A request; its body is sent and ended when `end` (else SendData later).
  std::int32_t Submit(const std::string& method, const std::string& path,
                      std::vector<std::pair<std::string, std::string>> headers = {},
                      std::string body = "", bool end = true) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {":method", method}, {":scheme", "http"}, {":path", path}, {":authority", "localhost"}};
    for (auto& field : headers) fields.push_back(std::move(field));
    std::vector<nghttp2_nv> list;
    for (const auto& [name, value] : fields) {
      list.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                      value.size(), NGHTTP2_NV_FLAG_NONE});
    }
    auto outgoing = std::make_unique<Outgoing>();
    outgoing->client = this;
    outgoing->body = std::move(body);
    outgoing->end = end;
    nghttp2_data_provider provider{};
    provider.source.ptr = outgoing.get();
    provider.read_callback = &ReadBody;
    const std::int32_t id =
        nghttp2_submit_request(session_, nullptr, list.data(), list.size(), &provider, nullptr);
    outgoing->id = id;
    outgoing_[id] = std::move(outgoing);
    return id;
  }

  void SendData(std::int32_t id, std::string_view bytes, bool end) {
    Outgoing& out = *outgoing_.at(id);
    out.body.append(bytes);
    out.end = end;
    if (out.deferred) {
      out.deferred = false;
      nghttp2_session_resume_data(session_, id);
    }
  }
  void Reset(std::int32_t id) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  }

  // Writes what the session has, then reads and feeds it until `done`
  // holds (true), or `timeout` passes or the server closes (false).
  bool Pump(const std::function<bool()>& done,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (!Flush()) return done();
      if (done()) return true;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) return false;
      if (!ReadSome(static_cast<int>(std::min<long>(left, 50)))) return done();
    }
  }

  // Writes what the session has (false: the connection failed).
  bool Flush() {
    for (;;) {
      const std::uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n <= 0) return n == 0;
      if (!Write(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n))) return false;
    }
  }

  std::map<std::int32_t, Result> results;
  std::optional<std::uint32_t> goaway;  // the server's GOAWAY error code
  int pings = 0;                        // PINGs from the server
  bool eof = false;                     // the server closed

 private:
  struct Outgoing {
    H2Client* client;
    std::int32_t id = 0;
    std::string body;
    std::size_t at = 0;
    bool end = true;
    bool deferred = false;
  };

  bool Write(const char* data, std::size_t size) {
    while (size > 0) {
      const ssize_t n = ssl_ != nullptr ? SSL_write(ssl_, data, static_cast<int>(size))
                                        : ::send(fd_, data, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }

  // Reads what arrives within `wait_ms` (true: nothing, or fed; false: EOF).
  bool ReadSome(int wait_ms) {
    if (ssl_ == nullptr || SSL_has_pending(ssl_) == 0) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, wait_ms) <= 0) return true;
    }
    char buffer[65536];
    const ssize_t n = ssl_ != nullptr ? SSL_read(ssl_, buffer, sizeof buffer)
                                      : ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) {
      eof = true;
      return false;
    }
    const ssize_t used = nghttp2_session_mem_recv(
        session_, reinterpret_cast<const std::uint8_t*>(buffer), static_cast<std::size_t>(n));
    return used >= 0;
  }

  static H2Client& Self(void* user_data) { return *static_cast<H2Client*>(user_data); }

  static ssize_t ReadBody(nghttp2_session*, std::int32_t, std::uint8_t* buffer, std::size_t length,
                          std::uint32_t* flags, nghttp2_data_source* source, void*) {
    Outgoing& out = *static_cast<Outgoing*>(source->ptr);
    const std::size_t n = std::min(length, out.body.size() - out.at);
    std::memcpy(buffer, out.body.data() + out.at, n);
    out.at += n;
    if (out.at == out.body.size()) {
      if (out.end) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
      } else if (n == 0) {
        out.deferred = true;
        return NGHTTP2_ERR_DEFERRED;
      }
    }
    return static_cast<ssize_t>(n);
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                      std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                      std::uint8_t, void* user_data) {
    Result& result = Self(user_data).results[frame->hd.stream_id];
    const std::string key(reinterpret_cast<const char*>(name), name_size);
    const std::string text(reinterpret_cast<const char*>(value), value_size);
    if (key == ":status") {
      result.status = std::stoi(text);
    } else if (result.header_blocks == 0) {
      result.headers.emplace_back(key, text);
    } else {
      result.trailers.emplace_back(key, text);
    }
    return 0;
  }
  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    H2Client& self = Self(user_data);
    if (frame->hd.type == NGHTTP2_HEADERS) ++self.results[frame->hd.stream_id].header_blocks;
    if (frame->hd.type == NGHTTP2_GOAWAY) self.goaway = frame->goaway.error_code;
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) ++self.pings;
    return 0;
  }
  static int OnData(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                    std::size_t size, void* user_data) {
    Self(user_data).results[id].data.append(reinterpret_cast<const char*>(data), size);
    return 0;
  }
  static int OnClose(nghttp2_session*, std::int32_t id, std::uint32_t error, void* user_data) {
    Result& result = Self(user_data).results[id];
    result.closed = true;
    result.error = error;
    return 0;
  }

  int fd_;
  SSL* ssl_;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, std::unique_ptr<Outgoing>> outgoing_;
};

}  // namespace tenure::listen::testing
