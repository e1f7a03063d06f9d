// The raft log format must never change by accident: replicas and data dirs
// written by one build must be read by the next. Each golden file holds the
// bytes one format version wrote; any intended format change needs a new
// version byte and a new golden file, never an edit of an old one. A new
// command type (a new tag) appends its line; existing lines never change.
//  - commands.golden: version 1, written by the first implementation (one
//    stamp, the leader's wall clock). Still decoded: old logs hold it.
//  - commands-v2.golden: version 2 (decision 0037), the replicated clock and
//    the wall clock apart. What every server writes now.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "state/command.h"
#include "unit/state/golden_hex.h"

namespace tenure::state {
namespace {

using testing::Hex;
using testing::Unhex;

// The golden commands, each at replicated clock 1700000000000 + i and wall
// clock 1800000000000 + i (version 2's file).
std::vector<Command> GoldenCommands() {
  Session s;
  s.id = SessionId("4ca8e74b-6350-7587-addf-a18084928f3c");
  s.name = "dbservice";
  s.node = "n1";
  s.lock_delay_ns = 15000000000;
  s.behavior = Behavior::kDelete;
  s.ttl = "15s";
  s.ttl_ns = 15000000000;
  s.checks.set_node({"serfHealth"});
  TxnOp op;
  op.verb = TxnVerb::kCheckFence;
  op.key = "k";
  op.index = LogIndex(7);
  return {
      {ClusterMs(1700000000000), KvSet{"a", "v", 3}},
      {ClusterMs(1700000000001), KvCas{"a", "w", 18446744073709551615ull, LogIndex(5)}},
      {ClusterMs(1700000000002), KvAcquire{"svc/leader", "body", 0, s.id}},
      {ClusterMs(1700000000003), KvRelease{"svc/leader", "", 0, s.id}},
      {ClusterMs(1700000000004), KvDelete{"a", true, LogIndex(9)}},
      {ClusterMs(1700000000005), KvDeleteTree{"svc/"}},
      {ClusterMs(1700000000006), SessionCreate{s}},
      {ClusterMs(1700000000007), SessionDestroy{s.id, DestroyReason::kExpired}},
      {ClusterMs(1700000000008), Txn{{op}}},
      {ClusterMs(1700000000009), ReapTombstones{LogIndex(42)}},
      {ClusterMs(1700000000010),
       SetMember{{2, "n2", "127.0.0.1:8302", "127.0.0.1:8502", "", "", LogIndex()}}},
      {ClusterMs(1700000000011), RemoveMember{3}},
      {ClusterMs(1700000000012), Checkpoint{LogIndex(1024), 0x0123456789abcdefull}},
      {ClusterMs(1700000000013), RestoreState{std::string("TNRSNAP\x03", 8)}},
  };
}

std::vector<std::pair<std::string, std::string>> ReadGolden(const std::string& file_name) {
  std::ifstream file(std::string(TENURE_TESTDATA_DIR) + "/" + file_name);
  EXPECT_TRUE(file.good()) << "missing tests/testdata/" << file_name;
  std::vector<std::pair<std::string, std::string>> golden;  // name, hex
  std::string name, hex;
  while (file >> name >> hex) golden.emplace_back(name, hex);
  return golden;
}

TEST(CommandGoldenTest, EncodingMatchesTheGoldenFileAndDecodesBack) {
  std::vector<std::pair<std::string, std::string>> golden = ReadGolden("commands-v2.golden");
  std::vector<Command> commands = GoldenCommands();
  for (std::size_t i = 0; i < commands.size(); ++i) {
    commands[i].wall_ms = UnixMs(1800000000000 + static_cast<std::int64_t>(i));
  }
  ASSERT_EQ(golden.size(), commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    std::string bytes;
    EncodeCommand(commands[i], &bytes);
    EXPECT_EQ(golden[i].first, CommandName(commands[i]));
    EXPECT_EQ(Hex(bytes), golden[i].second) << golden[i].first;
    auto decoded = DecodeCommand(Unhex(golden[i].second));
    ASSERT_TRUE(decoded.ok()) << golden[i].first << ": " << decoded.status().ToString();
    EXPECT_TRUE(*decoded == commands[i]) << golden[i].first;
  }
}

// A version 1 entry's one stamp was the leader's wall clock; it reads as both
// clocks, so a log written before decision 0037 replays to the same state.
TEST(CommandGoldenTest, VersionOneEntriesStillDecodeWithTheirStampAsBothClocks) {
  std::vector<std::pair<std::string, std::string>> golden = ReadGolden("commands.golden");
  std::vector<Command> commands = GoldenCommands();
  ASSERT_EQ(golden.size(), commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    commands[i].wall_ms = UnixMs(commands[i].now_ms.ms());
    auto decoded = DecodeCommand(Unhex(golden[i].second));
    ASSERT_TRUE(decoded.ok()) << golden[i].first << ": " << decoded.status().ToString();
    EXPECT_EQ(golden[i].first, CommandName(*decoded));
    EXPECT_TRUE(*decoded == commands[i]) << golden[i].first;
  }
}

}  // namespace
}  // namespace tenure::state
