#include "state/zk_path.h"

#include <cstdio>
#include <utility>

namespace tenure::state {
namespace {

// The code point of the UTF-8 sequence at `at` and its length; U+FFFD and
// length 1 for a byte that does not start a valid sequence (as Java's
// decoder replaces it).
std::pair<std::uint32_t, std::size_t> CodePointAt(std::string_view s, std::size_t at) {
  constexpr std::uint32_t kReplacement = 0xFFFD;
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(s[i]); };
  const std::uint8_t b0 = byte(at);
  if (b0 < 0x80) return {b0, 1};
  std::size_t length = 0;
  std::uint32_t cp = 0;
  std::uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, cp = b0 & 0x1Fu, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, cp = b0 & 0x0Fu, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, cp = b0 & 0x07u, min = 0x10000;
  } else {
    return {kReplacement, 1};
  }
  if (at + length > s.size()) return {kReplacement, 1};
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return {kReplacement, 1};
    cp = (cp << 6) | (byte(at + i) & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kReplacement, 1};
  return {cp, length};
}

// The ranges PathUtils refuses, on UTF-16 units: above U+FFFF a character is
// two surrogates (U+D800 to U+DFFF), inside the refused U+D800 to U+F8FF.
bool RefusedCharacter(std::uint32_t cp) {
  return (cp >= 0x01 && cp <= 0x1F) || (cp >= 0x7F && cp <= 0x9F) ||
         (cp >= 0xD800 && cp <= 0xF8FF) || (cp >= 0xFFF0 && cp <= 0xFFFF) || cp > 0xFFFF;
}

}  // namespace

std::string ZkPathError(std::string_view path) {
  if (path.empty()) return "Path length must be > 0";
  if (path.front() != '/') return "Path must start with / character";
  if (path.size() == 1) return "";
  if (path.back() == '/') return "Path must not end with / character";
  std::size_t segment_start = 1;
  for (std::size_t at = 1; at < path.size();) {
    const char c = path[at];
    if (c == '\0') return "null character not allowed @" + std::to_string(at);
    if (c == '/') {
      if (at == segment_start) return "empty node name specified @" + std::to_string(at);
      const std::string_view segment = path.substr(segment_start, at - segment_start);
      if (segment == "." || segment == "..") {
        return "relative paths not allowed @" + std::to_string(at - 1);
      }
      segment_start = ++at;
      continue;
    }
    const auto [cp, length] = CodePointAt(path, at);
    if (RefusedCharacter(cp)) return "invalid character @" + std::to_string(at);
    at += length;
  }
  const std::string_view last = path.substr(segment_start);
  if (last == "." || last == "..") {
    return "relative paths not allowed @" + std::to_string(path.size() - 1);
  }
  return "";
}

std::string_view ZkParentOf(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 ? path.substr(0, 1) : path.substr(0, slash);
}

std::string_view ZkNameOf(std::string_view path) { return path.substr(path.rfind('/') + 1); }

std::string ZkSequenceSuffix(std::int32_t counter) {
  char text[16];
  std::snprintf(text, sizeof text, "%010d", counter);
  return text;
}

bool IsZkSpecialPath(std::string_view path) {
  return path == "/" || path == "/zookeeper" || path == "/zookeeper/quota" ||
         path == "/zookeeper/config";
}

}  // namespace tenure::state
