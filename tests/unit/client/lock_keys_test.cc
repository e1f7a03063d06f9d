// The lock's keys, flags and semaphore document as Consul's api.Lock and
// api.Semaphore write them (client/lock_keys.h, docs/consul-api.md 7.3).
#include "client/lock_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tenure::client {
namespace {

TEST(LockKeysTest, FlagValuesAreConsuls) {
  EXPECT_EQ(kLockFlagValue, 3304740253564472344ULL);
  EXPECT_EQ(kSemaphoreFlagValue, 16210313421097356768ULL);
}

TEST(LockKeysTest, PrefixAndKey) {
  EXPECT_EQ(CleanPrefix("/a/b/"), "a/b");
  EXPECT_EQ(CleanPrefix("//"), "");
  EXPECT_EQ(LockKeyOf("a/b"), "a/b/.lock");
}

TEST(LockKeysTest, SemaphoreDocumentRoundTripsInGoOrder) {
  SemaphoreLock lock;
  lock.limit = 3;
  lock.holders["b-session"] = true;
  lock.holders["a-session"] = true;
  const std::string text = EncodeSemaphoreLock(lock);
  EXPECT_EQ(text, R"({"Limit":3,"Holders":{"a-session":true,"b-session":true}})");
  auto back = DecodeSemaphoreLock(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->limit, 3);
  EXPECT_EQ(back->holders, lock.holders);
  SemaphoreLock empty;
  empty.limit = 2;
  EXPECT_EQ(EncodeSemaphoreLock(empty), R"({"Limit":2,"Holders":{}})");
}

TEST(LockKeysTest, DecodeTakesNullsAndRefusesGarbage) {
  auto none = DecodeSemaphoreLock("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->limit, 0);
  auto nulls = DecodeSemaphoreLock(R"({"Limit":2,"Holders":null})");
  ASSERT_TRUE(nulls.ok());
  EXPECT_TRUE(nulls->holders.empty());
  for (const char* bad : {"nope", "[1]", R"({"Limit":"2"})", R"({"Limit":-1})",
                          R"({"Limit":2,"Holders":[]})", R"({"Limit":2,"Holders":{"a":1}})"}) {
    auto decoded = DecodeSemaphoreLock(bad);
    ASSERT_FALSE(decoded.ok()) << bad;
    EXPECT_EQ(decoded.status().message().rfind("lock decoding failed: ", 0), 0u) << bad;
  }
}

TEST(LockKeysTest, PruneDropsHoldersWithoutALiveContender) {
  SemaphoreLock lock;
  lock.limit = 3;
  lock.holders = {{"alive", true}, {"gone", true}, {"unlocked", true}};
  std::vector<KvPair> pairs(3);
  pairs[0].key = "p/.lock";
  pairs[1].key = "p/alive";
  pairs[1].session = "alive";
  pairs[2].key = "p/unlocked";  // its contender key is no longer held
  PruneHolders(pairs, &lock);
  EXPECT_EQ(lock.holders.size(), 1u);
  EXPECT_EQ(lock.holders.count("alive"), 1u);
}

}  // namespace
}  // namespace tenure::client
