// The one client-side decoder of GET /v1/kv answers (client/kv_pair.h).
#include "client/kv_pair.h"

#include <gtest/gtest.h>

namespace tenure::client {
namespace {

TEST(KvPairTest, DecodesConsulsDirEntryAndTenuresFence) {
  Result<std::vector<KvPair>> pairs = ParseKvPairs(
      R"([{"Key":"service/a/leader","CreateIndex":5,"ModifyIndex":9,"LockIndex":1,"Flags":3,)"
      R"("Value":"aGk=","Session":"s1","Fence":9},)"
      R"({"Key":"b","CreateIndex":7,"ModifyIndex":7,"LockIndex":0,"Flags":18446744073709551615,)"
      R"("Value":null,"Session":""}])");
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  ASSERT_EQ(pairs->size(), 2u);
  const KvPair& a = (*pairs)[0];
  EXPECT_EQ(a.key, "service/a/leader");
  EXPECT_EQ(a.create_index, 5u);
  EXPECT_EQ(a.modify_index, 9u);
  EXPECT_EQ(a.lock_index, 1u);
  EXPECT_EQ(a.flags, 3u);
  EXPECT_EQ(a.Value(), "hi");
  EXPECT_EQ(a.session, "s1");
  EXPECT_EQ(a.fence, std::optional<std::uint64_t>(9));
  const KvPair& b = (*pairs)[1];
  EXPECT_EQ(b.flags, 18446744073709551615ull);  // exact, never through a double
  EXPECT_FALSE(b.value_base64.has_value());
  EXPECT_EQ(b.Value(), "");
  EXPECT_FALSE(b.fence.has_value());
}

TEST(KvPairTest, RefusesWhatIsNotADirEntryList) {
  for (const char* body : {"", "{}", "[1]", R"([{"Flags":1}])", R"([{"Key":"k","Flags":"x"}])",
                           R"([{"Key":"k","Flags":-1}])", "[{\"Key\":"}) {
    Result<std::vector<KvPair>> pairs = ParseKvPairs(body);
    EXPECT_FALSE(pairs.ok()) << body;
    if (!pairs.ok()) {
      EXPECT_EQ(pairs.status().code(), Code::kCorruption) << body;
    }
  }
  Result<std::vector<KvPair>> empty = ParseKvPairs("[]");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace tenure::client
