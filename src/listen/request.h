// Plain HTTP request/response values handed between the transport
// (listen/request_reader.cc, tenure's own HTTP/1.1 request parser) and the
// handlers above it (the Consul API's, http/). Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/types.h"

namespace tenure::listen {

// A request's header fields: one text holding every name (lower-cased) and
// value, and where each field is in it. The reader copies the fields of a
// request into the text in one allocation and notes positions, so a field
// costs no allocation of its own; a field reads as a pair of string_views
// into the text, valid while the list lives and is not added to. Copies and
// moves keep positions, not pointers, so they stay valid.
class HeaderList {
 public:
  using Field = std::pair<std::string_view, std::string_view>;

  class Iterator {
   public:
    using value_type = Field;
    using difference_type = std::ptrdiff_t;
    Iterator(const HeaderList* list, std::size_t at) : list_(list), at_(at) {}
    Field operator*() const { return (*list_)[at_]; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return at_ == other.at_; }

   private:
    const HeaderList* list_;
    std::size_t at_;
  };

  std::size_t size() const { return spans_.size(); }
  bool empty() const { return spans_.empty(); }
  Field operator[](std::size_t at) const {
    const Span& span = spans_[at];
    return {std::string_view(text_.data() + span.name_at, span.name_size),
            std::string_view(text_.data() + span.value_at, span.value_size)};
  }
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, spans_.size()}; }

  // Appends a field; `name` is stored lower-cased.
  void Add(std::string_view name, std::string_view value);

  // For the request reader: the text of every field at once, then each
  // field's position in it (names already lower-cased there).
  std::string& text() { return text_; }
  void reserve(std::size_t fields) { spans_.reserve(fields); }
  // Gives back the room reserve() kept for more fields (a parked request).
  void ShrinkToFit() {
    text_.shrink_to_fit();
    spans_.shrink_to_fit();
  }
  void AddAt(std::uint32_t name_at, std::uint32_t name_size, std::uint32_t value_at,
             std::uint32_t value_size) {
    spans_.push_back({name_at, name_size, value_at, value_size});
  }

 private:
  struct Span {
    std::uint32_t name_at, name_size, value_at, value_size;
  };
  std::string text_;
  std::vector<Span> spans_;
};

struct HttpRequest {
  std::string method;     // "GET", "PUT", ... as received
  std::string target;     // raw request target, e.g. "/v1/kv/a%20b?recurse"
  std::string path;       // percent-decoded path, e.g. "/v1/kv/a b"
  std::string raw_query;  // undecoded text after '?', "" if none
  // Decoded query parameters in order; a parameter without '=' has value "".
  std::vector<std::pair<std::string, std::string>> query;
  // Header names lower-cased, in the order received. Add through AddHeader,
  // which also notes where the token headers are (the reader notes them
  // itself through NoteHeader).
  HeaderList headers;
  std::string body;
  MonoMs received_ms;

  // First value of a query parameter, nullopt if absent.
  std::optional<std::string_view> Query(std::string_view name) const;
  bool HasQuery(std::string_view name) const { return Query(name).has_value(); }
  // First value of a header (name compared case-insensitively), nullopt if absent.
  std::optional<std::string_view> Header(std::string_view name) const;

  void AddHeader(std::string_view name, std::string_view value);
  // For a request that parks (a blocking query): frees what is only read
  // while it is routed (target, raw_query, body) and the headers' spare
  // room. Path, query parameters and headers stay readable.
  void TrimForParking();
  // Notes the token headers among headers[at] (its name lower-case).
  void NoteHeader(std::size_t at, std::string_view lower_name) {
    if (lower_name.size() == 14 && token_header_at == kNoHeader && lower_name == "x-consul-token") {
      token_header_at = at;
    } else if (lower_name.size() == 13 && authorization_header_at == kNoHeader &&
               lower_name == "authorization") {
      authorization_header_at = at;
    }
  }
  // The first X-Consul-Token and Authorization values, "" if absent (the
  // headers tokens come in, Consul's and etcd's gateway's): every
  // request with ACLs on asks, so they are found once, as headers arrive.
  std::string_view TokenHeader() const { return ValueAt(token_header_at); }
  std::string_view AuthorizationHeader() const { return ValueAt(authorization_header_at); }

  static constexpr std::size_t kNoHeader = static_cast<std::size_t>(-1);
  std::size_t token_header_at = kNoHeader;  // index into headers
  std::size_t authorization_header_at = kNoHeader;

 private:
  std::string_view ValueAt(std::size_t at) const {
    return at == kNoHeader ? std::string_view() : headers[at].second;
  }
};

struct SharedAnswer;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";  // "" = no Content-Type header
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Set instead of the fields above: an answer many callers receive alike
  // (a blocking query's wake-up, decision 0034), built and rendered once.
  // Only Call::Reply reads it, and hands it to Responder::SendShared.
  std::shared_ptr<const SharedAnswer> shared;
  // Set for a large answer: makes `body` from what the handler copied out of
  // the Store, on a builder thread (http/answer_builder.h, decision 0046).
  // Only the Consul API's Call::Reply reads it; the transport never does.
  std::function<std::string()> build_body;
  std::size_t build_bytes = 0;  // the answer's size, counted before it is built
  // Set with build_bytes for a large answer whose copy out of the Store is
  // cut into slices (http/prefix_copy.h, decision 0051): called once per loop
  // turn until it returns true, having then made the response whole (a
  // build_body, or an answer of its own). Only Api::Answer reads it.
  std::function<bool(HttpResponse*)> gather;

  static HttpResponse Json(std::string body, int status = 200);
  // Plain-text error body, as Consul writes errors.
  static HttpResponse Text(int status, std::string body);
};

// One answer sent alike to many clients: every watcher of a key woken by
// the same write, whose answer depends only on the key's version, the
// leader state and the ACL default policy (decision 0034). `response` is
// complete, as sent (X-Consul-Default-Acl-Policy included). The transport
// renders its head once per Date line for keep-alive HTTP/1.1 GETs and
// writes the shared bytes; `head` is that cache (loop thread only; a new
// Date makes a new string, so a connection still writing the old one keeps
// it).
struct SharedAnswer {
  HttpResponse response;
  mutable std::string head_date;
  mutable std::shared_ptr<const std::string> head;
};

// Header fields of an answer, names as the handler spells them.
using HeaderFields = std::vector<std::pair<std::string, std::string>>;

// One in-flight request's way back to its client. The handler must answer
// exactly once (possibly later, e.g. for a blocking query): with Send, or
// with a streamed answer (below). If the client goes away first, closed()
// turns true and the OnClose callback runs (posted), so parked work can be
// dropped; what is sent after that is a no-op.
//
// A streamed answer (decision 0053, "Streamed answers"; etcd's watch
// through its JSON gateway): StartStream sends the head at once, SendChunk
// each body piece as it comes, over any time, EndStream the end. HTTP/1.1
// frames it with Transfer-Encoding: chunked and keeps the connection for
// the next request; an HTTP/1.0 client gets the body raw and the connection
// closed at the end; HTTP/2 sends HEADERS, DATA, and END_STREAM. No body
// follows the head of a HEAD request, nor of a 1xx, 204 or 304 status: the
// answer is whole at StartStream and the responder turns closed (OnClose
// runs, so a producer stops). While a stream is open the listener's idle
// and read timeouts do not apply; a client that stops reading is cut as for
// any answer (the write-stall rule), and so is a stream whose unsent bytes
// no longer fit the unsent-output budget (limits::kHttpUnsentBytesMax):
// either way OnClose runs. A responder dropped after StartStream without
// EndStream cuts the answer (HTTP/1.1: the connection is reset; HTTP/2:
// RST_STREAM INTERNAL_ERROR), as the body cannot be completed honestly.
// OnClose does not run after EndStream.
//
// The defaults are for responders that cannot stream (test fakes): the
// stream is answered 501 and its pieces dropped.
class Responder {
 public:
  virtual ~Responder() = default;
  virtual void Send(HttpResponse response) = 0;
  // Sends `answer`, which other clients receive too: by default a copy of
  // its response; the HTTP connection writes the shared bytes.
  virtual void SendShared(std::shared_ptr<const SharedAnswer> answer) { Send(answer->response); }
  virtual bool closed() const = 0;
  virtual void OnClose(std::function<void()> callback) = 0;

  // The head of a streamed answer, instead of Send; at most once. Header
  // fields that frame a body (Content-Length, Transfer-Encoding,
  // Connection) are the transport's and dropped.
  virtual void StartStream(int status, const HeaderFields& headers);
  // One piece of the body, after StartStream; an empty piece is ignored.
  virtual void SendChunk(std::string_view bytes);
  // The end of the body; nothing may be sent after it.
  virtual void EndStream();
  // The stream's bytes not yet handed to the socket (framing included on
  // HTTP/1.1), and a callback run (posted) each time they fall to 0, so a
  // producer can pace itself: queue while unsent_bytes() is small, wait
  // for OnDrained after.
  virtual std::size_t unsent_bytes() const { return 0; }
  virtual void OnDrained(std::function<void()> callback);
};

using RequestHandler = std::function<void(HttpRequest request, std::shared_ptr<Responder>)>;

// Whether a parked request is a read: its client's EOF (a half-close) ends
// it, as that client cannot be waiting for anything else, and while it
// waits its parser and TLS buffers are given back. A write's client that
// half-closes still gets its answer, as Go's server sends it.
using ParkedReadRule = bool (*)(const HttpRequest& request);

// Percent-decodes `text` (path or query component). In query components
// ('+' means space) when plus_is_space. Errors on a truncated or non-hex
// escape: `invalid URL escape "%zz"` (Go's text).
Result<std::string> PercentDecode(std::string_view text, bool plus_is_space);
// Splits and decodes a raw query string ("a=1&b&c=%20").
Result<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view raw_query);

}  // namespace tenure::listen
