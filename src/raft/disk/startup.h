// The data-dir check as the server runs it, before libraft opens the
// directory (Node::Impl::Start): a clean directory passes, a torn tail is
// cut with one log line that says what was dropped and why that is safe,
// and anything else refuses to start with RefusalText (check.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace tenure::raft::disk {

// kCorruption with the refusal text for damage, kIoError when the directory
// cannot be read or the cut cannot be written.
Status PrepareDataDir(const std::string& raft_dir, std::uint64_t node_id);

// What `tenure recover -data-dir` takes for a raft dir: its parent when it
// is named "raft" (tenure server keeps raft files in DATA_DIR/raft).
std::string RecoverDataDirArg(const std::string& raft_dir);

}  // namespace tenure::raft::disk
