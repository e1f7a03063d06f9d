// PercentDecode, ParseQuery, the HttpRequest accessors and the wire helpers:
// Go's url package is the reference for every decoding case.
#include "listen/request.h"

#include <gtest/gtest.h>

#include "listen/wire.h"

namespace tenure::listen {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

std::string DecodeOk(std::string_view text, bool plus_is_space) {
  auto result = PercentDecode(text, plus_is_space);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? result.value() : "";
}

std::string DecodeError(std::string_view text) {
  auto result = PercentDecode(text, false);
  EXPECT_FALSE(result.ok());
  if (!result.ok()) {
    EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  }
  return result.ok() ? "" : std::string(result.status().message());
}

TEST(PercentDecodeTest, DecodesEscapesInAnyCase) {
  EXPECT_EQ(DecodeOk("", false), "");
  EXPECT_EQ(DecodeOk("/v1/kv/plain", false), "/v1/kv/plain");
  EXPECT_EQ(DecodeOk("a%20b", false), "a b");
  EXPECT_EQ(DecodeOk("%2f%2F%41", false), "//A");
  EXPECT_EQ(DecodeOk("%00x", false), std::string("\0x", 2));
  EXPECT_EQ(DecodeOk("%ff", false), "\xff");
}

TEST(PercentDecodeTest, PlusIsSpaceOnlyInQueryComponents) {
  EXPECT_EQ(DecodeOk("a+b", false), "a+b");
  EXPECT_EQ(DecodeOk("a+b", true), "a b");
  EXPECT_EQ(DecodeOk("a%2Bb", true), "a+b");
}

TEST(PercentDecodeTest, BadEscapesGetGosText) {
  EXPECT_EQ(DecodeError("/v1/kv/%zz"), "invalid URL escape \"%zz\"");
  EXPECT_EQ(DecodeError("%g1"), "invalid URL escape \"%g1\"");
  EXPECT_EQ(DecodeError("%1g"), "invalid URL escape \"%1g\"");
  // Truncated at the end: Go quotes what is there.
  EXPECT_EQ(DecodeError("abc%"), "invalid URL escape \"%\"");
  EXPECT_EQ(DecodeError("abc%4"), "invalid URL escape \"%4\"");
  // Only the first three bytes are quoted.
  EXPECT_EQ(DecodeError("%zzzz"), "invalid URL escape \"%zz\"");
  // Control and non-UTF-8 bytes are escaped as strconv.Quote does.
  EXPECT_EQ(DecodeError("%\n1"), "invalid URL escape \"%\\n1\"");
  EXPECT_EQ(DecodeError("%\xff"
                        "1"),
            "invalid URL escape \"%\\xff1\"");
  EXPECT_EQ(DecodeError("%\xc3\xa9"), "invalid URL escape \"%\xc3\xa9\"");
  EXPECT_EQ(DecodeError("%\"x"), "invalid URL escape \"%\\\"x\"");
}

TEST(ParseQueryTest, SplitsPiecesAndDecodes) {
  auto result = ParseQuery("a=1&b&c=%20&d=x+y&e=&recurse");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.value(),
            (Params{{"a", "1"}, {"b", ""}, {"c", " "}, {"d", "x y"}, {"e", ""}, {"recurse", ""}}));
}

TEST(ParseQueryTest, SkipsEmptyPiecesAndKeepsOrderAndDuplicates) {
  auto result = ParseQuery("&&x=1&&x=2&");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.value(), (Params{{"x", "1"}, {"x", "2"}}));
  auto empty = ParseQuery("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value().empty());
}

TEST(ParseQueryTest, ValueKeepsLaterEqualsSigns) {
  auto result = ParseQuery("k=a=b&%3D=%3D");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.value(), (Params{{"k", "a=b"}, {"=", "="}}));
}

TEST(ParseQueryTest, BadEscapeInKeyOrValueIsAnError) {
  auto in_value = ParseQuery("index=1&wait=%zz");
  ASSERT_FALSE(in_value.ok());
  EXPECT_EQ(in_value.status().message(), "invalid URL escape \"%zz\"");
  auto in_key = ParseQuery("%x=1");
  ASSERT_FALSE(in_key.ok());
  EXPECT_EQ(in_key.status().message(), "invalid URL escape \"%x\"");
}

TEST(HttpRequestTest, QueryReturnsTheFirstValue) {
  HttpRequest request;
  request.query = {{"recurse", ""}, {"x", "1"}, {"x", "2"}};
  EXPECT_EQ(request.Query("x"), "1");
  EXPECT_EQ(request.Query("recurse"), "");
  EXPECT_TRUE(request.HasQuery("recurse"));
  EXPECT_FALSE(request.HasQuery("keys"));
  EXPECT_FALSE(request.Query("X").has_value());  // parameter names are case-sensitive
}

TEST(HttpRequestTest, HeaderIgnoresCase) {
  HttpRequest request;
  request.AddHeader("X-Consul-Token", "abc");
  request.AddHeader("Content-Type", "text/plain");
  EXPECT_EQ(request.headers[0].first, "x-consul-token");
  EXPECT_EQ(request.Header("X-Consul-Token"), "abc");
  EXPECT_EQ(request.Header("content-type"), "text/plain");
  EXPECT_FALSE(request.Header("authorization").has_value());
}

TEST(HttpRequestTest, TokenHeadersAreTheFirstOfTheirName) {
  HttpRequest request;
  EXPECT_EQ(request.TokenHeader(), "");
  EXPECT_EQ(request.AuthorizationHeader(), "");
  request.AddHeader("Host", "127.0.0.1");
  request.AddHeader("X-CONSUL-TOKEN", "first");
  request.AddHeader("authorization", "Bearer one");
  request.AddHeader("x-consul-token", "second");
  request.AddHeader("Authorization", "Bearer two");
  EXPECT_EQ(request.TokenHeader(), "first");
  EXPECT_EQ(request.AuthorizationHeader(), "Bearer one");
  EXPECT_EQ(request.Header("x-consul-token"), "first");  // the same rule as Header
  const HttpRequest moved = std::move(request);
  EXPECT_EQ(moved.TokenHeader(), "first");
}

TEST(HttpResponseTest, JsonAndTextSetStatusAndContentType) {
  const auto json = HttpResponse::Json("true");
  EXPECT_EQ(json.status, 200);
  EXPECT_EQ(json.content_type, "application/json");
  EXPECT_EQ(json.body, "true");
  const auto text = HttpResponse::Text(404, "not here");
  EXPECT_EQ(text.status, 404);
  EXPECT_EQ(text.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(text.body, "not here");
}

TEST(ParseTargetTest, SplitsPathAndQuery) {
  HttpRequest request;
  ASSERT_TRUE(wire::ParseTarget("/v1/kv/a%20b+c?recurse&x=1+2", &request).ok());
  EXPECT_EQ(request.path, "/v1/kv/a b+c");
  EXPECT_EQ(request.raw_query, "recurse&x=1+2");
  EXPECT_EQ(request.query, (Params{{"recurse", ""}, {"x", "1 2"}}));
}

TEST(ParseTargetTest, AcceptsAbsoluteFormAndAsterisk) {
  HttpRequest request;
  ASSERT_TRUE(wire::ParseTarget("http://127.0.0.1:8500/v1/status/leader?x", &request).ok());
  EXPECT_EQ(request.path, "/v1/status/leader");
  EXPECT_EQ(request.raw_query, "x");
  ASSERT_TRUE(wire::ParseTarget("*", &request).ok());
  EXPECT_EQ(request.path, "*");
  EXPECT_FALSE(wire::ParseTarget("v1/kv", &request).ok());
}

TEST(ParseTargetTest, BadEscapesInPathOrQueryAreErrors) {
  HttpRequest request;
  EXPECT_EQ(wire::ParseTarget("/v1/kv/%zz", &request).message(), "invalid URL escape \"%zz\"");
  EXPECT_EQ(wire::ParseTarget("/v1/kv/a?wait=%4", &request).message(), "invalid URL escape \"%4\"");
}

TEST(ResponseHeadTest, WritesStatusHeadersAndFraming) {
  HttpResponse response = HttpResponse::Json("[]", 404);
  response.headers = {{"X-Consul-Index", "7"}, {"X-Bad", "a\r\nInjected: 1"}};
  std::string head;
  EXPECT_TRUE(wire::AppendResponseHead(response, {}, &head));
  EXPECT_EQ(head.rfind("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                       "X-Consul-Index: 7\r\nDate: ",
                       0),
            0u)
      << head;
  EXPECT_NE(head.find("\r\nContent-Length: 2\r\n\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Injected"), std::string::npos);
  EXPECT_EQ(head.find("Connection:"), std::string::npos);

  head.clear();
  EXPECT_TRUE(wire::AppendResponseHead(response, {.keep_alive = false}, &head));
  EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos);
  head.clear();
  EXPECT_TRUE(wire::AppendResponseHead(response, {.keep_alive = true, .http10 = true}, &head));
  EXPECT_NE(head.find("Connection: keep-alive\r\n"), std::string::npos);
  head.clear();
  EXPECT_FALSE(wire::AppendResponseHead(response, {.head_request = true}, &head));
  EXPECT_NE(head.find("Content-Length: 2\r\n"), std::string::npos);
}

}  // namespace
}  // namespace tenure::listen
