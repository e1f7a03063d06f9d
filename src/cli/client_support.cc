#include "cli/client_support.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace tenure::cli {

void HttpFlags::Register(Flags* flags) {
  flags->String("http-addr", &http_addr,
                "address of the tenure agent, host:port, http://host:port or https://host:port "
                "(default: $TENURE_HTTP_ADDR, then $CONSUL_HTTP_ADDR, then 127.0.0.1:8500; "
                "without a scheme, https when $CONSUL_HTTP_SSL is true)");
  flags->String("token", &token,
                "ACL token sent as X-Consul-Token (default: -token-file, then "
                "$TENURE_HTTP_TOKEN, $TENURE_HTTP_TOKEN_FILE, $CONSUL_HTTP_TOKEN, "
                "$CONSUL_HTTP_TOKEN_FILE)");
  flags->String("token-file", &token_file,
                "a file holding the ACL token (read whole, surrounding whitespace trimmed)");
  flags->String("ca-file", &tls.ca_file,
                "PEM file of the CAs that sign the agent's certificate, for https (default: "
                "$TENURE_CACERT, then $CONSUL_CACERT, then the system's CAs; "
                "$CONSUL_HTTP_SSL_VERIFY=false checks no certificate)");
  flags->String("client-cert", &tls.cert_file,
                "PEM client certificate, for agents that verify incoming connections (default: "
                "$TENURE_CLIENT_CERT, then $CONSUL_CLIENT_CERT)");
  flags->String("client-key", &tls.key_file,
                "PEM key of -client-cert, unencrypted (default: $TENURE_CLIENT_KEY, then "
                "$CONSUL_CLIENT_KEY)");
  flags->String("tls-server-name", &tls.server_name,
                "the name sent (SNI) and expected in the agent's certificate (default: "
                "$TENURE_TLS_SERVER_NAME, then $CONSUL_TLS_SERVER_NAME, then the host dialled)");
}

Status HttpFlags::Resolve(net::HttpClientOptions* options) const {
  Result<std::string> resolved_token = client::ResolveToken(token, token_file);
  if (!resolved_token.ok()) return resolved_token.status();
  Result<net::TlsOptions> resolved_tls = client::ResolveTls(tls);
  if (!resolved_tls.ok()) return resolved_tls.status();
  options->token = std::move(resolved_token).value();
  options->tls = std::move(resolved_tls).value();
  return Status::Ok();
}

std::unique_ptr<net::BlockingHttpClient> HttpFlags::MakeClient() const {
  net::HttpClientOptions options;
  options.addresses = {client::ResolveHttpAddress(http_addr)};
  options.settings_status = Resolve(&options);
  return std::make_unique<net::BlockingHttpClient>(std::move(options));
}

std::string UsageWithOptions(std::string_view usage, const Flags& flags) {
  std::string options = flags.Usage();
  std::size_t at = options.find("Options:");
  return std::string(usage) + (at == std::string::npos ? options : options.substr(at));
}

std::optional<int> ParseFlags(Flags* flags, const Args& args, std::string_view usage,
                              int usage_exit_code) {
  Status status = flags->Parse(args);
  if (status.ok()) return std::nullopt;
  // Flags reports -h/-help as an error whose text is exactly its usage.
  if (status.message() == flags->Usage()) {
    std::fputs(UsageWithOptions(usage, *flags).c_str(), stdout);
    std::fflush(stdout);
    return 0;
  }
  // An unknown flag's error ends with the parser's usage, which knows the
  // command's name only: the command's own (NAME, CMD...) replaces it, so
  // it reads as the first lines of -h.
  std::string message(status.message());
  const std::string generic = flags->Usage();
  if (message.size() > generic.size() && message.ends_with(generic)) {
    message.resize(message.size() - generic.size());
    message += UsageWithOptions(usage, *flags);
  }
  PrintErr(message);
  return usage_exit_code;
}

std::string StripLeadingSlash(std::string_view key) {
  if (!key.empty() && key.front() == '/') key.remove_prefix(1);
  return std::string(key);
}

Result<std::string> LoadDataSource(const std::string& data) {
  if (data.empty()) return std::string();
  if (data[0] == '@') {
    std::ifstream file(data.substr(1), std::ios::binary);
    if (!file) {
      return Status::IoError("Failed to read file: open " + data.substr(1) + ": " +
                             std::strerror(errno));
    }
    return std::string(std::istreambuf_iterator<char>(file), {});
  }
  if (data == "-") {
    std::ostringstream in;
    in << std::cin.rdbuf();
    if (std::cin.bad()) return Status::IoError("Failed to read stdin");
    return in.str();
  }
  return data;
}

std::optional<nlohmann::ordered_json> ParseJson(std::string_view text) {
  auto parsed = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::nullopt;
  return parsed;
}

std::string GoJson(const nlohmann::ordered_json& value, int indent) {
  std::string text = value.dump(indent > 0 ? indent : -1, ' ', /*ensure_ascii=*/false,
                                nlohmann::ordered_json::error_handler_t::replace);
  // <, > and & can only occur inside JSON strings, so a plain replacement
  // reproduces Go's HTML-safe escaping exactly.
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

void PrintOut(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void PrintErr(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

int DispatchSubcommand(std::string_view command, std::string_view usage, const Args& args,
                       std::initializer_list<std::pair<std::string_view, Subcommand>> subcommands,
                       int usage_exit_code) {
  if (args.empty()) {
    std::fwrite(usage.data(), 1, usage.size(), stderr);
    return usage_exit_code;
  }
  const std::string& sub = args[0];
  if (sub == "-h" || sub == "-help" || sub == "--help" || sub == "help") {
    std::fwrite(usage.data(), 1, usage.size(), stdout);
    return 0;
  }
  for (const auto& [name, run] : subcommands) {
    if (sub == name) return run(Args(args.begin() + 1, args.end()));
  }
  std::fprintf(stderr, "tenure %.*s: unknown subcommand \"%s\"\n\n%.*s",
               static_cast<int>(command.size()), command.data(), sub.c_str(),
               static_cast<int>(usage.size()), usage.data());
  return usage_exit_code;
}

}  // namespace tenure::cli
