// PrefixCopy (decision 0051): a large prefix copied out of the Store a slice
// per loop turn is still one consistent view, each slice stays within its
// bound, and a prefix written between every slice still gets its answer.
#include "http/prefix_copy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace tenure::http {
namespace {

constexpr std::size_t kValueBytes = 512 * 1024;

class PrefixCopyTest : public ::testing::Test {
 protected:
  void Apply(state::CommandBody body, state::Store* store = nullptr) {
    index_ = index_.Next();
    const auto result = (store ? store : &store_)->Apply({ClusterMs(1), std::move(body)}, index_);
    ASSERT_TRUE(result.status.ok()) << result.status.message();
  }
  void Set(const std::string& key, std::string value, state::Store* store = nullptr) {
    Apply(state::KvSet{key, std::move(value), 0}, store);
  }

  // A copy that records every entry it takes and the bytes each step took.
  struct Recorder {
    std::vector<state::KvEntry> taken;
    std::vector<std::size_t> step_bytes{0};
    std::size_t drops = 0;
  };
  PrefixCopy MakeCopy(const std::string& prefix, Recorder* recorder) {
    return PrefixCopy(
        prefix,
        [recorder](const state::KvEntry& entry) {
          recorder->taken.push_back(entry);
          const std::size_t bytes = entry.key.size() + entry.value.size();
          recorder->step_bytes.back() += bytes;
          return bytes;
        },
        [recorder] {
          recorder->taken.clear();
          ++recorder->drops;
        });
  }
  bool Step(PrefixCopy& copy, Recorder& recorder, const state::Store& store) {
    recorder.step_bytes.push_back(0);
    return copy.Step(store);
  }
  // big/0 .. big/<n-1>, 512 KiB each: two keys per slice.
  void FillBig(int n) {
    for (int i = 0; i < n; ++i) Set("big/" + std::to_string(i), std::string(kValueBytes, 'a'));
  }
  std::vector<state::KvEntry> Now(const std::string& prefix) const {
    std::vector<state::KvEntry> out;
    for (const state::KvEntry* entry : store_.ListKv(prefix)) out.push_back(*entry);
    return out;
  }

  state::Store store_;
  LogIndex index_;
};

TEST_F(PrefixCopyTest, ALargePrefixIsCopiedInBoundedSlicesInOnePass) {
  for (int i = 0; i < 10; ++i) Set("big/" + std::to_string(i), std::string(kValueBytes, 'a' + i));
  Set("other", "x");
  Recorder recorder;
  PrefixCopy copy = MakeCopy("big/", &recorder);
  int steps = 1;
  while (!Step(copy, recorder, store_)) {
    ++steps;
    ASSERT_LT(steps, 100);
  }
  // 5 MiB of values, at most about 1 MiB per turn.
  EXPECT_GE(steps, 5);
  for (std::size_t bytes : recorder.step_bytes) {
    EXPECT_LE(bytes, PrefixCopy::kSliceBytes + kValueBytes + 16);
  }
  EXPECT_EQ(recorder.taken, Now("big/"));
  EXPECT_EQ(copy.passes(), 1);
  EXPECT_EQ(recorder.drops, 0u);
  EXPECT_EQ(copy.index(), store_.PrefixIndex("big/"));
}

TEST_F(PrefixCopyTest, AWriteUnderThePrefixBetweenSlicesStartsANewPass) {
  FillBig(6);
  Recorder recorder;
  PrefixCopy copy = MakeCopy("big/", &recorder);
  ASSERT_FALSE(Step(copy, recorder, store_));
  // The first key was already copied; it changes now, as does a new one.
  Set("big/0", "changed");
  Set("big/9", "new");
  while (!Step(copy, recorder, store_)) ASSERT_LT(copy.passes(), 3);
  EXPECT_EQ(copy.passes(), 2);
  EXPECT_EQ(recorder.drops, 1u);
  EXPECT_EQ(recorder.taken, Now("big/"));
  EXPECT_EQ(recorder.taken.front().value, "changed");
  EXPECT_EQ(copy.index(), store_.PrefixIndex("big/"));
}

TEST_F(PrefixCopyTest, ADeleteUnderThePrefixBetweenSlicesStartsANewPass) {
  FillBig(6);
  Recorder recorder;
  PrefixCopy copy = MakeCopy("big/", &recorder);
  ASSERT_FALSE(Step(copy, recorder, store_));
  Apply(state::KvDelete{"big/0", false, LogIndex()});
  while (!Step(copy, recorder, store_)) ASSERT_LT(copy.passes(), 3);
  EXPECT_EQ(copy.passes(), 2);
  EXPECT_EQ(recorder.taken, Now("big/"));
  ASSERT_EQ(recorder.taken.size(), 5u);
  EXPECT_EQ(recorder.taken.front().key, "big/1");
}

TEST_F(PrefixCopyTest, WritesElsewhereDoNotStartANewPass) {
  FillBig(6);
  Recorder recorder;
  PrefixCopy copy = MakeCopy("big/", &recorder);
  int steps = 0;
  while (!Step(copy, recorder, store_)) {
    Set("bigger", std::to_string(++steps));  // sorts after the prefix, not under it
    Set("a", "x");
  }
  EXPECT_EQ(copy.passes(), 1);
  EXPECT_EQ(recorder.taken, Now("big/"));
}

TEST_F(PrefixCopyTest, APrefixWrittenBetweenEverySliceIsCopiedWholeInTheLastPass) {
  FillBig(6);
  Recorder recorder;
  PrefixCopy copy = MakeCopy("big/", &recorder);
  int writes = 0;
  while (!Step(copy, recorder, store_)) {
    Set("big/5", "write " + std::to_string(++writes));
    ASSERT_LT(writes, 100);
  }
  EXPECT_EQ(copy.passes(), PrefixCopy::kSlicedPassesMax + 1);
  EXPECT_EQ(recorder.taken, Now("big/"));
  // The last pass took the whole prefix in its one step.
  EXPECT_EQ(recorder.step_bytes.back(), 5 * (kValueBytes + 5) + 5 + std::string("write ").size() +
                                            std::to_string(writes).size());
}

TEST_F(PrefixCopyTest, ASliceEndsAfterAPageOfEntriesEvenWhenItCopiesNothing) {
  // Entries an ACL leaves out cost a look each: a slice still ends.
  const int count = 3 * static_cast<int>(PrefixCopy::kSliceEntries) + 5;
  std::vector<state::TxnOp> ops;
  for (int i = 0; i < count; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "many/%06d", i);
    state::TxnOp op;
    op.verb = state::TxnVerb::kSet;
    op.key = key;
    op.value = "v";
    ops.push_back(op);
    if (ops.size() == 64 || i == count - 1) {
      Apply(state::Txn{ops});
      ops.clear();
    }
  }
  std::size_t looked = 0;
  PrefixCopy copy(
      "many/", [&looked](const state::KvEntry&) { return ++looked, std::size_t{0}; }, [] {});
  int steps = 1;
  while (!copy.Step(store_)) ++steps;
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(looked, static_cast<std::size_t>(count));
}

TEST_F(PrefixCopyTest, AStateReplacedBetweenSlicesStartsANewPassOnTheNewOne) {
  FillBig(6);
  // What a restore swaps in: other entries under the prefix, written later.
  state::Store restored;
  for (int i = 0; i < 4; ++i) Set("big/" + std::to_string(i), "restored", &restored);
  Recorder recorder;
  PrefixCopy copy = MakeCopy("big/", &recorder);
  ASSERT_FALSE(Step(copy, recorder, store_));
  while (!Step(copy, recorder, restored)) ASSERT_LT(copy.passes(), 3);
  EXPECT_EQ(copy.passes(), 2);
  ASSERT_EQ(recorder.taken.size(), 4u);
  for (const state::KvEntry& entry : recorder.taken) EXPECT_EQ(entry.value, "restored");
}

TEST_F(PrefixCopyTest, AStateReplacedByOneWithTheSameIndexesStillStartsANewPass) {
  // What a restore of another cluster's file could swap in: the same keys at
  // the same indexes (so the same PrefixIndex), other values.
  FillBig(6);
  state::Store other;
  LogIndex index;
  for (int i = 0; i < 6; ++i) {
    index = index.Next();
    ASSERT_TRUE(
        other.Apply({ClusterMs(1), state::KvSet{"big/" + std::to_string(i), "other", 0}}, index)
            .status.ok());
  }
  std::string bytes;
  other.EncodeSnapshot(&bytes);
  Result<state::Store> replaced = state::Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(replaced.ok());
  ASSERT_EQ(replaced->PrefixIndex("big/"), store_.PrefixIndex("big/"));
  Recorder recorder;
  PrefixCopy copy = MakeCopy("big/", &recorder);
  ASSERT_FALSE(Step(copy, recorder, store_));
  while (!Step(copy, recorder, *replaced)) ASSERT_LT(copy.passes(), 3);
  EXPECT_EQ(copy.passes(), 2);
  ASSERT_EQ(recorder.taken.size(), 6u);
  for (const state::KvEntry& entry : recorder.taken) EXPECT_EQ(entry.value, "other");
}

}  // namespace
}  // namespace tenure::http
