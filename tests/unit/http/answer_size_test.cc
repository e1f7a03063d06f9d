// The answer-size count (docs/limits.md) against the JSON the handlers build: exact
// for KV entries, GET ?recurse and ?keys, and never below a transaction's.
#include "http/answer_size.h"

#include <gtest/gtest.h>

#include "http/json.h"

namespace tenure::http {
namespace {

using state::TxnOp;
using state::TxnVerb;

constexpr std::size_t kNoLimit = std::size_t{1} << 40;

std::string Rendered(const state::KvEntry& entry, bool with_value) {
  std::string out;
  json::AppendKvEntry(&out, entry, with_value);
  return out;
}

TEST(AnswerSizeTest, KvEntrySizeIsWhatAppendKvEntryWrites) {
  const std::string keys[] = {"k",
                              "",
                              "a\"b\\c\n\r\t",
                              "<&>",
                              std::string("\x01\x7f", 2),
                              "caf\xC3\xA9",
                              "\xE2\x80\xA8\xE2\x80\xA9",
                              "bad\xFF\xC0\x80",
                              "\xF0\x9F\x98\x80",
                              std::string(4096, '<')};
  const std::string values[] = {"", "a", "ab", "abc", "abcd", std::string(1000, 'x')};
  for (const auto& key : keys) {
    for (const auto& value : values) {
      state::KvEntry entry;
      entry.key = key;
      entry.value = value;
      entry.flags = 18446744073709551615ull;
      entry.create_index = LogIndex(9);
      entry.modify_index = LogIndex(10);
      entry.lock_index = 100;
      for (const char* session : {"", "4ca8e74b-6350-7587-addf-a18084928f3c"}) {
        entry.session = state::SessionId(session);
        entry.fence = *session ? LogIndex(123456) : LogIndex();
        for (bool with_value : {true, false}) {
          EXPECT_EQ(json::KvEntrySize(entry, with_value), Rendered(entry, with_value).size())
              << "key " << key << " value " << value.size() << " with_value " << with_value;
        }
      }
    }
  }
}

class StoreAnswerSizeTest : public ::testing::Test {
 protected:
  void Set(const std::string& key, std::string value) {
    index_ = index_.Next();
    const auto result =
        store_.Apply({ClusterMs(1), state::KvSet{key, std::move(value), 0}}, index_);
    ASSERT_TRUE(result.status.ok());
  }
  state::Store store_;
  LogIndex index_;
};

TEST_F(StoreAnswerSizeTest, RecurseAndKeysCountsAreExact) {
  Set("a/1", "one");
  Set("a/2/x", std::string(700, 'v'));
  Set("a/2/y", "");
  Set("a/3<", "three");
  Set("b", "other");
  for (const char* prefix : {"", "a/", "a/2", "zzz"}) {
    EXPECT_EQ(RecurseAnswerSize(store_, prefix, kNoLimit),
              json::KvEntries(store_.ListKv(prefix)).size())
        << prefix;
    for (const char* separator : {"", "/", "2"}) {
      EXPECT_EQ(KeysAnswerSize(store_, prefix, separator, kNoLimit),
                json::Strings(store_.ListKeys(prefix, separator)).size())
          << prefix << " " << separator;
    }
  }
}

TEST_F(StoreAnswerSizeTest, CountingStopsOnceOverTheLimit) {
  for (int i = 0; i < 100; ++i) Set("big/" + std::to_string(i), std::string(3000, 'v'));
  const std::size_t full = RecurseAnswerSize(store_, "big/", kNoLimit);
  EXPECT_GT(full, 400'000u);
  const std::size_t stopped = RecurseAnswerSize(store_, "big/", 10'000);
  EXPECT_GT(stopped, 10'000u);
  EXPECT_LT(stopped, 20'000u);  // stopped within one entry of the limit
}

TEST_F(StoreAnswerSizeTest, TxnCountSumsOperationsAndBoundsTheAnswer) {
  Set("t/1", std::string(5000, 'a'));
  Set("t/2", "b");
  Set("u", "c");
  std::vector<TxnOp> reads = {
      {TxnVerb::kGetTree, "t/"},      {TxnVerb::kGet, "u"},
      {TxnVerb::kGetOrEmpty, "none"}, {TxnVerb::kCheckNotExists, "x"},
      {TxnVerb::kGetTree, "t/"},      {TxnVerb::kCheckIndex, "u", "", 0, LogIndex(3)}};
  const std::size_t actual = json::TxnOutcome(store_.ReadTxn(reads)).size();
  const std::size_t counted = TxnAnswerSize(store_, reads, kNoLimit);
  EXPECT_GE(counted, actual);
  EXPECT_LT(counted, actual + 200);  // only the value-less results are rounded up
  // 128 get-trees of the same prefix add up: the count is per operation.
  std::vector<TxnOp> many(128, TxnOp{TxnVerb::kGetTree, "t/"});
  EXPECT_GT(TxnAnswerSize(store_, many, kNoLimit), 128u * 5000 * 4 / 3);
  EXPECT_LT(TxnAnswerSize(store_, many, 100'000), 120'000u);

  // A write transaction's gets see the values it writes first.
  state::Store copy = store_;
  std::vector<TxnOp> writes = {{TxnVerb::kSet, "t/3", std::string(9000, 'w')},
                               {TxnVerb::kGetTree, "t/"},
                               {TxnVerb::kSet, "u", std::string(3000, 'z')},
                               {TxnVerb::kGet, "u"}};
  const std::size_t counted_writes = TxnAnswerSize(store_, writes, kNoLimit);
  const auto result = copy.Apply({ClusterMs(1), state::Txn{writes}}, index_.Next());
  ASSERT_TRUE(result.txn.ok());
  EXPECT_GE(counted_writes, json::TxnOutcome(result.txn).size());
}

}  // namespace
}  // namespace tenure::http
