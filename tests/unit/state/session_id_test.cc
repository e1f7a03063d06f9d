// state::SessionId: a session id that no other string turns into, nor it
// into them; ordered and hashed as its string, encoded as its string's
// bytes, and printed by gtest and fmt (unit/common/type_printers.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>

#include "common/coding.h"
#include "state/codec.h"
#include "state/types.h"
#include "unit/common/type_printers.h"

namespace tenure::state {
namespace {

// Made on purpose only: keys, values, node names and check ids are strings too.
static_assert(!std::is_convertible_v<std::string, SessionId>);
static_assert(!std::is_convertible_v<const char*, SessionId>);
static_assert(!std::is_convertible_v<SessionId, std::string>);
static_assert(!std::is_convertible_v<SessionId, std::string_view>);
static_assert(std::is_constructible_v<SessionId, std::string>);

TEST(SessionIdTest, HoldsItsStringAndEmptyMeansNone) {
  SessionId none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.str(), "");
  EXPECT_EQ(none, SessionId(""));

  SessionId id("4ca8e74b-6350-7587-addf-a18084928f3c");
  EXPECT_FALSE(id.empty());
  EXPECT_EQ(id.str(), "4ca8e74b-6350-7587-addf-a18084928f3c");
  EXPECT_EQ(id.view(), "4ca8e74b-6350-7587-addf-a18084928f3c");
  // Any bytes: an acquire may name what it likes, and the Store looks it up.
  EXPECT_EQ(SessionId(std::string("a\0b", 3)).view().size(), 3u);
}

TEST(SessionIdTest, ComparesAndOrdersAsItsString) {
  EXPECT_EQ(SessionId("a"), SessionId("a"));
  EXPECT_NE(SessionId("a"), SessionId("b"));
  EXPECT_LT(SessionId(""), SessionId("a"));
  EXPECT_LT(SessionId("a"), SessionId("ab"));
  EXPECT_LT(SessionId("ab"), SessionId("b"));
  // Bytes compare unsigned, as std::string's do: the order of maps and of
  // the leader's expiry tie-break is the one it was with strings.
  EXPECT_LT(SessionId("z"), SessionId("\xff"));
  EXPECT_EQ(SessionId("z") < SessionId("\xff"), std::string("z") < std::string("\xff"));

  std::map<SessionId, int> by_id = {{SessionId("c"), 3}, {SessionId("a"), 1}, {SessionId("b"), 2}};
  std::string order;
  for (const auto& [id, n] : by_id) order += id.str();
  EXPECT_EQ(order, "abc");
  EXPECT_EQ(by_id.at(SessionId("b")), 2);
}

TEST(SessionIdTest, HashesAsAKey) {
  std::unordered_set<SessionId> ids = {SessionId("a"), SessionId("b"), SessionId("a")};
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids.count(SessionId("a")), 1u);
  EXPECT_EQ(ids.count(SessionId("c")), 0u);
  EXPECT_EQ(std::hash<SessionId>()(SessionId("a")), std::hash<std::string_view>()("a"));
}

TEST(SessionIdTest, PrintsForGtestStreamsAndFmt) {
  EXPECT_EQ(::testing::PrintToString(SessionId("ab-12")), "SessionId(\"ab-12\")");
  EXPECT_EQ(::testing::PrintToString(SessionId()), "SessionId(\"\")");
  std::ostringstream os;
  os << SessionId("ab-12");
  EXPECT_EQ(os.str(), "ab-12");
  EXPECT_EQ(fmt::format("{} {:?}", SessionId("ab-12"), SessionId("q\"")), "ab-12 \"q\\\"\"");
}

// The log and the snapshots hold the string's bytes, as before the type.
TEST(SessionIdTest, EncodesAsItsStringsBytes) {
  const std::string text("00000000-0000-4000-8000-00000000000a\0\xff", 38);
  std::string typed;
  std::string plain;
  ByteWriter typed_writer(&typed);
  ByteWriter plain_writer(&plain);
  EncodeSessionId(SessionId(text), typed_writer);
  plain_writer.PutBytes(text);
  EXPECT_EQ(typed, plain);
  ByteReader r(typed);
  EXPECT_EQ(DecodeSessionId(r), SessionId(text));
  EXPECT_TRUE(r.done());
  EXPECT_FALSE(r.failed());
}

// Up to 38 bytes live in the object, longer ids on the heap (decision 0033);
// either way an id is the same value, copies and moves keep it, and a
// moved-from id is empty.
TEST(SessionIdTest, ShortAndLongIdsAreTheSameValue) {
  static_assert(sizeof(SessionId) == 39);
  for (std::size_t n : {0u, 1u, 36u, 38u, 39u, 40u, 41u, 100u, 5000u}) {
    std::string text(n, 'x');
    for (std::size_t i = 0; i < n; ++i) text[i] = static_cast<char>('a' + i % 26);
    if (n > 2) text[n / 2] = '\0';
    SessionId id(text);
    EXPECT_EQ(id.view(), text) << n;
    EXPECT_EQ(id.str(), text) << n;
    EXPECT_EQ(id.empty(), n == 0) << n;
    SessionId copy(id);
    EXPECT_EQ(copy, id) << n;
    EXPECT_NE(copy.view().data(), id.view().data()) << n;
    SessionId moved(std::move(copy));
    EXPECT_EQ(moved.view(), text) << n;
    EXPECT_TRUE(copy.empty()) << n;  // NOLINT(bugprone-use-after-move): a moved-from id is empty
    SessionId assigned("short");
    assigned = id;
    EXPECT_EQ(assigned.view(), text) << n;
    assigned = SessionId(std::string(60, 'q'));
    EXPECT_EQ(assigned.view(), std::string(60, 'q')) << n;
    assigned = std::move(moved);
    EXPECT_EQ(assigned.view(), text) << n;
    const SessionId& self = assigned;
    assigned = self;
    EXPECT_EQ(assigned.view(), text) << n;
    EXPECT_EQ(std::hash<SessionId>()(id), std::hash<std::string_view>()(text)) << n;
  }
  // Orders as the strings do across the inline/heap boundary.
  std::string a(39, 'b'), b(40, 'a'), c(40, 'b');
  EXPECT_EQ(SessionId(a) < SessionId(b), a < b);
  EXPECT_EQ(SessionId(b) < SessionId(c), b < c);
  EXPECT_EQ(SessionId(a) < SessionId(c), a < c);
  EXPECT_LT(SessionId(a), SessionId(a + "\xff"));
}

}  // namespace
}  // namespace tenure::state
