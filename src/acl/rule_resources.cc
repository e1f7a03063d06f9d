#include "acl/rule_resources.h"

#include "common/strings.h"

namespace tenure::acl {
namespace {

constexpr bool kLabeled = true;
constexpr bool kUnlabeled = false;

constexpr ResourceInfo kResources[] = {
    {"acl", kUnlabeled, false, false, false, nullptr, &Rules::acl_rule},
    {"agent", kLabeled, false, false, false, &Rules::agents, nullptr},
    {"agent_prefix", kLabeled, true, false, false, &Rules::agents, nullptr},
    {"event", kLabeled, false, false, false, nullptr, nullptr},
    {"event_prefix", kLabeled, true, false, false, nullptr, nullptr},
    {"identity", kLabeled, false, false, true, nullptr, nullptr},
    {"identity_prefix", kLabeled, true, false, true, nullptr, nullptr},
    {"key", kLabeled, false, true, false, &Rules::keys, nullptr},
    {"key_prefix", kLabeled, true, true, false, &Rules::keys, nullptr},
    {"keyring", kUnlabeled, false, false, false, nullptr, nullptr},
    {"mesh", kUnlabeled, false, false, false, nullptr, nullptr},
    {"node", kLabeled, false, false, false, &Rules::nodes, nullptr},
    {"node_prefix", kLabeled, true, false, false, &Rules::nodes, nullptr},
    {"operator", kUnlabeled, false, false, false, nullptr, &Rules::operator_rule},
    {"peering", kUnlabeled, false, false, false, nullptr, nullptr},
    {"query", kLabeled, false, false, false, nullptr, nullptr},
    {"query_prefix", kLabeled, true, false, false, nullptr, nullptr},
    {"service", kLabeled, false, false, true, nullptr, nullptr},
    {"service_prefix", kLabeled, true, false, true, nullptr, nullptr},
    {"session", kLabeled, false, false, false, &Rules::sessions, nullptr},
    {"session_prefix", kLabeled, true, false, false, &Rules::sessions, nullptr},
};

}  // namespace

const ResourceInfo* FindResource(std::string_view name) {
  for (const ResourceInfo& info : kResources) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::string UnknownResource(std::string_view name) {
  if (name == "namespace" || name == "namespace_prefix" || name == "partition" ||
      name == "partition_prefix") {
    return GoQuote(name) +
           " rules are a Consul Enterprise feature; tenure has no namespaces or "
           "partitions";
  }
  std::string known;
  for (const ResourceInfo& info : kResources) {
    if (!known.empty()) known += ", ";
    known += info.name;
  }
  return "unknown resource " + GoQuote(name) + "; expected one of " + known;
}

}  // namespace tenure::acl
