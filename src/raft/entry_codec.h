// Framing of raft log entries.
//
// libraft 0.15 writes entries to disk unpadded but reads them back assuming
// every payload is padded to 8 bytes, so an entry whose length is not a
// multiple of 8 makes it lose acknowledged entries at restart without an
// error (docs/architecture.md, libraft pitfall 1). Every entry we propose is
// therefore framed and padded:
//
//   entry   := length:fixed32 payload:byte[length] padding:0x00[p]
//   with p in [0, 8) chosen so that 4 + length + p is a multiple of 8,
//   payload := state::EncodeCommand bytes (docs/formats.md).
//
// Decoding checks the whole frame (size multiple of 8, length in range,
// minimal padding, padding all zero). Pure; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"
#include "state/command.h"

namespace tenure::raft {

// Size of the fixed32 length field that starts every frame.
inline constexpr std::size_t kEntryHeaderBytes = 4;
// Every framed entry is a multiple of this many bytes.
inline constexpr std::size_t kEntryAlignBytes = 8;

// Total framed size for a payload of `payload_bytes`.
constexpr std::size_t FramedEntrySize(std::size_t payload_bytes) {
  std::size_t n = kEntryHeaderBytes + payload_bytes;
  return (n + kEntryAlignBytes - 1) / kEntryAlignBytes * kEntryAlignBytes;
}

// Appends the frame of `payload` to *out.
// REQUIRES: payload.size() < 2^32.
void FrameEntry(std::string_view payload, std::string* out);
// Returns the payload inside `entry` (a view into it), or kCorruption.
Result<std::string_view> UnframeEntry(std::string_view entry);

// Frames the encoding of `command` into *out (cleared first).
void EncodeEntry(const state::Command& command, std::string* out);
// Unframes and decodes one entry; kCorruption on any malformed byte.
Result<state::Command> DecodeEntry(std::string_view entry);

}  // namespace tenure::raft
