#include "raft/disk/layout.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

#include "common/crc32.h"

namespace tenure::raft::disk {
namespace {

// libraft's bound on entries per batch (uvLoadEntriesBatch): each entry
// takes at least 4 words.
constexpr std::uint64_t kMaxBatchEntries = kSegmentSize / (8 * 4);

std::uint64_t Get64(std::string_view bytes, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(bytes[at + i])) << (8 * i);
  }
  return v;
}

std::uint32_t Get32(std::string_view bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    v |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + i])) << (8 * i);
  }
  return v;
}

void Put64(std::string* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Digits only, at most 20, no overflow.
bool ParseNumber(std::string_view text, std::uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

// "a-b-c" into numbers.
bool ParseDashed(std::string_view text, std::uint64_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t dash = i + 1 < n ? text.find('-') : text.size();
    if (dash == std::string_view::npos) return false;
    if (!ParseNumber(text.substr(0, dash), &out[i])) return false;
    text.remove_prefix(std::min(text.size(), dash + 1));
  }
  return true;
}

}  // namespace

FileName ParseFileName(std::string_view name) {
  FileName f;
  if (name == "metadata1" || name == "metadata2") {
    f.kind = FileKind::kMetadata;
    f.counter = name.back() == '1' ? 1 : 2;
    return f;
  }
  if (name.substr(0, 5) == "open-") {
    if (ParseNumber(name.substr(5), &f.counter)) f.kind = FileKind::kOpenSegment;
    return f;
  }
  if (name.substr(0, 9) == "snapshot-") {
    std::string_view rest = name.substr(9);
    bool meta = rest.size() > 5 && rest.substr(rest.size() - 5) == ".meta";
    if (meta) rest.remove_suffix(5);
    std::uint64_t v[3];
    if (ParseDashed(rest, v, 3)) {
      f.kind = meta ? FileKind::kSnapshotMeta : FileKind::kSnapshot;
      f.term = v[0];
      f.index = v[1];
      f.timestamp = v[2];
    }
    return f;
  }
  std::uint64_t v[2];
  if (name.size() == 33 && name[16] == '-' && ParseDashed(name, v, 2) && v[0] >= 1 &&
      v[0] <= v[1]) {
    f.kind = FileKind::kClosedSegment;
    f.first = v[0];
    f.last = v[1];
  }
  return f;
}

std::string ClosedSegmentName(std::uint64_t first, std::uint64_t last) {
  return fmt::format("{:016}-{:016}", first, last);
}

Result<Metadata> DecodeMetadata(std::string_view bytes) {
  if (bytes.size() != kMetadataSize) {
    return Status::Corruption(fmt::format("{} bytes instead of {}", bytes.size(), kMetadataSize));
  }
  std::uint64_t format = Get64(bytes, 0);
  if (format != kDiskFormat) {
    return Status::Corruption(fmt::format("format version {} instead of {}", format, kDiskFormat));
  }
  Metadata m{Get64(bytes, 8), Get64(bytes, 16), Get64(bytes, 24)};
  if (m.version == 0) return Status::Corruption("version 0");
  return m;
}

std::string EncodeMetadata(const Metadata& metadata) {
  std::string out;
  Put64(&out, kDiskFormat);
  Put64(&out, metadata.version);
  Put64(&out, metadata.term);
  Put64(&out, metadata.voted_for);
  return out;
}

BatchParse ParseBatch(std::string_view file, std::size_t offset) {
  using Outcome = BatchParse::Outcome;
  BatchParse p;
  p.offset = offset;
  if (offset + 16 > file.size()) {
    p.outcome = AllZero(file.substr(std::min(offset, file.size()))) ? Outcome::kZeroPreamble
                                                                    : Outcome::kShortPreamble;
    return p;
  }
  if (AllZero(file.substr(offset, 16))) {
    p.outcome = Outcome::kZeroPreamble;
    return p;
  }
  p.stored_crc = Get32(file, offset);
  const std::uint32_t data_crc = Get32(file, offset + 4);
  p.n = Get64(file, offset + 8);
  if (p.n == 0 || p.n > kMaxBatchEntries) {
    p.outcome = Outcome::kBadCount;
    return p;
  }
  const std::size_t header_start = offset + 8;
  const std::size_t header_len = 8 + 16 * static_cast<std::size_t>(p.n);
  if (header_start + header_len > file.size()) {
    p.outcome = Outcome::kShortHeader;
    return p;
  }
  p.computed_crc = Crc32(file.data() + header_start, header_len);
  if (p.computed_crc != p.stored_crc) {
    p.outcome = Outcome::kHeaderChecksum;
    return p;
  }
  std::size_t data = header_start + header_len;
  std::size_t cursor = data;
  p.entries.reserve(p.n);
  for (std::size_t i = 0; i < p.n; ++i) {
    const std::size_t h = header_start + 8 + 16 * i;
    EntryHeader e;
    e.term = Get64(file, h);
    e.type = static_cast<std::uint8_t>(file[h + 8]);
    e.size = Get32(file, h + 12);
    e.data_offset = cursor;
    cursor += e.size;
    p.entries.push_back(e);
  }
  p.end = cursor;
  if (p.end > file.size()) {
    p.outcome = Outcome::kShortData;
    return p;
  }
  p.stored_crc = data_crc;
  p.computed_crc = Crc32(file.data() + data, p.end - data);
  p.outcome = p.computed_crc == data_crc ? Outcome::kOk : Outcome::kDataChecksum;
  return p;
}

std::string BatchParse::Describe() const {
  switch (outcome) {
    case Outcome::kOk:
      return fmt::format("a valid batch of {} entries", n);
    case Outcome::kZeroPreamble:
      return "zero bytes where a batch should start";
    case Outcome::kShortPreamble:
      return "the file ends inside a batch's preamble";
    case Outcome::kBadCount:
      return fmt::format("an impossible entry count {} in a batch preamble", n);
    case Outcome::kShortHeader:
      return fmt::format("a batch of {} entries whose headers run past the end of the file", n);
    case Outcome::kHeaderChecksum:
      return fmt::format("a batch header checksum mismatch (stored {:08x}, computed {:08x})",
                         stored_crc, computed_crc);
    case Outcome::kShortData:
      return fmt::format(
          "a batch of {} entries whose data runs past the end of the file (to "
          "byte {})",
          n, end);
    case Outcome::kDataChecksum:
      return fmt::format(
          "a batch data checksum mismatch over bytes {}..{} ({} entries; stored "
          "{:08x}, computed {:08x})",
          offset, end, n, stored_crc, computed_crc);
  }
  return "?";
}

unsigned Configuration::Voters() const {
  unsigned n = 0;
  for (const ConfServer& s : servers) n += s.role == kRoleVoter ? 1 : 0;
  return n;
}

std::string Configuration::Describe() const {
  std::string out;
  for (const ConfServer& s : servers) {
    if (!out.empty()) out += ", ";
    const char* role = s.role == kRoleVoter ? "voter" : s.role == 0 ? "standby" : "spare";
    out += fmt::format("{}@{} ({})", s.id, s.address, role);
  }
  return out.empty() ? "no servers" : out;
}

Result<Configuration> DecodeConfiguration(std::string_view bytes) {
  // format:u8(=1) n:u64 (id:u64 address:cstring role:u8){n}, unaligned.
  if (bytes.size() < 9 || bytes[0] != 1) return Status::Corruption("bad configuration encoding");
  std::uint64_t n = Get64(bytes, 1);
  std::size_t at = 9;
  Configuration c;
  if (n > bytes.size()) return Status::Corruption("bad configuration server count");
  for (std::uint64_t i = 0; i < n; ++i) {
    if (at + 8 > bytes.size()) return Status::Corruption("truncated configuration");
    ConfServer s;
    s.id = Get64(bytes, at);
    at += 8;
    std::size_t nul = bytes.find('\0', at);
    if (nul == std::string_view::npos) return Status::Corruption("truncated configuration");
    s.address = std::string(bytes.substr(at, nul - at));
    at = nul + 1;
    if (at >= bytes.size()) return Status::Corruption("truncated configuration");
    s.role = static_cast<std::uint8_t>(bytes[at++]);
    c.servers.push_back(std::move(s));
  }
  return c;
}

Result<SnapshotMeta> DecodeSnapshotMeta(std::string_view bytes) {
  if (bytes.size() < kSnapshotMetaHeader) {
    return Status::Corruption(fmt::format("{} bytes, shorter than its {}-byte header", bytes.size(),
                                          kSnapshotMetaHeader));
  }
  std::uint64_t format = Get64(bytes, 0);
  if (format != kDiskFormat) {
    return Status::Corruption(fmt::format("format version {} instead of {}", format, kDiskFormat));
  }
  const auto stored = static_cast<std::uint32_t>(Get64(bytes, 8));
  SnapshotMeta meta;
  meta.configuration_index = Get64(bytes, 16);
  const std::uint64_t conf_len = Get64(bytes, 24);
  if (conf_len == 0 || conf_len > kSnapshotMetaConfMax) {
    return Status::Corruption(fmt::format("impossible configuration length {}", conf_len));
  }
  if (kSnapshotMetaHeader + conf_len > bytes.size()) {
    return Status::Corruption(fmt::format("{} bytes, its configuration needs {}", bytes.size(),
                                          kSnapshotMetaHeader + conf_len));
  }
  std::uint32_t computed = Crc32(bytes.data() + 16, 16);
  computed = Crc32(bytes.data() + kSnapshotMetaHeader, conf_len, computed);
  if (computed != stored) {
    return Status::Corruption(
        fmt::format("checksum mismatch (stored {:08x}, computed {:08x})", stored, computed));
  }
  Result<Configuration> conf = DecodeConfiguration(bytes.substr(kSnapshotMetaHeader, conf_len));
  if (!conf.ok()) return conf.status();
  meta.configuration = std::move(conf).value();
  return meta;
}

bool AllZero(std::string_view bytes) {
  // Word at a time: most of an open segment is preallocated zeros.
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    if (w != 0) return false;
  }
  for (; i < bytes.size(); ++i) {
    if (bytes[i] != 0) return false;
  }
  return true;
}

std::size_t ZeroTailStart(std::string_view bytes, std::size_t from) {
  std::size_t end = bytes.size();
  while (end > from && end % 8 != 0 && bytes[end - 1] == 0) --end;
  while (end >= from + 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + end - 8, 8);
    if (w != 0) break;
    end -= 8;
  }
  while (end > from && bytes[end - 1] == 0) --end;
  return end;
}

}  // namespace tenure::raft::disk
