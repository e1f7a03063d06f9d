// state::CheckList: a session's check lists in one pointer, the default node
// checks shared (decision 0033). A value like the vector it replaces.
#include "state/check_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "state/types.h"

namespace tenure::state {
namespace {

using Strings = std::vector<std::string>;

TEST(CheckListTest, HoldsWhatItWasGiven) {
  static_assert(sizeof(CheckList<std::string>) == sizeof(void*));
  CheckList<std::string> none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.items(), Strings{});
  EXPECT_EQ(none.begin(), none.end());

  for (const Strings& items : {Strings{"serfHealth"}, Strings{"serfHealth", "serfHealth"},
                               Strings{"disk"}, Strings{"", std::string(1, '\0')}}) {
    CheckList<std::string> list(items);
    EXPECT_EQ(list.items(), items);
    EXPECT_EQ(list.size(), items.size());
    EXPECT_FALSE(list.empty());
    EXPECT_EQ(Strings(list.begin(), list.end()), items);
    EXPECT_EQ(list[0], items[0]);
  }
  CheckList<std::string> empty_vector(Strings{});
  EXPECT_TRUE(empty_vector.empty());
  EXPECT_EQ(empty_vector, none);
}

// Every default list is the one shared copy: no block of its own.
TEST(CheckListTest, DefaultNodeChecksShareOneCopy) {
  CheckList<std::string> a = {"serfHealth"};
  CheckList<std::string> b(Strings{"serfHealth"});
  CheckList<std::string> c;
  c.push_back("serfHealth");
  EXPECT_EQ(&a.items(), &b.items());
  EXPECT_EQ(&a.items(), &c.items());
  CheckList<std::string> copy(a);
  EXPECT_EQ(&copy.items(), &a.items());
  // Others get their own, and copies of them are deep.
  CheckList<std::string> disk = {"disk"};
  CheckList<std::string> disk_copy(disk);
  EXPECT_NE(&disk.items(), &disk_copy.items());
  EXPECT_EQ(disk, disk_copy);
  c.push_back("disk");
  EXPECT_EQ(c.items(), (Strings{"serfHealth", "disk"}));
  EXPECT_EQ(a.items(), Strings{"serfHealth"});  // the shared copy did not change
  EXPECT_NE(&c.items(), &a.items());
}

TEST(CheckListTest, CopiesMovesAndClears) {
  CheckList<std::string> a = {"x", "y"};
  CheckList<std::string> b;
  b = a;
  EXPECT_EQ(b, a);
  CheckList<std::string> moved(std::move(b));
  EXPECT_EQ(moved, a);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
  moved = CheckList<std::string>{"serfHealth"};
  EXPECT_EQ(moved.items(), Strings{"serfHealth"});
  moved = std::move(a);
  EXPECT_EQ(moved.items(), (Strings{"x", "y"}));
  const CheckList<std::string>& self = moved;
  moved = self;
  EXPECT_EQ(moved.items(), (Strings{"x", "y"}));
  moved.clear();
  EXPECT_TRUE(moved.empty());
  EXPECT_NE(CheckList<std::string>{"serfHealth"}, CheckList<std::string>{});
  EXPECT_NE(CheckList<std::string>{"serfHealth"}, (CheckList<std::string>{"serfHealth", "x"}));
}

TEST(CheckListTest, ServiceChecks) {
  CheckList<ServiceCheck> none;
  EXPECT_TRUE(none.empty());
  CheckList<ServiceCheck> list = {{"web", ""}, {"db", "ns1"}};
  EXPECT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].ns, "ns1");
  CheckList<ServiceCheck> copy(list);
  EXPECT_EQ(copy, list);
  copy.push_back({"x", ""});
  EXPECT_NE(copy, list);
  EXPECT_EQ(copy.size(), 3u);
}

}  // namespace
}  // namespace tenure::state
