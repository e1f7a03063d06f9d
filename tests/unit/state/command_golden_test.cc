// The raft log format must never change by accident: replicas and data dirs
// written by one build must be read by the next. These bytes were written by
// the first implementation; any intended format change needs a new version
// byte and a new golden file, never an edit of this one. A new command type
// (a new tag) appends its line; existing lines never change.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "state/command.h"

namespace tenure::state {
namespace {

std::vector<Command> GoldenCommands() {
  Session s;
  s.id = SessionId("4ca8e74b-6350-7587-addf-a18084928f3c");
  s.name = "dbservice";
  s.node = "n1";
  s.lock_delay_ns = 15000000000;
  s.behavior = Behavior::kDelete;
  s.ttl = "15s";
  s.ttl_ns = 15000000000;
  s.node_checks = {"serfHealth"};
  TxnOp op;
  op.verb = TxnVerb::kCheckFence;
  op.key = "k";
  op.index = LogIndex(7);
  return {
      {UnixMs(1700000000000), KvSet{"a", "v", 3}},
      {UnixMs(1700000000001), KvCas{"a", "w", 18446744073709551615ull, LogIndex(5)}},
      {UnixMs(1700000000002), KvAcquire{"svc/leader", "body", 0, s.id}},
      {UnixMs(1700000000003), KvRelease{"svc/leader", "", 0, s.id}},
      {UnixMs(1700000000004), KvDelete{"a", true, LogIndex(9)}},
      {UnixMs(1700000000005), KvDeleteTree{"svc/"}},
      {UnixMs(1700000000006), SessionCreate{s}},
      {UnixMs(1700000000007), SessionDestroy{s.id, DestroyReason::kExpired}},
      {UnixMs(1700000000008), Txn{{op}}},
      {UnixMs(1700000000009), ReapTombstones{LogIndex(42)}},
      {UnixMs(1700000000010), SetMember{{2, "n2", "127.0.0.1:8302", "127.0.0.1:8502", LogIndex()}}},
      {UnixMs(1700000000011), RemoveMember{3}},
      {UnixMs(1700000000012), Checkpoint{LogIndex(1024), 0x0123456789abcdefull}},
      {UnixMs(1700000000013), RestoreState{std::string("TNRSNAP\x03", 8)}},
  };
}

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

TEST(CommandGoldenTest, EncodingMatchesTheGoldenFileAndDecodesBack) {
  std::ifstream file(std::string(TENURE_TESTDATA_DIR) + "/commands.golden");
  ASSERT_TRUE(file.good()) << "missing tests/testdata/commands.golden";
  std::vector<std::pair<std::string, std::string>> golden;  // name, hex
  std::string name, hex;
  while (file >> name >> hex) golden.emplace_back(name, hex);

  std::vector<Command> commands = GoldenCommands();
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

}  // namespace
}  // namespace tenure::state
