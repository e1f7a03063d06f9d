// tenure recover -data-dir DIR [-repair [-force]]: reads a stopped server's
// raft files (DIR/raft) with the same check the server runs at start, prints
// every file, the log's index range and any damage with what a repair would
// drop; -repair does it, moving every removed or rewritten file into
// DIR/raft/damaged-<unix seconds>/ (docs/recovery.md). It refuses a data
// dir a running server holds (the server's tenure.lock). Exit 0: clean (or
// repaired), 1: damaged (or the repair refused or failed), 2: bad usage.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "cli/client_support.h"
#include "cli/commands.h"
#include "raft/disk/check.h"
#include "raft/disk/dir_lock.h"
#include "raft/disk/repair.h"

namespace tenure::cli {
namespace {

namespace disk = raft::disk;

constexpr char kRecoverUsage[] =
    "Usage: tenure recover -data-dir DIR [-repair [-force]]\n"
    "\n"
    "  Checks the raft files of a stopped server (DIR/raft, where `tenure server\n"
    "  -data-dir DIR` keeps them) as the server does at start, and prints each file,\n"
    "  the log's index range, any damage and what a repair would drop. Exit 0 if the\n"
    "  data dir is clean, 1 if it is damaged.\n"
    "  -repair cuts the log at the last good entry before the damage and writes fresh\n"
    "  metadata (the highest term on disk, no vote) if it is missing; every removed or\n"
    "  rewritten file moves into DIR/raft/damaged-<unix seconds>/, nothing is deleted.\n"
    "  On a cluster (more than one voter), a repair that drops entries or rewrites the\n"
    "  metadata also needs -force: the safe path there is `tenure operator raft\n"
    "  remove-peer`, wiping this member's data dir and starting it with -join.\n"
    "  See docs/recovery.md.\n"
    "\n";

std::string Describe(const disk::SegmentInfo& s) {
  std::string range = s.entries == 0       ? std::string("no entries")
                      : s.first_index == 0 ? fmt::format("{} entries", s.entries)
                                           : fmt::format("entries {}..{}", s.first_index,
                                                         s.first_index + s.entries - 1);
  std::string text =
      fmt::format("  {:<34} {:>8} bytes  {}  {}, {} batches, valid to byte {}", s.name, s.size,
                  s.open ? "open  " : "closed", range, s.batches, s.valid_end);
  if (!s.note.empty()) text += "  (" + s.note + ")";
  return text;
}

void PrintReport(const disk::Report& r) {
  PrintOut("Files in " + r.dir + ":");
  if (r.metadata) {
    PrintOut(fmt::format("  {:<34} term {}, voted for {} (version {})", r.metadata_file,
                         r.metadata->term, r.metadata->voted_for, r.metadata->version));
  } else {
    PrintOut("  (no readable metadata1 or metadata2)");
  }
  for (const disk::SnapshotInfo& s : r.snapshots) {
    std::string verdict = s.format_version == 0
                              ? "not verified (an older snapshot libraft does not load)"
                              : fmt::format("checksums ok (format {})", s.format_version);
    if (!s.note.empty()) verdict += ", " + s.note;
    PrintOut(fmt::format("  {:<34} {:>8} bytes  snapshot of index {}, term {}{}: {}", s.name,
                         s.bytes, s.index, s.term, s.compressed ? ", LZ4" : "", verdict));
  }
  for (const disk::SegmentInfo& s : r.segments) PrintOut(Describe(s));
  if (r.fresh) {
    PrintOut("Nothing written yet: a first start.");
    return;
  }
  PrintOut(fmt::format(
      "Log: {}{}; terms up to {}",
      r.last_index >= r.first_index ? fmt::format("entries {}..{}", r.first_index, r.last_index)
                                    : std::string("no entries"),
      r.snapshot_index != 0 ? fmt::format(", after the snapshot at {}", r.snapshot_index)
                            : std::string(),
      r.max_term));
  if (r.configuration) {
    PrintOut(fmt::format("Configuration (index {}): {}", r.configuration_index,
                         r.configuration->Describe()));
  }
  for (const std::string& note : r.notes) PrintOut("Note: " + note);
  if (r.torn) {
    PrintOut(
        "Damaged or torn tail (the server cuts it at start; those entries may have been "
        "acknowledged: a crash mid-write and a damaged last sector look the same): " +
        r.torn->ToString() + ": " + r.torn->reason);
  }
}

}  // namespace

int RecoverCommand(const Args& args) {
  std::string data_dir;
  std::string raft_dir;
  bool repair = false;
  bool force = false;
  Flags flags("recover");
  flags.String("data-dir", &data_dir, "the server's -data-dir (its raft files are in DIR/raft)");
  flags.String("raft-dir", &raft_dir, "the raft directory itself (instead of -data-dir)");
  flags.Bool("repair", &repair, "cut the log before the damage, move damaged files aside");
  flags.Bool("force", &force, "with -repair: also on a cluster (see above)");
  if (auto code = ParseFlags(&flags, args, kRecoverUsage, 2)) return *code;
  if (!flags.positional().empty()) {
    PrintErr("tenure recover: unexpected argument \"" + flags.positional()[0] + "\"");
    return 2;
  }
  if (data_dir.empty() == raft_dir.empty()) {
    PrintErr("tenure recover: give -data-dir DIR (or -raft-dir DIR/raft)");
    return 2;
  }
  if (force && !repair) {
    PrintErr("tenure recover: -force only goes with -repair");
    return 2;
  }
  if (raft_dir.empty()) raft_dir = (std::filesystem::path(data_dir) / "raft").string();
  std::error_code ec;
  if (!std::filesystem::is_directory(raft_dir, ec)) {
    PrintErr("tenure recover: " + raft_dir + " is not a directory");
    return 1;
  }

  // A running server writes under us: its open segment would read as torn
  // and a repair would cut what it just acknowledged. Held until exit.
  Result<disk::DirLock> lock = disk::DirLock::Take(raft_dir);
  if (!lock.ok() && (lock.status().code() == Code::kUnavailable || repair)) {
    PrintErr("tenure recover: " + std::string(lock.status().message()) +
             (lock.status().code() == Code::kUnavailable
                  ? "; stop that server first (recover works on a stopped server's files)"
                  : std::string()));
    return 1;
  }

  Result<disk::Report> checked = disk::CheckDataDir(raft_dir);
  if (!checked.ok()) {
    PrintErr("tenure recover: " + checked.status().ToString());
    return 1;
  }
  const disk::Report& report = *checked;
  PrintReport(report);
  if (report.ok() && !report.torn) {
    PrintOut("Clean: the server starts from this data dir as it is.");
    return 0;
  }
  for (const disk::Damage& d : report.damage) PrintOut("Damage: " + d.ToString());

  Result<disk::RepairPlan> planned = disk::PlanRepair(raft_dir, report);
  if (!planned.ok()) {
    PrintErr("tenure recover: " + planned.status().ToString());
    return 1;
  }
  const disk::RepairPlan& plan = *planned;
  if (!plan.refused.empty()) {
    PrintOut("No repair can fix this: " + plan.refused);
    return 1;
  }
  PrintOut(repair ? "Repair:" : "A repair (-repair) would:");
  for (const std::string& step : plan.steps) PrintOut("  - " + step);
  if (!plan.move.empty()) {
    PrintOut("  - every file it removes or rewrites moves into " + raft_dir +
             "/damaged-<unix seconds>/");
  }
  const bool cluster = plan.voters > 1;
  if (cluster && plan.risky_on_cluster()) {
    PrintOut(fmt::format(
        "This server was a member of a cluster of {} voters. A member that forgets its vote or "
        "acknowledged entries can break raft's safety: it may vote twice in one term, or help "
        "elect a leader without entries the cluster committed. The safe path: on a healthy "
        "member run `tenure operator raft remove-peer -id <this server's -node-id>`, move this "
        "data dir away, and start this server with -join; it then gets every entry from the "
        "leader.",
        plan.voters));
  }
  if (!repair) {
    if (report.ok()) {
      PrintOut("Only a torn tail: the server cuts it itself at start.");
      return 0;
    }
    return 1;
  }
  if (cluster && plan.risky_on_cluster() && !force) {
    PrintErr("tenure recover: refusing to repair a cluster member without -force (see above)");
    return 1;
  }
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  Result<std::string> folder = disk::ApplyRepair(raft_dir, plan, now);
  if (!folder.ok()) {
    PrintErr("tenure recover: repair failed: " + folder.status().ToString());
    return 1;
  }
  if (!folder->empty()) PrintOut("Moved the originals into " + raft_dir + "/" + *folder);
  Result<disk::Report> after = disk::CheckDataDir(raft_dir);
  if (!after.ok() || !after->ok()) {
    PrintErr("tenure recover: the data dir is still damaged after the repair:");
    if (after.ok()) {
      for (const disk::Damage& d : after->damage) PrintErr("  - " + d.ToString());
    }
    return 1;
  }
  PrintOut(fmt::format("Repaired: log {}..{}{}; the server starts from this data dir.",
                       after->first_index, after->last_index,
                       after->snapshot_index != 0
                           ? fmt::format(", snapshot at {}", after->snapshot_index)
                           : std::string()));
  return 0;
}

}  // namespace tenure::cli
