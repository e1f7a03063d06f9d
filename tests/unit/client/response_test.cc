// The two spellings of a failed request (client/response.h) and the fence
// header.
#include "client/response.h"

#include <gtest/gtest.h>

#include <string>

namespace tenure::client {
namespace {

net::ClientResponse Answer(int status, std::string body) {
  net::ClientResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

TEST(ResponseTest, TenuresAndConsulsWords) {
  const Result<net::ClientResponse> denied = Answer(403, "Permission denied\n");
  EXPECT_EQ(Describe(denied), "HTTP 403: Permission denied\n");
  EXPECT_EQ(ConsulDescribe(denied), "Unexpected response code: 403 (Permission denied)");
  const Result<net::ClientResponse> failed = Status::Unavailable("cannot reach 127.0.0.1:1");
  EXPECT_EQ(Describe(failed), failed.status().ToString());
  EXPECT_EQ(ConsulDescribe(failed), "cannot reach 127.0.0.1:1");
}

TEST(ResponseTest, FenceIsADecimalUint64OrZero) {
  net::ClientResponse response = Answer(200, "true");
  EXPECT_EQ(FenceOf(response), 0u);  // Consul sends none
  response.headers["x-tenure-fence"] = "18446744073709551615";
  EXPECT_EQ(FenceOf(response), 18446744073709551615ULL);
  for (const char* bad : {"12abc", "-3", "18446744073709551616", ""}) {
    response.headers["x-tenure-fence"] = bad;
    EXPECT_EQ(FenceOf(response), 0u) << bad;
  }
}

}  // namespace
}  // namespace tenure::client
