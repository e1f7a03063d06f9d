#include "raft/disk/repair.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace tenure::raft::disk {
namespace {

std::string Errno() { return std::strerror(errno); }

Status SyncPath(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return Status::IoError(fmt::format("open {}: {}", path, Errno()));
  int rv = ::fsync(fd);
  std::string why = rv != 0 ? Errno() : "";
  ::close(fd);
  if (rv != 0) return Status::IoError(fmt::format("fsync {}: {}", path, why));
  return Status::Ok();
}

// Writes `bytes` to dir/tmp-<name>, fsyncs, renames to dir/name. libraft
// removes tmp-* files at start, so a crash leaves nothing half written.
Status WriteFileAtomically(const std::string& dir, const std::string& name,
                           std::string_view bytes) {
  const std::string tmp = dir + "/tmp-repair-" + name;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(fmt::format("create {}: {}", tmp, Errno()));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = Errno();
      ::close(fd);
      return Status::IoError(fmt::format("write {}: {}", tmp, why));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    std::string why = Errno();
    ::close(fd);
    return Status::IoError(fmt::format("fsync {}: {}", tmp, why));
  }
  ::close(fd);
  const std::string path = dir + "/" + name;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IoError(fmt::format("rename {} to {}: {}", tmp, path, Errno()));
  }
  return Status::Ok();
}

Result<std::string> ReadPrefix(const std::string& path, std::uint64_t bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(fmt::format("open {}: {}", path, Errno()));
  std::string out(static_cast<std::size_t>(bytes), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = n == 0 ? "unexpected end of file" : Errno();
      ::close(fd);
      return Status::IoError(fmt::format("read {}: {}", path, why));
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return out;
}

void AddMove(RepairPlan* plan, const std::string& name) {
  if (std::find(plan->move.begin(), plan->move.end(), name) == plan->move.end()) {
    plan->move.push_back(name);
  }
}

}  // namespace

Result<RepairPlan> PlanRepair(const std::string& raft_dir, const Report& original,
                              const CheckOptions& options) {
  RepairPlan plan;
  Report report = original;
  CheckOptions opts = options;
  // A damaged newest snapshot moves away; look again without it (an older
  // snapshot, or none, then has to do with the log there is).
  for (int round = 0; round < 8; ++round) {
    auto bad = std::find_if(report.damage.begin(), report.damage.end(),
                            [](const Damage& d) { return d.kind == Damage::Kind::kSnapshot; });
    if (bad == report.damage.end()) break;
    const std::string data = report.snapshots.back().name;
    AddMove(&plan, data);
    AddMove(&plan, data + ".meta");
    plan.steps.push_back(
        fmt::format("move snapshot {} (and its .meta) away: {}", data, bad->ToString()));
    opts.ignore.insert(data);
    opts.ignore.insert(data + ".meta");
    TENURE_ASSIGN_OR_RETURN(report, CheckDataDir(raft_dir, opts));
  }
  plan.voters = report.configuration ? report.configuration->Voters() : 0;

  // --- metadata ---------------------------------------------------------------------
  for (const Damage& d : report.damage) {
    if (d.kind != Damage::Kind::kMetadata) continue;
    for (const char* name : {"metadata1", "metadata2"}) {
      if (opts.ignore.count(name) == 0 && ::access((raft_dir + "/" + name).c_str(), F_OK) == 0) {
        AddMove(&plan, name);
      }
    }
    plan.metadata = Metadata{1, report.max_term, 0};
    plan.steps.push_back(fmt::format(
        "write fresh metadata1: term {} (the highest term on disk), no vote{}", report.max_term,
        report.metadata ? fmt::format(" (was term {}, vote {})", report.metadata->term,
                                      report.metadata->voted_for)
                        : std::string()));
    break;
  }

  // --- the log ------------------------------------------------------------------------
  auto log = std::find_if(report.damage.begin(), report.damage.end(),
                          [](const Damage& d) { return d.kind == Damage::Kind::kLog; });
  std::uint64_t highest = report.last_index;
  for (const SegmentInfo& s : report.segments) {
    FileName f = ParseFileName(s.name);
    if (f.kind == FileKind::kClosedSegment) highest = std::max(highest, f.last);
    if (s.first_index != 0 && s.entries > 0) {
      highest = std::max(highest, s.first_index + s.entries - 1);
    }
  }
  plan.keep_last = report.last_index;
  if (log != report.damage.end()) {
    const std::uint64_t f = log->first_bad_index;
    plan.keep_last = f - 1;
    plan.drop_first = f;
    plan.drop_last = highest;
    plan.lost_first = std::max(f, report.snapshot_index + 1);
    for (const SegmentInfo& s : report.segments) {
      const FileName name = ParseFileName(s.name);
      if (name.kind != FileKind::kClosedSegment && name.kind != FileKind::kOpenSegment) continue;
      const bool chain = s.first_index != 0;
      if (s.name == log->file) {
        if (chain && s.first_index < f) {  // keep its valid prefix
          if (s.first_index + s.entries != f) {
            plan.refused = fmt::format("cannot find where index {} starts in {}", f, s.name);
            return plan;
          }
          plan.prefix =
              RepairPlan::Prefix{s.name, ClosedSegmentName(s.first_index, f - 1), s.valid_end};
        }
      } else if (chain ? s.first_index + s.entries <= f
                       : name.kind == FileKind::kClosedSegment && name.last < f) {
        continue;  // wholly before the cut
      }
      AddMove(&plan, s.name);
    }
    if (plan.prefix) {
      plan.steps.push_back(
          fmt::format("move {} away and write {} from its first {} bytes (its "
                      "valid batches)",
                      plan.prefix->from, plan.prefix->to, plan.prefix->bytes));
    }
    for (const std::string& m : plan.move) {
      if (ParseFileName(m).kind == FileKind::kClosedSegment ||
          ParseFileName(m).kind == FileKind::kOpenSegment) {
        if (plan.prefix && m == plan.prefix->from) continue;
        plan.steps.push_back(fmt::format("move segment {} away", m));
      }
    }
    const std::string kept = plan.lost_first > plan.drop_first
                                 ? fmt::format(" ({}..{} stay in the snapshot)", plan.drop_first,
                                               std::min(plan.drop_last, report.snapshot_index))
                                 : std::string();
    if (highest < f) {
      // Past the damage the log cannot be followed (a log has no holes),
      // so nobody knows how many entries there were.
      plan.drop_last = UINT64_MAX;
      plan.steps.push_back(fmt::format(
          "drop every log entry from {} on{}: a log cannot skip the damaged entries, so none "
          "after them can be kept, and they may include acknowledged writes",
          f, kept));
    } else if (plan.drop_first <= plan.drop_last) {
      plan.steps.push_back(
          plan.loses_entries()
              ? fmt::format("drop log entries {}..{}{}: {} entries lost, which may include "
                            "acknowledged writes",
                            plan.drop_first, plan.drop_last, kept,
                            plan.drop_last - plan.lost_first + 1)
              : fmt::format("drop log entries {}..{}{}: no write is lost", plan.drop_first,
                            plan.drop_last, kept));
    }
  } else if (report.torn) {
    plan.torn = report.torn;
    plan.steps.push_back("cut the torn tail, as the server would at start: " +
                         report.torn->ToString());
  }
  return plan;
}

Result<std::string> ApplyRepair(const std::string& raft_dir, const RepairPlan& plan,
                                std::int64_t unix_seconds) {
  if (!plan.refused.empty()) return Status::FailedPrecondition(plan.refused);
  std::string folder;
  if (!plan.move.empty()) {
    for (int attempt = 0;; ++attempt) {
      folder = attempt == 0 ? fmt::format("damaged-{}", unix_seconds)
                            : fmt::format("damaged-{}-{}", unix_seconds, attempt);
      if (::mkdir((raft_dir + "/" + folder).c_str(), 0700) == 0) break;
      if (errno != EEXIST || attempt > 100) {
        return Status::IoError(fmt::format("mkdir {}/{}: {}", raft_dir, folder, Errno()));
      }
    }
  }
  std::string prefix_bytes;
  if (plan.prefix) {
    TENURE_ASSIGN_OR_RETURN(prefix_bytes,
                            ReadPrefix(raft_dir + "/" + plan.prefix->from, plan.prefix->bytes));
  }
  for (const std::string& name : plan.move) {
    const std::string from = raft_dir + "/" + name;
    const std::string to = raft_dir + "/" + folder + "/" + name;
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Status::IoError(fmt::format("move {} to {}: {}", from, to, Errno()));
    }
  }
  if (!folder.empty()) TENURE_RETURN_IF_ERROR(SyncPath(raft_dir + "/" + folder, true));
  if (plan.prefix) {
    TENURE_RETURN_IF_ERROR(WriteFileAtomically(raft_dir, plan.prefix->to, prefix_bytes));
  }
  if (plan.metadata) {
    TENURE_RETURN_IF_ERROR(
        WriteFileAtomically(raft_dir, "metadata1", EncodeMetadata(*plan.metadata)));
  }
  if (plan.torn) TENURE_RETURN_IF_ERROR(CutTornTail(raft_dir, *plan.torn));
  TENURE_RETURN_IF_ERROR(SyncPath(raft_dir, true));
  return folder;
}

}  // namespace tenure::raft::disk
