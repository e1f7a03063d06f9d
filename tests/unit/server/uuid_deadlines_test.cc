// UuidDeadlines against an ordered-set model: random sets, renewals, erases
// and pops of ids that collide often (few distinct homes in a small table,
// numbered ids with a zero upper half) keep the same deadlines and the same
// pop order, through the table's doublings and halvings.
#include "server/uuid_deadlines.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>

namespace tenure::server {
namespace {

using Uuid = UuidDeadlines::Uuid;

Uuid IdOf(std::uint64_t high, std::uint64_t low) {
  Uuid id{};
  for (int i = 0; i < 8; ++i) {
    id[i] = static_cast<std::uint8_t>(high >> (56 - 8 * i));
    id[8 + i] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
  }
  return id;
}

TEST(UuidDeadlinesTest, EmptyHasNothingAndAllocatesNothing) {
  UuidDeadlines deadlines;
  EXPECT_TRUE(deadlines.empty());
  EXPECT_EQ(deadlines.slot_capacity(), 0u);
  EXPECT_FALSE(deadlines.Erase(IdOf(0, 1)));
  EXPECT_EQ(deadlines.Find(IdOf(0, 1)), std::nullopt);
}

TEST(UuidDeadlinesTest, PopsByDeadlineThenId) {
  UuidDeadlines deadlines;
  deadlines.Set(IdOf(0, 3), MonoMs(5));
  deadlines.Set(IdOf(0, 2), MonoMs(7));
  deadlines.Set(IdOf(0, 1), MonoMs(5));
  deadlines.Set(IdOf(0, 2), MonoMs(4));  // a renewal that moves it earlier
  EXPECT_EQ(deadlines.top_id(), IdOf(0, 2));
  deadlines.PopTop();
  EXPECT_EQ(deadlines.top_id(), IdOf(0, 1));
  deadlines.PopTop();
  EXPECT_EQ(deadlines.top_id(), IdOf(0, 3));
  EXPECT_EQ(deadlines.top_at(), MonoMs(5));
  deadlines.PopTop();
  EXPECT_TRUE(deadlines.empty());
}

// Numbered ids differ only in their last bytes and sequential numbers are
// what etcd's clients get: with a weak hash they pile into one run of the
// table (a first version took every low bit from the same few bytes, and
// 100,000 leases took 45 s to arm). Under any key they spread out as random
// ids do: at 3/4 load the longest run is a few hundred slots (237, 253 and
// 210 for these keys), where the weak hash made runs of tens of thousands.
TEST(UuidDeadlinesTest, SequentialNumberedIdsSpreadOverTheTable) {
  for (std::uint64_t key : {0ull, 1ull, 0x0123456789abcdefull}) {
    UuidDeadlines deadlines(key);
    for (std::uint64_t n = 1; n <= 100000; ++n) deadlines.Set(IdOf(0, n), MonoMs(0));
    for (std::uint64_t n = 1; n <= 100000; ++n) deadlines.Set(IdOf(n, 0), MonoMs(0));
    EXPECT_EQ(deadlines.slot_capacity(), 262144u);
    EXPECT_LE(deadlines.LongestProbe(), 1000u) << "key " << key;
  }
}

TEST(UuidDeadlinesTest, MatchesAnOrderedSetModel) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 random(seed);
    UuidDeadlines deadlines;
    std::map<Uuid, MonoMs> model;
    std::set<std::pair<MonoMs, Uuid>> queue;
    // Up to 3,000 ids: enough for several doublings, and the pool shrinks
    // and grows in phases so that halvings happen too.
    const std::uint64_t pool = 1 + random() % 3000;
    for (int step = 0; step < 20000; ++step) {
      const std::uint64_t n = random() % pool;
      const Uuid id = n % 2 == 0 ? IdOf(0, n) : IdOf(n * 0x9e3779b97f4a7c15ull, n);
      const bool growing = (step / 5000) % 2 == 0;
      const std::uint64_t action = random() % 10;
      if (action < (growing ? 6u : 2u)) {
        const MonoMs at(static_cast<std::int64_t>(random() % 50));
        if (auto it = model.find(id); it != model.end()) queue.erase({it->second, id});
        model[id] = at;
        queue.insert({at, id});
        deadlines.Set(id, at);
      } else if (action < 9) {
        const bool had = model.contains(id);
        if (had) {
          queue.erase({model[id], id});
          model.erase(id);
        }
        ASSERT_EQ(deadlines.Erase(id), had);
      } else if (!queue.empty()) {
        ASSERT_EQ(deadlines.top_id(), queue.begin()->second) << "seed " << seed << " step " << step;
        ASSERT_EQ(deadlines.top_at(), queue.begin()->first);
        model.erase(queue.begin()->second);
        queue.erase(queue.begin());
        deadlines.PopTop();
      }
      ASSERT_EQ(deadlines.size(), model.size());
      ASSERT_EQ(deadlines.Find(id), model.contains(id) ? std::optional(model[id]) : std::nullopt);
      // Never fuller than 7/8, never emptier than 1/8 past the smallest table.
      ASSERT_LE(deadlines.size() * 8, deadlines.slot_capacity() * 7);
      if (deadlines.slot_capacity() > 16) {
        ASSERT_GE(deadlines.size() * 8, deadlines.slot_capacity());
      }
    }
    // Everything left comes out in the model's order, each id found until then.
    for (const auto& [at, id] : queue) {
      ASSERT_EQ(deadlines.Find(id), at);
      ASSERT_EQ(deadlines.top_id(), id);
      deadlines.PopTop();
    }
    EXPECT_TRUE(deadlines.empty());
  }
}

}  // namespace
}  // namespace tenure::server
