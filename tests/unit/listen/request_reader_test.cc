// RequestReader, tenure's HTTP/1.1 request parser: every request is also fed
// split at every byte boundary and one byte at a time, the way a slow client
// or a small socket read delivers it (as Connection does: unparsed bytes are
// kept and fed again with what follows).
#include "listen/request_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/limits.h"

namespace tenure::listen {
namespace {

struct Result {
  // Requests completed in order, then the refusal that ended the stream, if any.
  std::vector<RequestReader::Parsed> requests;
  std::optional<HttpResponse> error;
  bool continued = false;  // TakeContinue said yes
};

// Feeds `stream` in reads of the given sizes (the last repeats), keeping what
// the reader leaves as Connection does.
Result FeedInReads(std::string_view stream, const std::vector<std::size_t>& reads) {
  Result result;
  RequestReader reader;
  reader.Begin();
  std::string pending;
  std::size_t offset = 0;
  std::size_t read_index = 0;
  for (int guard = 0; guard < 1'000'000; ++guard) {
    const std::size_t want = reads[std::min(read_index++, reads.size() - 1)];
    const std::size_t n = std::min(want, stream.size() - offset);
    pending.append(stream.substr(offset, n));
    offset += n;
    for (;;) {
      std::size_t used = 0;
      const auto outcome = reader.Feed(pending.data(), pending.size(), &used);
      EXPECT_LE(used, pending.size());
      pending.erase(0, used);
      if (outcome == RequestReader::Outcome::kError) {
        result.error = reader.TakeError();
        return result;
      }
      result.continued |= reader.TakeContinue();
      if (outcome != RequestReader::Outcome::kComplete) break;
      result.requests.push_back(reader.Take());
      if (result.requests.back().refusal || !result.requests.back().keep_alive) return result;
      reader.Begin();
    }
    if (n == 0) break;
  }
  return result;
}

Result FeedWhole(std::string_view stream) { return FeedInReads(stream, {stream.size() + 1}); }

// Feeds `stream` whole, split in two at every boundary, and one byte at a
// time; all must give the same result, which is returned.
Result FeedEveryWay(std::string_view stream) {
  Result whole = FeedWhole(stream);
  auto same = [&](const Result& other, const std::string& how) {
    ASSERT_EQ(other.requests.size(), whole.requests.size()) << how;
    ASSERT_EQ(other.error.has_value(), whole.error.has_value()) << how;
    if (whole.error) {
      EXPECT_EQ(other.error->status, whole.error->status) << how;
      EXPECT_EQ(other.error->body, whole.error->body) << how;
    }
    EXPECT_EQ(other.continued, whole.continued) << how;
    for (std::size_t i = 0; i < whole.requests.size(); ++i) {
      const HttpRequest& a = whole.requests[i].request;
      const HttpRequest& b = other.requests[i].request;
      EXPECT_EQ(a.method, b.method) << how;
      EXPECT_EQ(a.target, b.target) << how;
      EXPECT_EQ(a.body, b.body) << how;
      ASSERT_EQ(a.headers.size(), b.headers.size()) << how;
      for (std::size_t h = 0; h < a.headers.size(); ++h) EXPECT_EQ(a.headers[h], b.headers[h]);
      EXPECT_EQ(whole.requests[i].keep_alive, other.requests[i].keep_alive) << how;
    }
  };
  same(FeedInReads(stream, {1}), "byte by byte");
  for (std::size_t split = 1; split < stream.size(); ++split) {
    same(FeedInReads(stream, {split, stream.size()}), "split at " + std::to_string(split));
  }
  return whole;
}

const HttpRequest& Only(const Result& result) {
  EXPECT_FALSE(result.error.has_value()) << (result.error ? result.error->body : "");
  EXPECT_EQ(result.requests.size(), 1u);
  static const HttpRequest kEmpty;
  return result.requests.empty() ? kEmpty : result.requests[0].request;
}

std::string ErrorBody(const Result& result) {
  EXPECT_TRUE(result.error.has_value());
  return result.error ? std::to_string(result.error->status) + " " + result.error->body : "";
}

TEST(RequestReaderTest, ParsesALineHeadersAndTheTokenWithoutCopies) {
  const Result result = FeedEveryWay(
      "PUT /v1/kv/a%20b?cas=3 HTTP/1.1\r\nHost: 127.0.0.1:8500\r\n"
      "X-Consul-Token:   0b3c  \t\r\nAuthorization: Bearer x\r\nContent-Length: 5\r\n\r\nhello");
  const HttpRequest& request = Only(result);
  EXPECT_EQ(request.method, "PUT");
  EXPECT_EQ(request.target, "/v1/kv/a%20b?cas=3");
  EXPECT_EQ(request.path, "/v1/kv/a b");
  EXPECT_EQ(request.Query("cas"), "3");
  EXPECT_EQ(request.body, "hello");
  EXPECT_EQ(request.TokenHeader(), "0b3c");  // OWS trimmed both sides
  EXPECT_EQ(request.AuthorizationHeader(), "Bearer x");
  EXPECT_EQ(request.headers[0].first, "host");
  EXPECT_EQ(request.headers[1].first, "x-consul-token");
  EXPECT_EQ(request.Header("CONTENT-LENGTH"), "5");
  EXPECT_TRUE(result.requests[0].keep_alive);
  EXPECT_FALSE(result.requests[0].http10);
}

TEST(RequestReaderTest, HeadersSurviveCopyAndMove) {
  Result result = FeedWhole("GET / HTTP/1.1\r\nX-Consul-Token: t\r\nA: b\r\n\r\n");
  HttpRequest moved = std::move(result.requests.at(0).request);
  const HttpRequest copy = moved;
  moved = HttpRequest();
  EXPECT_EQ(copy.TokenHeader(), "t");
  EXPECT_EQ(copy.Header("a"), "b");
}

TEST(RequestReaderTest, PipelinedRequestsComeOutInOrder) {
  const Result result = FeedEveryWay(
      "GET /a HTTP/1.1\r\n\r\nPUT /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
      "PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"
      "GET /d HTTP/1.1\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\n\r\n");
  ASSERT_EQ(result.requests.size(), 4u);
  EXPECT_EQ(result.requests[0].request.path, "/a");
  EXPECT_EQ(result.requests[1].request.body, "hi");
  EXPECT_EQ(result.requests[2].request.body, "x");
  EXPECT_EQ(result.requests[3].request.path, "/d");
  EXPECT_FALSE(result.requests[3].keep_alive);
}

TEST(RequestReaderTest, Http10KeepsAliveOnlyWhenAsked) {
  Result result = FeedEveryWay("GET / HTTP/1.0\r\n\r\n");
  ASSERT_EQ(result.requests.size(), 1u);
  EXPECT_TRUE(result.requests[0].http10);
  EXPECT_FALSE(result.requests[0].keep_alive);
  result = FeedEveryWay("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  EXPECT_TRUE(result.requests.at(0).keep_alive);
  result = FeedEveryWay("GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n");
  EXPECT_FALSE(result.requests.at(0).keep_alive);
  result = FeedEveryWay("HEAD / HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(result.requests.at(0).head_request);
}

TEST(RequestReaderTest, OtherVersionsGet505AsSoonAsTheHeaderIsIn) {
  for (const char* version : {"HTTP/0.9", "HTTP/1.2", "HTTP/2.0", "HTTP/9.9"}) {
    const Result result =
        FeedEveryWay(std::string("PUT / ") + version + "\r\nContent-Length: 3\r\n\r\n");
    EXPECT_EQ(ErrorBody(result), "505 505 HTTP Version Not Supported") << version;
  }
}

TEST(RequestReaderTest, ChunkedBodiesWithExtensionsAndTrailers) {
  const Result result = FeedEveryWay(
      "POST /v1/txn HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
      "3;name=value;q=\"a \\\" b\"\r\nabc\r\n00A ; x\r\n0123456789\r\n"
      "0\r\nX-Consul-Token: from-trailer\r\nChecksum: 1\r\n\r\n");
  const HttpRequest& request = Only(result);
  EXPECT_EQ(request.body, "abc0123456789");
  // Trailers are checked and dropped: no token from a trailer.
  EXPECT_EQ(request.TokenHeader(), "");
  EXPECT_FALSE(request.Header("checksum").has_value());
}

TEST(RequestReaderTest, ExpectContinueIsReportedOnceBeforeTheBody) {
  Result result = FeedWhole("PUT /k HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_TRUE(result.continued);
  EXPECT_TRUE(result.requests.empty());
  // Not when the body is already there, nor over HTTP/1.0.
  result = FeedWhole("PUT /k HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab");
  EXPECT_FALSE(result.continued);
  result = FeedWhole("PUT /k HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_FALSE(result.continued);
}

TEST(RequestReaderTest, MalformedRequestsGet400WithBeastsWords) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"HELLO THERE\r\n\r\n", "400 400 Bad Request: bad target"},
      {"GET\r\n\r\n", "400 400 Bad Request: bad method"},
      {"G(T / HTTP/1.1\r\n\r\n", "400 400 Bad Request: bad method"},
      {"GET /a b HTTP/1.1\r\n\r\n", "400 400 Bad Request: bad version"},
      {"GET / HTTP/1.1x\r\n\r\n", "400 400 Bad Request: bad line ending"},
      {"GET / HTTQ/1.1\r\n\r\n", "400 400 Bad Request: bad version"},
      {"GET / HTTP/1.1\r\nBad Header\r\n\r\n", "400 400 Bad Request: bad field"},
      {"GET / HTTP/1.1\r\n: x\r\n\r\n", "400 400 Bad Request: bad field"},
      {"GET / HTTP/1.1\r\nA: x\x01y\r\n\r\n", "400 400 Bad Request: bad value"},
      {"GET / HTTP/1.1\r\nA: x\ny\r\n\r\n", "400 400 Bad Request: bad value"},
      {"GET / HTTP/1.1\r\nA: x\ry\r\n\r\n", "400 400 Bad Request: bad line ending"},
      {"GET / HTTP/1.1\r\nConnection: keep-alive x\r\n\r\n", "400 400 Bad Request: bad value"},
      {"GET / HTTP/1.1\r\nA: x\r\n  folded\r\n\r\n", "400 400 Bad Request: bad obs-fold"},
      {"PUT / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", "400 400 Bad Request: bad Content-Length"},
      {"PUT / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "400 400 Bad Request: bad Content-Length"},
      {"PUT / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\nabc",
       "400 400 Bad Request: bad Content-Length"},
      {"PUT / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
       "400 400 Bad Request: bad Content-Length"},
      {"PUT / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
       "400 400 Bad Request: bad Content-Length"},
      {"PUT / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
       "400 400 Bad Request: Content-Length with Transfer-Encoding"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
       "400 400 Bad Request: bad Content-Length"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
       "400 400 Bad Request: bad Transfer-Encoding"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
       "400 400 Bad Request: bad Transfer-Encoding"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       "400 400 Bad Request: bad chunk"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
       "400 400 Bad Request: bad chunk"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;\r\na\r\n",
       "400 400 Bad Request: bad chunk extension"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;a=b \r\na\r\n",
       "400 400 Bad Request: bad chunk extension"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1 \r\na\r\n",
       "400 400 Bad Request: bad chunk extension"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;a=\"x\r\na\r\n",
       "400 400 Bad Request: bad chunk extension"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer\r\n\r\n",
       "400 400 Bad Request: bad field"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 1\r\n\r\n",
       "400 400 Bad Request: bad Content-Length"},
      {"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTransfer-Encoding: "
       "chunked\r\n\r\n",
       "400 400 Bad Request: bad Transfer-Encoding"},
      {"GET /v1/kv/%zz HTTP/1.1\r\n\r\n", ""},  // a refusal from Take, below
  };
  for (const auto& [stream, want] : cases) {
    const Result result = FeedEveryWay(stream);
    if (want.empty()) {
      ASSERT_EQ(result.requests.size(), 1u);
      ASSERT_TRUE(result.requests[0].refusal.has_value());
      EXPECT_EQ(result.requests[0].refusal->body, "invalid URL escape \"%zz\"");
      continue;
    }
    EXPECT_EQ(ErrorBody(result), want) << stream;
    EXPECT_TRUE(result.requests.empty()) << stream;
  }
}

TEST(RequestReaderTest, LimitsGive413And431) {
  const std::string too_long = std::to_string(limits::kHttpBodyBytesMax + 1);
  Result result = FeedWhole("PUT / HTTP/1.1\r\nContent-Length: " + too_long + "\r\n\r\n");
  EXPECT_EQ(ErrorBody(result), "413 Request body(" + too_long + " bytes) too large, max size: " +
                                   std::to_string(limits::kHttpBodyBytesMax) +
                                   " bytes. See "
                                   "https://developer.hashicorp.com/consul/docs/agent/config/"
                                   "config-files#kv_max_value_size.");
  // A chunk size past the limit, or past any integer, is refused at once.
  for (const char* size : {"80001", "fffffffffffffffffffffffff"}) {
    result = FeedWhole(std::string("PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") + size +
                       "\r\n");
    EXPECT_EQ(ErrorBody(result).rfind("413 Request body too large, max size: ", 0), 0u) << size;
  }
  // Chunks that add up past the limit.
  std::string chunked = "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk(64 * 1024, 'x');
  for (int i = 0; i < 9; ++i) chunked += "10000\r\n" + chunk + "\r\n";
  result = FeedInReads(chunked, {4096});
  EXPECT_EQ(ErrorBody(result).rfind("413 Request body too large", 0), 0u);
  // Exactly the limit is fine.
  const std::string full(limits::kHttpBodyBytesMax, 'y');
  result = FeedInReads(
      "PUT / HTTP/1.1\r\nContent-Length: " + std::to_string(full.size()) + "\r\n\r\n" + full,
      {65536});
  EXPECT_EQ(Only(result).body.size(), full.size());

  const std::string huge(limits::kHttpHeaderBytesMax, 'h');
  result = FeedInReads("GET / HTTP/1.1\r\nX-Huge: " + huge + "\r\n\r\n", {65536});
  EXPECT_EQ(ErrorBody(result), "431 431 Request Header Fields Too Large");
  result = FeedInReads("GET / HTTP/1.1\r\nX-Huge: " + huge, {65536});  // never ends
  EXPECT_EQ(ErrorBody(result), "431 431 Request Header Fields Too Large");
  result = FeedInReads(
      "PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: " + huge + "\r\n\r\n",
      {65536});
  EXPECT_EQ(ErrorBody(result), "431 431 Request Header Fields Too Large");
}

// A TLS client on the clear-text port sends a ClientHello and waits for the
// server's: it gets its 400 from the first byte on, not after the request
// read timeout (it never sends the blank line a header ends with).
TEST(RequestReaderTest, ATlsHandshakeOrABadFirstByteIsRefusedAtOnce) {
  // A ClientHello's first bytes: record type 22 (handshake), version 3.1, length 512.
  const std::string hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  for (std::size_t size = 1; size <= hello.size(); ++size) {
    const Result result = FeedEveryWay(hello.substr(0, size));
    EXPECT_EQ(ErrorBody(result),
              "400 400 Bad Request: TLS handshake sent to the clear-text HTTP port (use https:// "
              "and the HTTPS port)")
        << size;
  }
  // Any byte that cannot be in a method, before any line ends.
  for (const std::string& start : {std::string("\x80\x01", 2), std::string("G\x01", 2),
                                   std::string(" GET", 4), std::string("GE\tT", 4)}) {
    EXPECT_EQ(ErrorBody(FeedEveryWay(start)), "400 400 Bad Request: bad method") << start;
  }
  // A method still arriving, or one followed by its space, waits for the rest.
  for (const char* start : {"DELE", "PUT", "PUT ", "PUT /v1/kv/a HTTP/1.1\r\n"}) {
    const Result result = FeedEveryWay(start);
    EXPECT_FALSE(result.error.has_value()) << start;
    EXPECT_TRUE(result.requests.empty()) << start;
  }
}

TEST(RequestReaderTest, AnIncompleteRequestWaits) {
  const Result result = FeedEveryWay("PUT / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
  EXPECT_TRUE(result.requests.empty());
  EXPECT_FALSE(result.error.has_value());
}

}  // namespace
}  // namespace tenure::listen
