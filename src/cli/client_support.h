// What every client subcommand (kv, session, watch, acl...) shares: the
// HTTP flags (-http-addr, -token, -token-file, and for TLS -ca-file,
// -client-cert, -client-key, -tls-server-name) and the client built from
// them, flag parsing with -h handling, Consul's error texts for unexpected
// HTTP statuses, Consul's data sources (@file, -), and output helpers
// (stdout for results, stderr for errors, each line flushed at once so that
// output survives a signal-driven _exit).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cli/commands.h"
#include "cli/flags.h"
#include "client/response.h"
#include "client/settings.h"
#include "common/limits.h"
#include "net/blocking_http_client.h"
#include "net/url.h"

namespace tenure::cli {

struct HttpFlags {
  std::string http_addr;   // empty: $TENURE_HTTP_ADDR, $CONSUL_HTTP_ADDR, 127.0.0.1:8500
  std::string token;       // empty: -token-file, then the environment (client/settings.h)
  std::string token_file;  // a file holding the token
  client::TlsChoices tls;  // empty: the environment (client/settings.h)

  void Register(Flags* flags);
  // The token and TLS settings, flags before the environment; the first
  // that cannot be resolved is the error.
  Status Resolve(net::HttpClientOptions* options) const;
  // A client of the one agent; a setting that cannot be resolved fails each
  // request with the reason, which the command reports like any other
  // failed request.
  std::unique_ptr<net::BlockingHttpClient> MakeClient() const;
};

// A command of subcommands (kv, session, acl, acl token...): runs the one
// args[0] names with the rest of args. Usage goes to stdout with exit 0 for
// -h, -help, --help and help; to stderr with `usage_exit_code` when args
// are empty or name no subcommand (after "<command>: unknown subcommand").
using Subcommand = int (*)(const Args& args);
int DispatchSubcommand(std::string_view command, std::string_view usage, const Args& args,
                       std::initializer_list<std::pair<std::string_view, Subcommand>> subcommands,
                       int usage_exit_code);

// Parses args into flags. Returns nullopt to go on, or the exit code to end
// with: 0 after printing `usage` for -h/-help, usage_exit_code after
// printing a flag error (Consul's commands use 1, ours 2).
std::optional<int> ParseFlags(Flags* flags, const Args& args, std::string_view usage,
                              int usage_exit_code);

// `usage` (a description, ending in a blank line) followed by the options.
std::string UsageWithOptions(std::string_view usage, const Flags& flags);

// Go api's error for a status it did not expect, and trimming
// (client/response.h).
using client::TrimSpace;
using client::UnexpectedResponse;

// Consul's CLI accepts "/foo" and means "foo" (keys never start with '/').
std::string StripLeadingSlash(std::string_view key);

// Data as Consul's commands take it (its LoadDataSource): "" stays empty,
// "@path" is the file's contents, a lone "-" reads stdin, anything else
// (even "-x") is literal. Errors: "Failed to read file: open PATH: why".
Result<std::string> LoadDataSource(const std::string& data);

// Parses JSON without exceptions and with object keys in document order.
std::optional<nlohmann::ordered_json> ParseJson(std::string_view text);

// JSON as Go's encoding/json writes it: indent 0 gives compact output,
// indent 4 json.MarshalIndent's; <, > and & escaped as \u003c \u003e \u0026,
// invalid UTF-8 replaced by U+FFFD. No trailing newline.
std::string GoJson(const nlohmann::ordered_json& value, int indent);

// Writes text plus '\n' and flushes.
void PrintOut(std::string_view text);
void PrintErr(std::string_view text);

}  // namespace tenure::cli
