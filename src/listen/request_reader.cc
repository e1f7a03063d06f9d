// tenure's HTTP/1.1 request parser (RFC 9112). The header is parsed once it
// is whole (the connection keeps a partial one and feeds it again with what
// follows); its fields are copied into the request in one piece and read as
// views into it, so finding X-Consul-Token costs a compare per field and no
// allocation. Where it differs from Boost.Beast's parser, which it replaced,
// it is stricter: docs/decisions/0022-own-http-request-parser.md, and
// tests/fuzz/http_parser_diff_fuzz.cc checks the two agree on everything else.
// Why one file over 500 lines: it is one parser, the RFC's steps in the
// order they apply to the bytes; the request's own types are in request.cc.
#include "listen/request_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "common/limits.h"
#include "common/strings.h"
#include "listen/wire.h"

namespace tenure::listen {
namespace {

constexpr std::string_view kBodyLimitDoc =
    "See https://developer.hashicorp.com/consul/docs/agent/config/config-files#kv_max_value_size.";

}  // namespace

HttpResponse ConsulBodyTooLarge(std::uint64_t bytes, std::size_t max) {
  if (bytes == 0) {
    return HttpResponse::Text(
        413, fmt::format("Request body too large, max size: {} bytes. {}", max, kBodyLimitDoc));
  }
  return HttpResponse::Text(
      413, fmt::format("Request body({} bytes) too large, max size: {} bytes. {}", bytes, max,
                       kBodyLimitDoc));
}

namespace {

HttpResponse BadRequest(std::string_view why) {
  return HttpResponse::Text(400, "400 Bad Request: " + std::string(why));
}

HttpResponse HeaderTooLarge() {
  return HttpResponse::Text(431, "431 Request Header Fields Too Large");
}

// tchar (RFC 9110 5.6.2): the characters of a method, a field name, a chunk
// extension's name.
constexpr bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':  // clang-format off
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':  // clang-format on
      return true;
    default:
      return false;
  }
}

// A field value's characters besides SP and HTAB: VCHAR and obs-text.
constexpr bool IsValueChar(unsigned char c) { return c > 0x20 && c != 0x7f; }

// A request target: VCHAR only (no obs-text: a target is ASCII).
constexpr bool IsTargetChar(unsigned char c) { return c > 0x20 && c < 0x7f; }

constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }

constexpr char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
  return -1;
}

std::string_view TrimOws(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Does the comma-separated token list `value` hold `token` (case-insensitively)?
bool ListHas(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    if (EqualsIgnoreCase(TrimOws(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// From `at`, where a field value's characters (VCHAR, obs-text, SP, HTAB)
// end in `text`, which ends in CRLF. Eight bytes at a time while none of
// them is a control character or DEL (a tab sends that stretch byte by byte).
std::size_t ValueEnd(const std::string& text, std::size_t at) {
  constexpr std::uint64_t kOnes = 0x0101010101010101;
  constexpr std::uint64_t kHighs = 0x8080808080808080;
  const char* data = text.data();
  while (at + 8 <= text.size()) {
    std::uint64_t x;
    std::memcpy(&x, data + at, 8);
    const std::uint64_t del = x ^ (0x7f * kOnes);
    // Some byte below 0x20, or some byte equal to 0x7f.
    if ((((x - 0x20 * kOnes) & ~x) | ((del - kOnes) & ~del)) & kHighs) break;
    at += 8;
  }
  for (;; ++at) {
    const auto c = static_cast<unsigned char>(data[at]);
    if (!IsValueChar(c) && c != ' ' && c != '\t') return at;
  }
}

// Is `value` a list of tokens (RFC 9110 5.6.1: empty elements allowed)?
bool IsTokenList(std::string_view value) {
  for (;;) {
    const std::size_t comma = value.find(',');
    for (const char c : TrimOws(value.substr(0, comma))) {
      if (!IsTokenChar(static_cast<unsigned char>(c))) return false;
    }
    if (comma == std::string_view::npos) return true;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace

struct RequestReader::Impl {
  enum class State { kHeader, kBody, kChunkLine, kChunkData, kChunkEnd, kTrailer, kDone };

  State state = State::kHeader;
  std::size_t scanned = 0;         // header bytes already searched for its end
  std::size_t method_scanned = 0;  // bytes of the method found good so far
  bool method_judged = false;
  HttpRequest request;
  int version = 11;
  bool keep_alive = true;
  bool expects_continue = false;
  std::size_t body_bytes_max = limits::kHttpBodyBytesMax;  // what the 413 names
  const LargeBodyGate* large_body_gate = nullptr;          // the connection's
  const BodyTooLargeAnswer* body_too_large = nullptr;      // the connection's
  bool continue_taken = false;
  std::uint64_t remaining = 0;  // body or chunk bytes still to come
  std::size_t trailer_bytes = 0;
  HttpResponse error;

  Outcome Fail(HttpResponse response) {
    error = std::move(response);
    return Outcome::kError;
  }
  Outcome FailBad(std::string_view why) { return Fail(BadRequest(why)); }
  HttpResponse BodyTooLarge(std::uint64_t bytes) const {
    if (body_too_large != nullptr && *body_too_large) {
      return (*body_too_large)(bytes, body_bytes_max);
    }
    return ConsulBodyTooLarge(bytes, body_bytes_max);
  }

  Outcome Method(std::string_view buffer);
  Outcome Header(const char* data, std::size_t size, std::size_t* used);
  Outcome ParseHeader(std::string_view head);
  Outcome Body(const char* data, std::size_t size, std::size_t* used);
};

// The method is judged as its bytes arrive, not when the header is whole,
// with ParseHeader's rule and text: a TLS handshake sent to the clear-text
// port, or any bytes that cannot begin a request, get their 400 at once
// instead of the request read timeout, waiting for a blank line that never
// comes. A TLS record begins with 0x16 (handshake), which begins no method.
RequestReader::Outcome RequestReader::Impl::Method(std::string_view buffer) {
  if (method_judged) return Outcome::kNeedMore;
  while (method_scanned < buffer.size() &&
         IsTokenChar(static_cast<unsigned char>(buffer[method_scanned]))) {
    ++method_scanned;
  }
  if (method_scanned == buffer.size()) return Outcome::kNeedMore;
  method_judged = true;
  if (method_scanned > 0 && buffer[method_scanned] == ' ') return Outcome::kNeedMore;
  if (method_scanned == 0 && buffer[0] == '\x16') {
    return FailBad(
        "TLS handshake sent to the clear-text HTTP port (use https:// and the "
        "HTTPS port)");
  }
  return FailBad("bad method");
}

// Waits for the whole header, then parses it.
RequestReader::Outcome RequestReader::Impl::Header(const char* data, std::size_t size,
                                                   std::size_t* used) {
  const std::string_view buffer(data, size);
  if (Method(buffer) == Outcome::kError) return Outcome::kError;
  const std::size_t from = scanned >= 3 ? scanned - 3 : 0;
  const std::size_t end = buffer.find("\r\n\r\n", from);
  if (end == std::string_view::npos) {
    if (size > limits::kHttpHeaderBytesMax) return Fail(HeaderTooLarge());
    scanned = size;
    return Outcome::kNeedMore;
  }
  const std::size_t head_size = end + 4;
  if (head_size > limits::kHttpHeaderBytesMax) return Fail(HeaderTooLarge());
  if (const Outcome outcome = ParseHeader(buffer.substr(0, end + 2)); outcome == Outcome::kError) {
    return outcome;
  }
  *used = head_size;
  return Outcome::kNeedMore;
}

// `head`: the request line and every field line, each ending in CRLF.
RequestReader::Outcome RequestReader::Impl::ParseHeader(std::string_view head) {
  // request-line = method SP request-target SP HTTP-version CRLF
  std::size_t at = 0;
  while (at < head.size() && IsTokenChar(static_cast<unsigned char>(head[at]))) ++at;
  if (at == 0 || head[at] != ' ') return FailBad("bad method");
  request.method.assign(head.data(), at);
  const std::size_t target_at = ++at;
  while (at < head.size() && IsTargetChar(static_cast<unsigned char>(head[at]))) ++at;
  if (at == target_at || head[at] != ' ') return FailBad("bad target");
  request.target.assign(head.data() + target_at, at - target_at);
  ++at;
  const std::string_view version_text = head.substr(at, 10);
  if (version_text.size() < 10 || !version_text.starts_with("HTTP/") || !IsDigit(version_text[5]) ||
      version_text[6] != '.' || !IsDigit(version_text[7])) {
    return FailBad("bad version");
  }
  if (version_text[8] != '\r' || version_text[9] != '\n') return FailBad("bad line ending");
  version = (version_text[5] - '0') * 10 + (version_text[7] - '0');
  // HTTP/1.0 and 1.1 only, refused as soon as the header is in (Beast,
  // before, refused other versions as "bad version").
  if (version != 10 && version != 11) {
    return Fail(HttpResponse::Text(505, "505 HTTP Version Not Supported"));
  }
  at += 10;

  // The fields: copied whole into the request, names lower-cased there.
  const std::string_view fields = head.substr(at);
  std::string& text = request.headers.text();
  text.assign(fields);
  request.headers.reserve(12);
  bool has_length = false;
  bool chunked = false;
  bool close = false;
  bool keep_alive_token = false;
  std::size_t line_at = 0;
  while (line_at < text.size()) {
    // field-line = field-name ":" OWS field-value OWS CRLF; no obs-fold.
    std::size_t p = line_at;
    if (text[p] == ' ' || text[p] == '\t') return FailBad("bad obs-fold");
    while (p < text.size() && IsTokenChar(static_cast<unsigned char>(text[p]))) {
      text[p] = Lower(text[p]);
      ++p;
    }
    if (p == line_at || text[p] != ':') return FailBad("bad field");
    const std::size_t name_size = p - line_at;
    ++p;
    while (text[p] == ' ' || text[p] == '\t') ++p;
    const std::size_t value_at = p;
    p = ValueEnd(text, p);
    std::size_t value_end = p;
    while (value_end > value_at && (text[value_end - 1] == ' ' || text[value_end - 1] == '\t')) {
      --value_end;
    }
    if (text[p] != '\r') return FailBad("bad value");
    if (text[p + 1] != '\n') return FailBad("bad line ending");
    const std::string_view name(text.data() + line_at, name_size);
    const std::string_view value(text.data() + value_at, value_end - value_at);
    const std::size_t index = request.headers.size();
    request.headers.AddAt(
        static_cast<std::uint32_t>(line_at), static_cast<std::uint32_t>(name_size),
        static_cast<std::uint32_t>(value_at), static_cast<std::uint32_t>(value.size()));
    request.NoteHeader(index, name);
    if (name == "content-length") {
      // One field, one number: a list or a second field is refused, even
      // if its numbers agree (RFC 9112 6.3 allows either).
      if (has_length || chunked) return FailBad("bad Content-Length");
      if (value.empty() || value.size() > 19) return FailBad("bad Content-Length");
      std::uint64_t length = 0;
      for (const char c : value) {
        if (!IsDigit(c)) return FailBad("bad Content-Length");
        length = length * 10 + static_cast<std::uint64_t>(c - '0');
      }
      has_length = true;
      remaining = length;
    } else if (name == "transfer-encoding") {
      // Only "chunked" is a coding tenure decodes; with Content-Length it
      // is request smuggling's favourite ambiguity (RFC 9112 6.1).
      if (chunked) return FailBad("bad Transfer-Encoding");
      if (has_length) return FailBad("Content-Length with Transfer-Encoding");
      if (!EqualsIgnoreCase(value, "chunked")) return FailBad("bad Transfer-Encoding");
      chunked = true;
    } else if (name == "connection") {
      if (!IsTokenList(value)) return FailBad("bad value");
      close = close || ListHas(value, "close");
      keep_alive_token = keep_alive_token || ListHas(value, "keep-alive");
    } else if (name == "expect") {
      expects_continue = EqualsIgnoreCase(value, "100-continue");
    }
    line_at = p + 2;
  }
  keep_alive = !close && (version >= 11 || keep_alive_token);
  // A body over the usual limit only from a request the gate lets (a
  // snapshot's restore: the token is checked now, before any of the body is
  // read): a stranger gets the usual limit.
  if ((chunked || (has_length && remaining > body_bytes_max)) && large_body_gate != nullptr &&
      *large_body_gate) {
    body_bytes_max = std::max(body_bytes_max, (*large_body_gate)(request));
  }
  if (has_length && remaining > body_bytes_max) return Fail(BodyTooLarge(remaining));
  if (chunked) {
    state = State::kChunkLine;
  } else if (remaining > 0) {
    // Room for what is declared, up to the usual limit: a large body grows
    // as it arrives, so a declared size alone reserves nothing big.
    request.body.reserve(
        static_cast<std::size_t>(std::min<std::uint64_t>(remaining, limits::kHttpBodyBytesMax)));
    state = State::kBody;
  } else {
    state = State::kDone;
  }
  return Outcome::kNeedMore;
}

RequestReader::Outcome RequestReader::Impl::Body(const char* data, std::size_t size,
                                                 std::size_t* used) {
  while (state != State::kDone) {
    const char* at = data + *used;
    const std::size_t left = size - *used;
    switch (state) {
      case State::kBody:
      case State::kChunkData: {
        if (left == 0) return Outcome::kNeedMore;
        const std::size_t n = remaining < left ? static_cast<std::size_t>(remaining) : left;
        request.body.append(at, n);
        *used += n;
        remaining -= n;
        if (remaining == 0) state = state == State::kBody ? State::kDone : State::kChunkEnd;
        break;
      }
      case State::kChunkEnd: {
        if (left < 2) return Outcome::kNeedMore;
        if (at[0] != '\r' || at[1] != '\n') return FailBad("bad chunk");
        *used += 2;
        state = State::kChunkLine;
        break;
      }
      case State::kChunkLine: {
        // chunk-size [ chunk-ext ] CRLF, taken whole.
        const std::string_view line(at, left);
        const std::size_t end = line.find("\r\n");
        if (end == std::string_view::npos) {
          // A size line longer than the header limit is not a size line.
          if (left > limits::kHttpHeaderBytesMax) return FailBad("bad chunk");
          return Outcome::kNeedMore;
        }
        std::size_t p = 0;
        std::uint64_t chunk_size = 0;
        for (int digit; p < end && (digit = HexDigit(line[p])) >= 0; ++p) {
          if (chunk_size > (body_bytes_max >> 4)) return Fail(BodyTooLarge(0));
          chunk_size = chunk_size * 16 + static_cast<std::uint64_t>(digit);
        }
        if (p == 0) return FailBad("bad chunk");
        // chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )
        const auto skip_bws = [&] {
          while (p < end && (line[p] == ' ' || line[p] == '\t')) ++p;
        };
        const auto token = [&] {
          const std::size_t from = p;
          while (p < end && IsTokenChar(static_cast<unsigned char>(line[p]))) ++p;
          return p > from;
        };
        // No whitespace before the CRLF (the grammar has none; Beast refuses it).
        while (p != end) {
          skip_bws();
          if (p == end || line[p] != ';') return FailBad("bad chunk extension");
          ++p;
          skip_bws();
          if (!token()) return FailBad("bad chunk extension");
          const std::size_t name_end = p;
          skip_bws();
          if (p == end || line[p] != '=') {
            p = name_end;
          } else {
            ++p;
            skip_bws();
            if (p < end && line[p] == '"') {
              for (++p;; ++p) {
                if (p == end) return FailBad("bad chunk extension");
                const auto c = static_cast<unsigned char>(line[p]);
                if (c == '"') break;
                if (c == '\\') {
                  if (++p == end || !(IsValueChar(static_cast<unsigned char>(line[p])) ||
                                      line[p] == ' ' || line[p] == '\t')) {
                    return FailBad("bad chunk extension");
                  }
                } else if (!IsValueChar(c) && c != ' ' && c != '\t') {
                  return FailBad("bad chunk extension");
                }
              }
              ++p;
            } else if (!token()) {
              return FailBad("bad chunk extension");
            }
          }
        }
        if (request.body.size() + chunk_size > body_bytes_max) {
          return Fail(BodyTooLarge(0));  // Consul's text without a size
        }
        *used += end + 2;
        remaining = chunk_size;
        state = chunk_size == 0 ? State::kTrailer : State::kChunkData;
        break;
      }
      case State::kTrailer: {
        // trailer-section = *( field-line CRLF ) CRLF: checked as fields,
        // bounded as a header, then dropped (a trailer never adds to the
        // header a handler sees, so it cannot bring a token).
        const std::string_view line(at, left);
        const std::size_t end = line.find("\r\n");
        if (end == std::string_view::npos) {
          if (trailer_bytes + left > limits::kHttpHeaderBytesMax) return Fail(HeaderTooLarge());
          return Outcome::kNeedMore;
        }
        trailer_bytes += end + 2;
        if (trailer_bytes > limits::kHttpHeaderBytesMax) return Fail(HeaderTooLarge());
        *used += end + 2;
        if (end == 0) {
          state = State::kDone;
          break;
        }
        std::size_t p = 0;
        if (line[0] == ' ' || line[0] == '\t') return FailBad("bad obs-fold");
        while (p < end && IsTokenChar(static_cast<unsigned char>(line[p]))) ++p;
        if (p == 0 || p == end || line[p] != ':') return FailBad("bad field");
        const std::string_view name = line.substr(0, p);
        for (++p; p < end; ++p) {
          const auto c = static_cast<unsigned char>(line[p]);
          if (!IsValueChar(c) && c != ' ' && c != '\t') return FailBad("bad value");
        }
        // Framing cannot change after the body (RFC 9110 6.5.1); Beast
        // refuses these too.
        if (EqualsIgnoreCase(name, "content-length")) return FailBad("bad Content-Length");
        if (EqualsIgnoreCase(name, "transfer-encoding")) return FailBad("bad Transfer-Encoding");
        if (EqualsIgnoreCase(name, "connection") &&
            !IsTokenList(TrimOws(line.substr(name.size() + 1, end - name.size() - 1)))) {
          return FailBad("bad value");
        }
        break;
      }
      case State::kHeader:
      case State::kDone:
        break;
    }
  }
  return Outcome::kComplete;
}

RequestReader::RequestReader() : impl_(std::make_unique<Impl>()) {}
RequestReader::~RequestReader() = default;

void RequestReader::Begin() {
  Impl& impl = *impl_;
  impl.state = Impl::State::kHeader;
  impl.scanned = 0;
  impl.method_scanned = 0;
  impl.method_judged = false;
  impl.request = HttpRequest();
  impl.version = 11;
  impl.keep_alive = true;
  impl.expects_continue = false;
  impl.continue_taken = false;
  impl.remaining = 0;
  impl.trailer_bytes = 0;
  impl.body_bytes_max = limits::kHttpBodyBytesMax;
}

void RequestReader::set_body_rules(const LargeBodyGate* gate, const BodyTooLargeAnswer* too_large) {
  impl_->large_body_gate = gate;
  impl_->body_too_large = too_large;
}

RequestReader::Outcome RequestReader::Feed(const char* data, std::size_t size, std::size_t* used) {
  Impl& impl = *impl_;
  *used = 0;
  if (impl.state == Impl::State::kHeader) {
    const Outcome outcome = impl.Header(data, size, used);
    if (outcome == Outcome::kError || impl.state == Impl::State::kHeader) return outcome;
  }
  return impl.Body(data, size, used);
}

bool RequestReader::header_done() const { return impl_->state != Impl::State::kHeader; }

bool RequestReader::TakeContinue() {
  Impl& impl = *impl_;
  if (impl.continue_taken || !header_done() || impl.state == Impl::State::kDone) return false;
  impl.continue_taken = true;
  return impl.version >= 11 && impl.expects_continue;
}

HttpResponse RequestReader::Overlong() {
  if (!header_done()) return HeaderTooLarge();
  if (impl_->state == Impl::State::kTrailer) return HeaderTooLarge();
  return BadRequest("bad chunk");
}

HttpResponse RequestReader::TakeError() {
  impl_->state = Impl::State::kHeader;
  return std::exchange(impl_->error, HttpResponse{});
}

RequestReader::Parsed RequestReader::Take() {
  Impl& impl = *impl_;
  Parsed parsed;
  parsed.keep_alive = impl.keep_alive;
  parsed.http10 = impl.version == 10;
  parsed.head_request = impl.request.method == "HEAD";
  parsed.request = std::move(impl.request);
  HttpRequest& request = parsed.request;
  if (Status status = wire::ParseTarget(request.target, &request); !status.ok()) {
    parsed.keep_alive = false;
    parsed.refusal = HttpResponse::Text(400, std::string(status.message()));
  }
  return parsed;
}

}  // namespace tenure::listen
