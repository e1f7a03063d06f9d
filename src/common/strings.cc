#include "common/strings.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace tenure {

namespace {

void AppendHexEscape(std::string* out, const char* prefix, std::uint32_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->append(prefix);
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4)
    out->push_back(kHex[(value >> shift) & 0xf]);
}

// Length of the valid UTF-8 sequence at text[0], 0 if invalid or truncated.
// Sets *rune to its code point.
std::size_t Utf8Sequence(std::string_view text, std::uint32_t* rune) {
  const auto b0 = static_cast<unsigned char>(text[0]);
  std::size_t len = 0;
  std::uint32_t min = 0;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    len = 2, *rune = b0 & 0x1f, min = 0x80;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    len = 3, *rune = b0 & 0x0f, min = 0x800;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    len = 4, *rune = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < len) return 0;
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if ((b & 0xc0) != 0x80) return 0;
    *rune = (*rune << 6) | (b & 0x3f);
  }
  if (*rune < min || *rune > 0x10ffff || (*rune >= 0xd800 && *rune <= 0xdfff)) return 0;
  return len;
}

}  // namespace

// Go's strconv.Quote (what %q prints): printable ASCII and valid UTF-8 as
// is; quotes, backslashes and controls escaped; invalid bytes as \xNN.
std::string GoQuote(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\a':
          out += "\\a";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\v':
          out += "\\v";
          break;
        default:
          if (c < 0x20 || c == 0x7f) {
            AppendHexEscape(&out, "\\x", c, 2);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    std::uint32_t rune = 0;
    const std::size_t len = Utf8Sequence(text.substr(i), &rune);
    if (len == 0) {
      AppendHexEscape(&out, "\\x", c, 2);
      ++i;
    } else if (rune < 0xa0) {  // C1 controls are not printable
      AppendHexEscape(&out, "\\u", rune, 4);
      i += len;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  out.push_back('"');
  return out;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::vector<std::string> SplitNonEmpty(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return differ == 0;
}

std::string HexU64(unsigned long long value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<std::size_t>(i)] = kHex[value & 15];
  return out;
}

namespace {

// Lower-cases the ASCII capitals among 8 bytes at once: every header name of
// every request passes here, and a byte at a time costs 9 instructions each.
std::uint64_t LowerEightBytes(std::uint64_t bytes) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;
  const std::uint64_t low7 = bytes & ~kHighBits;  // no carry between bytes below
  const std::uint64_t at_least_a = low7 + (0x80 - 'A') * kOnes;
  const std::uint64_t above_z = low7 + (0x80 - 'Z' - 1) * kOnes;
  const std::uint64_t capital = at_least_a & ~above_z & ~bytes & kHighBits;
  return bytes | (capital >> 2);  // 0x80 >> 2 == 'a' - 'A'
}

}  // namespace

void AsciiLowerInPlace(std::string* text) {
  char* p = text->data();
  const std::size_t size = text->size();
  if (size < 8) {
    for (std::size_t i = 0; i < size; ++i) {
      if (p[i] >= 'A' && p[i] <= 'Z') p[i] = static_cast<char>(p[i] - 'A' + 'a');
    }
    return;
  }
  const auto lower_at = [p](std::size_t at) {
    std::uint64_t bytes;
    std::memcpy(&bytes, p + at, 8);
    bytes = LowerEightBytes(bytes);
    std::memcpy(p + at, &bytes, 8);
  };
  for (std::size_t at = 0; at + 8 <= size; at += 8) lower_at(at);
  // The last 8 bytes again, overlapping the words done: lowering twice is
  // lowering once, and whole words are cheaper than a byte loop.
  if (size % 8 != 0) lower_at(size - 8);
}

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  AsciiLowerInPlace(&out);
  return out;
}

}  // namespace tenure
