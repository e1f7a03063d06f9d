#include "listen/request.h"

#include <cstdint>

#include "common/strings.h"

namespace tenure::listen {
namespace {

constexpr std::size_t kFirstReserveBytes = 256;
constexpr std::size_t kFirstReserveFields = 12;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

// A responder that cannot stream answers the stream's head 501.
void Responder::StartStream(int, const HeaderFields&) {
  Send(HttpResponse::Text(501, "streamed answers are not served here"));
}
void Responder::SendChunk(std::string_view) {}
void Responder::EndStream() {}
void Responder::OnDrained(std::function<void()>) {}

std::optional<std::string_view> HttpRequest::Query(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return std::string_view(value);
  }
  return std::nullopt;
}

void HeaderList::Add(std::string_view name, std::string_view value) {
  // Room for a gRPC request's fields at once (about 200 bytes in 7 to 9
  // fields), not the 10 reallocations growing one field at a time costs.
  if (spans_.empty()) {
    text_.reserve(text_.size() + kFirstReserveBytes);
    spans_.reserve(kFirstReserveFields);
  }
  const auto name_at = static_cast<std::uint32_t>(text_.size());
  for (const char c : name) text_.push_back(AsciiLower(c));
  const auto value_at = static_cast<std::uint32_t>(text_.size());
  text_.append(value);
  AddAt(name_at, static_cast<std::uint32_t>(name.size()), value_at,
        static_cast<std::uint32_t>(value.size()));
}

void HttpRequest::AddHeader(std::string_view name, std::string_view value) {
  headers.Add(name, value);
  const std::size_t at = headers.size() - 1;
  NoteHeader(at, headers[at].first);
}

std::optional<std::string_view> HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() != name.size()) continue;
    bool equal = true;
    for (std::size_t i = 0; i < key.size() && equal; ++i) equal = key[i] == AsciiLower(name[i]);
    if (equal) return value;
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
        return Status::InvalidArgument("invalid URL escape " + GoQuote(text.substr(i, 3)));
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

void HttpRequest::TrimForParking() {
  std::string().swap(target);
  std::string().swap(raw_query);
  std::string().swap(body);
  query.shrink_to_fit();
  headers.ShrinkToFit();
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

}  // namespace tenure::listen
