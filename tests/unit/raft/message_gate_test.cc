// MessageGate: what libraft 0.15 sends passes byte for byte, in any split;
// each of the messages that crashed, fooled or exhausted a member is refused
// before libraft could see it; votes are rate-limited per member; a message
// must be whole by its deadline; the bytes in progress on all connections
// are bounded.
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
#include "state/store.h"

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

std::string Preamble(std::uint64_t type, std::uint64_t length) {
  std::string out;
  U64(&out, type);
  U64(&out, length);
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

struct SnapshotIndexes {
  std::uint64_t term = 5, last_index = 100, last_term = 4, conf_index = 90;
};

std::string InstallSnapshot(const std::string& conf, std::uint64_t data_len,
                            const std::string& data, SnapshotIndexes at = {}) {
  std::string out;
  U64(&out, 5);
  U64(&out, 56 + conf.size());
  U64(&out, at.term);
  U64(&out, at.last_index);
  U64(&out, at.last_term);
  U64(&out, at.conf_index);
  U64(&out, conf.size());
  out += conf;
  U64(&out, data_len);
  U64(&out, 0);
  return out + data;
}

// What a leader's FsmBridge::Snapshot sends: a store with `keys` keys.
std::string SnapshotData(int keys) {
  state::Store store;
  for (int i = 0; i < keys; ++i) {
    state::Command command;
    command.now_ms = ClusterMs(1000 + i);
    command.wall_ms = UnixMs(1000 + i);
    command.body = state::KvSet{"k" + std::to_string(i), std::string(100, 'v'), 0};
    store.Apply(command, LogIndex(static_cast<std::uint64_t>(i) + 1));
  }
  std::string out;
  store.EncodeSnapshot(&out);
  return out;
}

std::string Snapshot(const std::string& data) {
  return InstallSnapshot(LibraftConfiguration({{1, "a:1"}, {2, "b:2"}, {3, "c:3"}}), data.size(),
                         data);
}

GateLimits TestLimits() {
  GateLimits limits = DefaultGateLimits(1000);
  limits.snapshot_bytes_max = 1 << 20;
  return limits;
}

// Feeds `bytes` in chunks of `chunk`; returns the first error, the output in *out.
Status FeedAll(MessageGate* gate, const std::string& bytes, std::size_t chunk, std::string* out,
               MonoMs now = MonoMs()) {
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
      Snapshot(SnapshotData(30));
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
      {"header of 255 MiB", Preamble(1, 255ull << 20), "AppendEntries header"},
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
    ASSERT_TRUE(gate.Feed(i % 2 ? plain : disrupt, MonoMs(10 + i), &out).ok());
  }
  EXPECT_EQ(out, disrupt + plain + disrupt + plain);
  EXPECT_EQ(gate.votes_dropped(), 56u);
  // Other messages are not limited, and the stream stays in step.
  ASSERT_TRUE(gate.Feed(Fixed(2), MonoMs(500), &out).ok());
  EXPECT_EQ(out.size(), 4 * plain.size() + Fixed(2).size());
  // A new window.
  out.clear();
  ASSERT_TRUE(gate.Feed(disrupt, MonoMs(1010), &out).ok());
  EXPECT_EQ(out, disrupt);
}

TEST(MessageGateTest, AnAppendEntriesIsPassedOnEntryByEntry) {
  // libraft allocates the declared payload at the header but touches only
  // what arrives; the gate holds one entry at a time.
  std::string first = CommandEntry("a");
  std::string second = CommandEntry(std::string(3000, 'b'));
  std::string message = AppendEntries({{1, first}, {1, second}});
  const std::size_t header = 16 + 48 + 32;
  MessageGate gate(kPeer, TestLimits());
  std::string out;
  ASSERT_TRUE(
      gate.Feed(std::string_view(message).substr(0, header + first.size() + 10), MonoMs(0), &out)
          .ok());
  EXPECT_EQ(out, message.substr(0, header + first.size()));
  EXPECT_TRUE(gate.mid_message());
  EXPECT_EQ(gate.in_progress_bytes(), header + first.size() + 10);
  ASSERT_TRUE(
      gate.Feed(std::string_view(message).substr(header + first.size() + 10), MonoMs(0), &out)
          .ok());
  EXPECT_EQ(out, message);
  EXPECT_FALSE(gate.mid_message());
  EXPECT_EQ(gate.in_progress_bytes(), 0u);
}

// A restore's entry carries a whole state: it is checked without a copy and
// handed on by a swap (decision 0046), with whatever waited in front of it,
// so the stream libraft reads is unchanged in any split.
TEST(MessageGateTest, ALargeRestoreEntryPassesUnchangedInAnySplit) {
  state::Store store;
  for (int i = 0; i < 3000; ++i) {
    state::Command set;
    set.now_ms = ClusterMs(1);
    set.body = state::KvSet{"key/" + std::to_string(i), std::string(40, 'v'), 0};
    store.Apply(set, LogIndex(static_cast<std::uint64_t>(i) + 1));
  }
  state::Command restore;
  restore.now_ms = ClusterMs(2);
  state::RestoreState body;
  store.EncodeSnapshot(&body.snapshot);
  restore.body = std::move(body);
  std::string entry;
  EncodeEntry(restore, &entry);
  ASSERT_GT(entry.size(), 64u * 1024);
  const std::string stream = Fixed(2) + AppendEntries({{1, entry}, {1, CommandEntry("z")}}) +
                             Fixed(4) + AppendEntries({{1, entry}});
  for (std::size_t chunk : {std::size_t{1000}, std::size_t{70'000}, stream.size()}) {
    GateLimits limits = TestLimits();
    limits.entry_bytes_max = 1 << 20;
    MessageGate gate(kPeer, limits);
    std::string out;
    ASSERT_TRUE(FeedAll(&gate, stream, chunk, &out).ok()) << chunk;
    EXPECT_EQ(out, stream) << chunk;
    EXPECT_EQ(gate.messages(), 4u);
  }
  // A damaged restore is refused like any command that does not decode.
  std::string damaged = entry;
  // The state's length (after the frame, version and tag) made larger than the entry.
  for (std::size_t i = 6; i < 10; ++i) damaged[i] = '\xff';
  std::string out;
  GateLimits limits = TestLimits();
  limits.entry_bytes_max = 1 << 20;
  MessageGate strict(kPeer, limits);
  EXPECT_FALSE(FeedAll(&strict, AppendEntries({{1, damaged}}), 4096, &out).ok());
}

// A stranger's InstallSnapshot of 64 bytes of garbage crashed followers:
// libraft wrote it to disk, emptied its log and asked for a restore that
// failed. Now its data is decoded as a tenure snapshot first, and libraft
// gets nothing of the message until the data is whole and valid.
TEST(MessageGateTest, InstallSnapshotDataMustBeAValidTenureSnapshot) {
  const std::string valid = SnapshotData(20);
  std::string flipped = valid;
  flipped[flipped.size() / 2] ^= 0x10;
  std::string truncated = valid.substr(0, valid.size() - 9);
  struct Case {
    std::string name;
    std::string data;
    std::string text;
  };
  std::vector<Case> cases = {
      {"64 bytes of garbage", std::string(64, '\x5a'), "bad magic"},
      {"a byte flipped", flipped, "checksum mismatch"},
      {"truncated", truncated, "not a valid tenure snapshot"},
  };
  for (const Case& c : cases) {
    for (std::size_t chunk : {std::size_t{1}, std::size_t{100}, std::size_t{1} << 20}) {
      MessageGate gate(kPeer, TestLimits());
      std::string out;
      Status s = FeedAll(&gate, Snapshot(c.data), chunk, &out);
      EXPECT_FALSE(s.ok()) << c.name;
      EXPECT_NE(s.message().find(c.text), std::string_view::npos) << c.name << ": " << s.message();
      EXPECT_TRUE(out.empty()) << c.name << ": libraft saw part of it";
    }
  }
  // The valid one passes whole, and only once its last byte is in.
  const std::string message = Snapshot(valid);
  MessageGate gate(kPeer, TestLimits());
  std::string out;
  ASSERT_TRUE(FeedAll(&gate, message.substr(0, message.size() - 1), 7, &out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(gate.in_progress_bytes(), message.size() - 1);
  ASSERT_TRUE(gate.Feed(message.substr(message.size() - 1), MonoMs(0), &out).ok());
  EXPECT_EQ(out, message);
  EXPECT_EQ(gate.in_progress_bytes(), 0u);
  EXPECT_EQ(gate.messages(), 1u);
}

TEST(MessageGateTest, InstallSnapshotIndexesMustBeConsistent) {
  const std::string data = SnapshotData(1);
  const std::string conf = LibraftConfiguration({{1, "a:1"}, {2, "b:2"}});
  std::vector<SnapshotIndexes> bad = {
      {5, 0, 4, 0},      // no last index
      {5, 100, 0, 90},   // no last term
      {5, 100, 6, 90},   // last term above the leader's
      {5, 100, 4, 0},    // no configuration index
      {5, 100, 4, 101},  // configuration after the snapshot
  };
  for (const SnapshotIndexes& at : bad) {
    MessageGate gate(kPeer, TestLimits());
    std::string out;
    Status s = FeedAll(&gate, InstallSnapshot(conf, data.size(), data, at), 64, &out);
    EXPECT_FALSE(s.ok()) << at.last_index << " " << at.last_term << " " << at.conf_index;
    EXPECT_TRUE(out.empty());
  }
  for (const SnapshotIndexes& at : {SnapshotIndexes{5, 100, 5, 100}, SnapshotIndexes{9, 1, 1, 1}}) {
    MessageGate gate(kPeer, TestLimits());
    std::string out;
    EXPECT_TRUE(FeedAll(&gate, InstallSnapshot(conf, data.size(), data, at), 64, &out).ok());
  }
}

// A peer that sends a byte now and then used to reset a per-byte stall
// timer forever, holding what libraft buffered for it. Each message has a
// deadline from its first byte: the time limit plus its declared size at
// the minimum rate.
TEST(MessageGateTest, AMessageMustBeWholeByItsDeadline) {
  GateLimits limits = TestLimits();
  limits.message_time_ms = 2'000;
  limits.message_bytes_per_s_min = 1024 * 1024;
  std::string message = AppendEntries({{1, "", 1 << 20}});  // declares a 1 MiB entry
  MessageGate gate(kPeer, limits, nullptr);
  std::string out;
  // The preamble and the header, then one byte a second: never a stall of
  // more than a second.
  ASSERT_TRUE(gate.Feed(message, MonoMs(10'000), &out).ok());
  const MonoMs deadline = MonoMs(10'000 + 2'000 + (16 + 64 + (1 << 20)) * 1000 / (1024 * 1024));
  EXPECT_EQ(gate.deadline_ms(), deadline);
  MonoMs now = MonoMs(10'000);
  Status s;
  while (s.ok() && now < MonoMs(20'000)) {
    now += 1'000;
    s = gate.Feed("x", now, &out);
  }
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(now, MonoMs(14'000));  // the first byte after the deadline
  EXPECT_NE(s.message().find("was not whole"), std::string_view::npos) << s.message();
  // Before any byte arrives late, the link's timer asks with no input.
  MessageGate idle(kPeer, limits);
  ASSERT_TRUE(idle.Feed(message.substr(0, 10), MonoMs(0), &out).ok());
  EXPECT_EQ(idle.deadline_ms(), MonoMs(2'000));  // only the preamble's 16 bytes are known
  EXPECT_TRUE(idle.Feed({}, MonoMs(2'000), &out).ok());
  EXPECT_FALSE(idle.Feed({}, MonoMs(2'001), &out).ok());
  // A message that is whole in time passes, and the next one starts afresh.
  MessageGate quick(kPeer, limits);
  out.clear();
  ASSERT_TRUE(quick.Feed(Fixed(2), MonoMs(0), &out).ok());
  ASSERT_TRUE(quick.Feed(Fixed(4).substr(0, 5), MonoMs(50'000), &out).ok());
  EXPECT_EQ(quick.deadline_ms(), MonoMs(52'000));
  ASSERT_TRUE(quick.Feed(Fixed(4).substr(5), MonoMs(51'000), &out).ok());
  EXPECT_EQ(out, Fixed(2) + Fixed(4));
}

// Votes used to be counted per connection: a stranger opened a new one for
// each. The window belongs to the peer id, across all its connections.
TEST(MessageGateTest, VotesAreLimitedPerMemberAcrossConnections) {
  GateLimits limits = TestLimits();  // a 1000 ms window, 4 votes, 2 disrupting
  auto ledger = std::make_shared<InboundLedger>(limits);
  std::string plain = RequestVote(kPeer, false);
  std::size_t passed = 0;
  std::uint64_t dropped = 0;
  for (int connection = 0; connection < 20; ++connection) {
    MessageGate gate(kPeer, limits, ledger);
    std::string out;
    ASSERT_TRUE(gate.Feed(plain + plain, MonoMs(10 + connection), &out).ok());
    passed += out.size() / plain.size();
    dropped += gate.votes_dropped();
  }
  EXPECT_EQ(passed, 4u);
  EXPECT_EQ(dropped, 36u);
  // Another member has its own window; the first gets a new one later.
  MessageGate other(3, limits, ledger);
  std::string out;
  ASSERT_TRUE(other.Feed(RequestVote(3, true), MonoMs(20), &out).ok());
  EXPECT_EQ(out, RequestVote(3, true));
  MessageGate later(kPeer, limits, ledger);
  out.clear();
  ASSERT_TRUE(later.Feed(plain, MonoMs(1010), &out).ok());
  EXPECT_EQ(out, plain);
}

// Every connection's message in progress counts against one budget, so no
// number of connections holds more than it; a message's bytes are given
// back when it is whole or its connection closes.
TEST(MessageGateTest, BytesInProgressAreBoundedOnAllConnectionsTogether) {
  GateLimits limits = TestLimits();
  limits.inbound_bytes_max = 80'000;  // two of the messages below fit, not three
  auto ledger = std::make_shared<InboundLedger>(limits);
  const std::string entry = CommandEntry(std::string(30'000, 'v'));
  const std::string message = AppendEntries({{1, entry}});
  const std::string partial = message.substr(0, message.size() - 1);
  auto first = std::make_unique<MessageGate>(kPeer, limits, ledger);
  MessageGate second(3, limits, ledger);
  MessageGate third(4, limits, ledger);
  std::string out;
  ASSERT_TRUE(first->Feed(partial, MonoMs(0), &out).ok());
  ASSERT_TRUE(second.Feed(partial, MonoMs(0), &out).ok());
  EXPECT_EQ(ledger->in_progress_bytes(), 2 * partial.size());
  Status s = third.Feed(partial, MonoMs(0), &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("80000 bytes of raft messages in progress"), std::string_view::npos)
      << s.message();
  EXPECT_LE(ledger->in_progress_bytes(), limits.inbound_bytes_max);
  // The first finishes its message, the second's connection closes: all given back.
  ASSERT_TRUE(first->Feed(message.substr(message.size() - 1), MonoMs(0), &out).ok());
  EXPECT_EQ(first->in_progress_bytes(), 0u);
  first.reset();
  MessageGate fourth(5, limits, ledger);
  ASSERT_TRUE(fourth.Feed(message, MonoMs(0), &out).ok());
  EXPECT_EQ(ledger->in_progress_bytes(), partial.size() + third.in_progress_bytes());
}

}  // namespace
}  // namespace tenure::raft::wire
