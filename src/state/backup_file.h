// A snapshot file: what GET /v1/snapshot answers, `tenure snapshot save`
// writes and PUT /v1/snapshot restores (docs/snapshots.md, decision 0024).
// A fixed header saying what the file holds, a SHA-256 over the header and
// the state, then the Store's own snapshot bytes (Store::EncodeSnapshot,
// unchanged). Byte layout: docs/formats.md, "Snapshot files". Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"
#include "state/store.h"

namespace tenure::state {

// The version this tenure writes, and the newest it reads.
inline constexpr std::uint32_t kBackupFormatVersion = 1;

// What a file's header says (and OpenBackup checked against the state).
struct BackupInfo {
  std::uint32_t version = 0;
  std::uint64_t index = 0;       // the Store's applied index when saved
  std::uint64_t term = 0;        // the raft term of the server that saved it
  std::int64_t saved_at_ms = 0;  // that server's wall clock, Unix ms
  std::uint64_t state_bytes = 0;
  std::uint64_t keys = 0;
  std::uint64_t tombstones = 0;
  std::uint64_t sessions = 0;
  std::uint64_t locks = 0;        // keys held by a session
  std::uint64_t lock_delays = 0;  // recorded windows, expired ones included
  std::uint64_t acl_tokens = 0;
  std::uint64_t acl_policies = 0;
  std::string sha256;  // lower-case hex, over the header and the state
};

// The file for `store`, saved by a server in raft term `term` at `now`.
std::string EncodeBackup(const Store& store, std::uint64_t term, UnixMs now);

// A file checked whole: magic, version (a newer one is refused by name),
// sizes (every truncation is refused), the SHA-256, then the state decoded
// and validated, and the header's index and counts compared with it.
// kInvalidArgument with a sentence saying what is wrong otherwise.
struct OpenedBackup {
  BackupInfo info;
  std::string_view state;  // into the file's bytes: Store::EncodeSnapshot's
  Store store;             // the decoded state
};
Result<OpenedBackup> OpenBackup(std::string_view file);

}  // namespace tenure::state
