#include "client/settings.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <optional>

#include "common/strings.h"

namespace tenure::client {
namespace {

// The first non-empty environment variable of the list, or "".
std::string FirstEnv(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return "";
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

bool Space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && Space(text.front())) text.remove_prefix(1);
  while (!text.empty() && Space(text.back())) text.remove_suffix(1);
  return text;
}

// A token goes into a header: refuse what would break it (a second line of
// a token file, say) rather than send something else than was meant.
Result<std::string> Checked(std::string token, std::string_view what) {
  for (char c : token) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return Status::InvalidArgument(std::string(what) +
                                     " contains a control character (a line break?)");
    }
  }
  return token;
}

// Go's strconv.ParseBool.
std::optional<bool> ParseBool(std::string_view text) {
  for (const char* yes : {"1", "t", "T", "true", "TRUE", "True"}) {
    if (text == yes) return true;
  }
  for (const char* no : {"0", "f", "F", "false", "FALSE", "False"}) {
    if (text == no) return false;
  }
  return std::nullopt;
}

// The given value, else $TENURE_<name>, else $CONSUL_<name>.
std::string Setting(const std::string& given, const std::string& name) {
  if (!given.empty()) return given;
  return FirstEnv({("TENURE_" + name).c_str(), ("CONSUL_" + name).c_str()});
}

Result<bool> BoolSetting(std::optional<bool> given, const std::string& name, bool otherwise) {
  if (given) return *given;
  for (const char* prefix : {"TENURE_", "CONSUL_"}) {
    const std::string variable = prefix + name;
    std::string value = Env(variable.c_str());
    if (value.empty()) continue;
    std::optional<bool> parsed = ParseBool(value);
    if (!parsed) {
      return Status::InvalidArgument("$" + variable + " is " + GoQuote(value) +
                                     ", not true or false");
    }
    return *parsed;
  }
  return otherwise;
}

// Bounds what a mistaken path (a log, a device) can make us read.
constexpr std::size_t kTokenFileMaxBytes = 64 * 1024;

}  // namespace

std::string ResolveHttpAddress(std::string_view explicit_address) {
  if (!explicit_address.empty()) return std::string(explicit_address);
  std::string from_env = FirstEnv({"TENURE_HTTP_ADDR", "CONSUL_HTTP_ADDR"});
  return from_env.empty() ? kDefaultHttpAddress : from_env;
}

Result<std::string> ReadTokenFile(std::string_view path, std::string_view origin) {
  const std::string where = std::string(path) + " (from " + std::string(origin) + ")";
  std::ifstream file{std::string(path), std::ios::binary};
  if (!file) {
    return Status::InvalidArgument("cannot read the token file " + where + ": " +
                                   std::strerror(errno));
  }
  std::string text;
  text.resize(kTokenFileMaxBytes + 1);
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (file.bad()) {
    return Status::InvalidArgument("cannot read the token file " + where + ": " +
                                   std::strerror(errno));
  }
  text.resize(static_cast<std::size_t>(file.gcount()));
  if (text.size() > kTokenFileMaxBytes) {
    return Status::InvalidArgument("the token file " + where + " is larger than " +
                                   std::to_string(kTokenFileMaxBytes) + " bytes");
  }
  std::string_view token = Trim(text);
  if (token.empty()) return Status::InvalidArgument("the token file " + where + " is empty");
  return Checked(std::string(token), "the token file " + where);
}

Result<std::string> ResolveToken(std::string_view explicit_token,
                                 std::string_view explicit_token_file) {
  if (!explicit_token.empty()) {
    return Checked(std::string(explicit_token), "the token given with -token");
  }
  if (!explicit_token_file.empty()) return ReadTokenFile(explicit_token_file, "-token-file");
  for (const char* prefix : {"TENURE", "CONSUL"}) {
    const std::string token_var = std::string(prefix) + "_HTTP_TOKEN";
    if (std::string token = Env(token_var.c_str()); !token.empty()) {
      return Checked(std::move(token), "the token in $" + token_var);
    }
    const std::string file_var = token_var + "_FILE";
    if (std::string path = Env(file_var.c_str()); !path.empty()) {
      return ReadTokenFile(path, "$" + file_var);
    }
  }
  return std::string();
}

Result<net::TlsOptions> ResolveTls(const TlsChoices& given) {
  net::TlsOptions options;
  options.files.ca_file = Setting(given.ca_file, "CACERT");
  options.files.cert_file = Setting(given.cert_file, "CLIENT_CERT");
  options.files.key_file = Setting(given.key_file, "CLIENT_KEY");
  options.files.server_name = Setting(given.server_name, "TLS_SERVER_NAME");
  Result<bool> verify = BoolSetting(given.verify, "HTTP_SSL_VERIFY", true);
  if (!verify.ok()) return verify.status();
  options.files.verify = *verify;
  Result<bool> https = BoolSetting(given.https, "HTTP_SSL", false);
  if (!https.ok()) return https.status();
  options.by_default = *https;
  return options;
}

}  // namespace tenure::client
