#include "raft/disk/startup.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "common/log.h"
#include "raft/disk/check.h"

namespace tenure::raft::disk {

std::string RecoverDataDirArg(const std::string& raft_dir) {
  std::filesystem::path path(raft_dir);
  if (!path.has_filename()) path = path.parent_path();  // "x/raft/"
  if (path.filename() == "raft" && path.has_parent_path()) return path.parent_path().string();
  return raft_dir + " -raft-dir";  // not tenure server's layout: name the raft dir itself
}

Status PrepareDataDir(const std::string& raft_dir, std::uint64_t node_id) {
  const auto started = std::chrono::steady_clock::now();
  Result<Report> checked = CheckDataDir(raft_dir);
  if (!checked.ok()) return checked.status().Annotate("raft: data dir check");
  const Report& report = *checked;
  if (!report.ok()) {
    return Status::Corruption("raft: " + RefusalText(report, RecoverDataDirArg(raft_dir), node_id));
  }
  if (report.torn) {
    const TornTail& torn = *report.torn;
    if (Status cut = CutTornTail(raft_dir, torn); !cut.ok()) {
      return cut.Annotate("raft: cutting the torn tail of " + torn.file);
    }
    // A write cut short by a crash (never acknowledged) and a last sector
    // damaged after its write completed (acknowledged) leave the same bytes:
    // say what was dropped and that it may have been acknowledged.
    const unsigned voters = report.configuration ? report.configuration->Voters() : 0;
    log::Warn(
        "raft",
        fmt::format(
            "data dir {}: cut the damaged or torn tail of the log: {} at byte {}: dropped {} "
            "bytes, {} entries (indexes {}..{}), which may have been acknowledged: {}. A crash "
            "during their write (then nobody was told they were stored) and a last sector "
            "damaged after it leave the same bytes. {} (docs/recovery.md)",
            raft_dir, torn.file, torn.offset, torn.bytes, torn.entries, torn.first_index,
            torn.first_index + torn.entries - 1, torn.reason,
            voters > 1 ? fmt::format("This server is one of {} voters: it gets back from the "
                                     "leader every entry the cluster committed",
                                     voters)
                       : std::string("This server is the only voter: if they were "
                                     "acknowledged, those writes are lost")));
  }
  const auto ms = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count() /
                  1000.0;
  if (!report.fresh) {
    log::Info("raft", fmt::format("data dir {} checked in {:.1f} ms: log {}..{}{}", raft_dir, ms,
                                  report.first_index, report.last_index,
                                  report.snapshot_index != 0
                                      ? fmt::format(", snapshot at {}", report.snapshot_index)
                                      : std::string()));
  }
  return Status::Ok();
}

}  // namespace tenure::raft::disk
