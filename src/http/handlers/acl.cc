// /v1/acl/*: bootstrap, tokens and policies, with Consul's paths, methods,
// JSON and permissions (docs/acl.md): reads need acl:read, writes acl:write,
// /v1/acl/token/self only the token itself, the bootstrap nothing. Every
// answer is 401 "ACL support disabled" while ACLs are off. Names a client
// gives are checked against the leader's Store before anything is
// proposed; the Store checks again when it applies (state/acl_table.h).
#include <algorithm>

#include "common/consul_texts.h"
#include "common/duration.h"
#include "common/limits.h"
#include "common/rfc3339.h"
#include "http/acl_bodies.h"
#include "http/api.h"
#include "http/json.h"

namespace tenure::http {
namespace {

// The answers below say what Consul says where it has a text.
Status Invalid(std::string text) { return Status::InvalidArgument(std::move(text)); }

bool RefusedWhileDisabled(const server::Server& server, Call& call) {
  if (server.acl_config().enabled) return false;
  call.Reply(HttpResponse::Text(401, std::string(consul::kAclDisabled)));
  return true;
}

std::string TokenBody(const state::AclToken& token, const state::AclTable& table,
                      bool show_secret) {
  std::string body;
  json::AppendAclToken(&body, token, table, show_secret);
  return body;
}

std::string PolicyBody(const state::AclPolicy& policy) {
  std::string body;
  json::AppendAclPolicy(&body, policy, /*with_rules=*/true);
  return body;
}

// A list within the answer-size limit, or 413.
template <typename Items, typename Append>
HttpResponse ListAnswer(const Items& items, Append append, std::string_view what) {
  std::string body = "[";
  for (const auto& item : items) {
    if (body.size() > 1) body += ',';
    append(&body, item);
    if (body.size() > limits::kHttpResponseBytesMax) {
      return ErrorResponse(
          consul::ResponseTooLarge(limits::kHttpResponseBytesMax, "; " + std::string(what)));
    }
  }
  body += ']';
  return HttpResponse::Json(std::move(body));
}

// Path arguments: "<accessor>", "<accessor>/clone", "self"; "<id>", "name/<name>".
constexpr std::string_view kCloneSuffix = "/clone";
constexpr std::string_view kByNamePrefix = "name/";

}  // namespace

// --- Bootstrap ---------------------------------------------------------------------

void Api::AclBootstrap(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  Result<std::optional<std::string>> secret = ParseBootstrapRequest(call->request->body);
  if (call->Failed(secret)) return;
  if (*secret && !IsUuid(**secret)) {
    call->ReplyError(Invalid("BootstrapSecret must be a UUID"));
    return;
  }
  Result<LogIndex> reset = server_.BootstrapResetIndex();
  if (!reset.ok()) {
    call->ReplyError(Status::Internal(std::string(reset.status().message())));
    return;
  }
  const state::AclTable& table = server_.store().acl();
  // Refused here without a log entry; the Store refuses the same if another
  // bootstrap commits first.
  if (!table.bootstrap_index().is_none() && *reset != table.bootstrap_index()) {
    call->ReplyError(consul::AclBootstrapNoLongerAllowed(table.bootstrap_index().value()));
    return;
  }
  state::AclToken token;
  do {
    token.accessor_id = server::Server::NewSecretUuid();
  } while (table.FindToken(token.accessor_id) != nullptr);
  token.secret_id = secret->value_or(server::Server::NewSecretUuid());
  token.description = "Bootstrap Token (Global Management)";
  token.create_time = server_.clock().NowUnixMs();
  std::string accessor = token.accessor_id;
  const LogIndex reset_index = *reset;
  ProposeThen(call, state::AclBootstrap{std::move(token), reset_index},
              [this, call, accessor, reset_index](const state::ApplyResult& result) {
                if (!result.status.ok()) {
                  call->ReplyError(result.status);
                  return;
                }
                if (!reset_index.is_none()) server_.ForgetBootstrapReset();
                const state::AclTable& now = server_.store().acl();
                const state::AclToken* made = now.FindToken(accessor);
                if (made == nullptr) {  // deleted by a later entry already
                  call->ReplyError(consul::AclNotFound());
                  return;
                }
                call->Reply(HttpResponse::Json(TokenBody(*made, now, true)));
              });
}

// --- Tokens ------------------------------------------------------------------------

// The token a create, update or clone writes, checked against the leader's
// Store and clock. `existing` is the token being updated (null: create).
Result<state::AclToken> Api::AclTokenToWrite(const TokenRequest& request,
                                             const state::AclToken* existing) const {
  const state::AclTable& table = server_.store().acl();
  const server::AclConfig& config = server_.acl_config();
  const UnixMs now = server_.clock().NowUnixMs();
  state::AclToken token;
  if (existing != nullptr) token = *existing;
  if (!request.accessor_id.empty() && !IsUuid(request.accessor_id)) {
    return Invalid("Invalid Token: AccessorID must be a UUID");
  }
  if (!request.secret_id.empty() && !IsUuid(request.secret_id)) {
    return Invalid("Invalid Token: SecretID must be a UUID");
  }
  if (existing == nullptr) {
    token.accessor_id = request.accessor_id;
    if (token.accessor_id.empty()) {
      do {
        token.accessor_id = server::Server::NewSecretUuid();
      } while (table.FindToken(token.accessor_id) != nullptr);
    } else if (table.FindToken(token.accessor_id) != nullptr) {
      return Invalid("Invalid Token: AccessorID is already in use");
    }
    token.secret_id =
        request.secret_id.empty() ? server::Server::NewSecretUuid() : request.secret_id;
    token.local = request.local;
    token.create_time = now;
    if (request.expiration_ttl && request.expiration_time) {
      return Invalid("Expiration TTL and Expiration Time cannot both be set");
    }
    const DurationNs min_ns = config.token_min_expiration_ttl_ns;
    const DurationNs max_ns = config.token_max_expiration_ttl_ns;
    if (request.expiration_ttl) {
      if (*request.expiration_ttl < min_ns || *request.expiration_ttl > max_ns) {
        return Invalid("Token Expiration TTL '" + FormatGoDuration(*request.expiration_ttl) +
                       "' should be between " + FormatGoDuration(min_ns) + " and " +
                       FormatGoDuration(max_ns));
      }
      token.expiration_time = now + *request.expiration_ttl / kNsPerMs;
    } else if (request.expiration_time) {
      if (*request.expiration_time < now) return Invalid("ExpirationTime cannot be in the past");
      if (*request.expiration_time - now > max_ns / kNsPerMs) {
        return Invalid("ExpirationTime cannot be more than " + FormatGoDuration(max_ns) +
                       " in the future");
      }
      token.expiration_time = *request.expiration_time;
    }
  } else {
    if (!request.accessor_id.empty() && request.accessor_id != existing->accessor_id) {
      return Invalid("AccessorID in URL and payload do not match");
    }
    if (!request.secret_id.empty()) token.secret_id = request.secret_id;
    token.local = request.local;
    if ((request.expiration_time && *request.expiration_time != existing->expiration_time) ||
        request.expiration_ttl) {
      return Invalid("Cannot change expiration time of " + existing->accessor_id);
    }
  }
  if (request.description) token.description = *request.description;
  token.policy_ids.clear();
  for (const PolicyLink& link : request.policies) {
    const state::AclPolicy* policy = nullptr;
    if (!link.id.empty()) {
      policy = table.FindPolicy(link.id);
      if (policy == nullptr) return Invalid("No such ACL policy with ID " + GoQuote(link.id));
    } else {
      policy = table.FindPolicyByName(link.name);
      if (policy == nullptr) return Invalid("No such ACL policy with name " + GoQuote(link.name));
    }
    if (std::find(token.policy_ids.begin(), token.policy_ids.end(), policy->id) ==
        token.policy_ids.end()) {
      token.policy_ids.push_back(policy->id);
    }
  }
  return token;
}

void Api::WriteAclToken(const CallPtr& call, state::AclToken token) {
  std::string accessor = token.accessor_id;
  ProposeThen(call, state::AclTokenSet{std::move(token)},
              [this, call, accessor](const state::ApplyResult& result) {
                if (!result.status.ok()) {
                  call->ReplyError(result.status);
                  return;
                }
                const state::AclTable& table = server_.store().acl();
                const state::AclToken* written = table.FindToken(accessor);
                if (written == nullptr) {
                  call->ReplyError(consul::AclNotFound());
                  return;
                }
                call->Reply(HttpResponse::Json(TokenBody(*written, table, true)));
              });
}

void Api::AclTokenCreate(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  Result<TokenRequest> request = ParseTokenRequest(call->request->body);
  if (call->Failed(request)) return;
  Result<state::AclToken> token = AclTokenToWrite(*request, nullptr);
  if (call->Failed(token)) return;
  WriteAclToken(call, std::move(*token));
}

void Api::AclTokenRead(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  const bool self = call->arg == "self";
  BlockingRead(call, {server::WatchKind::kAcl, "tokens"}, [this, call, self] {
    const state::AclTable& table = server_.store().acl();
    const state::AclToken* token = nullptr;
    if (self) {
      // The caller holds this token's secret: it may see it, and nothing
      // else. Without a secret there is no token of its own to show (Consul
      // looks the empty secret up and finds none).
      if (!call->caller.sent_token) return ErrorResponse(consul::AclNotFound());
      token = table.FindToken(call->caller.accessor_id());
    } else {
      if (acl::Decision d = call->caller.can().AclRead(); !d.allowed()) {
        return ErrorResponse(call->caller.Denied(d, ""));
      }
      token = table.FindToken(call->arg);
    }
    if (token == nullptr) return ErrorResponse(consul::AclNotFound());
    const bool show_secret = self || call->caller.can().AclWrite().allowed();
    HttpResponse response = HttpResponse::Json(TokenBody(*token, table, show_secret));
    SetMeta(&response, table.tokens_index());
    return response;
  });
}

void Api::AclTokenUpdate(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  Result<TokenRequest> request = ParseTokenRequest(call->request->body);
  if (call->Failed(request)) return;
  const state::AclTable& table = server_.store().acl();
  std::string_view arg = call->arg;
  const bool clone = arg.size() > kCloneSuffix.size() && arg.ends_with(kCloneSuffix);
  if (clone) arg.remove_suffix(kCloneSuffix.size());
  const state::AclToken* existing = table.FindToken(arg);
  if (existing == nullptr) {
    call->ReplyError(consul::AclNotFound());
    return;
  }
  if (!clone) {
    Result<state::AclToken> token = AclTokenToWrite(*request, existing);
    if (call->Failed(token)) return;
    WriteAclToken(call, std::move(*token));
    return;
  }
  // A clone: the source's policies, locality and expiry under new IDs; the
  // description is the body's when it gives one.
  TokenRequest copy;
  copy.description = request->description.value_or(existing->description);
  copy.local = existing->local;
  for (const std::string& id : existing->policy_ids) {
    if (table.FindPolicy(id) != nullptr) copy.policies.push_back({id, ""});
  }
  Result<state::AclToken> token = AclTokenToWrite(copy, nullptr);
  if (call->Failed(token)) return;
  token->expiration_time = existing->expiration_time;
  WriteAclToken(call, std::move(*token));
}

void Api::AclTokenDelete(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  if (server_.store().acl().FindToken(call->arg) == nullptr) {
    call->ReplyError(consul::AclNotFound());
    return;
  }
  ProposeThen(call, state::AclTokenDelete{call->arg, state::AclTokenDeleteReason::kDeleted},
              [call](const state::ApplyResult& result) {
                if (!result.status.ok()) {
                  call->ReplyError(result.status);
                  return;
                }
                call->Reply(HttpResponse::Json("true"));
              });
}

void Api::AclTokenList(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  // Read now: a parked query gives its request back (decision 0034).
  std::string policy(call->request->Query("policy").value_or(""));
  BlockingRead(call, {server::WatchKind::kAcl, "tokens"}, [this, call, policy] {
    if (acl::Decision d = call->caller.can().AclRead(); !d.allowed()) {
      return ErrorResponse(call->caller.Denied(d, ""));
    }
    const state::AclTable& table = server_.store().acl();
    const bool show_secrets = call->caller.can().AclWrite().allowed();
    std::vector<const state::AclToken*> tokens;
    for (const auto& [accessor, token] : table.tokens()) {
      if (!policy.empty() && std::find(token.policy_ids.begin(), token.policy_ids.end(), policy) ==
                                 token.policy_ids.end()) {
        continue;
      }
      tokens.push_back(&token);
    }
    HttpResponse response = ListAnswer(
        tokens,
        [&](std::string* out, const state::AclToken* token) {
          json::AppendAclToken(out, *token, table, show_secrets);
        },
        "list the tokens of one policy with ?policy=<ID>");
    SetMeta(&response, table.tokens_index());
    return response;
  });
}

// --- Policies ----------------------------------------------------------------------

Result<state::AclPolicy> Api::AclPolicyToWrite(const PolicyRequest& request,
                                               const state::AclPolicy* existing) const {
  const state::AclTable& table = server_.store().acl();
  state::AclPolicy policy;
  if (existing != nullptr) {
    if (!request.id.empty() && request.id != existing->id) {
      return Invalid("Policy ID in URL and payload do not match");
    }
    policy.id = existing->id;
  } else {
    if (!request.id.empty()) return Invalid("Cannot specify an ID in Policy Creation");
    do {
      policy.id = server::Server::NewSecretUuid();
    } while (table.FindPolicy(policy.id) != nullptr);
  }
  if (request.name.empty()) return Invalid("Invalid Policy: no Name is set");
  // One datacenter is served: a policy meant for others only would apply
  // here if it were accepted.
  const std::string& dc = server_.options().datacenter;
  if (!request.datacenters.empty() &&
      std::find(request.datacenters.begin(), request.datacenters.end(), dc) ==
          request.datacenters.end()) {
    return Invalid("Invalid Policy: Datacenters does not include this server's datacenter " +
                   GoQuote(dc) + " (tenure serves one datacenter)");
  }
  if (Result<acl::Rules> rules = acl::ParseRules(request.rules); !rules.ok()) {
    if (rules.status().code() == Code::kTooLarge) return rules.status();
    return Invalid("Failed to parse ACL rules: " + std::string(rules.status().message()));
  }
  policy.name = request.name;
  policy.description = request.description;
  policy.rules = request.rules;
  return policy;
}

void Api::WriteAclPolicy(const CallPtr& call, state::AclPolicy policy) {
  std::string id = policy.id;
  ProposeThen(call, state::AclPolicySet{std::move(policy)},
              [this, call, id](const state::ApplyResult& result) {
                if (!result.status.ok()) {
                  call->ReplyError(result.status);
                  return;
                }
                const state::AclPolicy* written = server_.store().acl().FindPolicy(id);
                if (written == nullptr) {
                  call->ReplyError(consul::AclNotFound());
                  return;
                }
                call->Reply(HttpResponse::Json(PolicyBody(*written)));
              });
}

void Api::AclPolicyCreate(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  Result<PolicyRequest> request = ParsePolicyRequest(call->request->body);
  if (call->Failed(request)) return;
  Result<state::AclPolicy> policy = AclPolicyToWrite(*request, nullptr);
  if (call->Failed(policy)) return;
  WriteAclPolicy(call, std::move(*policy));
}

void Api::AclPolicyRead(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  BlockingRead(call, {server::WatchKind::kAcl, "policies"}, [this, call] {
    if (acl::Decision d = call->caller.can().AclRead(); !d.allowed()) {
      return ErrorResponse(call->caller.Denied(d, ""));
    }
    const state::AclTable& table = server_.store().acl();
    const std::string_view arg = call->arg;
    const state::AclPolicy* policy = arg.starts_with(kByNamePrefix)
                                         ? table.FindPolicyByName(arg.substr(kByNamePrefix.size()))
                                         : table.FindPolicy(arg);
    if (policy == nullptr) return ErrorResponse(consul::AclNotFound());
    HttpResponse response = HttpResponse::Json(PolicyBody(*policy));
    SetMeta(&response, table.policies_index());
    return response;
  });
}

void Api::AclPolicyUpdate(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  Result<PolicyRequest> request = ParsePolicyRequest(call->request->body);
  if (call->Failed(request)) return;
  const state::AclPolicy* existing = server_.store().acl().FindPolicy(call->arg);
  if (existing == nullptr) {
    call->ReplyError(consul::AclNotFound());
    return;
  }
  Result<state::AclPolicy> policy = AclPolicyToWrite(*request, existing);
  if (call->Failed(policy)) return;
  WriteAclPolicy(call, std::move(*policy));
}

void Api::AclPolicyDelete(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  if (call->Deny(call->caller.can().AclWrite(), "")) return;
  if (server_.store().acl().FindPolicy(call->arg) == nullptr) {
    call->ReplyError(consul::AclNotFound());
    return;
  }
  ProposeThen(call, state::AclPolicyDelete{call->arg}, [call](const state::ApplyResult& result) {
    if (!result.status.ok()) {
      call->ReplyError(result.status);
      return;
    }
    call->Reply(HttpResponse::Json("true"));
  });
}

void Api::AclPolicyList(const CallPtr& call) {
  if (RefusedWhileDisabled(server_, *call)) return;
  BlockingRead(call, {server::WatchKind::kAcl, "policies"}, [this, call] {
    if (acl::Decision d = call->caller.can().AclRead(); !d.allowed()) {
      return ErrorResponse(call->caller.Denied(d, ""));
    }
    const state::AclTable& table = server_.store().acl();
    std::vector<const state::AclPolicy*> policies;
    for (const auto& [id, policy] : table.policies()) policies.push_back(&policy);
    HttpResponse response = ListAnswer(
        policies,
        [](std::string* out, const state::AclPolicy* policy) {
          json::AppendAclPolicy(out, *policy, /*with_rules=*/false);
        },
        "read policies one at a time");
    SetMeta(&response, table.policies_index());
    return response;
  });
}

}  // namespace tenure::http
