// How a failed HTTP request is put into words, in the one place every client
// of tenure takes them from. There are two spellings on purpose:
//
// - Describe: tenure's own clients (sessions, elections, candidate
//   registrations; libtenure's errors and `tenure run`/`elect`): the error
//   status, or "HTTP <code>: <body>".
// - ConsulDescribe: the commands that mimic one of Consul's (kv, watch, lock)
//   print what Consul's Go api prints, so scripts that match `consul lock`'s
//   messages keep working: the error's message, or
//   "Unexpected response code: <code> (<body trimmed>)".
//
// Also the headers' numbers. No I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "net/http_client.h"

namespace tenure::client {

// "kUnavailable: ..." for a failed request, "HTTP 500: <body>" for an answer.
std::string Describe(const Result<net::ClientResponse>& result);
std::string Describe(const net::ClientResponse& response);

// Go api's error for a status it did not expect:
// "Unexpected response code: 500 (invalid session \"x\")" (body trimmed).
std::string UnexpectedResponse(const net::ClientResponse& response);

// The failed request's message, or UnexpectedResponse of the answer.
std::string ConsulDescribe(const Result<net::ClientResponse>& result);

// A header's decimal uint64 (X-Consul-Index, X-Tenure-Fence): digits only,
// no sign or space, at most 18446744073709551615; nullopt otherwise.
std::optional<std::uint64_t> ParseDecimalU64(std::string_view text);

// The grant's fencing token (X-Tenure-Fence): 0 when absent (a server
// without fencing tokens, such as Consul) or not a decimal uint64.
inline constexpr char kFenceHeader[] = "X-Tenure-Fence";
std::uint64_t FenceOf(const net::ClientResponse& response);

// `text` without its leading and trailing spaces, tabs and line breaks.
std::string_view TrimSpace(std::string_view text);

}  // namespace tenure::client
