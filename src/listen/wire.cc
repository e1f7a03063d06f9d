#include "listen/wire.h"

#include <charconv>
#include <ctime>

#include "common/clock.h"

namespace tenure::listen::wire {
namespace {

bool HasCrLf(std::string_view text) { return text.find_first_of("\r\n") != std::string_view::npos; }

bool EqualsLower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != lower[i]) return false;
  }
  return true;
}

// A streamed head frames its body itself: the handler's fields that would
// contradict it are dropped.
bool FramingField(std::string_view name) {
  return EqualsLower(name, "content-length") || EqualsLower(name, "transfer-encoding") ||
         EqualsLower(name, "connection");
}

void AppendNumber(std::string* out, std::uint64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
  (void)ec;
  out->append(digits, end);
}

}  // namespace

Status ParseTarget(std::string_view target, HttpRequest* request) {
  std::string_view rest = target;
  // absolute-form (sent to proxies, allowed by RFC 9112): drop scheme://authority.
  if (const std::size_t scheme = rest.find("://");
      scheme != std::string_view::npos && rest.front() != '/') {
    const std::size_t path_start = rest.find('/', scheme + 3);
    rest = path_start == std::string_view::npos ? std::string_view("/") : rest.substr(path_start);
  }
  if (rest.empty() || (rest.front() != '/' && rest != "*")) {
    return Status::InvalidArgument("invalid URI for request");
  }
  const std::size_t question = rest.find('?');
  const std::string_view raw_path = rest.substr(0, question);
  request->raw_query =
      question == std::string_view::npos ? std::string() : std::string(rest.substr(question + 1));
  auto path = PercentDecode(raw_path, /*plus_is_space=*/false);
  if (!path.ok()) return path.status();
  request->path = std::move(path).value();
  if (request->raw_query.empty()) {
    request->query.clear();
    return Status::Ok();
  }
  auto query = ParseQuery(request->raw_query);
  if (!query.ok()) return query.status();
  request->query = std::move(query).value();
  return Status::Ok();
}

std::string_view ReasonPhrase(int status) {
  // A table reads best one entry a line.
  // clang-format off
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Request Entity Too Large";
    case 414: return "Request URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "";
  }
  // clang-format on
}

bool AppendResponseHead(const HttpResponse& response, const HeadOptions& options,
                        std::string* out) {
  const int status = (response.status >= 100 && response.status <= 999) ? response.status : 500;
  out->append("HTTP/1.1 ");
  AppendNumber(out, static_cast<std::uint64_t>(status));
  out->push_back(' ');
  out->append(ReasonPhrase(status));
  out->append("\r\n");
  if (!response.content_type.empty() && !HasCrLf(response.content_type)) {
    out->append("Content-Type: ");
    out->append(response.content_type);
    out->append("\r\n");
  }
  for (const auto& [name, value] : response.headers) {
    if (name.empty() || HasCrLf(name) || HasCrLf(value)) continue;
    if (options.streamed && FramingField(name)) continue;
    out->append(name);
    out->append(": ");
    out->append(value);
    out->append("\r\n");
  }
  out->append(DateHeader());
  // RFC 9110: no Content-Length on 1xx and 204; 304 and HEAD describe the
  // body they do not carry.
  const bool no_body_status = status < 200 || status == 204 || status == 304;
  if (options.streamed) {
    // HEAD's head describes the body a GET would carry.
    if (!no_body_status && !options.http10) out->append("Transfer-Encoding: chunked\r\n");
  } else if (status >= 200 && status != 204) {
    out->append("Content-Length: ");
    AppendNumber(out, response.body.size());
    out->append("\r\n");
  }
  if (!options.keep_alive) {
    out->append("Connection: close\r\n");
  } else if (options.http10) {
    out->append("Connection: keep-alive\r\n");
  }
  out->append("\r\n");
  return !no_body_status && !options.head_request;
}

// "Date: Mon, 02 Jan 2006 15:04:05 GMT\r\n", formatted once per second.
std::string_view DateHeader() {
  thread_local std::time_t cached_second = -1;
  thread_local char line[64];
  thread_local std::size_t line_size = 0;
  const std::time_t now = std::time(nullptr);
  if (now != cached_second) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    line_size = std::strftime(line, sizeof(line), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
    cached_second = now;
  }
  return std::string_view(line, line_size);
}

MonoMs NowMonoMs() {
  static const RealClock clock;
  return clock.NowMonoMs();
}

}  // namespace tenure::listen::wire
