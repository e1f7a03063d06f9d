// The leaders of an etcd election derived from its keys' lock histories
// (state/recipe_succession.h): the lowest held create revision leads; a
// contender that ends before its turn never leads; a leader's tenure starts
// at the end of the last lower key; keys outside the prefix do not count.
#include "state/recipe_succession.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tenure::state {
namespace {

LockGrant GrantAt(std::uint64_t index, const char* session) {
  LockGrant g;
  g.fence = LogIndex(index);
  g.grant_index = LogIndex(index);
  g.granted_at = UnixMs(1000 * static_cast<std::int64_t>(index));
  g.session = SessionId(session);
  return g;
}

void EndAt(LockHistory& h, const std::string& key, std::uint64_t fence, std::uint64_t index,
           EndCause cause) {
  ASSERT_NE(h.End(key, LogIndex(fence), cause, UnixMs(1000 * static_cast<std::int64_t>(index)),
                  LogIndex(index)),
            nullptr);
}

// "key@from" for each tenure, and "(held)" for an open one.
std::vector<std::string> Show(const std::vector<RecipeTenure>& tenures) {
  std::vector<std::string> out;
  for (const RecipeTenure& t : tenures) {
    out.push_back(t.key + "@" + std::to_string(t.led_from.value()) +
                  (t.grant.held() ? " (held)" : ""));
  }
  return out;
}

TEST(RecipeSuccessionTest, TheLowestHeldCreateRevisionLeadsInTurn) {
  LockHistory h;
  h.Grant("e/a", GrantAt(10, "00000000-0000-0000-0000-00000000000a"));
  h.Grant("e/b", GrantAt(12, "00000000-0000-0000-0000-00000000000b"));
  h.Grant("e/c", GrantAt(14, "00000000-0000-0000-0000-00000000000c"));
  // Nobody but a leads yet.
  EXPECT_EQ(Show(RecipeSuccession(h, "e/")), (std::vector<std::string>{"e/a@10 (held)"}));
  // a's lease expires: b leads from a's end, with a's end time.
  EndAt(h, "e/a", 10, 20, EndCause::kDelete);
  std::vector<RecipeTenure> now = RecipeSuccession(h, "e/");
  EXPECT_EQ(Show(now), (std::vector<std::string>{"e/a@10", "e/b@20 (held)"}));
  EXPECT_EQ(now[1].led_at, UnixMs(20'000));
  EXPECT_EQ(now[0].led_at, UnixMs(10'000));
  // c gives up while b leads: it never leads. Then b resigns, d arrives later.
  EndAt(h, "e/c", 14, 25, EndCause::kDelete);
  EndAt(h, "e/b", 12, 30, EndCause::kRelease);
  h.Grant("e/d", GrantAt(40, "00000000-0000-0000-0000-00000000000d"));
  EXPECT_EQ(Show(RecipeSuccession(h, "e/")),
            (std::vector<std::string>{"e/a@10", "e/b@20", "e/d@40 (held)"}));
}

TEST(RecipeSuccessionTest, AHigherKeyThatOutlivesALowerOneLeadsOnlyAfterIt) {
  LockHistory h;
  h.Grant("e/a", GrantAt(10, "00000000-0000-0000-0000-00000000000a"));
  h.Grant("e/b", GrantAt(11, "00000000-0000-0000-0000-00000000000b"));
  h.Grant("e/c", GrantAt(12, "00000000-0000-0000-0000-00000000000c"));
  // b ends first, then a: c leads from a's end, b never led.
  EndAt(h, "e/b", 11, 15, EndCause::kDelete);
  EndAt(h, "e/a", 10, 18, EndCause::kDelete);
  EXPECT_EQ(Show(RecipeSuccession(h, "e/")), (std::vector<std::string>{"e/a@10", "e/c@18 (held)"}));
}

TEST(RecipeSuccessionTest, OnlyKeysUnderThePrefixCount) {
  LockHistory h;
  h.Grant("e/a", GrantAt(10, "00000000-0000-0000-0000-00000000000a"));
  h.Grant("e2/x", GrantAt(5, "00000000-0000-0000-0000-00000000000b"));
  h.Grant("f/y", GrantAt(3, "00000000-0000-0000-0000-00000000000c"));
  EXPECT_EQ(Show(RecipeSuccession(h, "e/")), (std::vector<std::string>{"e/a@10 (held)"}));
  EXPECT_TRUE(RecipeSuccession(h, "g/").empty());
}

}  // namespace
}  // namespace tenure::state
