// The one-shot watch tables (zk/watch_table.h): which watches a create, a
// delete and a data change fire, with ZooKeeper's event types, each once.
#include "zk/watch_table.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tenure::zk
