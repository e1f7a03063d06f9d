// zk::ConnectionTable: the port's connections in a slot each, numbers never
// given twice, and each session's connection.
#include "zk/connection_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

namespace tenure::zk {
namespace {

// What the table asks of a connection: its number and its session.
struct Numbered {
  std::uint64_t n = 0;
  std::int64_t s = 0;
  std::uint64_t number() const { return n; }
  std::int64_t session() const { return s; }
};
using Table = ConnectionTable<Numbered>;

std::shared_ptr<Numbered> AddOne(Table& table, std::int64_t session = 0) {
  auto made = std::make_shared<Numbered>(Numbered{table.NextNumber(), session});
  table.Add(made);
  return made;
}

TEST(ConnectionTableTest, FindsWhatItHoldsAndNothingElse) {
  Table table;
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.Find(0), nullptr);
  EXPECT_EQ(table.Find(table.NextNumber()), nullptr);  // given, not added
  std::vector<std::shared_ptr<Numbered>> added;
  for (int i = 0; i < 5; ++i) added.push_back(AddOne(table));
  EXPECT_EQ(table.size(), 5u);
  for (const auto& c : added) {
    ASSERT_NE(table.Find(c->n), nullptr);
    EXPECT_EQ(table.Find(c->n)->get(), c.get());
  }
  EXPECT_EQ(table.Find(added[4]->n + 1), nullptr);  // a slot past the end
  EXPECT_EQ(table.Find(added[2]->n + (std::uint64_t{1} << 32)),
            nullptr);  // its slot, another serial
}

// A closed connection's slot is reused, its number never: an event or a
// watch that names the old number finds nothing.
TEST(ConnectionTableTest, ASlotIsReusedButNotItsNumber) {
  Table table;
  std::set<std::uint64_t> numbers;
  auto a = AddOne(table);
  auto b = AddOne(table);
  numbers.insert({a->n, b->n});
  EXPECT_EQ(table.Remove(a->n).get(), a.get());
  EXPECT_EQ(table.Find(a->n), nullptr);
  EXPECT_EQ(table.Remove(a->n), nullptr);  // twice: nothing
  EXPECT_EQ(table.size(), 1u);
  auto c = AddOne(table);
  EXPECT_EQ(c->n & 0xffff'ffffu, a->n & 0xffff'ffffu);  // a's slot
  EXPECT_TRUE(numbers.insert(c->n).second);             // a new number
  EXPECT_EQ(table.Find(a->n), nullptr);
  EXPECT_EQ(table.Find(c->n)->get(), c.get());
  for (int i = 0; i < 1000; ++i) {
    auto d = AddOne(table);
    EXPECT_TRUE(numbers.insert(d->n).second);
    if (i % 2 == 0) table.Remove(d->n);
  }
}

// Past 4 billion connections the serial wraps to 1, never 0: no number is
// 0, which a session's entry could take for a connection.
TEST(ConnectionTableTest, SerialsWrapPastZero) {
  Table table(0xffff'fffeu);
  auto a = AddOne(table, 5);
  EXPECT_EQ(a->n >> 32, 0xffff'ffffu);
  auto b = AddOne(table, 6);
  EXPECT_EQ(b->n >> 32, 1u);
  table.Remove(a->n);
  auto c = AddOne(table, 7);  // slot 0 again, serial 2
  EXPECT_NE(c->n, 0u);
  EXPECT_EQ(c->n, (std::uint64_t{2} << 32));
  EXPECT_EQ(table.Adopt(7, c->n), nullptr);  // a new session: nothing to close
  EXPECT_EQ(table.Find(0), nullptr);
}

TEST(ConnectionTableTest, VisitsEveryOpenConnectionOnce) {
  Table table;
  std::vector<std::shared_ptr<Numbered>> added;
  for (int i = 0; i < 10; ++i) added.push_back(AddOne(table));
  for (int i = 0; i < 10; i += 3) table.Remove(added[i]->n);
  std::set<std::uint64_t> seen;
  table.ForEach([&](const std::shared_ptr<Numbered>& c) { EXPECT_TRUE(seen.insert(c->n).second); });
  EXPECT_EQ(seen.size(), table.size());
  EXPECT_EQ(table.All().size(), table.size());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(seen.count(added[i]->n), i % 3 == 0 ? 0u : 1u);
  // Emptied, and used again.
  for (const auto& c : table.All()) table.Remove(c->n);
  EXPECT_TRUE(table.empty());
  auto again = AddOne(table);
  EXPECT_EQ(table.Find(again->n)->get(), again.get());
}

// A session moved to another connection: the older one is named for
// closing, once; a connection that closes takes its session's entry only
// if that still names it.
TEST(ConnectionTableTest, ASessionHasOneConnection) {
  Table table;
  auto first = AddOne(table, 7);
  EXPECT_EQ(table.Adopt(7, first->n), nullptr);
  EXPECT_EQ(table.Adopt(7, first->n), nullptr);  // again: itself
  auto second = AddOne(table, 7);
  EXPECT_EQ(table.Adopt(7, second->n).get(), first.get());
  table.Remove(first->n);  // the older closes: second keeps the session
  auto third = AddOne(table, 7);
  EXPECT_EQ(table.Adopt(7, third->n).get(), second.get());
  table.Remove(third->n);
  table.Remove(second->n);
  // The session's entry went with third: a new connection finds none.
  auto fourth = AddOne(table, 7);
  EXPECT_EQ(table.Adopt(7, fourth->n), nullptr);
  // A session whose connection closed before it moved: nothing to close.
  auto other = AddOne(table, 9);
  EXPECT_EQ(table.Adopt(9, other->n), nullptr);
  table.Remove(other->n);
  auto reopened = AddOne(table, 9);
  EXPECT_EQ(table.Adopt(9, reopened->n), nullptr);
  // A connection that closed while its session was being made is not
  // recorded: the session's next connection finds nothing to close.
  auto gone = AddOne(table, 11);
  table.Remove(gone->n);
  EXPECT_EQ(table.Adopt(11, gone->n), nullptr);
  auto next = AddOne(table, 11);
  EXPECT_EQ(table.Adopt(11, next->n), nullptr);
}

}  // namespace
}  // namespace tenure::zk
