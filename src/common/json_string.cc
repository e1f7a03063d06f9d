#include "common/json_string.h"

namespace tenure::json {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendUnicodeEscape(std::string* out, unsigned code) {
  *out += "\\u";
  *out += kHex[(code >> 12) & 0xf];
  *out += kHex[(code >> 8) & 0xf];
  *out += kHex[(code >> 4) & 0xf];
  *out += kHex[code & 0xf];
}

// Length of the valid UTF-8 sequence at text[i], or 0 if invalid.
std::size_t Utf8Length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  std::size_t n;
  unsigned min;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    min = 0x10000;
  } else
    return 0;
  if (i + n > text.size()) return 0;
  unsigned code = c & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return n;
}

}  // namespace

namespace {

// Printable ASCII that Go's encoder writes as is.
bool IsPlain(unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&';
}

}  // namespace

void AppendString(std::string* out, std::string_view text) {
  *out += '"';
  std::size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (IsPlain(c)) {  // append the whole plain run at once
      std::size_t end = i + 1;
      while (end < text.size() && IsPlain(static_cast<unsigned char>(text[end]))) ++end;
      out->append(text.data() + i, end - i);
      i = end;
      continue;
    }
    switch (c) {
      case '"':
        *out += "\\\"";
        ++i;
        continue;
      case '\\':
        *out += "\\\\";
        ++i;
        continue;
      case '\n':
        *out += "\\n";
        ++i;
        continue;
      case '\r':
        *out += "\\r";
        ++i;
        continue;
      case '\t':
        *out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x80) {  // other control bytes and < > &
      AppendUnicodeEscape(out, c);
      ++i;
      continue;
    }
    std::size_t n = Utf8Length(text, i);
    if (n == 0) {
      *out += "\\ufffd";
      ++i;
      continue;
    }
    // U+2028 and U+2029 are escaped by Go for JavaScript safety.
    if (n == 3 && c == 0xe2 && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(text[i + 2]) & 0xfe) == 0xa8) {
      AppendUnicodeEscape(out, 0x2028u | (static_cast<unsigned char>(text[i + 2]) & 1u));
    } else {
      out->append(text.data() + i, n);
    }
    i += n;
  }
  *out += '"';
}

std::size_t StringSize(std::string_view text) {
  std::size_t size = 2;  // the quotes
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (IsPlain(c)) {
      ++size;
      ++i;
      continue;
    }
    if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t') {
      size += 2;
      ++i;
      continue;
    }
    if (c < 0x80) {
      size += 6;
      ++i;
      continue;
    }
    const std::size_t n = Utf8Length(text, i);
    if (n == 0) {
      size += 6;
      ++i;
      continue;
    }
    const bool line_separator = n == 3 && c == 0xe2 &&
                                static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                                (static_cast<unsigned char>(text[i + 2]) & 0xfe) == 0xa8;
    size += line_separator ? 6 : n;
    i += n;
  }
  return size;
}

}  // namespace tenure::json
