// state::SessionChecks: a session's three check lists in one pointer, the
// default node checks shared (decisions 0033 and 0067). A value like the
// three vectors it replaces.
#include "state/check_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "state/types.h"

namespace tenure::state {
namespace {

using Strings = std::vector<std::string>;
using Services = std::vector<ServiceCheck>;

TEST(SessionChecksTest, HoldsWhatItWasGiven) {
  static_assert(sizeof(SessionChecks) == sizeof(void*));
  SessionChecks none;
  EXPECT_EQ(none.node(), Strings{});
  EXPECT_EQ(none.service(), Services{});
  EXPECT_EQ(none.legacy(), Strings{});
  EXPECT_TRUE(none.shares_storage());

  for (const Strings& items : {Strings{"serfHealth"}, Strings{"serfHealth", "serfHealth"},
                               Strings{"disk"}, Strings{"", std::string(1, '\0')}}) {
    SessionChecks checks;
    checks.set_node(items);
    checks.set_legacy(items);
    checks.set_service({{"web", ""}, {"db", "ns1"}});
    EXPECT_EQ(checks.node(), items);
    EXPECT_EQ(checks.legacy(), items);
    EXPECT_EQ(checks.service(), (Services{{"web", ""}, {"db", "ns1"}}));
  }
  SessionChecks emptied;
  emptied.set_legacy({"x"});
  emptied.set_legacy({});
  EXPECT_TRUE(emptied.shares_storage());
  EXPECT_EQ(emptied, none);
}

// Every session with only the default node checks shares the one copy.
TEST(SessionChecksTest, DefaultNodeChecksShareOneCopy) {
  SessionChecks a;
  a.set_node({"serfHealth"});
  SessionChecks b;
  b.set_legacy({"x"});
  b.set_node({"serfHealth"});
  b.set_legacy({});
  EXPECT_TRUE(a.shares_storage());
  EXPECT_TRUE(b.shares_storage());
  EXPECT_EQ(&a.node(), &b.node());
  SessionChecks copy(a);
  EXPECT_EQ(&copy.node(), &a.node());
  // Others get their own, and copies of them are deep.
  SessionChecks disk;
  disk.set_node({"disk"});
  EXPECT_FALSE(disk.shares_storage());
  SessionChecks disk_copy(disk);
  EXPECT_NE(&disk.node(), &disk_copy.node());
  EXPECT_EQ(disk, disk_copy);
  disk_copy.set_service({{"web", ""}});
  EXPECT_NE(disk, disk_copy);
  EXPECT_EQ(disk.service(), Services{});
  EXPECT_EQ(a.node(), Strings{"serfHealth"});  // the shared copy did not change
}

TEST(SessionChecksTest, CopiesAndMoves) {
  SessionChecks a;
  a.set_node({"x", "y"});
  SessionChecks b;
  b = a;
  EXPECT_EQ(b, a);
  SessionChecks moved(std::move(b));
  EXPECT_EQ(moved, a);
  EXPECT_EQ(b, SessionChecks{});  // NOLINT(bugprone-use-after-move): a moved-from value is empty
  SessionChecks serf;
  serf.set_node({"serfHealth"});
  moved = serf;
  EXPECT_EQ(moved.node(), Strings{"serfHealth"});
  moved = std::move(a);
  EXPECT_EQ(moved.node(), (Strings{"x", "y"}));
  const SessionChecks& self = moved;
  moved = self;
  EXPECT_EQ(moved.node(), (Strings{"x", "y"}));
  EXPECT_NE(serf, SessionChecks{});
  SessionChecks serf_and_legacy = serf;
  serf_and_legacy.set_legacy({"serfHealth"});
  EXPECT_NE(serf, serf_and_legacy);
}

}  // namespace
}  // namespace tenure::state
