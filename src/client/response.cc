#include "client/response.h"

#include <limits>

namespace tenure::client {

std::string Describe(const Result<net::ClientResponse>& result) {
  if (!result.ok()) return result.status().ToString();
  return Describe(*result);
}

std::string Describe(const net::ClientResponse& response) {
  return "HTTP " + std::to_string(response.status) + ": " + response.body;
}

std::string UnexpectedResponse(const net::ClientResponse& response) {
  std::string_view body = TrimSpace(response.body);
  return "Unexpected response code: " + std::to_string(response.status) + " (" + std::string(body) +
         ")";
}

std::string ConsulDescribe(const Result<net::ClientResponse>& result) {
  if (!result.ok()) return std::string(result.status().message());
  return UnexpectedResponse(*result);
}

std::optional<std::uint64_t> ParseDecimalU64(std::string_view text) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

std::uint64_t FenceOf(const net::ClientResponse& response) {
  return ParseDecimalU64(response.Header(kFenceHeader)).value_or(0);
}

std::string_view TrimSpace(std::string_view text) {
  auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace tenure::client
