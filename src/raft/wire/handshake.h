// The raft transport's handshake (decision 0012): the first bytes of every
// connection to a raft port, exchanged before libraft sees any.
//
//   dialer -> listener    hello     := magic purpose:u8 flags:u8 0:u16 body_len:u32
//                                      id:u64 nonce[32] body
//                                      body := raft_address node_name http_address
//                                              [etcd_address [zk_address]]
//   listener -> dialer    challenge := magic status:u8 flags:u8 0:u16 body_len:u32
//                                      id:u64 nonce[32] proof[32] body
//                                      body := reason
//   dialer -> listener    proof     := proof[32]
//   listener -> dialer    verdict   := status:u8 reason
//   then for purpose raft: libraft's messages, dialer -> listener only;
//        for purpose join: listener -> dialer  join_answer (below), then close.
//
//   magic := "TNRAFT1\n";  flags bit 0: the sender holds a cluster key
//   status := 0 accepted | 1 refused;  strings := length:u16le byte{length<=255}
//   integers little-endian.
//
// With a cluster key both ends prove they hold it without sending it:
//   listener proof = HMAC-SHA256(key, "tenure raft listener\n" T)
//   dialer proof   = HMAC-SHA256(key, "tenure raft dialer\n" T)
// where T is the hello followed by the challenge with its proof zeroed. Each
// side's nonce makes T fresh, so a recorded handshake cannot be replayed, and
// the two labels keep one side's proof from serving as the other's. Without
// a key the proofs are zero and nothing is checked; a keyed and a keyless
// server refuse each other.
//
// The two ends are pure state machines fed with received bytes: no sockets,
// no clocks, nonces given by the caller. Any thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "raft/wire/cluster_key.h"

namespace tenure::raft::wire {

inline constexpr std::string_view kMagic = "TNRAFT1\n";
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kHelloFixedBytes = 8 + 1 + 1 + 2 + 4 + 8 + kNonceBytes;  // 56
inline constexpr std::size_t kChallengeFixedBytes = kHelloFixedBytes + kMacBytes;     // 88
inline constexpr std::size_t kHandshakeStringBytesMax = 255;
inline constexpr std::size_t kHandshakeBodyBytesMax = 4 * (2 + kHandshakeStringBytesMax);

using Nonce = std::array<std::uint8_t, kNonceBytes>;

enum class Purpose : std::uint8_t {
  kRaft = 1,  // a libraft connection follows
  kJoin = 2,  // the dialer asks to be added to the cluster (join_answer follows)
};

struct Hello {
  Purpose purpose = Purpose::kRaft;
  bool keyed = false;
  std::uint64_t id = 0;  // the dialer's raft server id
  Nonce nonce{};
  std::string raft_address;  // the dialer's -raft-addr
  std::string node_name;     // its -node
  std::string http_address;  // where it serves HTTP (for member records)
  std::string etcd_address;  // where it serves etcd's API; "" none (decision 0055)
  std::string zk_address;    // where it serves ZooKeeper's; "" none (decision 0056)
};

// What the listener answers a join with.
enum class JoinStatus : std::uint8_t {
  kJoined = 0,     // the dialer is a voter of the cluster
  kNotLeader = 1,  // ask leader_address (empty when no leader is known)
  kRefused = 2,    // will not succeed as asked (reason)
  kFailed = 3,     // did not succeed this time (reason): try again
};

struct JoinAnswer {
  JoinStatus status = JoinStatus::kFailed;
  std::uint64_t leader_id = 0;
  std::string leader_address;
  std::string reason;
};

std::string EncodeJoinAnswer(const JoinAnswer& answer);
// Decodes one join_answer at the start of `buffer`: nullopt while more bytes
// are needed, kCorruption if it cannot be one.
Result<std::optional<JoinAnswer>> TryDecodeJoinAnswer(std::string_view buffer);

// One step of a handshake: bytes to send now, and whether it goes on.
// A non-OK status ends the handshake: send `send` (a refusal, if any), then
// close. The status message says why, for the log.
struct Step {
  std::string send;
  Status status;
};

// The side that opens the connection.
class DialerHandshake {
 public:
  // `key` may be empty (keyless cluster); it must outlive the handshake.
  // `expected_listener_id`: the id the dialer means to reach (0: any).
  DialerHandshake(const ClusterKey* key, Hello hello, std::uint64_t expected_listener_id);

  // The hello: the first bytes to send.
  std::string Start();
  Step Feed(std::string_view data);
  bool done() const { return phase_ == Phase::kDone; }
  std::uint64_t listener_id() const { return listener_id_; }
  // Bytes received after the verdict (a join answer, for purpose join).
  std::string TakeLeftover();

 private:
  enum class Phase { kChallenge, kVerdict, kDone, kFailed };
  Step Fail(Status status);

  const ClusterKey* key_;
  Hello hello_;
  std::string hello_bytes_;
  std::uint64_t expected_listener_id_;
  std::uint64_t listener_id_ = 0;
  Phase phase_ = Phase::kChallenge;
  std::string buffer_;
};

// The side that accepts the connection.
class ListenerHandshake {
 public:
  // Decides, once the dialer proved it holds the key (if any), whether this
  // hello may go on: "" to accept, otherwise the reason it is refused.
  using Admit = std::function<std::string(const Hello&)>;

  ListenerHandshake(const ClusterKey* key, std::uint64_t self_id, const Nonce& nonce, Admit admit);

  Step Feed(std::string_view data);
  bool done() const { return phase_ == Phase::kDone; }
  // The challenge went out and the dialer's proof has not come: a dialer
  // that closes now gave up on this server's proof (another cluster key).
  bool awaiting_proof() const { return phase_ == Phase::kProof; }
  const Hello& hello() const { return hello_; }
  // Bytes received after the proof (the start of the raft stream).
  std::string TakeLeftover();

 private:
  enum class Phase { kHello, kProof, kDone, kFailed };
  Step Refuse(std::string reason, bool in_challenge);

  const ClusterKey* key_;
  std::uint64_t self_id_;
  Nonce nonce_;
  Admit admit_;
  Hello hello_;
  std::string transcript_;  // hello + challenge with its proof zeroed
  Phase phase_ = Phase::kHello;
  std::string buffer_;
};

}  // namespace tenure::raft::wire
