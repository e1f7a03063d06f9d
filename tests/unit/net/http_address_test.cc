// Agent addresses as users write them, and percent-encoding: pure.
#include "net/http_address.h"

#include <gtest/gtest.h>

#include "net/url.h"

namespace tenure::net {
namespace {

std::string Parsed(std::string_view text) {
  Result<HttpAddress> parsed = ParseHttpAddress(text);
  return parsed.ok() ? parsed->ToString() : "error: " + std::string(parsed.status().message());
}

TEST(HttpAddressTest, AcceptsTheFormsConsulToolsAccept) {
  EXPECT_EQ(Parsed("127.0.0.1:8500"), "127.0.0.1:8500");
  EXPECT_EQ(Parsed("localhost"), "localhost:8500");
  EXPECT_EQ(Parsed("http://10.0.0.1:18500"), "10.0.0.1:18500");
  EXPECT_EQ(Parsed("HTTP://10.0.0.1:18500/"), "10.0.0.1:18500");
  EXPECT_EQ(Parsed("[::1]:8501"), "[::1]:8501");
  EXPECT_EQ(Parsed("[::1]"), "[::1]:8500");
  EXPECT_EQ(Parsed("::1"), "[::1]:8500");
  Result<HttpAddress> v6 = ParseHttpAddress("[fe80::1]:9");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "fe80::1");
  EXPECT_EQ(v6->port, 9);
  EXPECT_FALSE(v6->tls);
}

std::string Described(std::string_view text, bool tls_by_default = false) {
  Result<HttpAddress> parsed = ParseHttpAddress(text, tls_by_default);
  return parsed.ok() ? parsed->Describe() : "error: " + std::string(parsed.status().message());
}

TEST(HttpAddressTest, HttpsIsTlsAndDefaultsToPort8501) {
  EXPECT_EQ(Described("https://10.0.0.1:18501"), "https://10.0.0.1:18501");
  EXPECT_EQ(Described("HTTPS://h/"), "https://h:8501");
  EXPECT_EQ(Described("https://[::1]"), "https://[::1]:8501");
  EXPECT_EQ(Parsed("https://h:9"), "h:9");  // the Host: header has no scheme
  // $CONSUL_HTTP_SSL: an address without a scheme is https, with its port.
  EXPECT_EQ(Described("h:8500", true), "https://h:8500");
  EXPECT_EQ(Described("h", true), "https://h:8501");
  EXPECT_EQ(Described("http://h", true), "h:8500");  // an explicit scheme wins
  EXPECT_EQ(Described("h:8500"), "h:8500");
}

TEST(HttpAddressTest, RefusesWhatItCannotReachWithTheReason) {
  EXPECT_EQ(Parsed("unix:///tmp/s"),
            "error: http address \"unix:///tmp/s\": scheme \"unix\" is not supported (use "
            "http:// or https://)");
  EXPECT_EQ(Parsed("h:8500/v1"), "error: http address \"h:8500/v1\": a path is not allowed");
  EXPECT_EQ(Parsed(""), "error: http address \"\": missing host");
  for (const char* bad : {"h:0", "h:65536", "h:x", ":8500", "h:", "[::1:8500", "a b:1"}) {
    Result<HttpAddress> parsed = ParseHttpAddress(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << bad;
      EXPECT_NE(parsed.status().message().find(std::string("\"") + bad + "\""), std::string::npos)
          << parsed.status().message();
    }
  }
}

TEST(UrlTest, KeysKeepSlashesQueryValuesDoNot) {
  EXPECT_EQ(EscapeKeyPath("service/web leader/é"), "service/web%20leader/%C3%A9");
  EXPECT_EQ(EscapeKeyPath("a-b.c_d~e"), "a-b.c_d~e");
  EXPECT_EQ(EscapeQueryValue("a/b?c=d&e"), "a%2Fb%3Fc%3Dd%26e");
  EXPECT_EQ(EscapeQueryValue(std::string("\0\xff", 2)), "%00%FF");
}

}  // namespace
}  // namespace tenure::net
