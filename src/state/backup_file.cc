// Snapshot files (backup_file.h). Layout (docs/formats.md):
//   file   := magic:"TNRBKUP\n" version:u32le header_bytes:u32le header
//             sha256:32 bytes  state
//   header := (version 1, 88 bytes) index term saved_at_ms state_bytes keys
//             tombstones sessions locks lock_delays acl_tokens acl_policies
//             (each a u64le; saved_at_ms an i64le)
//   sha256 := SHA-256 of every byte before it, then of the state
//   state  := Store::EncodeSnapshot's bytes (store_snapshot.cc)
// The version comes right after the magic, so that a newer file is named as
// such before anything else of it is read.
#include "state/backup_file.h"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "common/coding.h"
#include "state/field_limits.h"

namespace tenure::state {
namespace {

constexpr std::string_view kMagic = "TNRBKUP\n";
constexpr std::size_t kHeaderBytesV1 = 11 * 8;
constexpr std::size_t kPreambleBytes = 8 + 4 + 4;
constexpr std::size_t kShaBytes = 32;

using Sha = std::array<unsigned char, kShaBytes>;

Sha Sha256(std::string_view a, std::string_view b) {
  Sha out{};
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned int n = 0;
  // Allocation failure in OpenSSL leaves the digest zero, which no file
  // matches: refused rather than accepted.
  if (ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1 &&
      EVP_DigestUpdate(ctx.get(), a.data(), a.size()) == 1 &&
      EVP_DigestUpdate(ctx.get(), b.data(), b.size()) == 1) {
    EVP_DigestFinal_ex(ctx.get(), out.data(), &n);
  }
  return out;
}

std::string Hex(const Sha& sha) {
  std::string out;
  char two[3];
  for (unsigned char c : sha) {
    std::snprintf(two, sizeof two, "%02x", c);
    out += two;
  }
  return out;
}

std::uint64_t ReadU64(std::string_view bytes, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(bytes[at + i])) << (8 * i);
  }
  return v;
}

std::uint32_t ReadU32(std::string_view bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    v |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + i])) << (8 * i);
  }
  return v;
}

BackupInfo CountsOf(const Store& store) {
  BackupInfo info;
  info.index = store.applied_index().value();
  info.keys = store.kv_count();
  info.tombstones = store.tombstone_count();
  info.sessions = store.session_count();
  for (const Session* session : store.ListSessions()) {
    if (const auto* held = store.HeldKeys(session->id)) info.locks += held->size();
  }
  info.lock_delays = store.lock_delays().size();
  info.acl_tokens = store.acl().tokens().size();
  info.acl_policies = store.acl().policies().size();
  return info;
}

Status Bad(std::string what) { return Status::InvalidArgument("snapshot file: " + what); }

}  // namespace

std::string EncodeBackup(const Store& store, std::uint64_t term, UnixMs now) {
  std::string state;
  store.EncodeSnapshot(&state);
  BackupInfo info = CountsOf(store);
  std::string out;
  ByteWriter w(&out);
  out.append(kMagic);
  w.PutFixed32(kBackupFormatVersion);
  w.PutFixed32(static_cast<std::uint32_t>(kHeaderBytesV1));
  w.PutFixed64(info.index);
  w.PutFixed64(term);
  w.PutFixed64(static_cast<std::uint64_t>(now.ms()));
  w.PutFixed64(state.size());
  for (std::uint64_t count : {info.keys, info.tombstones, info.sessions, info.locks,
                              info.lock_delays, info.acl_tokens, info.acl_policies}) {
    w.PutFixed64(count);
  }
  const Sha sha = Sha256(out, state);
  out.append(reinterpret_cast<const char*>(sha.data()), sha.size());
  out.append(state);
  return out;
}

Result<OpenedBackup> OpenBackup(std::string_view file) {
  if (file.size() < kMagic.size() || file.substr(0, kMagic.size()) != kMagic) {
    if (kMagic.substr(0, file.size()) == file) {
      return Bad("truncated (" + std::to_string(file.size()) + " bytes, not even the header)");
    }
    return Bad("not a tenure snapshot (it does not start with TNRBKUP)");
  }
  if (file.size() < kPreambleBytes) {
    return Bad("truncated (" + std::to_string(file.size()) + " bytes, not even the header)");
  }
  const std::uint32_t version = ReadU32(file, kMagic.size());
  if (version > kBackupFormatVersion) {
    return Bad("format version " + std::to_string(version) + " is newer than this tenure reads (" +
               std::to_string(kBackupFormatVersion) + "); restore it with a newer tenure");
  }
  if (version == 0) return Bad("unknown format version 0 (the file is damaged)");
  const std::uint32_t header_bytes = ReadU32(file, kMagic.size() + 4);
  if (header_bytes != kHeaderBytesV1) {
    return Bad("header of " + std::to_string(header_bytes) + " bytes where version 1 has " +
               std::to_string(kHeaderBytesV1) + " (the file is damaged)");
  }
  const std::size_t state_at = kPreambleBytes + kHeaderBytesV1 + kShaBytes;
  if (file.size() < state_at) {
    return Bad("truncated (" + std::to_string(file.size()) + " bytes, not even the header)");
  }
  OpenedBackup opened;
  BackupInfo& info = opened.info;
  info.version = version;
  std::size_t at = kPreambleBytes;
  auto next = [&]() {
    std::uint64_t v = ReadU64(file, at);
    at += 8;
    return v;
  };
  info.index = next();
  info.term = next();
  info.saved_at_ms = static_cast<std::int64_t>(next());
  info.state_bytes = next();
  info.keys = next();
  info.tombstones = next();
  info.sessions = next();
  info.locks = next();
  info.lock_delays = next();
  info.acl_tokens = next();
  info.acl_policies = next();
  const std::uint64_t held = file.size() - state_at;
  if (held < info.state_bytes) {
    return Bad("truncated (the header says " + std::to_string(info.state_bytes) +
               " bytes of state, the file holds " + std::to_string(held) + ")");
  }
  if (held > info.state_bytes) {
    return Bad(std::to_string(held - info.state_bytes) +
               " bytes after the end of the state (the file is damaged)");
  }
  Sha stored{};
  std::copy_n(reinterpret_cast<const unsigned char*>(file.data() + kPreambleBytes + kHeaderBytesV1),
              kShaBytes, stored.begin());
  opened.state = file.substr(state_at);
  const Sha computed = Sha256(file.substr(0, kPreambleBytes + kHeaderBytesV1), opened.state);
  if (computed != stored) {
    return Bad("checksum mismatch (SHA-256 stored " + Hex(stored) + ", computed " + Hex(computed) +
               "): the file is damaged");
  }
  info.sha256 = Hex(computed);
  // Shown by `inspect` as RFC 3339; the state's own times are checked with it.
  if (Status saved = CheckUnixMs("its save time", UnixMs(info.saved_at_ms)); !saved.ok()) {
    return Bad(std::string(saved.message()));
  }
  Result<Store> store = Store::DecodeSnapshot(opened.state);
  if (!store.ok() && store.status().code() == Code::kInvalidArgument) {
    // A field past a limit (state/field_limits.h): named as it is.
    std::string_view why = store.status().message();
    if (why.substr(0, 10) == "snapshot: ") why.remove_prefix(10);
    return Bad(std::string(why));
  }
  if (!store.ok()) {
    return Bad("its state does not decode: " + std::string(store.status().message()) +
               " (a state written by a newer tenure, or a damaged file)");
  }
  const BackupInfo counted = CountsOf(*store);
  if (counted.index != info.index || counted.keys != info.keys ||
      counted.tombstones != info.tombstones || counted.sessions != info.sessions ||
      counted.locks != info.locks || counted.lock_delays != info.lock_delays ||
      counted.acl_tokens != info.acl_tokens || counted.acl_policies != info.acl_policies) {
    return Bad("the header's index and counts do not match its state (the file is damaged)");
  }
  opened.store = std::move(store).value();
  return opened;
}

}  // namespace tenure::state
