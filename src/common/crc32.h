// CRC-32 as libraft 0.15 computes it for segment batches and snapshot
// metadata (src/byte.c there): polynomial 0x04C11DB7, most significant bit
// first, no bit reflection, no final xor; the caller passes the initial
// value (0 to start, the previous result to continue). Our snapshot
// encoding (docs/formats.md) uses the same function, so one table serves
// both. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tenure {

std::uint32_t Crc32(const void* data, std::size_t size, std::uint32_t crc = 0);

inline std::uint32_t Crc32(std::string_view bytes, std::uint32_t crc = 0) {
  return Crc32(bytes.data(), bytes.size(), crc);
}

}  // namespace tenure
