// MessageGate: what libraft 0.15 sends passes byte for byte, in any split;
// each of the messages that crashed, fooled or exhausted a member (issue 11)
// is refused before libraft could see it; votes are rate-limited.
#include "raft/wire/message_gate.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/coding.h"
#include "common/limits.h"
#include "raft/entry_codec.h"
#include "raft/raft_c.h"
#include "state/command.h"

namespace tenure::raft::wire {
namespace {

constexpr std::uint64_t kPeer = 2;

void U64(std::string* out, std::uint64_t v) { ByteWriter(out).PutFixed64(v); }

// libraft's own encoding of a configuration (the conf of change entries and
// InstallSnapshot).
std::string LibraftConfiguration(std::vector<std::pair<std::uint64_t, std::string>> servers) {
  raft_configuration conf;
  raft_configuration_init(&conf);
  for (const auto& [id, address] : servers) {
    EXPECT_EQ(raft_configuration_add(&conf, id, address.c_str(), RAFT_VOTER), 0);
  }
  raft_buffer buf;
  EXPECT_EQ(raft_configuration_encode(&conf, &buf), 0);
  std::string out(static_cast<const char*>(buf.base), buf.len);
  raft_free(buf.base);
  raft_configuration_close(&conf);
  return out;
}

std::string CommandEntry(const std::string& key) {
  state::Command command;
  command.now_ms = ClusterMs(1);
  command.body = state::KvSet{key, "v", 0};
  std::string out;
  EncodeEntry(command, &out);
  return out;
}

struct Entry {
  std::uint8_t type;
  std::string data;
  std::uint32_t declared = 0;  // 0: data.size()
};

// An AppendEntries as libraft's uv_encoding.c lays it out.
std::string AppendEntries(const std::vector<Entry>& entries, std::uint64_t declared_n = ~0ull) {
  std::string out;
  U64(&out, 1);
  U64(&out, 48 + 16 * entries.size());
  U64(&out, 5);   // term
  U64(&out, 10);  // prev index
  U64(&out, 4);   // prev term
  U64(&out, 10);  // commit
  U64(&out, declared_n == ~0ull ? entries.size() : declared_n);
  for (const Entry& e : entries) {
    U64(&out, 5);
    std::uint32_t size = e.declared ? e.declared : static_cast<std::uint32_t>(e.data.size());
    U64(&out, static_cast<std::uint64_t>(e.type) | (static_cast<std::uint64_t>(size) << 32));
  }
  U64(&out, 0);  // unused
  for (const Entry& e : entries) out += e.data;
  return out;
}

std::string Fixed(std::uint64_t type, std::uint64_t length = 24) {
  std::string out;
  U64(&out, type);
  U64(&out, length);
  for (std::uint64_t i = 0; i < length / 8; ++i) U64(&out, i + 1);
  return out;
}

std::string RequestVote(std::uint64_t candidate, bool disrupt) {
  std::string out;
  U64(&out, 3);
  U64(&out, 40);
  U64(&out, 7);  // term
  U64(&out, candidate);
  U64(&out, 10);
  U64(&out, 4);
  U64(&out, disrupt ? 1 : 0);
  return out;
}

std::string InstallSnapshot(const std::string& conf, std::uint64_t data_len,
                            const std::string& data) {
  std::string out;
  U64(&out, 5);
  U64(&out, 56 + conf.size());
  U64(&out, 5);
  U64(&out, 100);
  U64(&out, 4);
  U64(&out, 90);
  U64(&out, conf.size());
  out += conf;
  U64(&out, data_len);
  U64(&out, 0);
  return out + data;
}

GateLimits TestLimits() {
  GateLimits limits = DefaultGateLimits(1000);
  limits.snapshot_bytes_max = 1 << 20;
  return limits;
}

// Feeds `bytes` in chunks of `chunk`; returns the first error, the output in *out.
Status FeedAll(MessageGate* gate, const std::string& bytes, std::size_t chunk, std::string* out,
               MonoMs now = 0) {
  for (std::size_t i = 0; i < bytes.size(); i += chunk) {
    Status s = gate->Feed(std::string_view(bytes).substr(i, chunk), now, out);
    if (!s.ok()) return s;
  }
  return Status();
}

TEST(MessageGateTest, WhatLibraftSendsPassesUnchangedInAnySplit) {
  std::string barrier(8, '\0');
  std::string stream =
      AppendEntries({{1, CommandEntry("a")},
                     {2, barrier},
                     {3, LibraftConfiguration({{1, "127.0.0.1:1"}, {2, "127.0.0.1:2"}})},
                     {1, CommandEntry(std::string(5000, 'k'))}}) +
      AppendEntries({}) + Fixed(2) + Fixed(4) + Fixed(6) + RequestVote(kPeer, false) +
      InstallSnapshot(LibraftConfiguration({{1, "a:1"}, {2, "b:2"}, {3, "c:3"}}), 4096,
                      std::string(4096, 'x'));
  for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{64}, stream.size()}) {
    MessageGate gate(kPeer, TestLimits());
    std::string out;
    ASSERT_TRUE(FeedAll(&gate, stream, chunk, &out).ok()) << chunk;
    EXPECT_EQ(out, stream) << chunk;
    EXPECT_EQ(gate.messages(), 7u);
    EXPECT_FALSE(gate.mid_message());
  }
}

// The 104-byte message that segfaulted every member: one entry of type 0.
TEST(MessageGateTest, AnEntryOfTypeZeroIsRefusedBeforeLibraftSeesIt) {
  std::string message = AppendEntries({{0, std::string(8, 'x')}});
  ASSERT_EQ(message.size(), 88u);  // + 16 bytes of preamble in libraft's count: 104 on the wire
  MessageGate gate(kPeer, TestLimits());
  std::string out;
  Status s = FeedAll(&gate, message, message.size(), &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("entry 0 of type 0"), std::string_view::npos) << s.message();
  EXPECT_TRUE(out.empty());
  for (std::uint8_t type : {4, 9, 255}) {
    MessageGate g(kPeer, TestLimits());
    std::string o;
    EXPECT_FALSE(FeedAll(&g, AppendEntries({{type, std::string(8, 'x')}}), 1, &o).ok());
    EXPECT_TRUE(o.empty());
  }
}

// A forged write: a command entry that is not a tenure command, or a
// command followed by garbage, stops the connection at that entry.
TEST(MessageGateTest, CommandEntriesMustDecode) {
  std::string good = CommandEntry("a");
  std::string garbage(16, '\x7f');
  MessageGate gate(kPeer, TestLimits());
  std::string out;
  Status s = FeedAll(&gate, AppendEntries({{1, good}, {1, garbage}}), 3, &out);
  EXPECT_FALSE(s.ok());
  // The first entry passed, the second never did: libraft gets a truncated
  // message it cannot complete, and the connection closes.
  EXPECT_EQ(out.size(), 16 + 48 + 32 + good.size());
}

TEST(MessageGateTest, SizesAreCheckedBeforeAnythingIsBuffered) {
  struct Case {
    std::string name;
    std::string bytes;
    std::string text;
  };
  std::string conf = LibraftConfiguration({{1, "a:1"}, {2, "b:2"}});
  std::vector<Case> cases = {
      {"header of 255 MiB", Fixed(1, 255ull << 20).substr(0, 16), "AppendEntries header"},
      {"vote header too short", Fixed(3, 24), "RequestVote header of 24"},
      {"result header too long", Fixed(2, 32), "header of 32"},
      {"unknown type", Fixed(9), "unknown type 9"},
      {"type 0", Fixed(0), "unknown type 0"},
      {"n disagrees with length", AppendEntries({{1, CommandEntry("a")}}, 5), "declares 5"},
      // The limit makes room for a snapshot restore's entry (64 MiB of state).
      {"entry over the limit",
       AppendEntries({{1, "", static_cast<std::uint32_t>(limits::kRaftEntryBytesMax + 8)}}),
       "bytes"},
      {"entry size not a multiple of 8", AppendEntries({{1, "", 12}}), "of 12 bytes"},
      {"empty entry", AppendEntries({{1, "", 0}}), "of 0 bytes"},
      {"barrier of 16 bytes", AppendEntries({{2, std::string(16, '\0')}}), "barrier"},
      {"snapshot over the limit", InstallSnapshot(conf, 2u << 20, ""), "InstallSnapshot of"},
      {"empty snapshot", InstallSnapshot(conf, 0, ""), "InstallSnapshot of 0"},
  };
  for (const Case& c : cases) {
    MessageGate gate(kPeer, TestLimits());
    std::string out;
    Status s = FeedAll(&gate, c.bytes, 5, &out);
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_NE(s.message().find(c.text), std::string_view::npos) << c.name << ": " << s.message();
    EXPECT_TRUE(out.empty()) << c.name;
  }
}

TEST(MessageGateTest, ConfigurationsMustDecodeWithUniqueServers) {
  EXPECT_TRUE(CheckConfiguration(LibraftConfiguration({{1, "a:1"}, {2, "b:2"}})).ok());
  std::string conf = LibraftConfiguration({{1, "a:1"}, {2, "b:2"}});
  std::string bad_version = conf;
  bad_version[0] = 2;
  EXPECT_FALSE(CheckConfiguration(bad_version).ok());
  EXPECT_FALSE(CheckConfiguration("").ok());
  EXPECT_FALSE(CheckConfiguration(conf.substr(0, conf.size() - 8)).ok());
  EXPECT_FALSE(CheckConfiguration(conf + std::string(8, '\0')).ok());  // trailing bytes
  std::string huge_n = conf;
  huge_n[8] = '\x7f';  // n's top byte: about 2^63 servers
  EXPECT_FALSE(CheckConfiguration(huge_n).ok());
  // Two servers with the same address (hand-made: libraft refuses to encode it).
  std::string twice;
  ByteWriter w(&twice);
  w.PutU8(1);
  w.PutFixed64(2);
  for (std::uint64_t id : {1, 2}) {
    w.PutFixed64(id);
    twice += "a:1";
    twice.push_back('\0');
    w.PutU8(RAFT_VOTER);
  }
  while (twice.size() % 8 != 0) twice.push_back('\0');
  Status s = CheckConfiguration(twice);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("twice"), std::string_view::npos) << s.message();
  // An entry of type change carries the same check.
  MessageGate gate(kPeer, TestLimits());
  std::string out;
  EXPECT_FALSE(FeedAll(&gate, AppendEntries({{3, twice}}), 8, &out).ok());
}

TEST(MessageGateTest, VotesAreForThePeerAndRateLimited) {
  {
    MessageGate gate(kPeer, TestLimits());
    std::string out;
    Status s = FeedAll(&gate, RequestVote(3, false), 40, &out);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("candidate 3 from server 2"), std::string_view::npos);
  }
  GateLimits limits = TestLimits();  // a 1000 ms window, 4 votes, 2 disrupting
  MessageGate gate(kPeer, limits);
  std::string out;
  std::string disrupt = RequestVote(kPeer, true);
  std::string plain = RequestVote(kPeer, false);
  // A flood inside one window: 2 disrupting and 2 plain pass, the rest are dropped.
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(gate.Feed(i % 2 ? plain : disrupt, 10 + i, &out).ok());
  }
  EXPECT_EQ(out, disrupt + plain + disrupt + plain);
  EXPECT_EQ(gate.votes_dropped(), 56u);
  // Other messages are not limited, and the stream stays in step.
  ASSERT_TRUE(gate.Feed(Fixed(2), 500, &out).ok());
  EXPECT_EQ(out.size(), 4 * plain.size() + Fixed(2).size());
  // A new window.
  out.clear();
  ASSERT_TRUE(gate.Feed(disrupt, 1010, &out).ok());
  EXPECT_EQ(out, disrupt);
}

TEST(MessageGateTest, MemoryHeldIsOneUnitNotTheDeclaredTotal) {
  // A snapshot declared at the limit is streamed as it arrives: the gate
  // passes each chunk on and holds none of it.
  std::string conf = LibraftConfiguration({{1, "a:1"}, {2, "b:2"}});
  std::string head = InstallSnapshot(conf, 1 << 20, "");
  MessageGate gate(kPeer, TestLimits());
  std::string out;
  ASSERT_TRUE(gate.Feed(head, 0, &out).ok());
  EXPECT_EQ(out, head);
  EXPECT_TRUE(gate.mid_message());
  std::string chunk(4096, 's');
  for (int i = 0; i < 256; ++i) {
    out.clear();
    ASSERT_TRUE(gate.Feed(chunk, 0, &out).ok());
    EXPECT_EQ(out, chunk);
  }
  EXPECT_FALSE(gate.mid_message());
  EXPECT_EQ(gate.messages(), 1u);
}

}  // namespace
}  // namespace tenure::raft::wire
