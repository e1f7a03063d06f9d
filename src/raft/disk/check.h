// The data-dir check: reads libraft 0.15's raft directory (layout.h) before
// libraft opens it, and says whether starting is safe (docs/recovery.md).
//
// Everything libraft would load is verified: metadata, the newest snapshot
// (its .meta CRC, its data: the LZ4 frame's checksum and our snapshot
// checksum), and the log it would load (every batch's CRCs, entry counts of
// closed segments, contiguity of segments and snapshot). The only damage
// it accepts is a torn tail: what an incomplete last write leaves at the end
// of the last open segment (the rule is at TornReason in check.cc). A last
// sector damaged after its write completed leaves the same bytes, so the
// entries cut may have been acknowledged, and the server says so. Anything
// else is damage: the server refuses to start and `tenure recover` explains.
//
// Called on the loop thread before raft_uv_init, and by `tenure recover`.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "raft/disk/layout.h"

namespace tenure::raft::disk {

struct CheckOptions {
  std::uint64_t segment_size = kSegmentSize;  // what open segments are preallocated to
  bool verify_snapshot_data = true;
  std::set<std::string> ignore;  // file names to treat as absent (repair planning)
};

// One finding that makes the directory unsafe to start from.
struct Damage {
  enum class Kind { kLog, kMetadata, kSnapshot };
  Kind kind = Kind::kLog;
  std::string file;                     // name inside the raft dir
  std::optional<std::uint64_t> offset;  // byte offset in `file`
  std::string what;                     // what is wrong
  std::string found;                    // what was found there
  // kLog: the first index that cannot be trusted; a repair keeps the
  // entries before it (0 for damage that is not in the log).
  std::uint64_t first_bad_index = 0;
  std::string ToString() const;  // "open-3 at byte 123: what; found: ..."
};

// An incomplete last write, cut by CutTornTail.
struct TornTail {
  std::string file;
  std::uint64_t offset = 0;  // where the bad batch starts (the cut)
  std::uint64_t bytes = 0;   // the bad batch's extent
  std::uint64_t first_index = 0;
  std::uint64_t entries = 0;
  std::string reason;  // why this is an incomplete write
  std::string ToString() const;
};

struct SegmentInfo {
  std::string name;
  bool open = false;
  std::uint64_t size = 0;
  std::uint64_t first_index = 0;  // 0: not part of the log libraft loads
  std::uint64_t entries = 0;      // valid entries read
  std::uint64_t valid_end = 0;    // bytes up to the end of the last valid batch
  std::uint64_t batches = 0;
  std::string note;  // "ignored: ..." and the like
};

struct SnapshotInfo {
  std::string name;  // the data file
  std::uint64_t term = 0, index = 0;
  std::uint64_t bytes = 0;
  bool compressed = false;
  int format_version = 0;  // our encoding's version (0: not verified)
  std::string note;
};

struct Report {
  std::string dir;
  bool fresh = true;  // no metadata, no log, no snapshot: a first start
  std::optional<Metadata> metadata;
  std::string metadata_file;
  std::vector<SegmentInfo> segments;    // closed by index, then open by counter
  std::vector<SnapshotInfo> snapshots;  // oldest first; the last one is used
  // The log libraft will load (after a torn-tail cut): first..last, or
  // empty (last < first).
  std::uint64_t first_index = 0, last_index = 0;
  std::uint64_t snapshot_index = 0;            // of the snapshot used, 0 for none
  std::uint64_t max_term = 0;                  // in the log (also past damage) and snapshots
  std::optional<Configuration> configuration;  // the latest one found
  std::uint64_t configuration_index = 0;
  std::optional<TornTail> torn;
  std::vector<Damage> damage;
  std::vector<std::string> notes;  // harmless leftovers libraft ignores or removes
  bool ok() const { return damage.empty(); }
};

// I/O errors (unreadable dir or file) come back as kIoError; damage is in
// the Report.
Result<Report> CheckDataDir(const std::string& raft_dir, const CheckOptions& options = {});

// Zeroes the torn batch in place (libraft's loader then finalizes the
// segment at those zeros, as after any clean stop) and fsyncs the file.
Status CutTornTail(const std::string& raft_dir, const TornTail& torn);

// The refusal the server prints: every damage, what it means, what to do.
// `data_dir` is what to pass to `tenure recover -data-dir` (the server's
// -data-dir, whose raft/ the check read); `node_id` for remove-peer.
std::string RefusalText(const Report& report, const std::string& data_dir, std::uint64_t node_id);

}  // namespace tenure::raft::disk
