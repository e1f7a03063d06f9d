// etcd's Range and Compare over a range's entries (state/etcd_range.h), as
// etcd 3.4's applierV3backend answers them: count before filters, filters,
// sort with its default, limit and `more`, keys_only, count_only; compares
// of each target over one key, a missing key and a range.
#include "state/etcd_range.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "state/numbered_session.h"

namespace tenure::state {
namespace {

KvEntry Entry(std::string key, std::string value, std::uint64_t create, std::uint64_t mod,
              std::uint64_t version) {
  KvEntry e;
  e.key = std::move(key);
  e.value = std::move(value);
  e.create_index = LogIndex(create);
  e.modify_index = LogIndex(mod);
  e.version = version;
  return e;
}

class EtcdRangeTest : public ::testing::Test {
 protected:
  EtcdRangeTest() {
    entries_ = {Entry("a", "zz", 5, 9, 3), Entry("b", "yy", 2, 2, 1), Entry("c", "xx", 7, 8, 2),
                Entry("d", "yy", 3, 10, 4)};
    for (const KvEntry& e : entries_) pointers_.push_back(&e);
  }
  std::vector<std::string> Keys(const EtcdRangeRequest& request) const {
    std::vector<std::string> keys;
    for (const EtcdKeyValue& kv : EvaluateRange(pointers_, request).kvs) keys.push_back(kv.key);
    return keys;
  }
  std::vector<KvEntry> entries_;
  std::vector<const KvEntry*> pointers_;
};

using KeyList = std::vector<std::string>;

TEST_F(EtcdRangeTest, EveryEntryInKeyOrderWithItsRevisions) {
  EtcdRangeResponse r = EvaluateRange(pointers_, EtcdRangeRequest{});
  EXPECT_EQ(r.count, 4);
  EXPECT_FALSE(r.more);
  ASSERT_EQ(r.kvs.size(), 4u);
  EXPECT_EQ(r.kvs[0], (EtcdKeyValue{"a", 5, 9, 3, "zz", 0}));
}

TEST_F(EtcdRangeTest, ALimitCutsAndSaysSoWhileCountKeepsEveryKey) {
  EtcdRangeRequest request;
  request.limit = 2;
  EtcdRangeResponse r = EvaluateRange(pointers_, request);
  EXPECT_EQ(r.count, 4);
  EXPECT_TRUE(r.more);
  EXPECT_EQ(Keys(request), (KeyList{"a", "b"}));
  request.limit = 4;
  EXPECT_FALSE(EvaluateRange(pointers_, request).more);
}

TEST_F(EtcdRangeTest, FiltersComeBeforeTheLimitAndNotIntoCount) {
  EtcdRangeRequest request;
  request.min_mod_revision = 8;
  request.max_create_revision = 6;
  EXPECT_EQ(Keys(request), (KeyList{"a", "d"}));
  EXPECT_EQ(EvaluateRange(pointers_, request).count, 4);
  request.limit = 1;
  EXPECT_EQ(Keys(request), KeyList{"a"});
  EXPECT_TRUE(EvaluateRange(pointers_, request).more);
}

TEST_F(EtcdRangeTest, SortsByEachTargetAndAscendsByDefaultOffTheKey) {
  EtcdRangeRequest request;
  request.sort_target = EtcdSortTarget::kCreate;  // order NONE: ascending
  EXPECT_EQ(Keys(request), (KeyList{"b", "d", "a", "c"}));
  request.sort_order = EtcdSortOrder::kDescend;
  EXPECT_EQ(Keys(request), (KeyList{"c", "a", "d", "b"}));
  request.sort_target = EtcdSortTarget::kMod;
  EXPECT_EQ(Keys(request), (KeyList{"d", "a", "c", "b"}));
  request.sort_target = EtcdSortTarget::kVersion;
  request.sort_order = EtcdSortOrder::kAscend;
  EXPECT_EQ(Keys(request), (KeyList{"b", "c", "a", "d"}));
  request.sort_target = EtcdSortTarget::kValue;  // ties keep key order
  EXPECT_EQ(Keys(request), (KeyList{"c", "b", "d", "a"}));
  request.sort_target = EtcdSortTarget::kKey;
  request.sort_order = EtcdSortOrder::kDescend;
  request.limit = 1;  // the recipes' "newest holder": descending, limit 1
  EXPECT_EQ(Keys(request), KeyList{"d"});
}

// etcd 3.4 reads the whole range only for a named sort order or a revision
// filter; otherwise its store stops after limit + 1 keys in key order, and a
// sort by another target (ascending) sorts just those before the limit.
TEST_F(EtcdRangeTest, ASortTargetWithoutAnOrderSortsOnlyTheFirstLimitPlusOneKeys) {
  EtcdRangeRequest request;
  request.sort_target = EtcdSortTarget::kCreate;
  request.limit = 1;  // reads a, b: b was created first
  EXPECT_EQ(Keys(request), KeyList{"b"});
  request.limit = 2;  // reads a, b, c
  EXPECT_EQ(Keys(request), (KeyList{"b", "a"}));
  EXPECT_TRUE(EvaluateRange(pointers_, request).more);
  request.sort_order = EtcdSortOrder::kAscend;  // named: reads every key
  EXPECT_EQ(Keys(request), (KeyList{"b", "d"}));
  request.sort_order = EtcdSortOrder::kNone;
  request.max_mod_revision = 100;  // a filter: reads every key too
  EXPECT_EQ(Keys(request), (KeyList{"b", "d"}));
}

TEST_F(EtcdRangeTest, KeysOnlyDropsValuesAndCountOnlyEveryEntry) {
  EtcdRangeRequest request;
  request.keys_only = true;
  EtcdRangeResponse keys = EvaluateRange(pointers_, request);
  ASSERT_EQ(keys.kvs.size(), 4u);
  EXPECT_EQ(keys.kvs[0].value, "");
  EXPECT_EQ(keys.kvs[0].mod_revision, 9);
  request.count_only = true;
  request.limit = 1;
  EtcdRangeResponse count = EvaluateRange(pointers_, request);
  EXPECT_TRUE(count.kvs.empty());
  EXPECT_EQ(count.count, 4);
  EXPECT_FALSE(count.more);
}

TEST(EtcdLeaseOfTest, ANumberedHolderIsItsLeaseAndAConsulOneNone) {
  KvEntry e = Entry("k", "v", 1, 1, 1);
  EXPECT_EQ(LeaseOf(e), 0);
  e.session = NumberedSessionId(0x694d77aa9e38260fll);
  EXPECT_EQ(LeaseOf(e), 0x694d77aa9e38260fll);
  e.session = SessionId("2b5f68a0-1e80-4c2a-8f3e-0d1a9c7b6e55");
  EXPECT_EQ(LeaseOf(e), 0);
}

EtcdCompare Compare(EtcdCompareTarget target, EtcdCompareResult result, std::int64_t number,
                    std::string value = "") {
  EtcdCompare c;
  c.target = target;
  c.result = result;
  c.number = number;
  c.value = std::move(value);
  return c;
}

TEST(EtcdCompareTest, EachTargetAndResultOnOneKey) {
  KvEntry e = Entry("k", "m", 4, 6, 2);
  e.session = NumberedSessionId(9);
  const std::vector<const KvEntry*> one = {&e};
  using T = EtcdCompareTarget;
  using R = EtcdCompareResult;
  EXPECT_TRUE(CompareHolds(Compare(T::kCreate, R::kEqual, 4), one));
  EXPECT_FALSE(CompareHolds(Compare(T::kCreate, R::kEqual, 0), one));
  EXPECT_TRUE(CompareHolds(Compare(T::kMod, R::kGreater, 5), one));
  EXPECT_FALSE(CompareHolds(Compare(T::kMod, R::kLess, 6), one));
  EXPECT_TRUE(CompareHolds(Compare(T::kVersion, R::kNotEqual, 3), one));
  EXPECT_TRUE(CompareHolds(Compare(T::kLease, R::kEqual, 9), one));
  EXPECT_TRUE(CompareHolds(Compare(T::kValue, R::kEqual, 0, "m"), one));
  EXPECT_TRUE(CompareHolds(Compare(T::kValue, R::kGreater, 0, "l"), one));
  EXPECT_TRUE(CompareHolds(Compare(T::kValue, R::kLess, 0, "ma"), one));
}

TEST(EtcdCompareTest, AMissingKeyIsZeroAndFailsEveryValueCompare) {
  const std::vector<const KvEntry*> none;
  using T = EtcdCompareTarget;
  using R = EtcdCompareResult;
  // The recipes' "create if absent": CREATE(k) == 0.
  EXPECT_TRUE(CompareHolds(Compare(T::kCreate, R::kEqual, 0), none));
  EXPECT_TRUE(CompareHolds(Compare(T::kVersion, R::kEqual, 0), none));
  EXPECT_TRUE(CompareHolds(Compare(T::kLease, R::kEqual, 0), none));
  EXPECT_FALSE(CompareHolds(Compare(T::kValue, R::kEqual, 0, ""), none));
  EXPECT_FALSE(CompareHolds(Compare(T::kValue, R::kNotEqual, 0, "x"), none));
}

TEST(EtcdCompareTest, ARangeHoldsOnlyWhenEveryKeyDoes) {
  KvEntry a = Entry("a", "v", 2, 2, 1);
  KvEntry b = Entry("b", "v", 3, 5, 2);
  const std::vector<const KvEntry*> both = {&a, &b};
  using T = EtcdCompareTarget;
  using R = EtcdCompareResult;
  EXPECT_TRUE(CompareHolds(Compare(T::kMod, R::kGreater, 1), both));
  EXPECT_FALSE(CompareHolds(Compare(T::kMod, R::kGreater, 2), both));
  EXPECT_TRUE(CompareHolds(Compare(T::kValue, R::kEqual, 0, "v"), both));
}

}  // namespace
}  // namespace tenure::state
