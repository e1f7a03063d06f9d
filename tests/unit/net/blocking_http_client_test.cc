// BlockingHttpClient against real loopback sockets (stub servers from
// unit/client/server_process.h): the CLI's way to the one HTTP client.
#include "net/blocking_http_client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>

#include "unit/client/server_process.h"

namespace tenure::net {
namespace {

using test_support::ReadRequest;
using test_support::StubServer;
using test_support::WriteResponse;

TEST(BlockingHttpClientTest, SendsTheTokenAndKeepsTheConnection) {
  StubServer server([](int fd) {
    while (auto request = ReadRequest(fd)) {
      const bool has_token = request->head.find("X-Consul-Token: secret") != std::string::npos;
      WriteResponse(fd, request->target == "/missing" ? 404 : 200,
                    request->method + " " + request->target + " " + request->body +
                        (has_token ? " token" : ""));
    }
  });
  BlockingHttpClient client("http://" + server.address(), "secret", 5'000);
  EXPECT_EQ(client.address(), server.address());
  for (int i = 0; i < 3; ++i) {
    Result<ClientResponse> got = client.Request("PUT", "/v1/kv/a", "x");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(got->body, "PUT /v1/kv/a x token");
  }
  Result<ClientResponse> missing = client.Request("GET", "/missing");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);  // an HTTP status is an answer, not an error
  EXPECT_EQ(server.connections(), 1);
}

TEST(BlockingHttpClientTest, ReconnectsWhenTheServerClosedTheKeptConnection) {
  StubServer server([](int fd) {
    if (auto request = ReadRequest(fd)) WriteResponse(fd, 200, "one", /*close=*/false);
    ::shutdown(fd, SHUT_RDWR);  // then closes the kept connection without a word
  });
  BlockingHttpClient client(server.address(), "", 5'000);
  for (int i = 0; i < 3; ++i) {
    Result<ClientResponse> got = client.Request("GET", "/v1/status/leader");
    ASSERT_TRUE(got.ok()) << i << ": " << got.status().ToString();
    EXPECT_EQ(got->body, "one");
  }
  EXPECT_EQ(server.connections(), 3);
}

TEST(BlockingHttpClientTest, FailuresNameTheAgentAndTheCause) {
  const std::string nowhere = test_support::FreeAddress();
  BlockingHttpClient refused(nowhere, "", 5'000);
  Result<ClientResponse> got = refused.Request("GET", "/v1/status/leader");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kUnavailable);
  EXPECT_EQ(got.status().message(), "cannot reach tenure at " + nowhere + ": connection refused");

  StubServer silent([](int fd) {
    while (ReadRequest(fd)) {
    }
  });
  BlockingHttpClient slow(silent.address(), "", 5'000);
  got = slow.Request("GET", "/v1/kv/a?index=5", "", 200);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kTimeout);
  EXPECT_NE(got.status().message().find("tenure at " + silent.address() +
                                        " did not answer GET /v1/kv/a?index=5 within 200 ms"),
            std::string::npos)
      << got.status().message();

  BlockingHttpClient bad("unix:///x", "", 5'000);
  got = bad.Request("GET", "/");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.address(), "unix:///x");

  // A token that could not be resolved: nothing is sent, every request fails with it.
  StubServer never([](int) {});
  BlockingHttpClient unresolved(never.address(),
                                Result<std::string>(Status::InvalidArgument("no token file")));
  for (int i = 0; i < 2; ++i) {
    got = unresolved.Request("GET", "/v1/kv/a");
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(got.status().message(), "no token file");
  }
  EXPECT_EQ(never.connections(), 0);
}

}  // namespace
}  // namespace tenure::net
