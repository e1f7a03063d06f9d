// Seeded random command sequences for the state tier's property, snapshot
// and digest tests: a few keys with shared prefixes, a few sessions, a wall
// clock that mostly moves forward but sometimes steps back, every command
// kind (Txn with random verbs, SessionDestroy with both reasons, etcd txns
// and leases from random_etcd.h), biased so that locks get held, sessions
// with lock-delay die holding them and acquires land inside lock-delay
// windows. The generator looks at a ModelStore to pick plausible indexes,
// holders and tokens. Also a one-line description of a command for failure
// messages. Test-only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "state/command.h"
#include "state/txn.h"
#include "state/types.h"
#include "unit/common/type_printers.h"
#include "unit/state/etcd_compare.h"
#include "unit/state/model_store.h"
#include "unit/state/random_etcd.h"
#include "unit/state/random_zk.h"
#include "unit/state/store_fixture.h"

namespace tenure::state::testutil {

// --- describing commands ----------------------------------------------------------------

inline std::string Describe(const TxnOp& op) {
  std::ostringstream os;
  os << TxnVerbName(op.verb) << "(\"" << EscapeBytes(op.key) << "\"";
  if (!op.value.empty()) os << " value=\"" << EscapeBytes(op.value) << "\"";
  if (op.flags != 0) os << " flags=" << op.flags;
  if (!op.index.is_none()) os << " index=" << op.index;
  if (!op.session.empty()) os << " session=" << op.session;
  os << ")";
  return os.str();
}

inline std::string Describe(const Command& c) {
  std::ostringstream os;
  os << CommandName(c) << " now_ms=" << c.now_ms.ms() << " wall_ms=" << c.wall_ms.ms() << " ";
  std::visit(
      [&](const auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, KvSet>) {
          os << "key=\"" << EscapeBytes(b.key) << "\" value=\"" << EscapeBytes(b.value)
             << "\" flags=" << b.flags;
        } else if constexpr (std::is_same_v<T, KvCas>) {
          os << "key=\"" << EscapeBytes(b.key) << "\" value=\"" << EscapeBytes(b.value)
             << "\" flags=" << b.flags << " cas=" << b.index;
        } else if constexpr (std::is_same_v<T, KvEnqueue>) {
          os << "key=\"" << EscapeBytes(b.key) << "\" value=\"" << EscapeBytes(b.value)
             << "\" flags=" << b.flags << " session=\"" << b.session << "\""
             << (b.hold ? " hold" : "");
        } else if constexpr (std::is_same_v<T, KvDequeue>) {
          os << "key=\"" << EscapeBytes(b.key) << "\" session=\"" << b.session << "\""
             << (b.hold ? " hold" : "");
        } else if constexpr (std::is_same_v<T, KvQueueGrant>) {
          os << "key=\"" << EscapeBytes(b.key) << "\"";
        } else if constexpr (std::is_same_v<T, KvAcquire> || std::is_same_v<T, KvRelease>) {
          os << "key=\"" << EscapeBytes(b.key) << "\" value=\"" << EscapeBytes(b.value)
             << "\" flags=" << b.flags << " session=\"" << b.session << "\"";
        } else if constexpr (std::is_same_v<T, KvDelete>) {
          os << "key=\"" << EscapeBytes(b.key) << "\"";
          if (b.has_cas) os << " cas=" << b.index;
        } else if constexpr (std::is_same_v<T, KvDeleteTree>) {
          os << "prefix=\"" << EscapeBytes(b.prefix) << "\"";
        } else if constexpr (std::is_same_v<T, SessionCreate>) {
          os << "id=" << b.session.id << " node=" << b.session.node.view()
             << " lock_delay_ns=" << b.session.lock_delay_ns
             << " behavior=" << (b.session.behavior == Behavior::kDelete ? "delete" : "release")
             << (b.session.ttl.empty() ? "" : " ttl=" + b.session.ttl.str());
        } else if constexpr (std::is_same_v<T, SessionDestroy>) {
          os << "id=" << b.id
             << " reason=" << (b.reason == DestroyReason::kExpired ? "expired" : "destroyed");
        } else if constexpr (std::is_same_v<T, Txn>) {
          os << "ops=[";
          for (std::size_t i = 0; i < b.ops.size(); ++i) {
            os << (i ? ", " : "") << Describe(b.ops[i]);
          }
          os << "]";
        } else if constexpr (std::is_same_v<T, ReapTombstones>) {
          os << "index=" << b.index;
        } else if constexpr (std::is_same_v<T, AclPolicySet>) {
          os << "id=" << b.policy.id << " name=\"" << EscapeBytes(b.policy.name) << "\"";
        } else if constexpr (std::is_same_v<T, AclPolicyDelete>) {
          os << "id=" << b.id;
        } else if constexpr (std::is_same_v<T, AclTokenSet> || std::is_same_v<T, AclBootstrap>) {
          os << "accessor=" << b.token.accessor_id << " secret=" << b.token.secret_id;
        } else if constexpr (std::is_same_v<T, AclTokenDelete>) {
          os << "accessor=" << b.accessor_id;
        } else if constexpr (std::is_same_v<T, RestoreChunk>) {
          os << "id=" << b.restore_id << " offset=" << b.offset << " total=" << b.total
             << " bytes=" << b.bytes.size();
        } else if constexpr (std::is_same_v<T, RestoreStaged>) {
          os << "id=" << b.restore_id << " total=" << b.total;
        } else if constexpr (std::is_same_v<T, EtcdTxn>) {
          os << DescribeTxn(b.txn);
        } else if constexpr (std::is_same_v<T, EtcdCompact>) {
          os << "revision=" << b.revision;
        } else if constexpr (std::is_same_v<T, ZkSecret>) {
          os << "secret=" << b.secret.size() << " bytes";
        } else if constexpr (std::is_same_v<T, ZkWrite>) {
          static constexpr const char* kKinds[] = {"create", "delete", "setData", "check",
                                                   "setACL"};
          os << "session=\"" << b.session << "\" ops=[";
          for (std::size_t i = 0; i < b.ops.size(); ++i) {
            const ZkOp& op = b.ops[i];
            os << (i ? ", " : "") << kKinds[static_cast<int>(op.kind)] << "(\""
               << EscapeBytes(op.path) << "\" version=" << op.version
               << (op.ephemeral ? " ephemeral" : "") << (op.sequential ? " sequential" : "")
               << (op.container ? " container" : "") << ")";
          }
          os << "]";
        }
      },
      c.body);
  return os.str();
}

// --- the generator --------------------------------------------------------------------

class CommandGenerator {
 public:
  explicit CommandGenerator(std::uint64_t seed)
      : rng_(seed),
        restore_rng_(seed ^ 0x5e57'04e5'7a6e'0050ull),
        etcd_(seed ^ 0xe7cd'0048'0000'0003ull, ConsulKeys(), Nodes()),
        zk_(seed ^ 0x2b00'0056'0000'0002ull) {}

  // Few keys with shared prefixes, one with a NUL and one ("ÿ" in UTF-8)
  // with high bytes, which Consul's and etcd's commands write.
  static const std::vector<std::string>& ConsulKeys() {
    static const std::vector<std::string> keys = {
        "a", "a/", "a/b", "a/b/c", "a/c", "ab", "b/x", std::string("b/\0z", 4), "\xc3\xbf"};
    return keys;
  }
  // ZooKeeper's paths (random_zk.h) that Consul's commands write too.
  static const std::vector<std::string>& ZkKeys() {
    static const std::vector<std::string> keys = {"/z", "/z/a", "/z/q-0000000000", "/y"};
    return keys;
  }
  // Every key the tests compare one by one.
  static const std::vector<std::string>& Keys() {
    static const std::vector<std::string> keys = [] {
      std::vector<std::string> all = ConsulKeys();
      all.insert(all.end(), ZkKeys().begin(), ZkKeys().end());
      return all;
    }();
    return keys;
  }
  // Prefixes whose PrefixIndex, ListKv and ListKeys the tests compare.
  static const std::vector<std::string>& Prefixes() {
    static const std::vector<std::string> prefixes = {"",   "a",  "a/", "a/b", "a/b/",
                                                      "ab", "b/", "c",  "\xc3"};
    return prefixes;
  }
  static const std::vector<std::string>& Nodes() {
    static const std::vector<std::string> nodes = {"n1", "n2"};
    return nodes;
  }

  // Every session id this generator has put into a SessionCreate.
  const std::vector<SessionId>& created_ids() const { return created_; }

  std::uint64_t Uniform(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int percent) { return Uniform(100) < static_cast<std::uint64_t>(percent); }

  Command Next(const ModelStore& m) {
    Command c;
    // A large restore's chunks (decision 0050), never completed, drawn from
    // a stream of their own: the other commands are the ones every seed
    // made before they existed, with these in between.
    if (restore_rng_() % 100 < 3) {
      c.now_ms = m.now_ms;
      c.wall_ms = UnixMs(m.now_ms.ms());
      c.body = StagedRestoreCommand(m);
      return c;
    }
    c.now_ms = NextNow(m);
    c.wall_ms = NextWall(c.now_ms);
    // etcd's txns and its leases (decision 0048) on the same keys, drawn
    // from a stream of their own.
    if (etcd_.Chance(16)) {
      c.body = etcd_.Next(m, &created_);
      return c;
    }
    // ZooKeeper's writes (decision 0056), from a stream of their own too.
    if (zk_.Chance(10)) {
      c.body = zk_.Next(m, created_);
      return c;
    }
    if (Chance(8)) {
      c.body = AclCommand(m);
      return c;
    }
    if (Chance(7)) {  // the fair acquire (decision 0027)
      std::string key = Key();
      const std::uint64_t kind = Uniform(10);
      if (kind < 5) {
        c.body = KvEnqueue{key, Value(), Flags(), AcquireSession(m), /*hold=*/Chance(25)};
      } else if (kind < 8) {
        c.body = KvDequeue{key, AcquireSession(m), /*hold=*/Chance(25)};
      } else {
        c.body = KvQueueGrant{key};
      }
      return c;
    }
    const std::uint64_t roll = Uniform(100);
    if (roll < 12) {
      c.body = KvSet{Key(), Value(), Flags()};
    } else if (roll < 20) {
      std::string key = Key();
      c.body = KvCas{key, Value(), Flags(), CasIndex(m, key)};
    } else if (roll < 40) {
      std::string key = Key();
      c.body = KvAcquire{key, Value(), Flags(), AcquireSession(m)};
    } else if (roll < 49) {
      std::string key = Key();
      c.body = KvRelease{key, Value(), Flags(), ReleaseSession(m, key)};
    } else if (roll < 55) {
      std::string key = Key();
      if (Chance(40)) {
        c.body = KvDelete{key, true, CasIndex(m, key)};
      } else {
        c.body = KvDelete{key, false, LogIndex()};
      }
    } else if (roll < 58) {
      c.body = KvDeleteTree{TreePrefix()};
    } else if (roll < 67) {
      if (m.sessions.size() >= 4) {
        c.body = KvAcquire{Key(), Value(), Flags(), AcquireSession(m)};
      } else {
        c.body = SessionCreate{NewSession()};
      }
    } else if (roll < 76) {
      c.body = SessionDestroy{DestroyId(m),
                              Chance(50) ? DestroyReason::kExpired : DestroyReason::kDestroyed};
    } else if (roll < 96) {
      c.body = Txn{TxnOps(m, /*read_only=*/false)};
    } else {
      c.body = ReapTombstones{ReapIndex(m)};
    }
    return c;
  }

  // A chunk that mostly continues the model's staging (sometimes one that
  // starts another, or breaks it), or a RestoreStaged whose bytes are never
  // all staged: the staging rules without a state to swap in.
  CommandBody StagedRestoreCommand(const ModelStore& m) {
    const auto Uniform = [this](std::uint64_t n) { return n == 0 ? 0 : restore_rng_() % n; };
    const auto Chance = [&Uniform](int percent) {
      return Uniform(100) < static_cast<std::uint64_t>(percent);
    };
    const std::uint64_t id = 1 + Uniform(2);
    const auto* staging = m.staging ? &*m.staging : nullptr;
    if (Chance(20)) {
      std::uint64_t total = 1 + Uniform(16);
      if (staging != nullptr && staging->id == id && staging->bytes.size() == total) ++total;
      return RestoreStaged{id, total};
    }
    const bool start = staging == nullptr || staging->bytes.size() >= staging->total || Chance(25);
    if (start) {
      const std::uint64_t total = 2 + Uniform(15);
      return RestoreChunk{id, 0, total, std::string(1 + Uniform(total / 2), 'a' + Uniform(26))};
    }
    std::uint64_t offset = staging->bytes.size();
    const std::uint64_t total = staging->total;
    if (Chance(15)) offset = 1 + Uniform(total - 1);  // often a gap: refused
    const std::uint64_t room = total - offset;
    return RestoreChunk{Chance(90) ? staging->id : id, offset, total,
                        std::string(1 + Uniform(room), 'a' + Uniform(26))};
  }

  // Ops for a read-only transaction (no write verbs).
  std::vector<TxnOp> ReadOps(const ModelStore& m) { return TxnOps(m, /*read_only=*/true); }

 private:
  // The leader's wall clock: usually the replicated clock's value, now and
  // then a day off either way (decision 0037: it must change nothing but the
  // times people read).
  UnixMs NextWall(ClusterMs now) {
    const std::uint64_t roll = Uniform(100);
    if (roll < 5) return UnixMs(now.ms() + 86'400'000);
    if (roll < 10) return UnixMs(now.ms() - 86'400'000);
    return UnixMs(now.ms());
  }

  ClusterMs NextNow(const ModelStore& m) {
    const std::uint64_t roll = Uniform(100);
    if (roll < 6 && !m.lock_delays.empty()) {
      // Land exactly on, or just before, a lock-delay window's end.
      auto it = m.lock_delays.begin();
      std::advance(it, static_cast<long>(Uniform(m.lock_delays.size())));
      const ClusterMs target = it->second - static_cast<DurationMs>(Uniform(2));
      if (target > now_) now_ = target;
    } else if (roll < 60) {
      now_ = now_ + static_cast<DurationMs>(Uniform(2001));
    } else if (roll < 78) {
      now_ = now_ + static_cast<DurationMs>(Uniform(20001));
    } else if (roll < 83) {
      now_ = now_ + 60'000 + static_cast<DurationMs>(Uniform(60'001));
    } else if (roll < 93) {
      now_ = now_ - static_cast<DurationMs>(Uniform(501));  // an older leader's clock
    }
    return now_;
  }

  // Mostly the keys Consul's clients use; ZooKeeper's paths now and then
  // (drawn from the ZooKeeper stream, so the rest draw as before), so its
  // records see other APIs' writes.
  std::string Key() {
    if (zk_.Chance(10)) return ZkKeys()[zk_.Uniform(ZkKeys().size())];
    return ConsulKeys()[Uniform(ConsulKeys().size())];
  }

  std::string TreePrefix() {
    if (Chance(5)) return "";
    return Prefixes()[1 + Uniform(Prefixes().size() - 1)];
  }

  std::string Value() {
    static const std::vector<std::string> values = {"", "v1", "v2", std::string("\0x", 2),
                                                    "leader=pg0"};
    return values[Uniform(values.size())];
  }

  std::uint64_t Flags() {
    static const std::vector<std::uint64_t> flags = {
        0, 0, 0, 1, kLockFlagValue, kSemaphoreFlagValue, std::numeric_limits<std::uint64_t>::max()};
    return flags[Uniform(flags.size())];
  }

  SessionId LiveSession(const ModelStore& m) {
    auto it = m.sessions.begin();
    std::advance(it, static_cast<long>(Uniform(m.sessions.size())));
    return it->first;
  }

  SessionId AcquireSession(const ModelStore& m) {
    const std::uint64_t roll = Uniform(100);
    if (roll < 75 && !m.sessions.empty()) return LiveSession(m);
    if (roll < 87 && !created_.empty()) return created_[Uniform(created_.size())];  // maybe dead
    if (roll < 94) return TestSessionId(0xdead0000 + Uniform(3));                   // never existed
    return SessionId();
  }

  SessionId ReleaseSession(const ModelStore& m, const std::string& key) {
    const KvEntry* e = m.Find(key);
    if (e != nullptr && !e->session.empty() && Chance(70)) return e->session;
    // A waiter of the key: it leaves the queue (decision 0027's addendum).
    if (auto q = m.queues.find(key); q != m.queues.end() && Chance(50)) {
      return q->second[Uniform(q->second.size())].session;
    }
    return AcquireSession(m);
  }

  LogIndex CasIndex(const ModelStore& m, const std::string& key) {
    const KvEntry* e = m.Find(key);
    const std::uint64_t roll = Uniform(100);
    if (roll < 40 && e != nullptr) return e->modify_index;
    if (roll < 60) return LogIndex();
    if (roll < 75 && !m.kv.empty()) {  // another key's index: usually stale
      auto it = m.kv.begin();
      std::advance(it, static_cast<long>(Uniform(m.kv.size())));
      return it->second.modify_index;
    }
    return LogIndex(Uniform(m.applied_index.value() + 3));
  }

  LogIndex FenceToken(const ModelStore& m, const std::string& key) {
    const KvEntry* e = m.Find(key);
    const std::uint64_t roll = Uniform(100);
    if (roll < 55 && e != nullptr) return e->fence;
    if (roll < 65) return LogIndex();
    return LogIndex(Uniform(m.applied_index.value() + 3));
  }

  Session NewSession() {
    static const std::vector<DurationNs> delays = {0,
                                                   1 * kNsPerMs,
                                                   50 * kNsPerMs,
                                                   1 * kNsPerSecond,
                                                   5 * kNsPerSecond,
                                                   15 * kNsPerSecond,
                                                   90 * kNsPerSecond,
                                                   -1 * kNsPerSecond};
    Session s;
    s.id = TestSessionId(next_session_++);
    s.name = Chance(50) ? "" : "lock " + std::to_string(Uniform(10));
    s.node = Nodes()[Uniform(Nodes().size())];
    s.lock_delay_ns = delays[Uniform(delays.size())];
    s.behavior = Chance(40) ? Behavior::kDelete : Behavior::kRelease;
    if (Chance(50)) {
      s.ttl = "15s";
      s.ttl_ns = 15 * kNsPerSecond;
    }
    if (Chance(70)) s.checks.set_node({"serfHealth"});
    if (Chance(20)) s.checks.set_service({{"web", ""}});
    if (Chance(10)) s.checks.set_legacy({"serfHealth"});
    s.create_index = LogIndex(Uniform(5));  // ignored by apply
    created_.push_back(s.id);
    return s;
  }

  SessionId DestroyId(const ModelStore& m) {
    const std::uint64_t roll = Uniform(100);
    if (roll < 80 && !m.sessions.empty()) return LiveSession(m);
    if (roll < 92 && !created_.empty()) return created_[Uniform(created_.size())];
    return TestSessionId(0xdead0000 + Uniform(3));
  }

  // ACL commands over small pools of IDs, names, secrets and rules, so that
  // collisions (a taken name or secret, a missing policy, a second
  // bootstrap, the built-ins) come up often. Broken rules contain "@@"
  // (ModelAcl::RulesParse).
  CommandBody AclCommand(const ModelStore& m) {
    static const std::vector<std::string> kPolicyIds = {"p1", "p2", "p3",
                                                        std::string(kGlobalManagementPolicyId)};
    static const std::vector<std::string> kNames = {
        "alpha", "beta", "gamma", "global-management", "bad name", ""};
    static const std::vector<std::string> kRules = {
        "",
        "key_prefix \"a/\" { policy = \"write\" }",
        "{\"operator\": \"read\"}",
        "session_prefix \"\" { policy = \"read\" }\nkey \"a/b\" { policy = \"deny\" }",
        "key @@ broken",
        std::string(::tenure::acl::GlobalManagementRulesText())};
    static const std::vector<std::string> kAccessors = {"t1", "t2", "t3",
                                                        std::string(kAnonymousTokenAccessorId)};
    static const std::vector<std::string> kSecrets = {"s1", "s2", "s3", "s4", "anonymous", ""};
    auto pick = [this](const std::vector<std::string>& from) { return from[Uniform(from.size())]; };
    auto token = [&]() {
      AclToken t;
      t.accessor_id = pick(kAccessors);
      t.secret_id = pick(kSecrets);
      t.description = Chance(80) ? "d" + std::to_string(Uniform(3)) : std::string(5000, 'x');
      for (std::uint64_t n = Uniform(3); n > 0; --n) t.policy_ids.push_back(pick(kPolicyIds));
      if (Chance(10)) t.policy_ids.push_back("p9");  // never exists
      t.local = Chance(20);
      t.create_time = UnixMs(m.now_ms.ms());
      if (Chance(30)) {
        t.expiration_time = UnixMs(m.now_ms.ms()) + static_cast<DurationMs>(Uniform(5000));
      }
      return t;
    };
    const std::uint64_t roll = Uniform(100);
    if (roll < 8) {
      LogIndex reset = Chance(50) ? m.acl.bootstrap_index : LogIndex(Uniform(3));
      return AclBootstrap{token(), reset};
    }
    if (roll < 16) {
      AclSetup setup;
      if (Chance(60)) setup.initial_management = token();
      return setup;
    }
    if (roll < 46) {
      AclPolicy p;
      p.id = pick(kPolicyIds);
      p.name = pick(kNames);
      p.description = Chance(90) ? "about " + p.name : std::string(5000, 'y');
      p.rules = pick(kRules);
      return AclPolicySet{p};
    }
    if (roll < 56) return AclPolicyDelete{Chance(90) ? pick(kPolicyIds) : "p9"};
    if (roll < 88) return AclTokenSet{token()};
    return AclTokenDelete{
        Chance(90) ? pick(kAccessors) : "t9",
        Chance(50) ? AclTokenDeleteReason::kExpired : AclTokenDeleteReason::kDeleted};
  }

  LogIndex ReapIndex(const ModelStore& m) {
    // The leader reaps below a tombstone index it has seen; never past the
    // KV table index (see PrefixIndexChoices).
    if (!m.tombstones.empty() && Chance(70)) {
      auto it = m.tombstones.begin();
      std::advance(it, static_cast<long>(Uniform(m.tombstones.size())));
      return it->second;
    }
    return LogIndex(Uniform(m.kv_index.value() + 1));
  }

  TxnOp RandomOp(const ModelStore& m, bool read_only) {
    static const TxnVerb kWrite[] = {TxnVerb::kSet,      TxnVerb::kCas,    TxnVerb::kLock,
                                     TxnVerb::kUnlock,   TxnVerb::kDelete, TxnVerb::kDeleteTree,
                                     TxnVerb::kDeleteCas};
    static const TxnVerb kRead[] = {
        TxnVerb::kGet,          TxnVerb::kGetOrEmpty,     TxnVerb::kGetTree,   TxnVerb::kCheckIndex,
        TxnVerb::kCheckSession, TxnVerb::kCheckNotExists, TxnVerb::kCheckFence};
    TxnOp op;
    if (read_only || Chance(45)) {
      op.verb = kRead[Uniform(std::size(kRead))];
    } else {
      op.verb = kWrite[Uniform(std::size(kWrite))];
    }
    op.key = Key();
    switch (op.verb) {
      case TxnVerb::kSet:
        op.value = Value();
        op.flags = Flags();
        break;
      case TxnVerb::kCas:
        op.value = Value();
        op.flags = Flags();
        op.index = CasIndex(m, op.key);
        break;
      case TxnVerb::kLock:
        op.value = Value();
        op.flags = Flags();
        op.session = AcquireSession(m);
        break;
      case TxnVerb::kUnlock:
        op.value = Value();
        op.flags = Flags();
        op.session = ReleaseSession(m, op.key);
        break;
      case TxnVerb::kGetTree:
      case TxnVerb::kDeleteTree:
        op.key = TreePrefix();
        break;
      case TxnVerb::kCheckIndex:
      case TxnVerb::kDeleteCas:
        op.index = CasIndex(m, op.key);
        break;
      case TxnVerb::kCheckSession: {
        // Never the empty session: whether "" matches an unlocked key is
        // not fixed by any document.
        const KvEntry* e = m.Find(op.key);
        if (e != nullptr && !e->session.empty() && Chance(60)) {
          op.session = e->session;
        } else {
          op.session = AcquireSession(m);
          if (op.session.empty()) op.session = TestSessionId(0xdead0000);
        }
        break;
      }
      case TxnVerb::kCheckFence:
        op.index = FenceToken(m, op.key);
        break;
      default:
        break;
    }
    return op;
  }

  std::vector<TxnOp> TxnOps(const ModelStore& m, bool read_only) {
    std::vector<TxnOp> ops;
    const std::uint64_t n = 1 + Uniform(4);
    for (std::uint64_t i = 0; i < n; ++i) ops.push_back(RandomOp(m, read_only));
    // The holder names its successor among the waiters (decision 0027's
    // second addendum): [unlock by the holder, lock for a waiter], in a
    // random place among the random ops, sometimes in the wrong order.
    if (!read_only && !m.queues.empty() && Chance(30)) {
      auto q = m.queues.begin();
      std::advance(q, static_cast<long>(Uniform(m.queues.size())));
      const KvEntry* e = m.Find(q->first);
      TxnOp unlock;
      unlock.verb = TxnVerb::kUnlock;
      unlock.key = q->first;
      unlock.session =
          e != nullptr && !e->session.empty() ? e->session : ReleaseSession(m, q->first);
      TxnOp lock;
      lock.verb = TxnVerb::kLock;
      lock.key = q->first;
      lock.value = Value();
      lock.flags = Flags();
      lock.session = Chance(85) ? q->second[Uniform(q->second.size())].session : AcquireSession(m);
      const auto at = static_cast<long>(Uniform(ops.size() + 1));
      if (Chance(90)) {
        ops.insert(ops.begin() + at, {unlock, lock});
      } else {
        ops.insert(ops.begin() + at, {lock, unlock});
      }
    }
    return ops;
  }

  std::mt19937_64 rng_;
  std::mt19937_64 restore_rng_;
  EtcdGenerator etcd_;
  ZkGenerator zk_;
  ClusterMs now_ = kC0;
  std::uint64_t next_session_ = 1;
  std::vector<SessionId> created_;
};

}  // namespace tenure::state::testutil
