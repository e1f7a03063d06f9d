// Fuzz target: a raft log entry as another member (or a damaged disk) hands
// it over. Decoding either refuses it or yields a command that encodes back
// to a frame decoding to the same command; a Store with a little state then
// applies it, as every replica would, without breaking an invariant.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "raft/entry_codec.h"
#include "state/store.h"

namespace {

// A store holding a session, a lock and a key, so that commands about them
// reach more than the "does not exist" paths.
const tenure::state::Store& Seeded() {
  static const tenure::state::Store store = [] {
    using namespace tenure::state;
    Store s;
    Session session;
    session.id = SessionId("11111111-2222-3333-4444-555555555555");
    session.node = "n1";
    session.ttl = "15s";
    session.ttl_ns = 15'000'000'000;
    s.Apply({tenure::ClusterMs(1000), SessionCreate{session}}, tenure::LogIndex(1));
    s.Apply({tenure::ClusterMs(1000), KvAcquire{"lock", "v", 0, session.id}}, tenure::LogIndex(2));
    s.Apply({tenure::ClusterMs(1000), KvSet{"a/b", "x", 7}}, tenure::LogIndex(3));
    return s;
  }();
  return store;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view entry(reinterpret_cast<const char*>(data), size);
  auto command = tenure::raft::DecodeEntry(entry);
  if (!command.ok()) return 0;
  std::string again;
  tenure::raft::EncodeEntry(*command, &again);
  auto decoded = tenure::raft::DecodeEntry(again);
  FUZZ_CHECK(decoded.ok());
  FUZZ_CHECK(*decoded == *command);

  tenure::state::Store store = Seeded();
  (void)store.Apply(*command, store.applied_index().Next());
  FUZZ_CHECK(store.Validate().ok());
  return 0;
}
