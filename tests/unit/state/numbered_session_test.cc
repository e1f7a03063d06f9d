// Numbered sessions (decision 0048, section 3): an etcd lease's int64 as a
// UUID with a zero upper half, told apart from the leader's own ids by its
// shape alone, and etcd's TTL range for them in the field limits.
#include "state/numbered_session.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "common/limits.h"
#include "state/field_limits.h"

namespace tenure::state {
namespace {

TEST(NumberedSessionTest, ANumberIsItsSixteenHexDigitsAfterAZeroUpperHalf) {
  EXPECT_EQ(NumberedSessionId(1).view(), "00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(NumberedSessionId(0x694d77aa9e38260fll).view(), "00000000-0000-0000-694d-77aa9e38260f");
  EXPECT_EQ(NumberedSessionId(-1).view(), "00000000-0000-0000-ffff-ffffffffffff");
  for (std::int64_t n :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, std::int64_t{7587},
        std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()}) {
    const SessionId id = NumberedSessionId(n);
    EXPECT_TRUE(IsNumberedSession(id)) << id.view();
    EXPECT_EQ(SessionNumber(id.view()), n) << id.view();
  }
}

TEST(NumberedSessionTest, OtherIdsAreNotNumbered) {
  for (const char* id : {"", "1", "2b5f68a0-1e80-4c2a-8f3e-0d1a9c7b6e55",  // a leader's
                         "00000000-0000-0000-0000-00000000000",            // one short
                         "00000000-0000-0000-0000-0000000000001",          // one long
                         "00000000-0000-0000-0000-00000000000A",           // upper case
                         "00000000-0000-0000-0000_000000000001",           // no dash
                         "00000000-0000-0001-0000-000000000001",           // upper half
                         "00000000-0000-0000-00g0-000000000001"}) {
    EXPECT_FALSE(IsNumberedSession(std::string_view(id))) << id;
    EXPECT_EQ(SessionNumber(id), std::nullopt) << id;
  }
}

Session WithTtl(SessionId id, const std::string& ttl, DurationNs ttl_ns) {
  Session s;
  s.id = std::move(id);
  s.ttl = ttl;
  s.ttl_ns = ttl_ns;
  return s;
}

TEST(NumberedSessionTest, LeasesHaveEtcdsTtlRangeAndConsulSessionsKeepTheirs) {
  const SessionId lease = NumberedSessionId(42);
  EXPECT_TRUE(CheckSessionFields(WithTtl(lease, "2s", 2 * kNsPerSecond)).ok());
  EXPECT_TRUE(CheckSessionFields(WithTtl(lease, "9000000000s", limits::kLeaseTtlMaxNs)).ok());
  const Status short_ttl = CheckSessionFields(WithTtl(lease, "1s", kNsPerSecond));
  EXPECT_EQ(short_ttl.code(), Code::kInvalidArgument);
  EXPECT_NE(short_ttl.message().find("outside [2s, 9000000000s]"), std::string::npos)
      << short_ttl.ToString();
  EXPECT_FALSE(CheckSessionFields(WithTtl(lease, "", 0)).ok()) << "a lease without a TTL";
  // A Consul session keeps Consul's range: 2 s is too short for it.
  const SessionId consul("2b5f68a0-1e80-4c2a-8f3e-0d1a9c7b6e55");
  EXPECT_FALSE(CheckSessionFields(WithTtl(consul, "2s", 2 * kNsPerSecond)).ok());
  EXPECT_TRUE(CheckSessionFields(WithTtl(consul, "10s", 10 * kNsPerSecond)).ok());
}

}  // namespace
}  // namespace tenure::state
