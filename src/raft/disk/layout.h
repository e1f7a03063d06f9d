// libraft 0.15's data directory as it lies on disk (raft_uv), read by our
// own code so that a damaged directory is found and named before libraft
// sees it (docs/recovery.md; the byte layout is in docs/formats.md, "Data
// directory"). Pure functions over bytes and file names: no I/O here.
//
//   metadata1, metadata2   term and vote, alternately overwritten
//   FIRST-LAST             closed segment (%016llu-%016llu): exactly the
//                          entries FIRST..LAST, nothing after the last batch
//   open-N                 open segment: preallocated to the segment size,
//                          written in whole blocks, batches then zeros
//   snapshot-T-I-TS[.meta] snapshot data (LZ4 frame or raw) and its metadata
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tenure::raft::disk {

inline constexpr std::uint64_t kDiskFormat = 1;                 // UV__DISK_FORMAT
inline constexpr std::uint64_t kSegmentSize = 8 * 1024 * 1024;  // UV__MAX_SEGMENT_SIZE
// The smallest unit a disk writes atomically: a torn write loses whole
// sectors. 512 is the finest in use, so a 4096-byte tear is also one.
inline constexpr std::size_t kSectorSize = 512;
inline constexpr std::size_t kMetadataSize = 32;        // format, version, term, vote
inline constexpr std::size_t kSnapshotMetaHeader = 32;  // format, crc, conf index, conf length
inline constexpr std::size_t kSnapshotMetaConfMax = 1024 * 1024;
inline constexpr std::uint8_t kEntryCommand = 1;  // RAFT_COMMAND
inline constexpr std::uint8_t kEntryBarrier = 2;  // RAFT_BARRIER
inline constexpr std::uint8_t kEntryChange = 3;   // RAFT_CHANGE
inline constexpr std::uint8_t kRoleVoter = 1;     // RAFT_VOTER

enum class FileKind {
  kMetadata,
  kClosedSegment,
  kOpenSegment,
  kSnapshot,
  kSnapshotMeta,
  kOther,  // tenure.lock, damaged-*/, anything libraft ignores
};

struct FileName {
  FileKind kind = FileKind::kOther;
  std::uint64_t first = 0, last = 0;                 // closed segment
  std::uint64_t counter = 0;                         // open segment; metadata 1 or 2
  std::uint64_t term = 0, index = 0, timestamp = 0;  // snapshot
};
FileName ParseFileName(std::string_view name);
std::string ClosedSegmentName(std::uint64_t first, std::uint64_t last);

struct Metadata {
  std::uint64_t version = 0;
  std::uint64_t term = 0;
  std::uint64_t voted_for = 0;
};
// The 32 bytes of a metadata file; kCorruption saying what is wrong.
Result<Metadata> DecodeMetadata(std::string_view bytes);
std::string EncodeMetadata(const Metadata& metadata);

struct EntryHeader {
  std::uint64_t term = 0;
  std::uint8_t type = 0;
  std::uint32_t size = 0;
  std::size_t data_offset = 0;  // in the file
};

// One batch: crc32(header):u32 crc32(data):u32 | n:u64 (term:u64 type:u8
// unused:3 size:u32){n} | data (sizes are multiples of 8).
struct BatchParse {
  enum class Outcome {
    kOk,
    kZeroPreamble,    // the 16 bytes at offset are zero: where writing stopped
    kShortPreamble,   // fewer than 16 bytes left in the file
    kBadCount,        // n is 0 (with non-zero checksums) or above libraft's bound
    kShortHeader,     // the entry headers run past the end of the file
    kHeaderChecksum,  // entry headers do not match their CRC
    kShortData,       // the data runs past the end of the file (end is known)
    kDataChecksum,    // data does not match its CRC (end is known)
  };
  Outcome outcome = Outcome::kOk;
  std::size_t offset = 0;
  std::uint64_t n = 0;
  std::size_t end = 0;               // offset after the batch when the header verified
  std::vector<EntryHeader> entries;  // when the header verified
  bool extent_known() const {
    return outcome == Outcome::kOk || outcome == Outcome::kShortData ||
           outcome == Outcome::kDataChecksum;
  }
  std::string Describe() const;  // "data checksum mismatch (stored 1234abcd, computed ...)"
  std::uint32_t stored_crc = 0, computed_crc = 0;
};
BatchParse ParseBatch(std::string_view file, std::size_t offset);

struct ConfServer {
  std::uint64_t id = 0;
  std::string address;
  std::uint8_t role = 0;
};
struct Configuration {
  std::vector<ConfServer> servers;
  unsigned Voters() const;
  std::string Describe() const;  // "1@127.0.0.1:8300 (voter), 2@... (standby)"
};
Result<Configuration> DecodeConfiguration(std::string_view bytes);

struct SnapshotMeta {
  std::uint64_t configuration_index = 0;
  Configuration configuration;
};
Result<SnapshotMeta> DecodeSnapshotMeta(std::string_view bytes);

// First offset >= from where every byte to the end is zero.
std::size_t ZeroTailStart(std::string_view bytes, std::size_t from);
bool AllZero(std::string_view bytes);

}  // namespace tenure::raft::disk
