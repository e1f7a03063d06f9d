// Decoders of the ACL endpoints' request bodies (PUT /v1/acl/token,
// /v1/acl/policy, /v1/acl/bootstrap, .../clone), Consul's field names read
// case-insensitively as Go does. Pure: what a body says, before any check
// against the Store or the clock; the fuzz targets feed them anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/types.h"

namespace tenure::http {

// A token's policy link: by ID or by Name (Consul resolves names when the
// token is written).
struct PolicyLink {
  std::string id;
  std::string name;
};

struct TokenRequest {
  std::string accessor_id;  // "" = not given
  std::string secret_id;    // "" = not given
  std::optional<std::string> description;
  std::vector<PolicyLink> policies;
  bool local = false;
  std::optional<UnixMs> expiration_time;
  std::optional<DurationNs> expiration_ttl;
};

// Errors: 400 "Token decoding failed: ...", and a clear 400 for what tenure
// does not serve (roles, service and node identities, auth methods).
Result<TokenRequest> ParseTokenRequest(std::string_view body);

struct PolicyRequest {
  std::string id;  // "" = not given
  std::string name;
  std::string description;
  std::string rules;
  std::vector<std::string> datacenters;
};

// Errors: 400 "Policy decoding failed: ...".
Result<PolicyRequest> ParsePolicyRequest(std::string_view body);

// PUT /v1/acl/bootstrap may name the management token's secret
// ({"BootstrapSecret": "<uuid>"}); nullopt when it does not.
Result<std::optional<std::string>> ParseBootstrapRequest(std::string_view body);

// True for a UUID in Consul's form (36 characters, hex and dashes).
bool IsUuid(std::string_view text);

}  // namespace tenure::http
