// Seeded random etcd txns and leases (decision 0048) for the model test's
// generator (random_commands.h), over the same keys as its Consul commands:
// Put, DeleteRange, Range (every option) and nested Txn, compares of every
// target with operands the model makes likely to hold, leases that live,
// ended, never existed, and lease 0. Puts are biased to keys some session
// holds, keys with waiters and keys in lock-delay, so that the holder
// rules' refusals come up; Consul acquires of leased keys come from the
// Consul generator, which picks leases like any other session. Most txns
// pass etcd's checks (a drawn txn they refuse is drawn again, most of the
// time). Test-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "state/command.h"
#include "state/etcd_check.h"
#include "state/etcd_request.h"
#include "state/numbered_session.h"
#include "unit/state/model_etcd.h"
#include "unit/state/model_store.h"

namespace tenure::state::testutil {

class EtcdGenerator {
 public:
  EtcdGenerator(std::uint64_t seed, std::vector<std::string> keys, std::vector<std::string> nodes)
      : rng_(seed), keys_(std::move(keys)), nodes_(std::move(nodes)) {}

  std::uint64_t Uniform(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int percent) { return Uniform(100) < static_cast<std::uint64_t>(percent); }

  // Lease numbers the generator grants (one negative, one the largest), and
  // ones it never grants.
  static const std::vector<std::int64_t>& Leases() {
    static const std::vector<std::int64_t> leases = {0x1a, 0x2b, 0x3c, -0x4d,
                                                     std::numeric_limits<std::int64_t>::max()};
    return leases;
  }
  static const std::vector<std::int64_t>& NeverGranted() {
    static const std::vector<std::int64_t> leases = {0x404, -1};
    return leases;
  }

  // A lease grant (a numbered session, as the lease service will propose
  // one), now and then a compaction, or an etcd txn. `created` gets every
  // session id granted.
  CommandBody Next(const ModelStore& m, std::vector<SessionId>* created) {
    if (Chance(18)) return Grant(m, created);
    if (Chance(4)) return Compact(m);
    return EtcdTxn{Txn(m)};
  }

 private:
  // Mostly a revision past the compaction point and before the next entry
  // (it moves); else one at or below the point (compacted) or the next
  // entry's own or later (the future).
  EtcdCompact Compact(const ModelStore& m) {
    const std::uint64_t point = m.compact_revision.value();
    const std::uint64_t applied = m.applied_index.value();
    switch (Uniform(6)) {
      case 0:
        return EtcdCompact{LogIndex(point)};
      case 1:
        return EtcdCompact{LogIndex(point == 0 ? 0 : Uniform(point + 1))};
      case 2:
        return EtcdCompact{LogIndex(applied + 1 + Uniform(3))};
      default:
        if (applied <= point) return EtcdCompact{LogIndex(applied + 1)};
        return EtcdCompact{LogIndex(point + 1 + Uniform(applied - point))};
    }
  }

  CommandBody Grant(const ModelStore& m, std::vector<SessionId>* created) {
    // Mostly a lease not granted now; now and then one in use (refused).
    std::int64_t lease = Leases()[Uniform(Leases().size())];
    for (int tries = 0; tries < 8 && m.sessions.count(ModelLeaseId(lease)) != 0 && Chance(90);
         ++tries) {
      lease = Leases()[Uniform(Leases().size())];
    }
    struct Ttl {
      const char* text;
      DurationNs ns;
    };
    static const Ttl kTtls[] = {{"2s", 2 * kNsPerSecond},
                                {"10s", 10 * kNsPerSecond},
                                {"60s", 60 * kNsPerSecond},
                                {"9000000000s", 9'000'000'000 * kNsPerSecond}};
    static const DurationNs kLockDelays[] = {0, 0, 0, 1 * kNsPerSecond, 5 * kNsPerSecond};
    const Ttl& ttl = kTtls[Uniform(std::size(kTtls))];
    Session s;
    s.id = NumberedSessionId(lease);
    s.name = "etcd lease";
    s.node = nodes_[Uniform(nodes_.size())];
    s.lock_delay_ns = kLockDelays[Uniform(std::size(kLockDelays))];
    s.behavior = Behavior::kDelete;
    s.ttl = ttl.text;
    s.ttl_ns = ttl.ns;
    if (std::find(created->begin(), created->end(), s.id) == created->end()) {
      created->push_back(s.id);
    }
    return SessionCreate{std::move(s)};
  }

  EtcdTxnRequest Txn(const ModelStore& m) {
    EtcdTxnRequest txn = Shaped(m);
    for (int tries = 0; tries < 4 && !CheckEtcdTxn(txn).ok() && Chance(85); ++tries) {
      txn = Shaped(m);
    }
    return txn;
  }

  // A plain Put or DeleteRange (etcd's own KV calls), a recipe's campaign,
  // or any txn.
  EtcdTxnRequest Shaped(const ModelStore& m) {
    EtcdTxnRequest txn;
    written_.clear();
    const std::uint64_t roll = Uniform(100);
    if (roll < 30) {
      txn.success.push_back(PutOp(m));
    } else if (roll < 38) {
      txn.success.push_back(DeleteOp(m));
    } else if (roll < 48) {
      // The election recipe: create the key if absent, else read it.
      EtcdRequestOp put = PutOp(m);
      EtcdCompare absent;
      absent.target = EtcdCompareTarget::kCreate;
      absent.range.key = put.put.key;
      txn.compare.push_back(absent);
      txn.success.push_back(put);
      txn.failure.push_back(RangeOp(m, put.put.key));
    } else if (roll < 52) {
      // A leased key written without a lease: let go, to its waiters if any.
      EtcdRequestOp put = PutOp(m);
      put.put.key = LeasedKey(m);
      put.put.lease = 0;
      put.put.ignore_lease = false;
      txn.success.push_back(put);
    } else if (roll < 58) {
      // A write, then a nested txn comparing the written key: its compares
      // are decided on the state before the entry, not after the write.
      txn.success.push_back(Chance(70) ? PutOp(m) : DeleteOp(m));
      const std::string key = written_.back();
      EtcdRequestOp nested;
      nested.kind = EtcdRequestOp::Kind::kTxn;
      nested.txn.push_back(AnyTxn(m, 1));
      nested.txn.front().compare.push_back(CompareOn(m, {key, ""}));
      txn.success.push_back(std::move(nested));
    } else {
      txn = AnyTxn(m, 0);
    }
    return txn;
  }

  // A key a lease holds, one with waiters first; else any key.
  std::string LeasedKey(const ModelStore& m) {
    std::vector<std::string> leased;
    std::vector<std::string> awaited;
    for (const auto& [key, e] : m.kv) {
      if (!ModelLeaseNumber(e.session)) continue;
      leased.push_back(key);
      if (m.queues.count(key) != 0) awaited.push_back(key);
    }
    if (!awaited.empty()) return awaited[Uniform(awaited.size())];
    return leased.empty() ? Key() : leased[Uniform(leased.size())];
  }

  EtcdTxnRequest AnyTxn(const ModelStore& m, int depth) {
    EtcdTxnRequest txn;
    for (std::uint64_t n = Uniform(4); n > 0; --n) txn.compare.push_back(Compare(m));
    for (std::uint64_t n = Uniform(5); n > 0; --n) txn.success.push_back(Op(m, depth));
    for (std::uint64_t n = Uniform(3); n > 0; --n) txn.failure.push_back(Op(m, depth));
    return txn;
  }

  EtcdRequestOp Op(const ModelStore& m, int depth) {
    const std::uint64_t roll = Uniform(100);
    if (roll < 40) return PutOp(m);
    if (roll < 55) return DeleteOp(m);
    if (roll < 85 || depth >= 2) return RangeOp(m, Key());
    if (roll < 99) {
      EtcdRequestOp op;
      op.kind = EtcdRequestOp::Kind::kTxn;
      op.txn.push_back(AnyTxn(m, depth + 1));
      return op;
    }
    return EtcdRequestOp();  // empty: refused before it applies
  }

  std::string Key() { return keys_[Uniform(keys_.size())]; }

  std::string Value() {
    static const std::vector<std::string> values = {"", "v1", "v2", std::string("\0x", 2), "w"};
    return values[Uniform(values.size())];
  }

  // A key some session holds, one with waiters, or one in lock-delay, when
  // there is one; else any key.
  std::string BusyKey(const ModelStore& m) {
    std::vector<std::string> busy;
    const std::uint64_t roll = Uniform(100);
    for (const std::string& key : keys_) {
      const KvEntry* e = m.Find(key);
      if (roll < 45   ? e != nullptr && !e->session.empty()
          : roll < 70 ? m.queues.count(key) != 0
                      : m.ActiveLockDelay(key).has_value()) {
        busy.push_back(key);
      }
    }
    return busy.empty() ? Key() : busy[Uniform(busy.size())];
  }

  std::int64_t LiveLease(const ModelStore& m) {
    std::vector<std::int64_t> live;
    for (const auto& [id, s] : m.sessions) {
      if (std::optional<std::int64_t> n = ModelLeaseNumber(id)) live.push_back(*n);
    }
    return live.empty() ? Leases()[Uniform(Leases().size())] : live[Uniform(live.size())];
  }

  std::int64_t Lease(const ModelStore& m, const std::string& key) {
    const std::uint64_t roll = Uniform(100);
    if (roll < 45) return 0;
    if (roll < 80) return LiveLease(m);
    if (roll < 88) return Leases()[Uniform(Leases().size())];  // maybe ended
    if (roll < 93) return NeverGranted()[Uniform(NeverGranted().size())];
    const KvEntry* e = m.Find(key);  // the key's own holder's lease, if a lease
    return e != nullptr ? ModelLeaseNumber(e->session).value_or(0) : 0;
  }

  EtcdRequestOp PutOp(const ModelStore& m) {
    EtcdRequestOp op;
    op.kind = EtcdRequestOp::Kind::kPut;
    EtcdPutRequest& p = op.put;
    p.key = Chance(40) ? BusyKey(m) : Key();
    p.value = Value();
    p.lease = Lease(m, p.key);
    if ((m.ActiveLockDelay(p.key) || m.queues.count(p.key) != 0) && Chance(50)) {
      p.lease = LiveLease(m);  // an acquire the fair rules refuse
    }
    p.prev_kv = Chance(35);
    written_.push_back(p.key);
    if (Chance(8)) {
      p.ignore_value = true;
      if (Chance(90)) p.value.clear();  // else refused: a value is given
    }
    if (Chance(8)) {
      p.ignore_lease = true;
      if (Chance(90)) p.lease = 0;  // else refused: a lease is given
    }
    return op;
  }

  KeyRange Range(const std::string& key) {
    const std::string all(1, '\0');
    const std::uint64_t roll = Uniform(100);
    if (roll < 40) return {key, ""};
    if (roll < 60) {
      static const std::vector<KeyRange> prefixes = {
          {"a/", "a0"}, {"a", "b"}, {"b/", "b0"}, {"\xc3", "\xc4"}, {"a/b", "a/c"}};
      return prefixes[Uniform(prefixes.size())];
    }
    if (roll < 70) return {key, all};
    if (roll < 78) return {all, all};
    return {Key(), Key()};  // [a, b), empty when b <= a
  }

  // A revision near the model's: one of its entries' or one about it.
  std::int64_t Revision(const ModelStore& m) {
    if (!m.kv.empty() && Chance(60)) {
      auto it = m.kv.begin();
      std::advance(it, static_cast<long>(Uniform(m.kv.size())));
      return static_cast<std::int64_t>(
          (Chance(50) ? it->second.create_index : it->second.modify_index).value());
    }
    return static_cast<std::int64_t>(Uniform(m.applied_index.value() + 3));
  }

  EtcdRequestOp RangeOp(const ModelStore& m, const std::string& key) {
    EtcdRequestOp op;
    op.kind = EtcdRequestOp::Kind::kRange;
    EtcdRangeRequest& q = op.range;
    q.range = Range(key);
    static const std::int64_t kLimits[] = {0, 0, 0, 1, 2, 5, -1};
    q.limit = kLimits[Uniform(std::size(kLimits))];
    if (Chance(50)) {
      q.sort_order = static_cast<EtcdSortOrder>(Uniform(3));
      q.sort_target = static_cast<EtcdSortTarget>(Uniform(5));
    }
    q.keys_only = Chance(20);
    q.count_only = Chance(10);
    q.serializable = Chance(20);
    if (Chance(15)) q.min_mod_revision = Revision(m);
    if (Chance(15)) q.max_mod_revision = Revision(m);
    if (Chance(15)) q.min_create_revision = Revision(m);
    if (Chance(15)) q.max_create_revision = Revision(m);
    if (Chance(8)) q.revision = Chance(70) ? -1 : 1 + Revision(m);  // a past one: refused
    return op;
  }

  EtcdRequestOp DeleteOp(const ModelStore& m) {
    EtcdRequestOp op;
    op.kind = EtcdRequestOp::Kind::kDeleteRange;
    op.delete_range.range = Range(Chance(30) ? BusyKey(m) : Key());
    op.delete_range.prev_kv = Chance(50);
    written_.push_back(op.delete_range.range.key);
    return op;
  }

  // A compare, often of a key an earlier op of this txn wrote.
  EtcdCompare Compare(const ModelStore& m) {
    const std::string key =
        !written_.empty() && Chance(50) ? written_[Uniform(written_.size())] : Key();
    return CompareOn(m, Chance(80) ? KeyRange{key, ""} : Range(key));
  }

  EtcdCompare CompareOn(const ModelStore& m, KeyRange range) {
    EtcdCompare c;
    c.result = static_cast<EtcdCompareResult>(Uniform(4));
    c.target = static_cast<EtcdCompareTarget>(Uniform(5));
    c.range = std::move(range);
    const KvEntry* e = m.Find(c.range.key);
    const bool actual = e != nullptr && Chance(60);  // the key's own value: likely to hold
    switch (c.target) {
      case EtcdCompareTarget::kValue:
        c.value = actual ? e->value : Value();
        break;
      case EtcdCompareTarget::kVersion:
        c.number = static_cast<std::int64_t>(actual ? e->version : Uniform(4));
        break;
      case EtcdCompareTarget::kCreate:
        c.number = actual ? static_cast<std::int64_t>(e->create_index.value())
                          : (Chance(50) ? 0 : Revision(m));
        break;
      case EtcdCompareTarget::kMod:
        c.number = actual ? static_cast<std::int64_t>(e->modify_index.value()) : Revision(m);
        break;
      case EtcdCompareTarget::kLease:
        c.number =
            actual ? ModelLeaseNumber(e->session).value_or(0) : (Chance(50) ? 0 : LiveLease(m));
        break;
    }
    return c;
  }

  std::mt19937_64 rng_;
  std::vector<std::string> keys_;
  std::vector<std::string> nodes_;
  std::vector<std::string> written_;  // keys the txn being drawn writes, in op order
};

}  // namespace tenure::state::testutil
