#include "http/acl_bodies.h"

#include <nlohmann/json.hpp>

#include "common/duration.h"
#include "common/limits.h"
#include "common/rfc3339.h"
#include "http/json_input.h"

namespace tenure::http {
namespace {

using Json = nlohmann::json;

Result<Json> ParseObject(std::string_view body, std::string_view what) {
  auto failed = [what](const std::string& why) {
    return Status::InvalidArgument(std::string(what) + " decoding failed: " + why);
  };
  if (body.size() > limits::kAclRulesBytesMax + 16 * 1024) {
    return Status::TooLarge(std::string(what) + " decoding failed: the body is larger than " +
                            std::to_string(limits::kAclRulesBytesMax + 16 * 1024) + " bytes");
  }
  if (body.empty()) return Json::object();
  Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return failed("invalid JSON");
  if (doc.is_null()) return Json::object();
  if (!doc.is_object()) return failed("the body must be a JSON object");
  return doc;
}

// A string field; absent and null read as nullopt.
Result<std::optional<std::string>> StringField(const Json& doc, std::string_view name,
                                               std::string_view what) {
  const Json* v = Field(doc, name);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (!v->is_string()) {
    return Status::InvalidArgument(std::string(what) + " decoding failed: " + std::string(name) +
                                   " must be a string");
  }
  return std::optional<std::string>(v->get<std::string>());
}

// Fields of Consul's that tenure does not serve: refused rather than
// dropped, so that nobody believes a token holds what it does not.
Status Unsupported(const Json& doc, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    const Json* v = Field(doc, name);
    if (v == nullptr || v->is_null()) continue;
    if ((v->is_array() || v->is_object()) && v->empty()) continue;
    if (v->is_string() && v->get<std::string>().empty()) continue;
    return Status::InvalidArgument(std::string(name) +
                                   " is not supported by tenure (ACL roles, identities, "
                                   "namespaces and auth methods are not served); link policies "
                                   "directly");
  }
  return Status::Ok();
}

}  // namespace

bool IsUuid(std::string_view id) {
  if (id.size() != 36) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const char c = id[i];
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (dash ? c != '-' : !hex) return false;
  }
  return true;
}

Result<TokenRequest> ParseTokenRequest(std::string_view body) {
  constexpr std::string_view kWhat = "Token";
  TENURE_ASSIGN_OR_RETURN(Json doc, ParseObject(body, kWhat));
  auto failed = [](const std::string& why) {
    return Status::InvalidArgument("Token decoding failed: " + why);
  };
  TENURE_RETURN_IF_ERROR(
      Unsupported(doc, {"Roles", "ServiceIdentities", "NodeIdentities", "TemplatedPolicies",
                        "AuthMethod", "Namespace", "Partition"}));
  TokenRequest token;
  TENURE_ASSIGN_OR_RETURN(std::optional<std::string> accessor,
                          StringField(doc, "AccessorID", kWhat));
  TENURE_ASSIGN_OR_RETURN(std::optional<std::string> secret, StringField(doc, "SecretID", kWhat));
  TENURE_ASSIGN_OR_RETURN(token.description, StringField(doc, "Description", kWhat));
  token.accessor_id = accessor.value_or("");
  token.secret_id = secret.value_or("");
  if (const Json* local = Field(doc, "Local"); local != nullptr && !local->is_null()) {
    if (!local->is_boolean()) return failed("Local must be true or false");
    token.local = local->get<bool>();
  }
  if (const Json* links = Field(doc, "Policies"); links != nullptr && !links->is_null()) {
    if (!links->is_array()) return failed("Policies must be a list of {\"ID\"} or {\"Name\"}");
    if (links->size() > limits::kAclPoliciesPerTokenMax) {
      return Status::InvalidArgument("Token decoding failed: more than " +
                                     std::to_string(limits::kAclPoliciesPerTokenMax) + " policies");
    }
    for (const Json& link : *links) {
      if (!link.is_object()) return failed("Policies must be a list of {\"ID\"} or {\"Name\"}");
      PolicyLink out;
      TENURE_ASSIGN_OR_RETURN(std::optional<std::string> id, StringField(link, "ID", kWhat));
      TENURE_ASSIGN_OR_RETURN(std::optional<std::string> name, StringField(link, "Name", kWhat));
      out.id = id.value_or("");
      out.name = name.value_or("");
      if (out.id.empty() && out.name.empty()) {
        return failed("a policy link needs an ID or a Name");
      }
      token.policies.push_back(std::move(out));
    }
  }
  TENURE_ASSIGN_OR_RETURN(std::optional<std::string> time,
                          StringField(doc, "ExpirationTime", kWhat));
  if (time && !time->empty()) {
    Result<UnixMs> parsed = ParseRfc3339(*time);
    if (!parsed.ok()) return failed(std::string(parsed.status().message()));
    token.expiration_time = *parsed;
  }
  if (const Json* ttl = Field(doc, "ExpirationTTL"); ttl != nullptr && !ttl->is_null()) {
    DurationNs ns = 0;
    if (ttl->is_string()) {
      if (!ttl->get<std::string>().empty()) {
        Result<DurationNs> parsed = ParseGoDuration(ttl->get<std::string>());
        if (!parsed.ok()) return failed("ExpirationTTL: " + std::string(parsed.status().message()));
        ns = *parsed;
      }
    } else if (ttl->is_number_integer()) {  // Go's time.Duration as nanoseconds
      ns = ttl->get<std::int64_t>();
    } else {
      return failed("ExpirationTTL must be a duration such as \"1h\"");
    }
    if (ns != 0) token.expiration_ttl = ns;
  }
  return token;
}

Result<PolicyRequest> ParsePolicyRequest(std::string_view body) {
  constexpr std::string_view kWhat = "Policy";
  TENURE_ASSIGN_OR_RETURN(Json doc, ParseObject(body, kWhat));
  TENURE_RETURN_IF_ERROR(Unsupported(doc, {"Namespace", "Partition"}));
  PolicyRequest policy;
  TENURE_ASSIGN_OR_RETURN(std::optional<std::string> id, StringField(doc, "ID", kWhat));
  TENURE_ASSIGN_OR_RETURN(std::optional<std::string> name, StringField(doc, "Name", kWhat));
  TENURE_ASSIGN_OR_RETURN(std::optional<std::string> description,
                          StringField(doc, "Description", kWhat));
  TENURE_ASSIGN_OR_RETURN(std::optional<std::string> rules, StringField(doc, "Rules", kWhat));
  policy.id = id.value_or("");
  policy.name = name.value_or("");
  policy.description = description.value_or("");
  policy.rules = rules.value_or("");
  if (const Json* dcs = Field(doc, "Datacenters"); dcs != nullptr && !dcs->is_null()) {
    if (!dcs->is_array() || dcs->size() > 64) {
      return Status::InvalidArgument("Policy decoding failed: Datacenters must be a list of names");
    }
    for (const Json& dc : *dcs) {
      if (!dc.is_string()) {
        return Status::InvalidArgument(
            "Policy decoding failed: Datacenters must be a list of names");
      }
      policy.datacenters.push_back(dc.get<std::string>());
    }
  }
  return policy;
}

Result<std::optional<std::string>> ParseBootstrapRequest(std::string_view body) {
  TENURE_ASSIGN_OR_RETURN(Json doc, ParseObject(body, "Bootstrap"));
  return StringField(doc, "BootstrapSecret", "Bootstrap");
}

}  // namespace tenure::http
