// The watch tables (zk/watch_table.h): which watches a create, a delete and
// a data change fire, with ZooKeeper's event types, each owner once; the
// one-shot ones go as they fire, addWatch's persistent ones stay.
#include "zk/watch_table.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace tenure::zk {
namespace {

using Fired = WatchTable::Fired;
using Kind = WatchTable::Kind;

TEST(ZkWatchTableTest, ACreateFiresTheNodesDataWatchesAndItsParentsChildWatches) {
  WatchTable table;
  table.Add(1, Kind::kData, "/a/b");   // exists on a missing node
  table.Add(2, Kind::kChild, "/a");    // getChildren of the parent
  table.Add(3, Kind::kChild, "/a/b");  // not fired: the node had no children watch to fire
  std::vector<Fired> fired;
  table.Created("/a/b", &fired);
  EXPECT_EQ(fired, (std::vector<Fired>{{1, EventType::kNodeCreated, "/a/b"},
                                       {2, EventType::kNodeChildrenChanged, "/a"}}));
  EXPECT_EQ(table.size(), 1u);
  fired.clear();
  table.Created("/a/b", &fired);  // one-shot: nothing left to fire
  EXPECT_TRUE(fired.empty());
}

TEST(ZkWatchTableTest, ADeleteFiresDataAndChildWatchesOfTheNodeAndItsParentsChildWatches) {
  WatchTable table;
  table.Add(1, Kind::kData, "/x");
  table.Add(2, Kind::kChild, "/x");
  table.Add(3, Kind::kChild, "/");
  table.Add(4, Kind::kData, "/y");
  std::vector<Fired> fired;
  table.Deleted("/x", &fired);
  EXPECT_EQ(fired, (std::vector<Fired>{{1, EventType::kNodeDeleted, "/x"},
                                       {2, EventType::kNodeDeleted, "/x"},
                                       {3, EventType::kNodeChildrenChanged, "/"}}));
  EXPECT_EQ(table.size(), 1u);
}

TEST(ZkWatchTableTest, ADataChangeFiresOnlyDataWatches) {
  WatchTable table;
  table.Add(1, Kind::kData, "/x");
  table.Add(1, Kind::kData, "/x");  // set twice, fires once
  table.Add(2, Kind::kChild, "/x");
  std::vector<Fired> fired;
  table.Changed("/x", &fired);
  EXPECT_EQ(fired, (std::vector<Fired>{{1, EventType::kNodeDataChanged, "/x"}}));
  EXPECT_TRUE(table.Has(2, Kind::kChild, "/x"));
}

TEST(ZkWatchTableTest, AClosedConnectionsWatchesGoAndRemoveSaysWhetherOneWasThere) {
  WatchTable table;
  table.Add(1, Kind::kData, "/x");
  table.Add(1, Kind::kChild, "/y");
  table.Add(2, Kind::kData, "/x");
  EXPECT_EQ(table.OwnerCount(1), 2u);
  table.RemoveOwner(1);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.OwnerCount(1), 0u);
  EXPECT_FALSE(table.Remove(1, Kind::kData, "/x"));
  EXPECT_TRUE(table.Remove(2, Kind::kData, "/x"));
  EXPECT_EQ(table.size(), 0u);
  std::vector<Fired> fired;
  table.Changed("/x", &fired);
  EXPECT_TRUE(fired.empty());
}

TEST(ZkWatchTableTest, AReplacedStateFiresEveryWatch) {
  WatchTable table;
  table.Add(1, Kind::kData, "/x");
  table.Add(2, Kind::kChild, "/y");
  std::vector<Fired> fired;
  table.FireAll(EventType::kNodeDataChanged, EventType::kNodeChildrenChanged, &fired);
  EXPECT_EQ(fired.size(), 2u);
  EXPECT_EQ(table.size(), 0u);
}

TEST(ZkWatchTableTest, APersistentWatchSeesItsPathsDataAndChildEventsAndStays) {
  WatchTable table;
  table.Add(1, Kind::kPersistent, "/p");
  std::vector<Fired> fired;
  table.Created("/p", &fired);
  table.Changed("/p", &fired);
  table.Created("/p/c", &fired);
  table.Changed("/p/c", &fired);  // a child's data: not the path's
  table.Deleted("/p/c", &fired);
  table.Deleted("/p", &fired);  // the data and child sides: one event
  table.Created("/p", &fired);  // still there after the delete
  EXPECT_EQ(fired, (std::vector<Fired>{{1, EventType::kNodeCreated, "/p", true},
                                       {1, EventType::kNodeDataChanged, "/p", true},
                                       {1, EventType::kNodeChildrenChanged, "/p", true},
                                       {1, EventType::kNodeChildrenChanged, "/p", true},
                                       {1, EventType::kNodeDeleted, "/p", true},
                                       {1, EventType::kNodeCreated, "/p", true}}));
  EXPECT_EQ(table.size(), 1u);
}

TEST(ZkWatchTableTest, ARecursiveWatchSeesDataEventsAtAndBelowItsPathButNoChildEvents) {
  WatchTable table;
  table.Add(1, Kind::kRecursive, "/r");
  table.Add(2, Kind::kRecursive, "/");
  std::vector<Fired> fired;
  table.Created("/r/a/b", &fired);
  table.Changed("/r", &fired);
  table.Deleted("/rx", &fired);  // beside /r, not below it
  EXPECT_EQ(fired, (std::vector<Fired>{{1, EventType::kNodeCreated, "/r/a/b", true},
                                       {2, EventType::kNodeCreated, "/r/a/b", true},
                                       {1, EventType::kNodeDataChanged, "/r", true},
                                       {2, EventType::kNodeDataChanged, "/r", true},
                                       {2, EventType::kNodeDeleted, "/rx", true}}));
  EXPECT_EQ(table.size(), 2u);
}

TEST(ZkWatchTableTest, AnOwnerGetsOneEventWhateverKindsMatchAndItsOneShotWatchGoes) {
  WatchTable table;
  table.Add(1, Kind::kData, "/x");
  table.Add(1, Kind::kPersistent, "/x");
  table.Add(1, Kind::kRecursive, "/");
  table.Add(2, Kind::kRecursive, "/x");
  std::vector<Fired> fired;
  table.Changed("/x", &fired);
  // Owner 1 read the path (its one-shot watch fired): no rights to check.
  EXPECT_EQ(fired, (std::vector<Fired>{{1, EventType::kNodeDataChanged, "/x", false},
                                       {2, EventType::kNodeDataChanged, "/x", true}}));
  EXPECT_FALSE(table.Has(1, Kind::kData, "/x"));
  EXPECT_TRUE(table.Has(1, Kind::kPersistent, "/x"));
  EXPECT_EQ(table.OwnerCount(1), 2u);
  EXPECT_TRUE(table.Remove(1, Kind::kRecursive, "/"));
  EXPECT_FALSE(table.Remove(1, Kind::kRecursive, "/"));
  table.RemoveOwner(2);
  EXPECT_EQ(table.size(), 1u);
}

TEST(ZkWatchTableTest, AReplacedStateFiresOneShotWatchesAndNamesThePersistentOwners) {
  WatchTable table;
  table.Add(1, Kind::kPersistent, "/p");
  table.Add(1, Kind::kData, "/p");
  table.Add(2, Kind::kRecursive, "/r");
  table.Add(3, Kind::kChild, "/p");
  std::vector<Fired> fired;
  table.FireAll(EventType::kNodeDataChanged, EventType::kNodeChildrenChanged, &fired);
  EXPECT_EQ(fired, (std::vector<Fired>{{1, EventType::kNodeDataChanged, "/p"},
                                       {3, EventType::kNodeChildrenChanged, "/p"}}));
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.PersistentOwners(), (std::set<WatchTable::Owner>{1, 2}));
}

TEST(ZkWatchTableTest, ADeleteTakesEveryOneShotWatchBeforeThePersistentOnesSoItsEventNeedsNoCheck) {
  WatchTable table;
  table.Add(1, Kind::kRecursive, "/");
  table.Add(1, Kind::kChild, "/a");  // getChildren of /a: a list right, maybe no read right
  table.Add(2, Kind::kPersistent, "/a");
  table.Add(2, Kind::kChild, "/a");
  std::vector<Fired> fired;
  table.Deleted("/a", &fired);
  EXPECT_EQ(fired, (std::vector<Fired>{{1, EventType::kNodeDeleted, "/a", false},
                                       {2, EventType::kNodeDeleted, "/a", false}}));
  EXPECT_FALSE(table.Has(1, Kind::kChild, "/a"));
  EXPECT_EQ(table.size(), 2u);
}

}  // namespace
}  // namespace tenure::zk
