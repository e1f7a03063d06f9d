// The raft handshake (decision 0012): two members with the same key, or two
// without one, complete it in any split; a stranger without the key, with
// another key, replaying a recorded handshake or sending garbage does not,
// and the listener never passes a byte of raft traffic on for it.
#include "raft/wire/handshake.h"

#include <gtest/gtest.h>

#include <string>

#include "common/base64.h"
#include "raft/wire/cluster_key.h"

namespace tenure::raft::wire {
namespace {

ClusterKey Key(char fill) {
  Result<ClusterKey> key = ClusterKey::FromBase64(Base64Encode(std::string(32, fill)));
  EXPECT_TRUE(key.ok()) << key.status().message();
  return *key;
}

Nonce MakeNonce(std::uint8_t seed) {
  Nonce n;
  for (std::size_t i = 0; i < n.size(); ++i) n[i] = static_cast<std::uint8_t>(seed + i);
  return n;
}

Hello MemberHello(bool keyed, std::uint64_t id = 2) {
  Hello hello;
  hello.purpose = Purpose::kRaft;
  hello.keyed = keyed;
  hello.id = id;
  hello.nonce = MakeNonce(100);
  hello.raft_address = "127.0.0.1:8302";
  hello.node_name = "node2";
  hello.http_address = "127.0.0.1:8502";
  return hello;
}

struct Outcome {
  Status dialer;
  Status listener;
  bool dialer_done = false;
  bool listener_done = false;
  Hello seen;                 // what the listener accepted
  std::string raft_bytes;     // what reached the listener's side after the handshake
  std::string join_leftover;  // what the dialer got after the verdict
};

// Runs both ends against each other, delivering bytes in chunks of `chunk`.
// The dialer sends "RAFT" right after its proof, as a libraft stream would.
Outcome Exchange(const ClusterKey* dialer_key, const ClusterKey* listener_key, Hello hello,
                 std::size_t chunk, ListenerHandshake::Admit admit = nullptr,
                 std::uint64_t expected_listener = 1) {
  if (!admit) admit = [](const Hello&) { return std::string(); };
  DialerHandshake dialer(dialer_key, hello, expected_listener);
  ListenerHandshake listener(listener_key, 1, MakeNonce(7), admit);
  Outcome o;
  std::string to_listener = dialer.Start();
  std::string to_dialer;
  bool dialer_failed = false, listener_failed = false;
  for (int rounds = 0; rounds < 10000 && (!to_listener.empty() || !to_dialer.empty()); ++rounds) {
    if (!to_listener.empty() && !listener_failed) {
      std::string piece = to_listener.substr(0, chunk);
      to_listener.erase(0, piece.size());
      if (listener.done()) {
        o.raft_bytes += piece;
      } else {
        Step step = listener.Feed(piece);
        to_dialer += step.send;
        if (!step.status.ok()) {
          o.listener = step.status;
          listener_failed = true;
        }
        if (listener.done()) o.raft_bytes += listener.TakeLeftover();
      }
    } else {
      to_listener.clear();
    }
    if (!to_dialer.empty() && !dialer_failed) {
      std::string piece = to_dialer.substr(0, chunk);
      to_dialer.erase(0, piece.size());
      bool was_done = dialer.done();
      if (was_done) {
        o.join_leftover += piece;
      } else {
        Step step = dialer.Feed(piece);
        to_listener += step.send;
        if (!step.status.ok()) {
          o.dialer = step.status;
          dialer_failed = true;
        }
        if (dialer.done()) {
          o.join_leftover += dialer.TakeLeftover();
          to_listener += "RAFT";
        }
      }
    } else {
      to_dialer.clear();
    }
  }
  o.dialer_done = dialer.done();
  o.listener_done = listener.done();
  if (listener.done()) o.seen = listener.hello();
  return o;
}

TEST(HandshakeTest, MembersWithTheSameKeyCompleteInAnySplit) {
  ClusterKey key = Key('k');
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{56}, std::size_t{4096}}) {
    Outcome o = Exchange(&key, &key, MemberHello(true), chunk);
    EXPECT_TRUE(o.dialer.ok()) << o.dialer.message();
    EXPECT_TRUE(o.listener.ok()) << o.listener.message();
    ASSERT_TRUE(o.dialer_done && o.listener_done) << chunk;
    EXPECT_EQ(o.raft_bytes, "RAFT");
    EXPECT_EQ(o.seen.id, 2u);
    EXPECT_EQ(o.seen.node_name, "node2");
    EXPECT_EQ(o.seen.http_address, "127.0.0.1:8502");
    EXPECT_EQ(o.seen.raft_address, "127.0.0.1:8302");
  }
}

// A member's etcd address rides after the others (decision 0055); a hello
// without one is byte for byte what servers wrote before it.
TEST(HandshakeTest, AnEtcdAddressIsToldWhenThereIsOne) {
  ClusterKey key = Key('k');
  Hello with = MemberHello(true);
  with.etcd_address = "127.0.0.1:2379";
  Outcome o = Exchange(&key, &key, with, 7);
  ASSERT_TRUE(o.dialer_done && o.listener_done) << o.listener.message();
  EXPECT_EQ(o.seen.etcd_address, "127.0.0.1:2379");
  EXPECT_EQ(o.seen.http_address, "127.0.0.1:8502");

  Outcome without = Exchange(&key, &key, MemberHello(true), 7);
  ASSERT_TRUE(without.listener_done);
  EXPECT_EQ(without.seen.etcd_address, "");
  ClusterKey none;
  EXPECT_EQ(
      DialerHandshake(&none, with, 1).Start().size(),
      DialerHandshake(&none, MemberHello(true), 1).Start().size() + 2 + with.etcd_address.size());
}

// A ZooKeeper address rides after the etcd address, "" when there is none
// (decision 0056).
TEST(HandshakeTest, AZooKeeperAddressIsToldAfterTheEtcdAddress) {
  ClusterKey key = Key('k');
  Hello with = MemberHello(true);
  with.zk_address = "tls://127.0.0.1:2281";
  Outcome o = Exchange(&key, &key, with, 7);
  ASSERT_TRUE(o.dialer_done && o.listener_done) << o.listener.message();
  EXPECT_EQ(o.seen.zk_address, "tls://127.0.0.1:2281");
  EXPECT_EQ(o.seen.etcd_address, "");
  with.etcd_address = "127.0.0.1:2379";
  Outcome both = Exchange(&key, &key, with, 7);
  ASSERT_TRUE(both.listener_done);
  EXPECT_EQ(both.seen.zk_address, "tls://127.0.0.1:2281");
  EXPECT_EQ(both.seen.etcd_address, "127.0.0.1:2379");
}

TEST(HandshakeTest, KeylessMembersComplete) {
  ClusterKey none;
  Outcome o = Exchange(&none, &none, MemberHello(false), 5);
  EXPECT_TRUE(o.dialer_done && o.listener_done);
  EXPECT_EQ(o.raft_bytes, "RAFT");
}

TEST(HandshakeTest, AStrangerWithoutTheKeyOrWithAnotherKeyIsRefused) {
  ClusterKey key = Key('k');
  ClusterKey other = Key('o');
  ClusterKey none;
  // (dialer's key, listener's key): keyless against keyed both ways, and
  // two different keys both ways.
  for (auto [dialer, listener] : {std::pair{&none, &key}, std::pair{&key, &none},
                                  std::pair{&other, &key}, std::pair{&key, &other}}) {
    Outcome o = Exchange(dialer, listener, MemberHello(!dialer->empty()), 7);
    EXPECT_FALSE(o.listener_done && o.dialer_done);
    EXPECT_TRUE(o.raft_bytes.empty()) << "raft bytes reached the listener";
    EXPECT_FALSE(o.listener.ok() && o.dialer.ok());
  }
}

TEST(HandshakeTest, TheAdmitRuleDecidesAfterTheProof) {
  ClusterKey key = Key('k');
  bool asked = false;
  Outcome o = Exchange(&key, &key, MemberHello(true, 9), 11, [&](const Hello& hello) {
    asked = true;
    return hello.id == 9 ? std::string("server 9 is not in the configuration") : std::string();
  });
  EXPECT_TRUE(asked);
  EXPECT_FALSE(o.listener_done);
  EXPECT_TRUE(o.raft_bytes.empty());
  EXPECT_NE(o.listener.message().find("server 9 is not in the configuration"),
            std::string_view::npos)
      << o.listener.message();
  // The dialer learns why (the reason travels in the verdict).
  EXPECT_FALSE(o.dialer.ok());
  EXPECT_NE(o.dialer.message().find("server 9 is not in the configuration"), std::string_view::npos)
      << o.dialer.message();
  // Without the key the admit rule is never consulted.
  ClusterKey other = Key('o');
  asked = false;
  Exchange(&other, &key, MemberHello(true, 9), 11, [&](const Hello&) {
    asked = true;
    return std::string();
  });
  EXPECT_FALSE(asked);
}

TEST(HandshakeTest, TheDialerChecksItReachedTheServerItMeant) {
  ClusterKey key = Key('k');
  Outcome o = Exchange(&key, &key, MemberHello(true), 64, nullptr, /*expected_listener=*/3);
  EXPECT_FALSE(o.dialer_done);
  EXPECT_TRUE(o.raft_bytes.empty());
}

// A recorded handshake replayed to a new listener fails: the listener's
// nonce differs, so the recorded proof does not match.
TEST(HandshakeTest, ARecordedProofDoesNotReplay) {
  ClusterKey key = Key('k');
  Hello hello = MemberHello(true);
  DialerHandshake dialer(&key, hello, 1);
  ListenerHandshake first(&key, 1, MakeNonce(7), [](const Hello&) { return std::string(); });
  std::string hello_bytes = dialer.Start();
  Step challenge = first.Feed(hello_bytes);
  ASSERT_TRUE(challenge.status.ok());
  Step proof = dialer.Feed(challenge.send);
  ASSERT_TRUE(proof.status.ok());
  ASSERT_TRUE(first.Feed(proof.send).status.ok());
  ASSERT_TRUE(first.done());
  // Replay hello + proof to a listener with a fresh nonce.
  ListenerHandshake second(&key, 1, MakeNonce(8), [](const Hello&) { return std::string(); });
  ASSERT_TRUE(second.Feed(hello_bytes).status.ok());
  Step verdict = second.Feed(proof.send + "RAFT");
  EXPECT_FALSE(verdict.status.ok());
  EXPECT_FALSE(second.done());
  EXPECT_TRUE(second.TakeLeftover().empty());
}

TEST(HandshakeTest, GarbageAndOversizedHellosAreRefusedWithoutBuffering) {
  ClusterKey key = Key('k');
  auto admit = [](const Hello&) { return std::string(); };
  {
    ListenerHandshake listener(&key, 1, MakeNonce(7), admit);
    Step step = listener.Feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(100, 'x'));
    EXPECT_FALSE(step.status.ok());
  }
  {
    // A valid fixed part declaring a body far over the limit.
    DialerHandshake dialer(&key, MemberHello(true), 1);
    std::string hello = dialer.Start();
    hello[12] = '\xff';
    hello[13] = '\xff';
    hello[14] = '\xff';
    hello[15] = '\x7f';
    ListenerHandshake listener(&key, 1, MakeNonce(7), admit);
    Step step = listener.Feed(hello.substr(0, 56));
    EXPECT_FALSE(step.status.ok());
  }
  {
    // An unknown purpose.
    DialerHandshake dialer(&key, MemberHello(true), 1);
    std::string hello = dialer.Start();
    hello[8] = 9;
    ListenerHandshake listener(&key, 1, MakeNonce(7), admit);
    EXPECT_FALSE(listener.Feed(hello).status.ok());
  }
}

TEST(HandshakeTest, JoinAnswersRoundTripAndRejectGarbage) {
  JoinAnswer answer;
  answer.status = JoinStatus::kNotLeader;
  answer.leader_id = 3;
  answer.leader_address = "127.0.0.1:8303";
  answer.reason = "ask the leader";
  std::string bytes = EncodeJoinAnswer(answer);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto partial = TryDecodeJoinAnswer(std::string_view(bytes).substr(0, n));
    ASSERT_TRUE(partial.ok());
    EXPECT_FALSE(partial->has_value()) << n;
  }
  auto whole = TryDecodeJoinAnswer(bytes);
  ASSERT_TRUE(whole.ok() && whole->has_value());
  EXPECT_EQ((*whole)->status, JoinStatus::kNotLeader);
  EXPECT_EQ((*whole)->leader_id, 3u);
  EXPECT_EQ((*whole)->leader_address, "127.0.0.1:8303");
  EXPECT_EQ((*whole)->reason, "ask the leader");
  std::string bad = bytes;
  bad[0] = 42;  // no such status
  EXPECT_FALSE(TryDecodeJoinAnswer(bad).ok());
}

TEST(ClusterKeyTest, KeysAreCheckedAndSignaturesDiffer) {
  EXPECT_FALSE(ClusterKey::FromBase64("").ok());
  EXPECT_FALSE(ClusterKey::FromBase64("not base64!").ok());
  EXPECT_FALSE(ClusterKey::FromBase64("c2hvcnQ=").ok());  // "short": under 16 bytes
  Result<ClusterKey> generated = ClusterKey::FromBase64(GenerateClusterKeyText());
  ASSERT_TRUE(generated.ok());
  EXPECT_NE(GenerateClusterKeyText(), GenerateClusterKeyText());
  ClusterKey a = Key('a');
  ClusterKey b = Key('b');
  Mac mac = a.Sign("message");
  EXPECT_TRUE(a.Verify("message", mac));
  EXPECT_FALSE(a.Verify("messagE", mac));
  EXPECT_FALSE(b.Verify("message", mac));
}

}  // namespace
}  // namespace tenure::raft::wire
