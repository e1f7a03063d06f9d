// The gateway's reading of a client stream's body (etcd/gateway.h): the
// JSON objects one after another, as grpc-gateway decodes them, bounded.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "etcd/gateway.h"

namespace tenure::etcd {
namespace {

std::vector<std::string_view> Split(std::string_view body, std::string* error,
                                    std::size_t max = 16) {
  return SplitJsonObjects(body, max, error);
}

TEST(GatewaySplitTest, ObjectsOneAfterAnotherWithOrWithoutSpace) {
  std::string error;
  EXPECT_EQ(Split(R"({"ID": "1"})", &error), std::vector<std::string_view>({R"({"ID": "1"})"}));
  EXPECT_EQ(Split(" {\"ID\":1}\n{\"ID\":2}{\"a\":[{}]} \r\n", &error),
            std::vector<std::string_view>({"{\"ID\":1}", "{\"ID\":2}", "{\"a\":[{}]}"}));
  EXPECT_EQ(error, "");
  EXPECT_TRUE(Split(" \n", &error).empty());
  EXPECT_EQ(error, "");
}

TEST(GatewaySplitTest, BracesInsideStringsDoNotCount) {
  std::string error;
  const std::string body = R"({"k": "}{\"}"}{"k": "\\"})";
  EXPECT_EQ(Split(body, &error),
            std::vector<std::string_view>({R"({"k": "}{\"}"})", R"({"k": "\\"})"}));
  EXPECT_EQ(error, "");
}

TEST(GatewaySplitTest, AnythingButObjectsIsRefusedWhole) {
  for (std::string_view body :
       {"[1]", "{\"ID\":1} 7", "{\"ID\":1", "{\"k\": \"}", "}", "x", "{\"k\": true]", "{}{[}]"}) {
    std::string error;
    EXPECT_TRUE(Split(body, &error).empty()) << body;
    EXPECT_NE(error.find("malformed JSON"), std::string::npos) << body << ": " << error;
  }
}

TEST(GatewaySplitTest, MoreObjectsThanAllowedAreRefused) {
  std::string error;
  EXPECT_EQ(Split("{}{}{}", &error, 3).size(), 3u);
  EXPECT_TRUE(Split("{}{}{}{}", &error, 3).empty());
  EXPECT_EQ(error, "more than 3 requests in one body");
}

}  // namespace
}  // namespace tenure::etcd
