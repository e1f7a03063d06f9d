// Fuzz target: the ACL endpoints' request bodies and the RFC 3339 times they
// carry, chosen by the first byte: token, policy and bootstrap bodies, and
// ExpirationTime. A decoded body must be within the limits the server relies
// on, and a parsed time must format and parse back to the same instant.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/limits.h"
#include "common/rfc3339.h"
#include "fuzz_check.h"
#include "http/acl_bodies.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto token = tenure::http::ParseTokenRequest(text);
      if (token.ok()) {
        FUZZ_CHECK(token->policies.size() <= tenure::limits::kAclPoliciesPerTokenMax);
        for (const auto& link : token->policies) FUZZ_CHECK(!link.id.empty() || !link.name.empty());
      }
      break;
    }
    case 1:
      (void)tenure::http::ParsePolicyRequest(text);
      break;
    case 2:
      (void)tenure::http::ParseBootstrapRequest(text);
      (void)tenure::http::IsUuid(text);
      break;
    case 3: {
      auto time = tenure::ParseRfc3339(text);
      if (time.ok()) {
        auto again = tenure::ParseRfc3339(tenure::FormatRfc3339(*time));
        FUZZ_CHECK(again.ok());
        FUZZ_CHECK(*again == *time);
      }
      break;
    }
  }
  return 0;
}
