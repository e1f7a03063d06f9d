// Fuzz target: bytes a stranger sends to the raft port, chosen by the first
// byte: to a listener's handshake (keyless or keyed), to a dialer's (what a
// listener answers), as a join answer, as a libraft configuration, or past
// the handshake to the MessageGate, split into reads as the second byte says.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "raft/wire/cluster_key.h"
#include "raft/wire/handshake.h"
#include "raft/wire/message_gate.h"

namespace {

namespace wire = tenure::raft::wire;

const wire::ClusterKey& Key() {
  static const wire::ClusterKey key =
      *wire::ClusterKey::FromBase64("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=");
  return key;
}

template <typename Handshake>
void FeedHandshake(Handshake& handshake, std::string_view input, std::size_t read_size) {
  for (std::size_t offset = 0; offset < input.size(); offset += read_size) {
    wire::Step step = handshake.Feed(input.substr(offset, read_size));
    if (!step.status.ok()) return;
    if (handshake.done()) {
      (void)handshake.TakeLeftover();
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t read_size = std::size_t{data[1]} + 1;
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  wire::Hello hello;
  hello.id = 2;
  hello.raft_address = "127.0.0.1:8301";
  switch (data[0] % 6) {
    case 0:
    case 1: {
      const wire::ClusterKey* key = data[0] % 6 == 1 ? &Key() : nullptr;
      wire::ListenerHandshake listener(key, 1, wire::Nonce{}, [](const wire::Hello& h) {
        return h.id == 2 ? std::string() : std::string("unknown id");
      });
      FeedHandshake(listener, input, read_size);
      break;
    }
    case 2: {
      wire::DialerHandshake dialer(data[1] & 1 ? &Key() : nullptr, hello, 1);
      (void)dialer.Start();
      FeedHandshake(dialer, input, read_size);
      break;
    }
    case 3:
      (void)wire::TryDecodeJoinAnswer(input);
      break;
    case 4:
      (void)wire::CheckConfiguration(input);
      break;
    case 5: {
      wire::MessageGate gate(2, wire::DefaultGateLimits(500));
      std::string forward;
      std::int64_t now_ms = 0;
      for (std::size_t offset = 0; offset < input.size(); offset += read_size) {
        const std::size_t before = forward.size();
        if (!gate.Feed(input.substr(offset, read_size), tenure::MonoMs(now_ms += 7), &forward).ok())
          break;
        FUZZ_CHECK(forward.size() >= before);
      }
      FUZZ_CHECK(forward.size() <= input.size());
      break;
    }
  }
  return 0;
}
