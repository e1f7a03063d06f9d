// state::ShortText: a session's text fields in 8 bytes each, short text
// inline and the ports' session names shared (decision 0058). A value like
// the std::string it replaces.
#include "state/short_text.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "state/numbered_session.h"
#include "state/types.h"

namespace tenure::state {
namespace {

// Where a text's bytes are: in the object itself, or elsewhere.
bool Inside(const ShortText& text) {
  const char* at = text.view().data();
  const char* self = reinterpret_cast<const char*>(&text);
  return at >= self && at < self + sizeof text;
}

std::vector<std::string> Samples() {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  return {"a",
          "15s",
          "30000ms",   // 7 bytes: the longest inline
          "node1234",  // 8: the shortest on the heap
          std::string(1, '\0'),
          std::string("\x01\xff\0\x80", 4),
          std::string(7, '\xff'),
          std::string(kEtcdLeaseSessionName),
          std::string(kZkSessionName),
          "zookeepe",
          every_byte,
          std::string(5000, 'n')};
}

TEST(ShortTextTest, HoldsWhatItWasGiven) {
  static_assert(sizeof(ShortText) == sizeof(void*));
  ShortText none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.view(), "");
  EXPECT_EQ(ShortText(""), none);
  EXPECT_TRUE(ShortText(std::string()).empty());

  for (const std::string& sample : Samples()) {
    SCOPED_TRACE(sample.size());
    const ShortText text(sample);
    EXPECT_EQ(text.view(), sample);
    EXPECT_EQ(text.str(), sample);
    EXPECT_EQ(text.size(), sample.size());
    EXPECT_FALSE(text.empty());
    EXPECT_TRUE(text == sample);
    EXPECT_TRUE(text == std::string_view(sample));
    EXPECT_EQ(Inside(text), sample.size() <= ShortText::kInlineMax);
  }
}

TEST(ShortTextTest, CopiesMovesAndAssignmentsKeepTheText) {
  for (const std::string& sample : Samples()) {
    SCOPED_TRACE(sample.size());
    ShortText original(sample);
    ShortText copy(original);
    EXPECT_EQ(copy, original);
    EXPECT_EQ(copy.view(), sample);
    ShortText moved(std::move(copy));
    EXPECT_EQ(moved.view(), sample);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty

    ShortText assigned("before, on the heap");
    assigned = original;
    EXPECT_EQ(assigned.view(), sample);
    assigned = ShortText("x");
    EXPECT_EQ(assigned.view(), "x");
    assigned = std::move(original);
    EXPECT_EQ(assigned.view(), sample);
    const ShortText& same = assigned;
    assigned = same;  // self-assignment keeps it
    EXPECT_EQ(assigned.view(), sample);
    assigned.clear();
    EXPECT_TRUE(assigned.empty());
  }
}

// The names the ports give their sessions are one shared copy: a session
// holds no block for them, and copies share it too.
TEST(ShortTextTest, ThePortsSessionNamesShareOneCopy) {
  for (std::string_view name : {kEtcdLeaseSessionName, kZkSessionName}) {
    const ShortText a(name);
    const ShortText b{std::string(name)};
    const ShortText c(a);
    EXPECT_EQ(a.view().data(), b.view().data());
    EXPECT_EQ(a.view().data(), c.view().data());
    EXPECT_FALSE(Inside(a));
  }
  // Any other text of that length has its own block.
  const ShortText a("zookeepers");
  const ShortText b("zookeepers");
  EXPECT_NE(a.view().data(), b.view().data());
}

TEST(ShortTextTest, OrdersAsItsBytes) {
  EXPECT_LT(ShortText("a"), ShortText("b"));
  EXPECT_LT(ShortText("abcdefg"), ShortText("abcdefgh"));  // inline before heap
  EXPECT_LT(ShortText(""), ShortText(std::string(1, '\0')));
  EXPECT_LT(ShortText("\x7f"), ShortText("\x80"));  // bytes compare unsigned
  EXPECT_NE(ShortText("abc"), ShortText("abd"));
  EXPECT_LT(ShortText("abc"), "abd");
  EXPECT_GT(ShortText("abd"), std::string("abc"));
}

// What the change bought (decision 0058): a session record of 128 bytes,
// 200 with std::strings.
TEST(ShortTextTest, ASessionRecordIsSmall) { EXPECT_LE(sizeof(Session), 96u); }

}  // namespace
}  // namespace tenure::state
