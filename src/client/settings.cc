#include "client/settings.h"

#include <cstdlib>
#include <initializer_list>

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

}  // namespace

std::string ResolveHttpAddress(std::string_view explicit_address) {
  if (!explicit_address.empty()) return std::string(explicit_address);
  std::string from_env = FirstEnv({"TENURE_HTTP_ADDR", "CONSUL_HTTP_ADDR"});
  return from_env.empty() ? kDefaultHttpAddress : from_env;
}

std::string ResolveToken(std::string_view explicit_token) {
  if (!explicit_token.empty()) return std::string(explicit_token);
  return FirstEnv({"TENURE_HTTP_TOKEN", "CONSUL_HTTP_TOKEN"});
}

}  // namespace tenure::client
