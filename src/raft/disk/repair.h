// `tenure recover -repair`: turns a damaged raft dir into one the server
// starts from, dropping as little as the damage forces and deleting
// nothing: every removed or rewritten file moves into
// <raft dir>/damaged-<unix seconds>/ (docs/recovery.md).
//
//   log damage at index F  cut the log after F-1: segments from F on move
//                          away; the segment holding F is replaced by a
//                          closed segment of its valid prefix
//   metadata missing       fresh metadata1: the highest term on disk, no vote
//   newest snapshot bad    it moves away; the older snapshot and the log
//                          must then cover everything, or the repair refuses
//
// On a cluster (the latest configuration has more than one voter) a repair
// that drops entries past the snapshot or rewrites the metadata needs
// force: a member that forgets a vote or acknowledged entries can break
// raft's safety. The safe path there is remove-peer, wipe, rejoin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "raft/disk/check.h"

namespace tenure::raft::disk {

struct RepairPlan {
  std::vector<std::string> move;  // files moved whole into damaged-<time>/
  struct Prefix {
    std::string from;         // a file in `move`
    std::string to;           // the closed segment written from its prefix
    std::uint64_t bytes = 0;  // the prefix
  };
  std::optional<Prefix> prefix;
  std::optional<Metadata> metadata;  // written as metadata1
  std::optional<TornTail> torn;      // cut as the server would
  // Entries the log loses (drop_first > drop_last: none). lost_first is the
  // first one not also kept by the snapshot.
  std::uint64_t drop_first = 1, drop_last = 0, lost_first = 1;
  std::uint64_t keep_last = 0;
  unsigned voters = 0;             // in the latest configuration
  std::vector<std::string> steps;  // what it does, in words
  std::string refused;             // why no repair can help (then nothing else counts)
  bool loses_entries() const { return lost_first <= drop_last; }
  bool risky_on_cluster() const { return loses_entries() || metadata.has_value(); }
  bool empty() const { return move.empty() && !metadata && !torn; }
};

Result<RepairPlan> PlanRepair(const std::string& raft_dir, const Report& report,
                              const CheckOptions& options = {});

// Does what the plan says. `unix_seconds` names the damaged-<time>/ folder.
// Returns the folder's name ("" when nothing was moved).
Result<std::string> ApplyRepair(const std::string& raft_dir, const RepairPlan& plan,
                                std::int64_t unix_seconds);

}  // namespace tenure::raft::disk
