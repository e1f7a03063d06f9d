// Fuzz target: a raft log entry as another member (or a damaged disk) hands
// it over. Decoding either refuses it or yields a command that encodes back
// to a frame decoding to the same command; a Store with a little state then
// applies it, as every replica would, without breaking an invariant.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_check.h"
#include "raft/entry_codec.h"
#include "state/command.h"
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
  using namespace tenure;
  // The restore's view decoder (decision 0046) accepts exactly what
  // DecodeCommand accepts, and sees the same command less its snapshot.
  if (auto payload = raft::UnframeEntry(entry); payload.ok() && state::LooksLikeRestore(*payload)) {
    std::string_view snapshot;
    auto viewed = state::DecodeRestoreCommand(*payload, &snapshot);
    auto full = state::DecodeCommand(*payload);
    FUZZ_CHECK(viewed.ok() == full.ok());
    if (full.ok()) {
      FUZZ_CHECK(snapshot == std::get<state::RestoreState>(full->body).snapshot);
      FUZZ_CHECK(viewed->now_ms == full->now_ms && viewed->wall_ms == full->wall_ms);
    }
  }
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
  // A restore applied from a state decoded ahead ends the same.
  if (const auto* restore = std::get_if<state::RestoreState>(&command->body)) {
    state::Store ahead = Seeded();
    Result<state::Store> ahead_state = state::Store::DecodeSnapshot(restore->snapshot);
    (void)ahead.Apply(*command, ahead.applied_index().Next(), &ahead_state);
    FUZZ_CHECK(ahead.Validate().ok());
    FUZZ_CHECK(ahead.Digest() == store.Digest());
  }
  return 0;
}
