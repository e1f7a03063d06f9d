// Forged states for the restore checks (state/field_limits.h, docs/snapshots.md
// "What a restore accepts"): a valid state holding one of everything, and
// TEST_StoreEditor, which sets a field of it behind Apply's back as a crafted
// file would. Each Forged case is that state with one field past one limit,
// and the words its refusal names; the real encoder then writes its bytes
// (Store::EncodeSnapshot, state::EncodeBackup). Used by the unit tests
// (restore_limits_test.cc), the fuzz seeds (tests/fuzz/make_seeds.cc) and the
// files the integration test restores (tests/fuzz/forge_snapshots.cc).
// Test-only; no gtest, so that the tools link without it.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/limits.h"
#include "common/types.h"
#include "state/acl_table.h"
#include "state/command.h"
#include "state/lock_history.h"
#include "state/store.h"

namespace tenure::state {

class TEST_StoreEditor {
 public:
  explicit TEST_StoreEditor(Store* store) : s_(*store) {}

  void SetAppliedIndex(std::uint64_t index) { s_.applied_index_ = LogIndex(index); }
  void SetNow(ClusterMs now) { s_.now_ms_ = now; }
  KvEntry& Entry(const std::string& key) { return s_.kv_.at(key); }
  // A new unlocked entry written at the KV table's index.
  void PutEntry(const std::string& key, std::string value) {
    KvEntry entry;
    entry.key = key;
    entry.value = std::move(value);
    entry.create_index = entry.modify_index = s_.kv_index_;
    entry.version = 1;
    s_.kv_[key] = std::move(entry);
  }
  void PutTombstone(const std::string& key) { s_.tombstones_[key] = s_.kv_index_; }
  void SetLockDelay(const std::string& key, ClusterMs until) { s_.lock_delays_[key] = until; }
  void EditSession(const SessionId& id, const std::function<void(Session&)>& edit) {
    auto node = s_.sessions_.extract(s_.sessions_.find(id));
    edit(node.value());
    s_.sessions_.insert(std::move(node));
  }
  QueueWaiter& Waiter(const std::string& key) { return s_.queues_.at(key).front(); }
  LockGrant& Grant(const std::string& key, std::size_t i) {
    return s_.history_.keys_.at(key).grants.at(i);
  }
  AclToken& Token(const std::string& accessor) { return s_.acl_.tokens_.at(accessor); }
  ZkNode& ZkRecord(const std::string& path) { return s_.zk_nodes_[path]; }
  AclPolicy& Policy(const std::string& id) { return s_.acl_.policies_.at(id); }
  // `n` more policies named p<i>, each with `rules`.
  void AddPolicies(std::size_t n, const std::string& rules) {
    for (std::size_t i = 0; i < n; ++i) {
      AclPolicy p;
      p.id = "forged-" + std::to_string(i);
      p.name = "p" + std::to_string(i);
      p.rules = rules;
      p.create_index = p.modify_index = s_.acl_.policies_index_;
      s_.acl_.names_[p.name] = p.id;
      s_.acl_.policies_[p.id] = std::move(p);
    }
  }

 private:
  Store& s_;
};

namespace testutil {

// The valid state the forged ones start from, at applied index 40 with the
// replicated clock at kForgedNow and every entry's wall clock at
// kForgedWall: keys, a tombstone, a TTL session holding
// service/leader (history: one open grant), an idle session, a lock-delay
// window on service/other (history: one ended grant), a waiter queued for
// service/leader, the ACL built-ins, a policy and an expiring token.
inline constexpr ClusterMs kForgedNow = ClusterMs(1'700'000'000'000);
inline constexpr UnixMs kForgedWall = UnixMs(1'700'000'000'000);
inline const SessionId kForgedHolder("00000000-0000-4000-8000-00000000f001");
inline const SessionId kForgedIdle("00000000-0000-4000-8000-00000000f002");
inline const SessionId kForgedWaiter("00000000-0000-4000-8000-00000000f003");
inline constexpr char kForgedTokenAccessor[] = "00000000-0000-4000-8000-0000000a0001";
inline constexpr char kForgedPolicyId[] = "00000000-0000-4000-8000-0000000b0001";

inline Session ForgedSession(const SessionId& id, DurationNs lock_delay_ns) {
  Session s;
  s.id = id;
  s.name = "forged";
  s.node = "node1";
  s.ttl = "15s";
  s.ttl_ns = 15 * kNsPerSecond;
  s.lock_delay_ns = lock_delay_ns;
  s.checks.set_node({"serfHealth"});
  return s;
}

inline Store ForgedBase() {
  Store s;
  std::uint64_t index = 0;
  auto apply = [&](CommandBody body) {
    return s.Apply({kForgedNow, std::move(body), kForgedWall}, LogIndex(++index));
  };
  const SessionId other("00000000-0000-4000-8000-00000000f004");
  apply(KvSet{"config/a", "1", 0});
  apply(KvSet{"gone", "x", 0});
  apply(KvDelete{"gone", false, LogIndex()});
  apply(SessionCreate{ForgedSession(kForgedHolder, 0)});
  apply(KvAcquire{"service/leader", "me", 0, kForgedHolder});
  apply(SessionCreate{ForgedSession(other, 15 * kNsPerSecond)});
  apply(KvAcquire{"service/other", "", 0, other});
  apply(SessionDestroy{other, DestroyReason::kDestroyed});
  apply(SessionCreate{ForgedSession(kForgedIdle, 0)});
  apply(SessionCreate{ForgedSession(kForgedWaiter, 0)});
  apply(KvEnqueue{"service/leader", "next", 0, kForgedWaiter, false});
  apply(AclSetup{});
  AclPolicy policy;
  policy.id = kForgedPolicyId;
  policy.name = "readers";
  policy.rules = "key_prefix \"\" { policy = \"read\" }";
  apply(AclPolicySet{policy});
  AclToken token;
  token.accessor_id = kForgedTokenAccessor;
  token.secret_id = "00000000-0000-4000-8000-0000000c0001";
  token.policy_ids = {kForgedPolicyId};
  token.create_time = kForgedWall;
  token.expiration_time = kForgedWall + 3'600'000;
  apply(AclTokenSet{token});
  while (index < 40) apply(KvSet{"config/b", std::to_string(index), 0});
  return s;
}

// One forged state: its name (a file name), the edit that breaks one field
// of ForgedBase, and words the refusal must contain.
struct Forged {
  std::string name;
  std::function<void(TEST_StoreEditor&)> edit;
  std::string refusal;
};

inline std::vector<Forged> ForgedCases() {
  using E = TEST_StoreEditor;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const std::string holder = "session \"" + kForgedHolder.str() + "\": ";
  const std::string idle = "session \"" + kForgedIdle.str() + "\": ";
  auto session = [](const SessionId& id, std::function<void(Session&)> edit) {
    return [id, edit](E& e) { e.EditSession(id, edit); };
  };
  const std::string token = "ACL token \"" + std::string(kForgedTokenAccessor) + "\": ";
  return {
      // Indexes: room to grow (the reproduction: 2^62 - 1).
      {"applied-index-2p62-1", [](E& e) { e.SetAppliedIndex((std::uint64_t{1} << 62) - 1); },
       "applied index 4611686018427387903 is above 9007199254740991 (2^53 - 1)"},
      {"applied-index-2p53", [](E& e) { e.SetAppliedIndex(std::uint64_t{1} << 53); },
       "applied index 9007199254740992 is above 9007199254740991"},
      {"lock-index-2p53", [](E& e) { e.Entry("config/a").lock_index = std::uint64_t{1} << 53; },
       "key \"config/a\": LockIndex 9007199254740992 is above 9007199254740991"},
      // A key's version (decision 0048): at least 1, room to grow.
      {"version-0", [](E& e) { e.Entry("config/a").version = 0; },
       "key \"config/a\": version 0 is below 1, the version a key is created with"},
      {"version-2p53", [](E& e) { e.Entry("config/a").version = std::uint64_t{1} << 53; },
       "key \"config/a\": version 9007199254740992 is above 9007199254740991"},
      // Times.
      {"clock-int64-max", [=](E& e) { e.SetNow(ClusterMs(kMax)); },
       "the replicated clock 9223372036854775807 ms is outside [0, 253402300799999]"},
      {"clock-negative", [](E& e) { e.SetNow(ClusterMs(-1)); },
       "the replicated clock -1 ms is outside [0, 253402300799999]"},
      {"lock-delay-int64-max", [=](E& e) { e.SetLockDelay("service/other", ClusterMs(kMax)); },
       "lock-delay window of key \"service/other\": end 9223372036854775807 ms is outside [0, "
       "253402300799999]"},
      {"lock-delay-past-60s", [](E& e) { e.SetLockDelay("service/other", kForgedNow + 60'001); },
       "lock-delay window of key \"service/other\": end 1700000060001 ms is more than 60s after "
       "the replicated clock (1700000000000 ms)"},
      // Wall-clock times people read: their range only (decision 0037: a
      // leader's wall clock may be behind the last one's).
      {"queue-since-negative", [](E& e) { e.Waiter("service/leader").since = UnixMs(-1); },
       "waiter \"" + kForgedWaiter.str() + "\" since -1 ms is outside the years 1970 to 9999"},
      {"history-granted-int64-min",
       [=](E& e) { e.Grant("service/leader", 0).granted_at = UnixMs(kMin); },
       "history of key \"service/leader\": the grant at index 5 was granted at "
       "-9223372036854775808 ms is outside the years 1970 to 9999"},
      {"history-ended-int64-max",
       [=](E& e) { e.Grant("service/other", 0).ended_at = UnixMs(kMax); },
       "history of key \"service/other\": the grant at index 7 ended at 9223372036854775807 ms "
       "is outside the years 1970 to 9999"},
      {"token-create-time-negative",
       [](E& e) { e.Token(kForgedTokenAccessor).create_time = UnixMs(kMin); },
       token + "CreateTime -9223372036854775808 ms is outside the years 1970 to 9999"},
      {"token-expires-before-creation",
       [](E& e) { e.Token(kForgedTokenAccessor).expiration_time = kForgedWall - 1; },
       token + "ExpirationTime 1699999999999 ms is before its CreateTime 1700000000000 ms"},
      // Sessions (the reproductions: TTL INT64_MAX shown as "10s", INT64_MIN).
      {"ttl-int64-max",
       session(kForgedHolder,
               [=](Session& s) {
                 s.ttl = "10s";
                 s.ttl_ns = kMax;
               }),
       holder + "TTL 9223372036854775807 ns is outside [10s, 24h]"},
      {"ttl-int64-min",
       session(kForgedHolder,
               [=](Session& s) {
                 s.ttl = "10s";
                 s.ttl_ns = kMin;
               }),
       holder + "TTL -9223372036854775808 ns is outside [10s, 24h]"},
      {"ttl-below-10s",
       session(kForgedIdle,
               [](Session& s) {
                 s.ttl = "9s";
                 s.ttl_ns = 9 * kNsPerSecond;
               }),
       idle + "TTL 9000000000 ns is outside [10s, 24h]"},
      {"ttl-above-24h",
       session(kForgedIdle,
               [](Session& s) {
                 s.ttl = "24h0m0.000000001s";
                 s.ttl_ns = limits::kSessionTtlMaxNs + 1;
               }),
       idle + "TTL 86400000000001 ns is outside [10s, 24h]"},
      {"ttl-text-mismatch", session(kForgedIdle, [](Session& s) { s.ttl = "10s"; }),
       idle + "TTL text \"10s\" does not say its 15000000000 ns"},
      {"session-name-too-long",
       session(kForgedIdle,
               [](Session& s) { s.name = std::string(limits::kSessionNameBytesMax + 1, 'n'); }),
       idle + "Name of 1025 bytes is longer than the 1024 allowed"},
      {"session-node-too-long",
       session(kForgedIdle,
               [](Session& s) { s.node = std::string(limits::kSessionNameBytesMax + 1, 'n'); }),
       idle + "Node of 1025 bytes is longer than the 1024 allowed"},
      {"session-too-many-checks",
       session(kForgedIdle,
               [](Session& s) {
                 s.checks.set_node(
                     std::vector<std::string>(limits::kSessionChecksMax + 1, "serfHealth"));
               }),
       idle + "65 NodeChecks, more than the 64 allowed"},
      {"session-check-id-too-long",
       session(kForgedIdle,
               [](Session& s) {
                 s.checks.set_legacy(
                     std::vector<std::string>{std::string(limits::kSessionNameBytesMax + 1, 'c')});
               }),
       idle + "check id \"cccc"},
      // KV sizes.
      {"key-too-long", [](E& e) { e.PutEntry(std::string(limits::kKvKeyBytesMax + 1, 'k'), "v"); },
       " is 4097 bytes, longer than the 4096 allowed"},
      {"value-too-large",
       [](E& e) { e.PutEntry("big", std::string(limits::kKvValueBytesMax + 1, 'v')); },
       "key \"big\": value of 1572865 bytes is larger than the 1572864 allowed"},
      {"tombstone-too-long",
       [](E& e) { e.PutTombstone(std::string(limits::kKvKeyBytesMax + 1, 't')); },
       "tombstone \"tttt"},
      {"queue-value-too-large",
       [](E& e) { e.Waiter("service/leader").value.assign(limits::kKvValueBytesMax + 1, 'v'); },
       "key \"service/leader\": value of 1572865 bytes is larger than the 1572864 allowed"},
      // ACL objects.
      {"token-description-too-long",
       [](E& e) {
         e.Token(kForgedTokenAccessor).description.assign(limits::kAclDescriptionBytesMax + 1, 'd');
       },
       token + "Description of 4097 bytes is longer than the 4096 allowed"},
      {"token-too-many-policies",
       [](E& e) {
         e.AddPolicies(limits::kAclPoliciesPerTokenMax + 1, "");
         auto& ids = e.Token(kForgedTokenAccessor).policy_ids;
         for (std::size_t i = 0; i <= limits::kAclPoliciesPerTokenMax; ++i) {
           ids.push_back("forged-" + std::to_string(i));
         }
       },
       token + "66 policies, more than the 64 allowed"},
      {"policy-rules-do-not-parse",
       [](E& e) { e.Policy(kForgedPolicyId).rules = "key_prefix \"\" { policy = \"rule\" }"; },
       "ACL policy \"" + std::string(kForgedPolicyId) + "\": its rules do not parse"},
      {"too-many-policies", [](E& e) { e.AddPolicies(limits::kAclPoliciesMax, ""); },
       "10002 ACL policies, more than the 10000 allowed"},
  };
}

// ForgedBase with `forged`'s edit made.
inline Store ForgedState(const Forged& forged) {
  Store store = ForgedBase();
  TEST_StoreEditor editor(&store);
  forged.edit(editor);
  return store;
}

}  // namespace testutil
}  // namespace tenure::state
