// Shared by the tests of agent::ResolveAgentConfig (config_test.cc,
// config_checks_test.cc): a minimal configuration that resolves, and the
// text a refused one answers with.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "agent/config.h"

namespace tenure::testutil {

inline agent::AgentConfig Good() {
  agent::AgentConfig config;
  config.data_dir = "/var/lib/tenure";
  config.node_name = "n1";
  return config;
}

// "accepted", or the refusal's message (which must be kInvalidArgument).
inline std::string Refusal(const agent::AgentConfig& config) {
  Result<agent::AgentPlan> plan = agent::ResolveAgentConfig(config);
  if (plan.ok()) return "accepted";
  EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
  return std::string(plan.status().message());
}

}  // namespace tenure::testutil
