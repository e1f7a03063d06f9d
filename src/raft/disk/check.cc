// The data-dir check (check.h). The order of the work mirrors what libraft
// 0.15 does at start (uv.c uvLoadSnapshotAndEntries, uv_segment.c), so that
// what is checked is exactly what libraft would load.
// Why one file over 500 lines: the order of the checks is the contract, and
// CheckDataDir reads top to bottom as libraft's own load does.
#include "raft/disk/check.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <lz4frame.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "state/store.h"

namespace tenure::raft::disk {
namespace {

namespace fs = std::filesystem;

std::string Errno(int err) { return std::strerror(err); }

Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(fmt::format("open {}: {}", path, Errno(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::IoError(fmt::format("stat {}: {}", path, Errno(err)));
  }
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Status::IoError(fmt::format("read {}: {}", path, Errno(err)));
    }
    if (n == 0) break;  // shrank meanwhile: check what is there
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  ::close(fd);
  return bytes;
}

constexpr std::string_view kLz4Magic("\x04\x22\x4d\x18", 4);

// libraft compresses snapshots as one LZ4 frame with a content checksum
// (compress.c); decompressing verifies it.
Result<std::string> DecompressLz4(std::string_view in) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) {
    return Status::IoError("LZ4F_createDecompressionContext failed");
  }
  std::string out;
  std::size_t at = 0;
  std::size_t hint = 1;
  char buf[64 * 1024];
  while (at < in.size() && hint != 0) {
    std::size_t src = in.size() - at;
    std::size_t dst = sizeof buf;
    hint = LZ4F_decompress(ctx, buf, &dst, in.data() + at, &src, nullptr);
    if (LZ4F_isError(hint)) {
      std::string why = LZ4F_getErrorName(hint);
      LZ4F_freeDecompressionContext(ctx);
      return Status::Corruption(fmt::format("LZ4 frame: {} (at compressed byte {})", why, at));
    }
    at += src;
    out.append(buf, dst);
  }
  LZ4F_freeDecompressionContext(ctx);
  if (hint != 0) {
    return Status::Corruption(
        fmt::format("LZ4 frame: the file ends inside the frame ({} bytes)", in.size()));
  }
  if (at != in.size()) {
    return Status::Corruption(
        fmt::format("{} bytes after the end of the LZ4 frame", in.size() - at));
  }
  return out;
}

// A segment read from disk and parsed batch by batch.
struct Scan {
  std::string bytes;
  std::uint64_t format = 0;
  std::vector<BatchParse> batches;  // the valid ones, in order
  BatchParse stop;                  // the parse that ended the scan
  std::uint64_t entries = 0;
  std::size_t valid_end = 8;
  bool unused = false;  // empty, or all zero: never written (open only)
};

Scan ScanSegment(std::string bytes) {
  Scan s;
  s.bytes = std::move(bytes);
  std::string_view b = s.bytes;
  if (b.size() < 8) {
    s.unused = AllZero(b);
    s.valid_end = 0;
    return s;
  }
  for (int i = 0; i < 8; ++i) {
    s.format |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(b[i])) << (8 * i);
  }
  if (s.format == 0 && AllZero(b)) {
    s.unused = true;
    return s;
  }
  if (s.format != kDiskFormat) return s;
  std::size_t at = 8;
  for (;;) {
    if (at == b.size()) {  // exactly at the end: how closed segments end
      s.stop = BatchParse{};
      s.stop.offset = at;
      s.stop.outcome = BatchParse::Outcome::kZeroPreamble;
      break;
    }
    BatchParse p = ParseBatch(b, at);
    if (p.outcome != BatchParse::Outcome::kOk) {
      s.stop = std::move(p);
      break;
    }
    at = p.end;
    s.entries += p.n;
    s.batches.push_back(std::move(p));
  }
  s.valid_end = at;
  return s;
}

struct Candidate {
  std::string name;
  FileName parsed;
};

// Why the failure at the end of the last open segment's valid batches is an
// incomplete last write, or "" if it is not (docs/recovery.md, "Torn
// tails"). libraft writes an open segment in whole blocks, one write at a
// time, into a preallocated (zeroed) file, and acknowledges an entry only
// once its write completed; a write cut by a crash loses whole sectors,
// which stay zero. So a torn batch is the last thing in the file and has a
// sector that never arrived: a whole all-zero sector of the batch whose
// zeros start at the sector boundary (at most 7 zero bytes before it, an
// entry's padding). A flipped byte leaves no zero sector; zeros starting in the
// middle of a sector were written, not lost; anything after the batch
// means later writes completed.
std::string TornReason(std::string_view bytes, const BatchParse& bad, std::string* refusal) {
  const std::size_t b = bad.offset;
  if (!bad.extent_known()) {
    *refusal = fmt::format(
        "{} at byte {}, followed by non-zero bytes up to byte {}: the batch's "
        "extent is unknown, so nothing shows an incomplete write",
        bad.Describe(), b, ZeroTailStart(bytes, b));
    return "";
  }
  const std::size_t e = bad.end;
  if (bad.outcome == BatchParse::Outcome::kShortData) {
    *refusal = fmt::format("{}: the file was truncated", bad.Describe());
    return "";
  }
  const std::size_t tail = ZeroTailStart(bytes, e);
  if (tail > e) {
    std::string after;
    for (std::size_t at = e; at < tail; at += 8) {
      BatchParse p = ParseBatch(bytes, at);
      if (p.outcome == BatchParse::Outcome::kOk) {
        after = fmt::format("a valid batch of {} entries at byte {}", p.n, at);
        break;
      }
    }
    if (after.empty()) after = fmt::format("non-zero bytes from byte {} to {}", e, tail);
    *refusal = fmt::format(
        "{}, followed by {}: later writes completed, so this batch's write "
        "did too and its entries may have been acknowledged",
        bad.Describe(), after);
    return "";
  }
  // Whole sectors only: a zeroed partial last sector could as well be a few
  // zeroed bytes of an acknowledged batch, and refusing is the safe side.
  for (std::size_t s = (b / kSectorSize + 1) * kSectorSize; s + kSectorSize <= e;
       s += kSectorSize) {
    if (!AllZero(bytes.substr(s, kSectorSize))) continue;
    if (AllZero(bytes.substr(s - 8, 8))) continue;  // zeros start before the boundary
    return fmt::format(
        "bytes {}..{} (a whole sector of the batch) are zero and nothing follows "
        "the batch, as a write cut short by a crash leaves it",
        s, s + kSectorSize);
  }
  *refusal = fmt::format(
      "{} with no whole zeroed sector that starts at a sector boundary: bytes changed in place "
      "(a flipped or zeroed byte), not a write cut short by a crash",
      bad.Describe());
  return "";
}

}  // namespace

std::string Damage::ToString() const {
  std::string where = offset ? fmt::format("{} at byte {}", file, *offset) : file;
  return fmt::format("{}: {}; found {}", where, what, found);
}

std::string TornTail::ToString() const {
  if (entries == 0) {
    return fmt::format("{}: cut {} bytes at byte {} (no entries)", file, bytes, offset);
  }
  return fmt::format("{}: cut {} bytes at byte {}: {} entries, indexes {}..{}", file, bytes, offset,
                     entries, first_index, first_index + entries - 1);
}

Result<Report> CheckDataDir(const std::string& raft_dir, const CheckOptions& options) {
  Report r;
  r.dir = raft_dir;
  std::error_code ec;
  if (!fs::exists(raft_dir, ec)) return r;
  std::vector<std::string> names;
  for (fs::directory_iterator it(raft_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (options.ignore.count(name) == 0) names.push_back(std::move(name));
  }
  if (ec) return Status::IoError(fmt::format("list {}: {}", raft_dir, ec.message()));
  std::sort(names.begin(), names.end());
  auto path = [&](const std::string& name) { return raft_dir + "/" + name; };

  std::vector<Candidate> closed, open, snapshot_metas;
  std::map<std::string, std::uint64_t> snapshot_data;  // name -> size
  std::optional<Metadata> meta[3];
  for (const std::string& name : names) {
    FileName f = ParseFileName(name);
    switch (f.kind) {
      case FileKind::kMetadata: {
        TENURE_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path(name)));
        if (bytes.size() < kMetadataSize) {
          r.notes.push_back(
              fmt::format("{} is {} bytes: an interrupted write, which libraft "
                          "removes (the other metadata file holds the term)",
                          name, bytes.size()));
          break;
        }
        Result<Metadata> m = DecodeMetadata(bytes);
        if (!m.ok()) {
          r.damage.push_back({Damage::Kind::kMetadata, name, std::nullopt, "unreadable metadata",
                              std::string(m.status().message())});
          break;
        }
        meta[f.counter] = *m;
        break;
      }
      case FileKind::kClosedSegment:
        closed.push_back({name, f});
        break;
      case FileKind::kOpenSegment:
        open.push_back({name, f});
        break;
      case FileKind::kSnapshotMeta:
        snapshot_metas.push_back({name, f});
        break;
      case FileKind::kSnapshot: {
        std::uintmax_t size = fs::file_size(path(name), ec);
        snapshot_data[name] = ec ? 0 : size;
        break;
      }
      case FileKind::kOther:
        break;
    }
  }

  // --- metadata: the higher version wins (uv_metadata.c) ----------------------
  if (meta[1] && meta[2] && meta[1]->version == meta[2]->version) {
    r.damage.push_back({Damage::Kind::kMetadata, "metadata1", std::nullopt,
                        "metadata1 and metadata2 have the same version",
                        fmt::format("version {} in both (terms {} and {})", meta[1]->version,
                                    meta[1]->term, meta[2]->term)});
  } else if (meta[1] || meta[2]) {
    const int pick = !meta[2] || (meta[1] && meta[1]->version > meta[2]->version) ? 1 : 2;
    r.metadata = meta[pick];
    r.metadata_file = pick == 1 ? "metadata1" : "metadata2";
  }

  // --- snapshots: the newest whose data file is there and not empty -------------
  std::vector<Candidate> usable;
  for (const Candidate& c : snapshot_metas) {
    std::string data = c.name.substr(0, c.name.size() - 5);
    auto it = snapshot_data.find(data);
    if (it == snapshot_data.end() || it->second == 0) {
      r.notes.push_back(
          fmt::format("{} has no snapshot data: an interrupted snapshot, which "
                      "libraft removes",
                      c.name));
      continue;
    }
    usable.push_back(c);
  }
  for (const auto& entry : snapshot_data) {
    const std::string& data = entry.first;  // a plain name: lambdas capture it (clang 14)
    if (std::none_of(snapshot_metas.begin(), snapshot_metas.end(),
                     [&](const Candidate& c) { return c.name == data + ".meta"; })) {
      r.notes.push_back(fmt::format("{} has no .meta: a leftover, which libraft removes", data));
    }
  }
  std::sort(usable.begin(), usable.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.parsed.term, a.parsed.index, a.parsed.timestamp) <
           std::tie(b.parsed.term, b.parsed.index, b.parsed.timestamp);
  });
  for (const Candidate& c : usable) {
    SnapshotInfo info;
    info.name = c.name.substr(0, c.name.size() - 5);
    info.term = c.parsed.term;
    info.index = c.parsed.index;
    info.bytes = snapshot_data[info.name];
    r.max_term = std::max(r.max_term, info.term);
    r.snapshots.push_back(std::move(info));
  }
  if (!r.snapshots.empty()) {
    SnapshotInfo& used = r.snapshots.back();
    const std::string meta_name = used.name + ".meta";
    r.snapshot_index = used.index;
    TENURE_ASSIGN_OR_RETURN(std::string meta_bytes, ReadWholeFile(path(meta_name)));
    Result<SnapshotMeta> sm = DecodeSnapshotMeta(meta_bytes);
    if (!sm.ok()) {
      r.damage.push_back({Damage::Kind::kSnapshot, meta_name, std::nullopt,
                          "the newest snapshot's metadata is unreadable",
                          std::string(sm.status().message())});
    } else {
      r.configuration = sm->configuration;
      r.configuration_index = sm->configuration_index;
    }
    if (options.verify_snapshot_data) {
      TENURE_ASSIGN_OR_RETURN(std::string data, ReadWholeFile(path(used.name)));
      used.compressed = data.substr(0, 4) == kLz4Magic;
      Result<std::string> plain = used.compressed ? DecompressLz4(data) : Result<std::string>(data);
      Result<int> version =
          plain.ok() ? state::Store::CheckSnapshotBytes(*plain) : Result<int>(plain.status());
      if (!version.ok()) {
        r.damage.push_back({Damage::Kind::kSnapshot, used.name, std::nullopt,
                            "the newest snapshot's data is damaged",
                            std::string(version.status().message())});
      } else {
        used.format_version = *version;
        if (*version < 3)
          used.note = "format version " + std::to_string(*version) + ": no checksum";
      }
    }
  }

  // --- segments: scan every file --------------------------------------------------
  std::sort(closed.begin(), closed.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.parsed.first, a.parsed.last) < std::tie(b.parsed.first, b.parsed.last);
  });
  std::sort(open.begin(), open.end(), [](const Candidate& a, const Candidate& b) {
    return a.parsed.counter < b.parsed.counter;
  });
  std::vector<Scan> scans;
  std::vector<SegmentInfo>& infos = r.segments;
  auto scan_all = [&](const std::vector<Candidate>& list, bool is_open) -> Status {
    for (const Candidate& c : list) {
      TENURE_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path(c.name)));
      SegmentInfo info;
      info.name = c.name;
      info.open = is_open;
      info.size = bytes.size();
      scans.push_back(ScanSegment(std::move(bytes)));
      const Scan& s = scans.back();
      info.entries = s.entries;
      info.valid_end = s.valid_end;
      info.batches = s.batches.size();
      for (const BatchParse& p : s.batches) {
        for (const EntryHeader& e : p.entries) r.max_term = std::max(r.max_term, e.term);
      }
      if (s.unused) info.note = "never written (preallocated)";
      infos.push_back(std::move(info));
    }
    return Status::Ok();
  };
  TENURE_RETURN_IF_ERROR(scan_all(closed, false));
  TENURE_RETURN_IF_ERROR(scan_all(open, true));
  const std::size_t n_closed = closed.size();

  // --- the chain libraft loads (uvFilterSegments) ------------------------------------
  std::size_t first_used = 0;  // index into closed of the first closed segment loaded
  std::uint64_t next = 1;
  if (!r.snapshots.empty()) {
    next = r.snapshot_index + 1;
    if (n_closed > 0) {
      std::size_t j = n_closed - 1;
      if (closed[j].parsed.last < r.snapshot_index && open.empty()) {
        first_used = n_closed;  // all behind the snapshot: libraft ignores them
      } else {
        std::size_t i = j;
        while (i > 0 && closed[i - 1].parsed.last + 1 == closed[i].parsed.first) --i;
        first_used = i;
        next = closed[i].parsed.first;
        if (next > r.snapshot_index + 1) {
          r.damage.push_back(
              {Damage::Kind::kLog, closed[i].name, std::nullopt,
               fmt::format("entries {}..{} are missing between the snapshot at {} and this "
                           "segment",
                           r.snapshot_index + 1, next - 1, r.snapshot_index),
               fmt::format("snapshot {}, then segment {}", r.snapshots.back().name, closed[i].name),
               r.snapshot_index + 1});
        }
      }
      for (std::size_t k = 0; k < first_used; ++k) {
        infos[k].note = "ignored: older than the log libraft loads (covered by the snapshot)";
      }
    }
  }
  r.first_index = next;
  bool log_damaged = std::any_of(r.damage.begin(), r.damage.end(),
                                 [](const Damage& d) { return d.kind == Damage::Kind::kLog; });
  auto log_damage = [&](Damage d) {
    if (!log_damaged) r.damage.push_back(std::move(d));
    log_damaged = true;
  };
  std::map<std::uint64_t, std::pair<std::size_t, const EntryHeader*>> changes;  // index -> entry
  auto record_entries = [&](std::size_t scan, std::uint64_t first) {
    std::uint64_t index = first;
    for (const BatchParse& p : scans[scan].batches) {
      for (const EntryHeader& e : p.entries) {
        if (e.type == kEntryChange) changes[index] = {scan, &e};
        ++index;
      }
    }
  };
  for (std::size_t k = first_used; k < n_closed; ++k) {
    const Candidate& c = closed[k];
    const Scan& s = scans[k];
    SegmentInfo& info = infos[k];
    if (log_damaged) {
      info.note = "after the damage";
      continue;
    }
    if (c.parsed.first != next) {
      const bool gap = c.parsed.first > next;
      log_damage(
          {Damage::Kind::kLog, c.name, std::nullopt,
           gap ? fmt::format("entries {}..{} are missing: no segment holds them", next,
                             c.parsed.first - 1)
               : fmt::format("this segment overlaps the previous one, which ends at {}", next - 1),
           fmt::format("a segment named for {}..{}", c.parsed.first, c.parsed.last), next});
      info.note = "after the damage";
      continue;
    }
    info.first_index = next;
    const std::uint64_t expected = c.parsed.last - c.parsed.first + 1;
    if (s.format != kDiskFormat) {
      log_damage({Damage::Kind::kLog, c.name, 0, "not a segment of format 1",
                  fmt::format("format {} ({} bytes)", s.format, s.bytes.size()), next});
      continue;
    }
    record_entries(k, next);
    if (s.stop.offset != s.bytes.size()) {
      const bool truncated = s.stop.outcome == BatchParse::Outcome::kShortPreamble ||
                             s.stop.outcome == BatchParse::Outcome::kShortHeader ||
                             s.stop.outcome == BatchParse::Outcome::kShortData;
      log_damage({Damage::Kind::kLog, c.name, s.stop.offset,
                  truncated ? fmt::format("the closed segment is truncated ({} bytes) after {} "
                                          "of its {} entries",
                                          s.bytes.size(), s.entries, expected)
                            : fmt::format("a closed segment must hold only valid batches; "
                                          "entries from {} on cannot be read",
                                          next + s.entries),
                  s.stop.Describe(), next + s.entries});
      next += s.entries;
      continue;
    }
    if (s.entries != expected) {
      log_damage({Damage::Kind::kLog, c.name, s.valid_end,
                  fmt::format("the closed segment holds {} entries, its name says {} ({}..{})",
                              s.entries, expected, c.parsed.first, c.parsed.last),
                  s.entries < expected ? "its end: a truncation at a batch boundary"
                                       : "more entries than its name",
                  s.entries < expected ? next + s.entries : next});
      next += std::min(s.entries, expected);
      continue;
    }
    next += s.entries;
  }

  // Open segments in counter order; the torn-tail rule applies only to the
  // last one that holds data.
  std::size_t last_open_with_data = open.size();
  for (std::size_t k = 0; k < open.size(); ++k) {
    if (!scans[n_closed + k].unused) last_open_with_data = k;
  }
  for (std::size_t k = 0; k < open.size(); ++k) {
    const Candidate& c = open[k];
    Scan& s = scans[n_closed + k];
    SegmentInfo& info = infos[n_closed + k];
    if (s.unused) continue;
    if (log_damaged) {
      info.note = "after the damage";
      continue;
    }
    info.first_index = next;
    if (s.format != kDiskFormat) {
      log_damage({Damage::Kind::kLog, c.name, 0, "not a segment of format 1",
                  fmt::format("format {} ({} bytes)", s.format, s.bytes.size()), next});
      continue;
    }
    record_entries(n_closed + k, next);
    // Shorter than the preallocation and ending exactly after its last
    // valid batch: libraft closes a segment by truncating it to what it
    // used, then renaming it (UvFsTruncateAndRenameFile), and a crash
    // between the two leaves this; libraft loads it and finishes the close.
    if (s.bytes.size() < options.segment_size && s.entries > 0 && s.stop.offset == s.bytes.size()) {
      info.note = "truncated to its entries: a close that a crash interrupted";
      next += s.entries;
      continue;
    }
    // Shorter otherwise: cut. Longer is fine: libraft extends an open segment
    // for a batch larger than a segment (a snapshot restore's entry, decision
    // 0024), and the batches are checked below.
    if (s.bytes.size() < options.segment_size) {
      log_damage({Damage::Kind::kLog, c.name, s.bytes.size(),
                  fmt::format("the open segment is {} bytes; libraft preallocates open segments "
                              "to {}, so it was truncated",
                              s.bytes.size(), options.segment_size),
                  s.stop.outcome == BatchParse::Outcome::kZeroPreamble
                      ? fmt::format("{} valid entries, then the end of the file", s.entries)
                      : fmt::format("{} valid entries, then {} at byte {}", s.entries,
                                    s.stop.Describe(), s.stop.offset),
                  next + s.entries});
      next += s.entries;
      continue;
    }
    const std::size_t b = s.stop.offset;
    if (AllZero(std::string_view(s.bytes).substr(b))) {  // where writing stopped
      next += s.entries;
      continue;
    }
    std::string refusal;
    std::string reason;
    if (k != last_open_with_data) {
      refusal = fmt::format(
          "{}, in an open segment followed by {} which holds data: every write "
          "to this one completed",
          s.stop.Describe(), open[last_open_with_data].name);
    } else {
      reason = TornReason(s.bytes, s.stop, &refusal);
    }
    if (reason.empty()) {
      log_damage({Damage::Kind::kLog, c.name, b,
                  fmt::format("entries from {} on cannot be read", next + s.entries), refusal,
                  next + s.entries});
      next += s.entries;
      continue;
    }
    r.torn = TornTail{c.name, b, s.stop.end - b, next + s.entries, s.stop.n, reason};
    next += s.entries;
  }
  r.last_index = next - 1;

  if (!r.snapshots.empty() && !log_damaged && r.last_index < r.snapshot_index) {
    log_damage({Damage::Kind::kLog, r.snapshots.back().name, std::nullopt,
                fmt::format("the log ends at {}, behind the snapshot at {}", r.last_index,
                            r.snapshot_index),
                "segments that stop before the snapshot (all of it is in the snapshot)",
                r.first_index});
  }

  // Entries past the damage still count for the highest term (a repair's
  // fresh metadata must not go below any term this server saw) and the
  // latest configuration (whether this is a cluster).
  for (std::size_t k = 0; k < n_closed; ++k) {
    if (infos[k].first_index == 0) record_entries(k, closed[k].parsed.first);
  }
  if (!changes.empty() && changes.rbegin()->first >= r.configuration_index) {
    const auto& [scan, entry] = changes.rbegin()->second;
    Result<Configuration> conf = DecodeConfiguration(
        std::string_view(scans[scan].bytes).substr(entry->data_offset, entry->size));
    if (conf.ok()) {
      r.configuration = std::move(conf).value();
      r.configuration_index = changes.rbegin()->first;
    }
  }

  const bool has_log =
      std::any_of(scans.begin(), scans.end(), [](const Scan& s) { return !s.unused; });
  r.fresh = !r.metadata && r.snapshots.empty() && !has_log;
  if (!r.metadata && !r.fresh &&
      std::none_of(r.damage.begin(), r.damage.end(),
                   [](const Damage& d) { return d.kind == Damage::Kind::kMetadata; })) {
    r.damage.push_back(
        {Damage::Kind::kMetadata, "metadata1", std::nullopt,
         "metadata1 and metadata2 are both missing: this server forgot its term and its vote",
         fmt::format(
             "{}{}, terms up to {}",
             r.snapshots.empty() ? "" : "a snapshot at " + std::to_string(r.snapshot_index) + ", ",
             r.last_index >= r.first_index
                 ? fmt::format("a log of entries {}..{}", r.first_index, r.last_index)
                 : std::string("no log entries"),
             r.max_term)});
  } else if (r.metadata && r.metadata->term < r.max_term) {
    r.damage.push_back({Damage::Kind::kMetadata, r.metadata_file, std::nullopt,
                        "the term in the metadata is below a term in the log or snapshots",
                        fmt::format("term {}, but term {} on disk", r.metadata->term, r.max_term)});
  }
  return r;
}

Status CutTornTail(const std::string& raft_dir, const TornTail& torn) {
  const std::string path = raft_dir + "/" + torn.file;
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(fmt::format("open {}: {}", path, Errno(errno)));
  std::string zeros(static_cast<std::size_t>(torn.bytes), '\0');
  std::size_t done = 0;
  while (done < zeros.size()) {
    ssize_t n = ::pwrite(fd, zeros.data() + done, zeros.size() - done,
                         static_cast<off_t>(torn.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      return Status::IoError(fmt::format("zero {} at byte {}: {}", path, torn.offset, Errno(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return Status::IoError(fmt::format("fsync {}: {}", path, Errno(err)));
  }
  ::close(fd);
  return Status::Ok();
}

std::string RefusalText(const Report& report, const std::string& data_dir, std::uint64_t node_id) {
  std::string text = fmt::format(
      "the data dir {} is damaged; the server will not start, since starting from it could "
      "lose acknowledged writes or break raft's safety:",
      report.dir);
  for (const Damage& d : report.damage) text += "\n  - " + d.ToString();
  text += fmt::format(
      "\nWhat to do (docs/recovery.md):\n"
      "  - see every file and what a repair would drop: tenure recover -data-dir {0}\n"
      "  - on a cluster, the safe path: on a healthy member run `tenure operator raft "
      "remove-peer -id {1}`, move this data dir away, and start this server again with "
      "-join (it gets every entry from the leader)\n"
      "  - a single server (or with -force, knowing the risk): tenure recover -data-dir {0} "
      "-repair (damaged files are moved into {2}/damaged-<time>/, never deleted)",
      data_dir, node_id, report.dir);
  return text;
}

}  // namespace tenure::raft::disk
