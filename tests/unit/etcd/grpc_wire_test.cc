// gRPC's framing, timeouts, messages and the gateway's error answers
// (etcd/grpc_wire.h), with grpc-go's and grpc-gateway's texts.
#include "etcd/grpc_wire.h"

#include <gtest/gtest.h>

#include <string>

namespace tenure::etcd {
namespace {

TEST(GrpcWireTest, MessagesAreSplitAsTheyComplete) {
  std::string stream;
  AppendGrpcMessage(&stream, "hello");
  AppendGrpcMessage(&stream, "");
  AppendGrpcMessage(&stream, std::string(300, 'x'));
  EXPECT_EQ(stream.substr(0, 10), std::string("\0\0\0\0\5hello", 10));
  GrpcMessageSplitter splitter;
  std::vector<std::string> got;
  std::string message;
  for (char c : stream) {  // a byte at a time
    splitter.Feed(std::string_view(&c, 1));
    while (splitter.Next(&message)) got.push_back(message);
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "hello");
  EXPECT_EQ(got[1], "");
  EXPECT_EQ(got[2], std::string(300, 'x'));
  EXPECT_FALSE(splitter.partial());
  splitter.Feed(std::string("\0\0\0", 3));
  EXPECT_FALSE(splitter.Next(&message));
  EXPECT_TRUE(splitter.partial());
  EXPECT_TRUE(splitter.error().ok());
}

TEST(GrpcWireTest, ALargeOrCompressedMessageIsRefusedBeforeItsBytesArrive) {
  GrpcMessageSplitter large(1000);
  large.Feed(std::string("\0\0\0\x03\xe9", 5));  // 1001 bytes announced
  std::string message;
  EXPECT_FALSE(large.Next(&message));
  EXPECT_EQ(large.error().code, GrpcCode::kResourceExhausted);
  EXPECT_EQ(large.error().message, "grpc: received message larger than max (1001 vs. 1000)");
  EXPECT_FALSE(large.partial()) << "nothing of it is kept";
  large.Feed(std::string(2000, 'x'));
  EXPECT_FALSE(large.Next(&message));

  GrpcMessageSplitter compressed;
  compressed.Feed(std::string("\1\0\0\0\1x", 6));
  EXPECT_FALSE(compressed.Next(&message));
  EXPECT_EQ(compressed.error().code, GrpcCode::kInternal);
  EXPECT_EQ(compressed.error().message,
            "grpc: compressed flag set with identity or empty encoding");
  GrpcMessageSplitter odd;
  odd.Feed(std::string("\7\0\0\0\0", 5));
  EXPECT_FALSE(odd.Next(&message));
  EXPECT_EQ(odd.error().message, "grpc: received unexpected payload format 7");
  EXPECT_EQ(UnsupportedEncoding("gzip").message,
            "grpc: Decompressor is not installed for grpc-encoding \"gzip\"");
  EXPECT_EQ(UnsupportedEncoding("gzip").code, GrpcCode::kUnimplemented);
}

TEST(GrpcWireTest, TimeoutsInEveryUnit) {
  EXPECT_EQ(ParseGrpcTimeout("5S"), 5'000'000'000);
  EXPECT_EQ(ParseGrpcTimeout("100m"), 100'000'000);
  EXPECT_EQ(ParseGrpcTimeout("7u"), 7'000);
  EXPECT_EQ(ParseGrpcTimeout("99999999n"), 99'999'999);
  EXPECT_EQ(ParseGrpcTimeout("2M"), 120'000'000'000);
  EXPECT_EQ(ParseGrpcTimeout("1H"), 3'600'000'000'000);
  EXPECT_EQ(ParseGrpcTimeout("99999999H"), INT64_MAX) << "past int64: never";
  for (const char* bad : {"", "S", "5", "5s", "123456789S", "-1S", "1.5S", "5 S"}) {
    EXPECT_EQ(ParseGrpcTimeout(bad), std::nullopt) << bad;
  }
}

TEST(GrpcWireTest, MessagesArePercentEncodedAndBack) {
  const std::string text = "etcdserver: key \"a\xff\" 100% \n";
  const std::string encoded = PercentEncodeGrpcMessage(text);
  EXPECT_EQ(encoded, "etcdserver: key \"a%FF\" 100%25 %0A");
  EXPECT_EQ(PercentDecodeGrpcMessage(encoded), text);
  EXPECT_EQ(PercentDecodeGrpcMessage("50%zz%4"), "50%zz%4") << "malformed escapes kept";
}

TEST(GrpcWireTest, TheGatewaysStatusesAndErrorBodies) {
  EXPECT_EQ(HttpStatusFromGrpcCode(GrpcCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFromGrpcCode(GrpcCode::kOutOfRange), 400);
  EXPECT_EQ(HttpStatusFromGrpcCode(GrpcCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFromGrpcCode(GrpcCode::kFailedPrecondition), 412);
  EXPECT_EQ(HttpStatusFromGrpcCode(GrpcCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusFromGrpcCode(GrpcCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFromGrpcCode(GrpcCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusFromGrpcCode(GrpcCode::kUnimplemented), 501);
  const EtcdError error = etcd_texts::LeaseNotFound();
  EXPECT_EQ(GatewayErrorBody(error),
            R"({"error":"etcdserver: requested lease not found",)"
            R"("message":"etcdserver: requested lease not found","code":5})");
  EXPECT_EQ(GatewayStreamError(error),
            R"({"error":{"grpc_code":5,"http_code":404,)"
            R"("message":"etcdserver: requested lease not found","http_status":"Not Found"}})");
}

}  // namespace
}  // namespace tenure::etcd
