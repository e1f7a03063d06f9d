// The table of etcd's methods (etcd/routes.h): every gRPC path and gateway
// path of etcd 3.4's services found, grpc-go's answers for the rest.
#include "etcd/routes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tenure::etcd {
namespace {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;

TEST(EtcdRoutesTest, EveryMethodIsFoundByItsPaths) {
  std::set<std::string_view> grpc_paths, gateway_paths;
  for (const MethodInfo& info : AllMethods()) {
    EXPECT_TRUE(grpc_paths.insert(info.grpc_path).second) << info.grpc_path;
    EtcdError error;
    const MethodInfo* found = FindGrpcMethod(info.grpc_path, &error);
    if (info.served) {
      ASSERT_EQ(found, &info) << info.grpc_path << ": " << error.message;
    } else {
      EXPECT_EQ(found, nullptr);
      EXPECT_EQ(error.code, GrpcCode::kUnimplemented);
      EXPECT_NE(error.message.find(std::string(info.grpc_path.substr(1))), std::string::npos);
    }
    for (std::string_view path : {info.gateway_path, info.gateway_alias}) {
      if (path.empty()) continue;
      EXPECT_TRUE(gateway_paths.insert(path).second) << path;
      EXPECT_EQ(FindGatewayMethod(path), &info) << path;
      const std::string beta = "/v3beta/" + std::string(path.substr(4));
      EXPECT_EQ(FindGatewayMethod(beta), &info) << beta;
      const std::string alpha = "/v3alpha/" + std::string(path.substr(4));
      EXPECT_EQ(FindGatewayMethod(alpha), &info) << alpha;
    }
  }
  EXPECT_EQ(grpc_paths.size(), 46u);
}

TEST(EtcdRoutesTest, WhatTheClientsCallIsServedAndStreamsAreMarked) {
  for (Method m : {Method::kRange,          Method::kPut,
                   Method::kDeleteRange,    Method::kTxn,
                   Method::kCompact,        Method::kWatch,
                   Method::kLeaseGrant,     Method::kLeaseRevoke,
                   Method::kLeaseKeepAlive, Method::kLeaseTimeToLive,
                   Method::kLeaseLeases,    Method::kMemberList,
                   Method::kStatus,         Method::kAuthenticate,
                   Method::kCampaign,       Method::kProclaim,
                   Method::kLeader,         Method::kObserve,
                   Method::kResign,         Method::kLock,
                   Method::kUnlock}) {
    EXPECT_TRUE(InfoOf(m).served) << InfoOf(m).grpc_path;
  }
  EXPECT_TRUE(InfoOf(Method::kWatch).client_streams && InfoOf(Method::kWatch).server_streams);
  EXPECT_TRUE(InfoOf(Method::kLeaseKeepAlive).client_streams);
  EXPECT_TRUE(!InfoOf(Method::kObserve).client_streams && InfoOf(Method::kObserve).server_streams);
  EXPECT_FALSE(InfoOf(Method::kRange).client_streams || InfoOf(Method::kRange).server_streams);
}

TEST(EtcdRoutesTest, OtherPathsGetGrpcGosAnswers) {
  EtcdError error;
  EXPECT_EQ(FindGrpcMethod("/etcdserverpb.KV/Scan", &error), nullptr);
  EXPECT_EQ(error, (EtcdError{GrpcCode::kUnimplemented,
                              "unknown method Scan for service etcdserverpb.KV"}));
  EXPECT_EQ(FindGrpcMethod("/grpc.health.v1.Health/Check", &error), nullptr);
  EXPECT_EQ(error, (EtcdError{GrpcCode::kUnimplemented, "unknown service grpc.health.v1.Health"}));
  EXPECT_EQ(FindGrpcMethod("/nonsense", &error), nullptr);
  EXPECT_EQ(error,
            (EtcdError{GrpcCode::kResourceExhausted, "malformed method name: \"/nonsense\""}));
  EXPECT_EQ(FindGatewayMethod("/v3/kv/scan"), nullptr);
  EXPECT_EQ(FindGatewayMethod("/v2/keys"), nullptr);
  EXPECT_EQ(FindGatewayMethod("/v3/kv/range/"), nullptr);
  EXPECT_EQ(FindGatewayMethod(""), nullptr);
}

}  // namespace
}  // namespace tenure::etcd
