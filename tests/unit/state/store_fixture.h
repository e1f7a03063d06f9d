// Test helpers for the src/state unit tier: a StoreDriver that applies
// explicit commands at increasing raft indexes with a wall clock the test
// controls and checks the store's invariants after every apply, plus small
// builders for sessions and txn ops and gtest printers for state values.
// Test-only; single-threaded.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/types.h"
#include "state/command.h"
#include "state/numbered_session.h"
#include "state/store.h"
#include "state/txn.h"
#include "state/types.h"
#include "unit/common/type_printers.h"

namespace tenure::state {

// gtest printers (found by ADL), so failures show fields instead of bytes.
inline std::string EscapeBytes(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\' && c != '"') {
      out.push_back(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

inline void PrintTo(const KvEntry& e, std::ostream* os) {
  *os << "{key=\"" << EscapeBytes(e.key) << "\" value=\"" << EscapeBytes(e.value)
      << "\" flags=" << e.flags << " create=" << e.create_index << " modify=" << e.modify_index
      << " lock_index=" << e.lock_index << " version=" << e.version << " session=\""
      << e.session.view() << "\" fence=" << e.fence << "}";
}

inline void PrintTo(const Session& s, std::ostream* os) {
  *os << "{id=\"" << s.id.view() << "\" name=\"" << EscapeBytes(s.name) << "\" node=\""
      << s.node.view() << "\" lock_delay_ns=" << s.lock_delay_ns
      << " behavior=" << (s.behavior == Behavior::kDelete ? "delete" : "release") << " ttl=\""
      << s.ttl.view() << "\" ttl_ns=" << s.ttl_ns << " create=" << s.create_index
      << " modify=" << s.modify_index() << "}";
}

inline void PrintTo(const TxnError& e, std::ostream* os) {
  *os << "{op_index=" << e.op_index << " what=\"" << e.what << "\"}";
}

inline void PrintTo(const TxnOp& op, std::ostream* os) {
  *os << "{" << TxnVerbName(op.verb) << " key=\"" << EscapeBytes(op.key) << "\" value=\""
      << EscapeBytes(op.value) << "\" flags=" << op.flags << " index=" << op.index << " session=\""
      << op.session.view() << "\"}";
}

}  // namespace tenure::state

namespace tenure::state::testutil {

// A plausible leader wall clock (2023-11-14), far from 0 so that a clock
// bug that uses 0 or a relative time shows.
inline constexpr UnixMs kT0 = UnixMs(1'700'000'000'000);
// The replicated clock where a StoreDriver starts (its wall clock: kT0).
inline constexpr ClusterMs kC0 = ClusterMs(1'700'000'000'000);

// Consul's two well-known flag values (api.Lock and api.Semaphore) and the
// top of the range: all must round-trip exactly.
inline constexpr std::uint64_t kLockFlagValue = 3304740253564472344ull;
inline constexpr std::uint64_t kSemaphoreFlagValue = 16210313421097356768ull;

// A 36-char lowercase UUID-shaped session id, distinct per n.
inline SessionId TestSessionId(std::uint64_t n) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "00000000-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(n));
  return SessionId(buf);
}

inline Session MakeSession(SessionId id, std::string node = "node1", DurationNs lock_delay_ns = 0,
                           Behavior behavior = Behavior::kRelease) {
  Session s;
  s.id = std::move(id);
  s.name = "test session";
  s.node = std::move(node);
  s.lock_delay_ns = lock_delay_ns;
  s.behavior = behavior;
  s.checks.set_node({"serfHealth"});
  return s;
}

// A numbered session as an etcd lease grant or a ZooKeeper connect makes
// one (decision 0048 section 3): its keys go with it, a 10 s TTL.
inline Session MakeNumberedSession(std::int64_t number, DurationNs lock_delay_ns = 0) {
  Session s = MakeSession(NumberedSessionId(number), "node1", lock_delay_ns, Behavior::kDelete);
  s.ttl = "10s";
  s.ttl_ns = 10 * kNsPerSecond;
  return s;
}

// --- txn op builders ---------------------------------------------------------
inline TxnOp MakeOp(TxnVerb verb, std::string key, std::string value = "", std::uint64_t flags = 0,
                    std::uint64_t index = 0, SessionId session = SessionId()) {
  TxnOp op;
  op.verb = verb;
  op.key = std::move(key);
  op.value = std::move(value);
  op.flags = flags;
  op.index = LogIndex(index);
  op.session = std::move(session);
  return op;
}
inline TxnOp SetOp(std::string key, std::string value, std::uint64_t flags = 0) {
  return MakeOp(TxnVerb::kSet, std::move(key), std::move(value), flags);
}
inline TxnOp CasOp(std::string key, std::string value, std::uint64_t index) {
  return MakeOp(TxnVerb::kCas, std::move(key), std::move(value), 0, index);
}
inline TxnOp LockOp(std::string key, SessionId session, std::string value = "") {
  return MakeOp(TxnVerb::kLock, std::move(key), std::move(value), 0, 0, std::move(session));
}
inline TxnOp UnlockOp(std::string key, SessionId session, std::string value = "") {
  return MakeOp(TxnVerb::kUnlock, std::move(key), std::move(value), 0, 0, std::move(session));
}
inline TxnOp GetOp(std::string key) { return MakeOp(TxnVerb::kGet, std::move(key)); }
inline TxnOp GetOrEmptyOp(std::string key) { return MakeOp(TxnVerb::kGetOrEmpty, std::move(key)); }
inline TxnOp GetTreeOp(std::string prefix) { return MakeOp(TxnVerb::kGetTree, std::move(prefix)); }
inline TxnOp CheckIndexOp(std::string key, std::uint64_t index) {
  return MakeOp(TxnVerb::kCheckIndex, std::move(key), "", 0, index);
}
inline TxnOp CheckSessionOp(std::string key, SessionId session) {
  return MakeOp(TxnVerb::kCheckSession, std::move(key), "", 0, 0, std::move(session));
}
inline TxnOp CheckNotExistsOp(std::string key) {
  return MakeOp(TxnVerb::kCheckNotExists, std::move(key));
}
inline TxnOp DeleteOp(std::string key) { return MakeOp(TxnVerb::kDelete, std::move(key)); }
inline TxnOp DeleteTreeOp(std::string prefix) {
  return MakeOp(TxnVerb::kDeleteTree, std::move(prefix));
}
inline TxnOp DeleteCasOp(std::string key, std::uint64_t index) {
  return MakeOp(TxnVerb::kDeleteCas, std::move(key), "", 0, index);
}
inline TxnOp CheckFenceOp(std::string key, LogIndex token) {
  return MakeOp(TxnVerb::kCheckFence, std::move(key), "", 0, token.value());
}

// Applies commands to a Store at strictly increasing raft indexes, stamping
// each with a wall clock the test moves explicitly, and runs
// Store::CheckInvariants() after every apply.
class StoreDriver {
 public:
  StoreDriver() = default;

  Store& store() { return store_; }
  const Store& store() const { return store_; }

  // The index the last command was applied at (0 before the first).
  LogIndex last_index() const { return index_; }
  // The index the next command will be applied at.
  LogIndex next_index() const { return index_.Next(); }
  // Leaves a gap in the raft log (entries the state machine never sees,
  // e.g. configuration changes), so the next apply is at index + n + 1.
  void SkipIndexes(std::uint64_t n) { index_ = LogIndex(index_.value() + n); }

  // The clocks the next command is stamped with (decision 0037): the
  // replicated clock, and a wall clock that follows it unless a test sets
  // it apart (a leader whose wall clock is off).
  ClusterMs now_ms() const { return now_ms_; }
  void SetNowMs(ClusterMs now_ms) { now_ms_ = now_ms; }
  void AdvanceMs(DurationMs delta_ms) { now_ms_ = now_ms_ + delta_ms; }
  UnixMs wall_ms() const { return UnixMs(now_ms_.ms() + wall_offset_ms_); }
  void SetWallOffsetMs(DurationMs offset_ms) { wall_offset_ms_ = offset_ms; }
  // Off: no CheckInvariants per apply (a test of thousands of applies
  // checks once at its end; per apply it is quadratic, minutes under ASan).
  void set_check_invariants(bool on) { check_invariants_ = on; }

  ApplyResult Apply(CommandBody body) { return ApplyAt(std::move(body), now_ms_); }

  // Applies with an explicit now_ms (which may lie before earlier ones).
  ApplyResult ApplyAt(CommandBody body, ClusterMs now_ms) {
    Command command;
    command.now_ms = now_ms;
    command.wall_ms = UnixMs(now_ms.ms() + wall_offset_ms_);
    command.body = std::move(body);
    const ClusterMs clock_before = store_.now_ms();
    index_ = index_.Next();
    ApplyResult result = store_.Apply(command, index_);
    if (check_invariants_) store_.CheckInvariants();
    EXPECT_EQ(store_.applied_index(), index_) << "after " << CommandName(command);
    EXPECT_GE(store_.now_ms(), clock_before) << "replicated clock ran backwards";
    EXPECT_GE(store_.now_ms(), now_ms) << "replicated clock lags the command's now_ms";
    return result;
  }

  ApplyResult Set(std::string key, std::string value, std::uint64_t flags = 0) {
    return Apply(KvSet{std::move(key), std::move(value), flags});
  }
  ApplyResult Cas(std::string key, std::string value, LogIndex index, std::uint64_t flags = 0) {
    return Apply(KvCas{std::move(key), std::move(value), flags, index});
  }
  ApplyResult Acquire(std::string key, SessionId session, std::string value = "",
                      std::uint64_t flags = 0) {
    return Apply(KvAcquire{std::move(key), std::move(value), flags, std::move(session)});
  }
  ApplyResult Release(std::string key, SessionId session, std::string value = "",
                      std::uint64_t flags = 0) {
    return Apply(KvRelease{std::move(key), std::move(value), flags, std::move(session)});
  }
  ApplyResult Delete(std::string key) { return Apply(KvDelete{std::move(key), false, LogIndex()}); }
  ApplyResult DeleteCas(std::string key, LogIndex index) {
    return Apply(KvDelete{std::move(key), true, index});
  }
  ApplyResult DeleteTree(std::string prefix) { return Apply(KvDeleteTree{std::move(prefix)}); }

  // Creates a session and returns its id; fails the test if the store
  // reports an error.
  SessionId CreateSession(Session session) {
    SessionId id = session.id;
    ApplyResult r = Apply(SessionCreate{std::move(session)});
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return id;
  }
  // A fresh session (node1, release behavior) with the given lock-delay.
  SessionId NewSession(DurationNs lock_delay_ns = 0, Behavior behavior = Behavior::kRelease,
                       std::string node = "node1") {
    return CreateSession(
        MakeSession(TestSessionId(++session_counter_), std::move(node), lock_delay_ns, behavior));
  }
  ApplyResult Destroy(SessionId id, DestroyReason reason = DestroyReason::kDestroyed) {
    return Apply(SessionDestroy{std::move(id), reason});
  }
  ApplyResult RunTxn(std::vector<TxnOp> ops) { return Apply(Txn{std::move(ops)}); }
  ApplyResult Reap(std::uint64_t index) { return Apply(ReapTombstones{LogIndex(index)}); }

  // A copy of the entry at key, or nullopt.
  std::optional<KvEntry> Get(std::string_view key) const {
    const KvEntry* e = store_.FindKv(key);
    if (e == nullptr) return std::nullopt;
    return *e;
  }

  // The keys a session holds, empty when none (nullptr and an empty set
  // are treated alike).
  std::vector<std::string> Held(const SessionId& id) const {
    const std::set<std::string>* keys = store_.HeldKeys(id);
    if (keys == nullptr) return {};
    return {keys->begin(), keys->end()};
  }

  std::vector<std::string> ListedKeys(std::string_view prefix) const {
    std::vector<std::string> out;
    for (const KvEntry* e : store_.ListKv(prefix)) out.push_back(e->key);
    return out;
  }

 private:
  bool check_invariants_ = true;
  Store store_;
  LogIndex index_;
  ClusterMs now_ms_ = kC0;
  DurationMs wall_offset_ms_ = 0;
  std::uint64_t session_counter_ = 0;
};

// The sessions waiting in `key`'s fair-acquire queue, head first.
inline std::vector<SessionId> Waiting(const StoreDriver& d, std::string_view key) {
  std::vector<SessionId> out;
  if (const auto* q = d.store().FindQueue(key)) {
    for (const QueueWaiter& w : *q) out.push_back(w.session);
  }
  return out;
}

// Sorted, de-duplicated keys of a Changes.
inline std::vector<std::string> ChangedKeys(const Changes& changes) {
  std::vector<std::string> keys = changes.keys;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace tenure::state::testutil
