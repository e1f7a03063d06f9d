#include "http/request.h"

#include <cstdint>

namespace tenure::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

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

// Go's strconv.Quote, for the <= 3 bytes of a bad escape: printable ASCII and
// valid UTF-8 as is, controls and invalid bytes escaped (common/strings.h's
// GoQuote passes bytes >= 0x80 through, which Go does not for invalid UTF-8).
std::string QuoteLikeGo(std::string_view text) {
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

}  // namespace

std::optional<std::string_view> HttpRequest::Query(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return std::string_view(value);
  }
  return std::nullopt;
}

std::optional<std::string_view> HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() != name.size()) continue;
    bool equal = true;
    for (std::size_t i = 0; i < key.size() && equal; ++i) equal = key[i] == AsciiLower(name[i]);
    if (equal) return std::string_view(value);
  }
  return std::nullopt;
}

HttpResponse HttpResponse::Json(std::string body, int status) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  // What Go's content sniffing gives Consul's fmt.Fprint error bodies.
  response.content_type = "text/plain; charset=utf-8";
  response.body = std::move(body);
  return response;
}

Result<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  // Most paths and values have nothing to decode: copy them whole.
  if (text.find_first_of(plus_is_space ? "%+" : "%") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      // Go's url.unescape: a '%' needs two hex digits; the error quotes at
      // most the three bytes starting at the '%'.
      if (i + 2 >= text.size() || HexValue(text[i + 1]) < 0 || HexValue(text[i + 2]) < 0) {
        return Status::InvalidArgument("invalid URL escape " + QuoteLikeGo(text.substr(i, 3)));
      }
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view raw_query) {
  std::vector<std::pair<std::string, std::string>> params;
  while (!raw_query.empty()) {
    const std::size_t amp = raw_query.find('&');
    const std::string_view piece = raw_query.substr(0, amp);
    raw_query = amp == std::string_view::npos ? std::string_view() : raw_query.substr(amp + 1);
    if (piece.empty()) continue;
    const std::size_t eq = piece.find('=');
    auto key = PercentDecode(piece.substr(0, eq), /*plus_is_space=*/true);
    if (!key.ok()) return key.status();
    std::string value;
    if (eq != std::string_view::npos) {
      auto decoded = PercentDecode(piece.substr(eq + 1), /*plus_is_space=*/true);
      if (!decoded.ok()) return decoded.status();
      value = std::move(decoded).value();
    }
    params.emplace_back(std::move(key).value(), std::move(value));
  }
  return params;
}

}  // namespace tenure::http
