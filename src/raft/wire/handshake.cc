#include "raft/wire/handshake.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "common/coding.h"

namespace tenure::raft::wire {
namespace {

constexpr std::uint8_t kKeyedFlag = 1;
constexpr std::uint8_t kAccepted = 0;
constexpr std::uint8_t kRefused = 1;
constexpr std::string_view kListenerLabel = "tenure raft listener\n";
constexpr std::string_view kDialerLabel = "tenure raft dialer\n";

void PutU16(std::string* out, std::uint16_t v) {
  out->push_back(static_cast<char>(v & 0xff));
  out->push_back(static_cast<char>(v >> 8));
}

void PutString(std::string* out, std::string_view s) {
  s = s.substr(0, kHandshakeStringBytesMax);
  PutU16(out, static_cast<std::uint16_t>(s.size()));
  out->append(s);
}

template <std::size_t N>
void PutArray(std::string* out, const std::array<std::uint8_t, N>& a) {
  out->append(reinterpret_cast<const char*>(a.data()), N);
}

// Little-endian reader over a complete message; `ok` turns false on any
// short or out-of-range read.
struct Reader {
  std::string_view in;
  bool ok = true;

  std::uint64_t Fixed(int bytes) {
    if (!ok || in.size() < static_cast<std::size_t>(bytes)) {
      ok = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(in[static_cast<std::size_t>(i)]))
           << (8 * i);
    }
    in.remove_prefix(static_cast<std::size_t>(bytes));
    return v;
  }
  std::string String() {
    std::size_t n = Fixed(2);
    if (!ok || n > kHandshakeStringBytesMax || in.size() < n) {
      ok = false;
      return {};
    }
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
  template <std::size_t N>
  void Array(std::array<std::uint8_t, N>* a) {
    if (!ok || in.size() < N) {
      ok = false;
      return;
    }
    std::memcpy(a->data(), in.data(), N);
    in.remove_prefix(N);
  }
};

std::string EncodeHello(const Hello& hello) {
  std::string body;
  PutString(&body, hello.raft_address);
  PutString(&body, hello.node_name);
  PutString(&body, hello.http_address);
  // Only when there is one: a hello without them is byte for byte as before
  // (the etcd address, "" if none, goes before a ZooKeeper address).
  if (!hello.etcd_address.empty() || !hello.zk_address.empty()) {
    PutString(&body, hello.etcd_address);
  }
  if (!hello.zk_address.empty()) PutString(&body, hello.zk_address);
  std::string out(kMagic);
  out.push_back(static_cast<char>(hello.purpose));
  out.push_back(static_cast<char>(hello.keyed ? kKeyedFlag : 0));
  PutU16(&out, 0);
  ByteWriter writer(&out);
  writer.PutFixed32(static_cast<std::uint32_t>(body.size()));
  writer.PutFixed64(hello.id);
  PutArray(&out, hello.nonce);
  out += body;
  return out;
}

// The challenge, with `proof` in its place (zeros for the transcript).
std::string EncodeChallenge(std::uint8_t status, bool keyed, std::uint64_t id, const Nonce& nonce,
                            const Mac& proof, std::string_view reason) {
  std::string body;
  PutString(&body, reason);
  std::string out(kMagic);
  out.push_back(static_cast<char>(status));
  out.push_back(static_cast<char>(keyed ? kKeyedFlag : 0));
  PutU16(&out, 0);
  ByteWriter writer(&out);
  writer.PutFixed32(static_cast<std::uint32_t>(body.size()));
  writer.PutFixed64(id);
  PutArray(&out, nonce);
  PutArray(&out, proof);
  out += body;
  return out;
}

std::string EncodeVerdict(std::uint8_t status, std::string_view reason) {
  std::string out(1, static_cast<char>(status));
  PutString(&out, reason);
  return out;
}

// The size of the message at the start of `buffer` whose fixed part is
// `fixed` bytes and whose body length sits at offset 12: nullopt while the
// fixed part is incomplete, kCorruption for a bad magic or body length.
Result<std::optional<std::size_t>> FramedSize(std::string_view buffer, std::size_t fixed,
                                              std::string_view what) {
  std::size_t magic_seen = std::min(buffer.size(), kMagic.size());
  if (buffer.substr(0, magic_seen) != kMagic.substr(0, magic_seen)) {
    // The commonest stranger: something that speaks HTTP or another protocol.
    std::string start(buffer.substr(0, std::min<std::size_t>(buffer.size(), 16)));
    for (char& c : start) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '.';
    }
    return Status::Corruption(std::string(what) + ": not a tenure raft handshake (starts \"" +
                              start + "\")");
  }
  if (buffer.size() < fixed) return std::optional<std::size_t>();
  Reader reader{buffer.substr(12)};
  std::uint64_t body = reader.Fixed(4);
  if (body > kHandshakeBodyBytesMax) {
    return Status::Corruption(std::string(what) + ": body of " + std::to_string(body) +
                              " bytes is over the limit of " +
                              std::to_string(kHandshakeBodyBytesMax));
  }
  return std::optional<std::size_t>(fixed + body);
}

std::string Transcript(std::string_view label, std::string_view transcript) {
  std::string message(label);
  message += transcript;
  return message;
}

}  // namespace

// --- join answers ------------------------------------------------------------

std::string EncodeJoinAnswer(const JoinAnswer& answer) {
  std::string out(1, static_cast<char>(answer.status));
  ByteWriter writer(&out);
  writer.PutFixed64(answer.leader_id);
  PutString(&out, answer.leader_address);
  PutString(&out, answer.reason);
  return out;
}

Result<std::optional<JoinAnswer>> TryDecodeJoinAnswer(std::string_view buffer) {
  Reader reader{buffer};
  JoinAnswer answer;
  std::uint64_t status = reader.Fixed(1);
  answer.leader_id = reader.Fixed(8);
  answer.leader_address = reader.String();
  answer.reason = reader.String();
  if (!reader.ok) {
    // Short so far, unless a length is already out of range.
    if (buffer.size() >= 1 + 8 + 2 * (2 + kHandshakeStringBytesMax)) {
      return Status::Corruption("join answer: malformed");
    }
    return std::optional<JoinAnswer>();
  }
  if (status > static_cast<std::uint64_t>(JoinStatus::kFailed)) {
    return Status::Corruption("join answer: unknown status " + std::to_string(status));
  }
  answer.status = static_cast<JoinStatus>(status);
  return std::optional<JoinAnswer>(std::move(answer));
}

// --- dialer -----------------------------------------------------------------

DialerHandshake::DialerHandshake(const ClusterKey* key, Hello hello,
                                 std::uint64_t expected_listener_id)
    : key_(key), hello_(std::move(hello)), expected_listener_id_(expected_listener_id) {
  hello_.keyed = key_ != nullptr && !key_->empty();
  hello_bytes_ = EncodeHello(hello_);
}

std::string DialerHandshake::Start() { return hello_bytes_; }

Step DialerHandshake::Fail(Status status) {
  phase_ = Phase::kFailed;
  return {"", std::move(status)};
}

Step DialerHandshake::Feed(std::string_view data) {
  if (phase_ == Phase::kDone || phase_ == Phase::kFailed) {
    buffer_.append(data);
    return {};
  }
  buffer_.append(data);
  if (phase_ == Phase::kChallenge) {
    Result<std::optional<std::size_t>> size =
        FramedSize(buffer_, kChallengeFixedBytes, "the listener's answer");
    if (!size.ok()) return Fail(size.status());
    if (!size->has_value() || buffer_.size() < **size) return {};
    std::string challenge = buffer_.substr(0, **size);
    buffer_.erase(0, **size);

    Reader reader{std::string_view(challenge).substr(kMagic.size())};
    std::uint64_t status = reader.Fixed(1);
    bool listener_keyed = (reader.Fixed(1) & kKeyedFlag) != 0;
    reader.Fixed(2);
    reader.Fixed(4);
    listener_id_ = reader.Fixed(8);
    Nonce nonce{};
    reader.Array(&nonce);
    Mac proof{};
    reader.Array(&proof);
    std::string reason = reader.String();
    if (!reader.ok) return Fail(Status::Corruption("the listener's answer is malformed"));
    if (status != kAccepted) {
      return Fail(Status::InvalidArgument(
          "refused: " + (reason.empty() ? std::string("no reason given") : reason)));
    }
    if (listener_keyed != hello_.keyed) {
      return Fail(Status::InvalidArgument(
          hello_.keyed ? "the peer has no cluster key, this server has one (-raft-key-file)"
                       : "the peer requires a cluster key (-raft-key-file), this server has none"));
    }
    if (hello_.keyed) {
      Mac zero{};
      std::string transcript =
          hello_bytes_ + EncodeChallenge(kAccepted, true, listener_id_, nonce, zero, reason);
      if (!key_->Verify(Transcript(kListenerLabel, transcript), proof)) {
        return Fail(Status::InvalidArgument(
            "the peer failed the cluster key check (a different -raft-key-file?)"));
      }
      Mac mine = key_->Sign(Transcript(kDialerLabel, transcript));
      phase_ = Phase::kVerdict;
      if (expected_listener_id_ != 0 && listener_id_ != expected_listener_id_) {
        return Fail(Status::InvalidArgument(
            "the peer is server " + std::to_string(listener_id_) + ", not server " +
            std::to_string(expected_listener_id_) + " (check the raft addresses)"));
      }
      Step step{std::string(reinterpret_cast<const char*>(mine.data()), mine.size()), Status()};
      Step rest = Feed("");  // a verdict may already be here
      step.send += rest.send;
      step.status = rest.status;
      return step;
    }
    if (expected_listener_id_ != 0 && listener_id_ != expected_listener_id_) {
      return Fail(Status::InvalidArgument("the peer is server " + std::to_string(listener_id_) +
                                          ", not server " + std::to_string(expected_listener_id_) +
                                          " (check the raft addresses)"));
    }
    phase_ = Phase::kVerdict;
    Step step{std::string(kMacBytes, '\0'), Status()};
    Step rest = Feed("");
    step.send += rest.send;
    step.status = rest.status;
    return step;
  }
  // kVerdict
  Reader reader{buffer_};
  std::uint64_t status = reader.Fixed(1);
  std::string reason = reader.String();
  if (!reader.ok) {
    if (buffer_.size() >= 1 + 2 + kHandshakeStringBytesMax) {
      return Fail(Status::Corruption("the listener's verdict is malformed"));
    }
    return {};
  }
  buffer_.erase(0, buffer_.size() - reader.in.size());
  if (status != kAccepted) {
    return Fail(Status::InvalidArgument(
        "refused: " + (reason.empty() ? std::string("no reason given") : reason)));
  }
  phase_ = Phase::kDone;
  return {};
}

// Only a finished handshake has leftovers: a failed one's bytes go nowhere.
std::string DialerHandshake::TakeLeftover() {
  if (phase_ != Phase::kDone) return std::string();
  return std::exchange(buffer_, std::string());
}

// --- listener ---------------------------------------------------------------

ListenerHandshake::ListenerHandshake(const ClusterKey* key, std::uint64_t self_id,
                                     const Nonce& nonce, Admit admit)
    : key_(key), self_id_(self_id), nonce_(nonce), admit_(std::move(admit)) {}

Step ListenerHandshake::Refuse(std::string reason, bool in_challenge) {
  phase_ = Phase::kFailed;
  Mac zero{};
  std::string send = in_challenge ? EncodeChallenge(kRefused, key_ != nullptr && !key_->empty(),
                                                    self_id_, nonce_, zero, reason)
                                  : EncodeVerdict(kRefused, reason);
  return {std::move(send), Status::InvalidArgument(std::move(reason))};
}

Step ListenerHandshake::Feed(std::string_view data) {
  buffer_.append(data);
  if (phase_ == Phase::kDone || phase_ == Phase::kFailed) return {};
  const bool keyed = key_ != nullptr && !key_->empty();
  if (phase_ == Phase::kHello) {
    Result<std::optional<std::size_t>> size = FramedSize(buffer_, kHelloFixedBytes, "hello");
    if (!size.ok()) {
      phase_ = Phase::kFailed;
      return {"", size.status()};  // not one of ours: no answer at all
    }
    if (!size->has_value() || buffer_.size() < **size) return {};
    std::string hello_bytes = buffer_.substr(0, **size);
    buffer_.erase(0, **size);

    Reader reader{std::string_view(hello_bytes).substr(kMagic.size())};
    std::uint64_t purpose = reader.Fixed(1);
    hello_.keyed = (reader.Fixed(1) & kKeyedFlag) != 0;
    reader.Fixed(2);
    reader.Fixed(4);
    hello_.id = reader.Fixed(8);
    reader.Array(&hello_.nonce);
    hello_.raft_address = reader.String();
    hello_.node_name = reader.String();
    hello_.http_address = reader.String();
    if (reader.ok && !reader.in.empty()) hello_.etcd_address = reader.String();
    if (reader.ok && !reader.in.empty()) hello_.zk_address = reader.String();
    if (!reader.ok || !reader.in.empty()) {
      phase_ = Phase::kFailed;
      return {"", Status::Corruption("hello: malformed")};
    }
    if (purpose != static_cast<std::uint64_t>(Purpose::kRaft) &&
        purpose != static_cast<std::uint64_t>(Purpose::kJoin)) {
      return Refuse("unknown purpose " + std::to_string(purpose), true);
    }
    hello_.purpose = static_cast<Purpose>(purpose);
    if (hello_.id == 0) return Refuse("server id 0 is not a valid id", true);
    if (hello_.keyed != keyed) {
      return Refuse(keyed ? "this cluster requires a cluster key (-raft-key-file)"
                          : "this server has no cluster key (-raft-key-file); the dialer has one",
                    true);
    }
    Mac zero{};
    transcript_ = hello_bytes + EncodeChallenge(kAccepted, keyed, self_id_, nonce_, zero, "");
    Mac proof = keyed ? key_->Sign(Transcript(kListenerLabel, transcript_)) : zero;
    phase_ = Phase::kProof;
    Step step{EncodeChallenge(kAccepted, keyed, self_id_, nonce_, proof, ""), Status()};
    Step rest = Feed("");
    step.send += rest.send;
    step.status = rest.status;
    return step;
  }
  // kProof
  if (buffer_.size() < kMacBytes) return {};
  Mac proof{};
  std::memcpy(proof.data(), buffer_.data(), kMacBytes);
  buffer_.erase(0, kMacBytes);
  if (keyed && !key_->Verify(Transcript(kDialerLabel, transcript_), proof)) {
    return Refuse("bad cluster key", false);
  }
  if (hello_.id == self_id_) return Refuse("that is this server's own id", false);
  if (std::string why = admit_ ? admit_(hello_) : std::string(); !why.empty()) {
    return Refuse(std::move(why), false);
  }
  phase_ = Phase::kDone;
  return {EncodeVerdict(kAccepted, ""), Status()};
}

std::string ListenerHandshake::TakeLeftover() {
  if (phase_ != Phase::kDone) return std::string();
  return std::exchange(buffer_, std::string());
}

}  // namespace tenure::raft::wire
