// ModelStore: a deliberately naive re-implementation of the observable
// semantics of state::Store (docs/consul-api.md sections 1, 2, 4, 11 and the
// index rules atop src/state/store.h), used as the oracle of the randomized
// property test. Plain maps, copies instead of overlays, linear scans: it is
// meant to be obviously right, not fast. Test-only; single-threaded.
//
// Where the contracts leave a choice open the model records every acceptable
// outcome instead of picking one (ModelResult's alternatives), so the
// property test only fails on behaviour no reading of the contract allows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/etcd_texts.h"
#include "common/limits.h"
#include "common/types.h"
#include "state/command.h"
#include "state/etcd_request.h"
#include "state/lock_history.h"
#include "state/txn.h"
#include "state/types.h"
#include "state/zk_path.h"
#include "unit/common/type_printers.h"
#include "unit/state/model_acl.h"

namespace tenure::state::testutil {

// Go's strconv.Quote (fmt %q and %#v of a string), which Consul's error texts
// use: printable ASCII as is, the C escapes, other control bytes and bytes
// that are not valid UTF-8 as \xNN; valid multi-byte UTF-8 is kept (Go keeps
// printable runes; the tests use none that are not).
inline std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\a':
          out += "\\a";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\v':
          out += "\\v";
          break;
        default:
          if (c >= 0x20 && c < 0x7f) {
            out.push_back(static_cast<char>(c));
          } else {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\x%02x", c);
            out += buf;
          }
      }
      ++i;
      continue;
    }
    // Length of a valid UTF-8 sequence starting at i, 0 if invalid.
    std::size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                    : c >= 0xe0 && c <= 0xef ? 3
                    : c >= 0xf0 && c <= 0xf4 ? 4
                                             : 0;
    bool valid = n != 0 && i + n <= s.size();
    for (std::size_t j = 1; valid && j < n; ++j) {
      valid = (static_cast<unsigned char>(s[i + j]) & 0xc0) == 0x80;
    }
    if (valid) {
      out.append(s, i, n);
      i += n;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
      ++i;
    }
  }
  out += "\"";
  return out;
}

// A txn error the model expects; `what` nullopt means "any non-empty text"
// (check-fence, whose text no document fixes).
struct ModelTxnError {
  std::size_t op_index = 0;
  std::optional<std::string> what;
};

// An etcd error the model accepts: its code and exact text, or (where no
// document fixes the words) a start and a part the text must have.
struct ModelEtcdError {
  etcd_texts::GrpcCode code = etcd_texts::GrpcCode::kOk;
  std::string text;
  bool exact = true;
  std::string part;  // with !exact: `text` is a prefix and this must occur

  bool Matches(const etcd_texts::EtcdError& got) const {
    if (got.code != code) return false;
    if (exact) return got.message == text;
    return got.message.compare(0, text.size(), text) == 0 &&
           got.message.find(part) != std::string::npos;
  }
};

// A txn result the model expects. Results of check-fence are marked
// optional: the contract does not say whether the verb reports the entry.
struct ModelTxnResult {
  KvEntry entry;
  bool with_value = false;
  bool from_check_fence = false;
};

struct ModelResult {
  // Expected ApplyResult.status: nullopt = OK, else the exact message.
  std::optional<std::string> error;
  // An acquire with an empty or unknown session on a key in lock-delay:
  // consul-api.md 2.5 says the lock-delay check comes first (ok=false,
  // lock_delayed), but the session check could be read as first too. Both
  // leave the state unchanged; either result is accepted.
  bool delay_or_session_error = false;
  bool check_ok = false;  // compare ApplyResult.ok with `ok`
  bool ok = true;
  bool lock_delayed = false;
  bool check_fence = false;  // compare ApplyResult.fence (successful acquire)
  LogIndex fence;

  bool is_txn = false;
  // Rolled back: errors_full are all failing ops (lock-delayed locks with the
  // lock-delay text). If some lock op was lock-delayed, Consul's pre-check
  // reports only those (errors_precheck); either list is accepted.
  std::vector<ModelTxnError> errors_full;
  std::vector<ModelTxnError> errors_precheck;
  std::vector<ModelTxnResult> results;

  std::set<std::string> changed_keys;
  bool sessions_changed = false;

  // The fair acquire (decision 0027): KvEnqueue's `queued`, and every grant
  // to a waiter and every waiter that left, in the order they happened.
  bool queued = false;
  std::vector<QueueEvent> queue_events;

  bool is_acl = false;  // an ACL command: compare whether it was refused
  bool acl_applied = false;

  // An EtcdTxn (model_etcd.h): what its ops answered, or (ok = false) the
  // errors that may have rolled it back, any one of them accepted.
  bool is_etcd = false;
  EtcdTxnResponse etcd;
  std::vector<ModelEtcdError> etcd_errors;
  // Queue events in order per key, in any order across keys: an etcd txn's
  // after-commit work names no order between its keys.
  bool queue_events_by_key = false;

  // A ZkWrite (model_zk.h): each op's outcome, or the code that refused it
  // whole.
  bool is_zk = false;
  std::vector<ZkOpResult> zk;
  ZkCode zk_error = ZkCode::kOk;
};

class ModelEtcd;
class ModelZk;

// A ZooKeeper node record (decision 0056), naively: the children it ever
// saw created, counted without wrapping; its children now are counted by
// scanning the keys when read (model_zk.h).
struct ModelZkNode {
  UnixMs ctime;
  UnixMs mtime;
  std::int64_t created = 0;
  LogIndex pzxid;
  std::int32_t aversion = 0;
  bool container = false;
};

class ModelStore {
  friend class ModelEtcd;
  friend class ModelZk;

 public:
  std::map<std::string, KvEntry> kv;
  // Deleted key -> last delete index. Consul's graveyard keeps a tombstone
  // when the key is re-created; a store may as well drop it then
  // (live_tombstones). Neither choice is visible except through
  // tombstone_count and the reap floor, so the model tracks both.
  std::map<std::string, LogIndex> tombstones;
  std::map<std::string, LogIndex> live_tombstones;
  std::map<SessionId, Session> sessions;
  std::map<std::string, ClusterMs> lock_delays;  // key -> window end (never forgotten here)
  LogIndex kv_index;
  std::set<std::string> granted_in_txn;  // keys given a new holder by the running txn
  // The running txn's queue work, done at commit (TxnQueueActions): ops that
  // were a waiter's unlock, keys whose holder unlocked them (a waiter may be
  // chosen next), and the waiters chosen (decision 0027's second addendum).
  std::set<std::size_t> txn_leave_ops;
  std::set<std::pair<std::string, SessionId>> txn_leavers;
  std::map<std::string, std::size_t> txn_holder_unlocked;  // key -> the unlock op
  std::set<std::size_t> txn_consumed_unlocks;              // unlocks whose grant was a choice
  std::vector<std::pair<std::string, SessionId>> txn_chosen;
  LogIndex sessions_index;
  // The reap floor. store.h says prefix indexes are "never lower than the
  // last tombstone reap": either the highest index passed to ReapTombstones
  // (reaped_index, the member comment in store.h) or the highest index of a
  // tombstone actually reaped (from either tombstone map), which is all that
  // monotonicity needs. All are accepted.
  LogIndex reaped_index;
  LogIndex reaped_tombstone_index;
  LogIndex reaped_live_tombstone_index;
  LogIndex applied_index;
  // etcd's compaction point (EtcdCompact): only grows.
  LogIndex compact_revision;
  // The lock history (docs/history.md), derived naively: the holders of
  // every key before and after each command (each txn op), diffed.
  struct ModelKeyHistory {
    std::vector<LockGrant> grants;
    LogIndex modify_index;
  };
  std::map<std::string, ModelKeyHistory> history;
  ClusterMs now_ms;
  UnixMs wall_ms;  // the applying command's (what history and queues record)
  ModelAcl acl;
  // A large restore's staging (decision 0050), by its rules. The generator
  // never completes one (the model does not restore snapshots).
  struct ModelStaging {
    std::uint64_t id = 0;
    std::uint64_t total = 0;
    std::string bytes;
    LogIndex last_chunk;
    ClusterMs last_chunk_ms;
  };
  std::optional<ModelStaging> staging;
  // Fair-acquire queues, naively: key -> waiters in arrival order.
  struct ModelWaiter {
    SessionId session;
    std::string value;
    std::uint64_t flags = 0;
    UnixMs since;
  };
  std::map<std::string, std::vector<ModelWaiter>> queues;
  // ZooKeeper's node records by path (model_zk.h).
  std::map<std::string, ModelZkNode> zk_nodes;
  std::string zk_secret;  // ZkSecret's, set once

  // --- observable reads ------------------------------------------------------------
  const KvEntry* Find(const std::string& key) const {
    auto it = kv.find(key);
    return it == kv.end() ? nullptr : &it->second;
  }

  std::vector<KvEntry> List(const std::string& prefix) const {
    std::vector<KvEntry> out;
    for (const auto& [key, e] : kv) {
      if (StartsWith(key, prefix)) out.push_back(e);
    }
    return out;
  }

  // Consul's kvsListKeysTxn, verbatim in spirit.
  std::vector<std::string> ListKeys(const std::string& prefix, const std::string& sep) const {
    std::vector<std::string> keys;
    std::string prev;
    bool have_prev = false;
    for (const auto& [key, e] : kv) {
      if (!StartsWith(key, prefix)) continue;
      if (sep.empty()) {
        keys.push_back(key);
        continue;
      }
      std::string after = key.substr(prefix.size());
      std::size_t pos = after.find(sep);
      if (pos == std::string::npos) {
        keys.push_back(key);
        continue;
      }
      std::string cut = key.substr(0, prefix.size() + pos + sep.size());
      if (!have_prev || cut != prev) {
        keys.push_back(cut);
        prev = cut;
        have_prev = true;
      }
    }
    return keys;
  }

  LogIndex KeyIndex(const std::string& key) const {
    const KvEntry* e = Find(key);
    return e ? e->modify_index : kv_index;
  }

  // The acceptable values of PrefixIndex(prefix). store.h: highest
  // ModifyIndex or tombstone index under the prefix, never lower than the
  // last reap (either reading of the floor), the KV table index for "". For
  // a prefix with nothing under it store.h gives the floor while Consul
  // answers the whole table index (kvsListTxn); both are accepted. The
  // property test checks separately that prefix indexes never go backwards.
  std::vector<LogIndex> PrefixIndexChoices(const std::string& prefix) const {
    if (prefix.empty()) return {kv_index};
    LogIndex m;
    bool any = false;
    for (const auto& [key, e] : kv) {
      if (StartsWith(key, prefix)) {
        m = std::max(m, e.modify_index);
        any = true;
      }
    }
    for (const auto& [key, idx] : tombstones) {
      if (StartsWith(key, prefix)) {
        m = std::max(m, idx);
        any = true;
      }
    }
    std::vector<LogIndex> choices;
    for (LogIndex floor : {reaped_index, reaped_tombstone_index, reaped_live_tombstone_index}) {
      choices.push_back(std::max(m, floor));
      if (!any) choices.push_back(std::max(kv_index, floor));
    }
    return choices;
  }

  std::vector<std::string> HeldKeys(const SessionId& session) const {
    std::vector<std::string> out;
    if (session.empty()) return out;
    for (const auto& [key, e] : kv) {
      if (e.session == session) out.push_back(key);
    }
    return out;
  }

  // The window end if the key is in lock-delay now, else nullopt.
  std::optional<ClusterMs> ActiveLockDelay(const std::string& key) const {
    auto it = lock_delays.find(key);
    if (it == lock_delays.end() || it->second <= now_ms) return std::nullopt;
    return it->second;
  }
  // A remembered (possibly expired) window end, ClusterMs(0) if none.
  ClusterMs AnyLockDelay(const std::string& key) const {
    auto it = lock_delays.find(key);
    return it == lock_delays.end() ? ClusterMs(0) : it->second;
  }

  std::size_t LiveTombstonesForAbsentKeys() const { return live_tombstones.size(); }

  // --- apply -----------------------------------------------------------------------
  ModelResult Apply(const Command& command, LogIndex index) {
    applied_index = index;
    now_ms = std::max(now_ms, command.now_ms);
    wall_ms = command.wall_ms;
    if (staging && now_ms.ms() - staging->last_chunk_ms.ms() > 10'000) staging.reset();
    ModelResult r;
    const Holders before = HolderMap();
    history_events_.clear();
    std::visit([&](const auto& body) { ApplyBody(body, index, &r); }, command.body);
    if (const auto* t = std::get_if<Txn>(&command.body); t != nullptr && r.errors_full.empty()) {
      // Queue work after the txn's ops, diffed on its own (the ops' events
      // came from RunTxn).
      const Holders after_ops = HolderMap();
      TxnQueueActions(t->ops, index, &r);
      DiffHolders(after_ops, HolderMap(), kv, EndCause::kNone, &history_events_);
    }
    // Txns diff their holders op by op (RunTxn, model_etcd.h, model_zk.h).
    if (!std::holds_alternative<Txn>(command.body) &&
        !std::holds_alternative<EtcdTxn>(command.body) &&
        !std::holds_alternative<ZkWrite>(command.body)) {
      EndCause session_cause = EndCause::kNone;
      if (const auto* d = std::get_if<SessionDestroy>(&command.body)) {
        session_cause =
            d->reason == DestroyReason::kExpired ? EndCause::kTtlExpiry : EndCause::kDestroy;
      }
      DiffHolders(before, HolderMap(), kv, session_cause, &history_events_);
    }
    RecordHistory(index);
    return r;
  }

  // A read-only transaction against the current state.
  ModelResult ReadTxn(const std::vector<TxnOp>& ops) const {
    ModelStore copy = *this;
    ModelResult r;
    copy.RunTxn(ops, /*index=*/LogIndex(), /*commit=*/false, &r);
    return r;
  }

 private:
  using Holders = std::map<std::string, std::pair<SessionId, LogIndex>>;
  struct HistoryEvent {
    std::string key;
    SessionId old_session;
    LogIndex old_fence;
    EndCause cause = EndCause::kNone;  // for the end of old_session's grant
    SessionId new_session;
    LogIndex new_fence;
  };
  std::vector<HistoryEvent> history_events_;

  Holders HolderMap() const {
    Holders out;
    for (const auto& [key, e] : kv) {
      if (!e.session.empty()) out[key] = {e.session, e.fence};
    }
    return out;
  }

  static void DiffHolders(const Holders& before, const Holders& after,
                          const std::map<std::string, KvEntry>& kv_after, EndCause session_cause,
                          std::vector<HistoryEvent>* out) {
    std::set<std::string> keys;
    for (const auto& [k, h] : before) keys.insert(k);
    for (const auto& [k, h] : after) keys.insert(k);
    for (const std::string& key : keys) {
      auto b = before.find(key);
      auto a = after.find(key);
      std::pair<SessionId, LogIndex> was =
          b == before.end() ? std::pair<SessionId, LogIndex>{} : b->second;
      std::pair<SessionId, LogIndex> now =
          a == after.end() ? std::pair<SessionId, LogIndex>{} : a->second;
      if (was == now) continue;
      HistoryEvent ev{key, was.first, was.second, EndCause::kNone, now.first, now.second};
      if (!was.first.empty()) {
        ev.cause = session_cause != EndCause::kNone ? session_cause
                   : kv_after.count(key) == 0       ? EndCause::kDelete
                                                    : EndCause::kRelease;
      }
      out->push_back(std::move(ev));
    }
  }

  void RecordHistory(LogIndex index) {
    for (std::size_t i = 0; i < history_events_.size(); ++i) {
      HistoryEvent& ev = history_events_[i];
      if (!ev.old_session.empty()) {
        EndCause cause = ev.cause;
        if (cause == EndCause::kRelease && !ev.new_session.empty() &&
            ev.new_session != ev.old_session) {
          cause = EndCause::kHandoff;  // released and granted to a waiter in one entry
        }
        for (std::size_t j = i + 1; cause == EndCause::kRelease && j < history_events_.size();
             ++j) {
          const HistoryEvent& later = history_events_[j];
          if (later.key == ev.key && !later.new_session.empty() &&
              later.new_session != ev.old_session) {
            cause = EndCause::kHandoff;
          }
        }
        auto it = history.find(ev.key);
        if (it != history.end() && it->second.grants.back().fence == ev.old_fence &&
            it->second.grants.back().held()) {
          LockGrant& g = it->second.grants.back();
          g.ended_at = wall_ms;
          g.end_index = index;
          g.end_cause = cause;
          it->second.modify_index = index;
        }
      }
      if (!ev.new_session.empty()) {
        LockGrant g;
        g.fence = ev.new_fence;
        g.grant_index = ev.new_fence;
        g.session = ev.new_session;
        if (auto s = sessions.find(ev.new_session); s != sessions.end()) {
          g.session_name = CutHistoryName(s->second.name);
          g.node = CutHistoryName(s->second.node);
        }
        g.granted_at = wall_ms;
        ModelKeyHistory& h = history[ev.key];
        h.grants.push_back(std::move(g));
        if (h.grants.size() > LockHistory::kGrantsPerKey) h.grants.erase(h.grants.begin());
        h.modify_index = index;
        while (history.size() > LockHistory::kKeysMax) {
          auto oldest = history.begin();
          for (auto k = history.begin(); k != history.end(); ++k) {
            if (k->second.modify_index < oldest->second.modify_index) oldest = k;
          }
          history.erase(oldest);
        }
        // The byte bound, recounted from scratch: the least recently changed
        // key (ties: key order) loses its oldest grant until the total fits.
        while (HistoryBytes() > LockHistory::kBytesMax &&
               (history.size() > 1 || history.begin()->second.grants.size() > 1)) {
          auto oldest = history.begin();
          for (auto k = history.begin(); k != history.end(); ++k) {
            if (k->second.modify_index < oldest->second.modify_index) oldest = k;
          }
          oldest->second.grants.erase(oldest->second.grants.begin());
          if (oldest->second.grants.empty()) history.erase(oldest);
        }
      }
    }
    history_events_.clear();
  }

 public:
  // docs/history.md's count: 64 per key plus its bytes, 64 per grant plus
  // its session id, session name and node.
  std::size_t HistoryBytes() const {
    std::size_t total = 0;
    for (const auto& [key, h] : history) {
      total += 64 + key.size();
      for (const LockGrant& g : h.grants) {
        total += 64 + g.session.view().size() + g.session_name.size() + g.node.size();
      }
    }
    return total;
  }
  // docs/history.md: a name over 128 bytes keeps the longest prefix of 122
  // to 125 bytes that ends before a byte that is not a UTF-8 continuation
  // byte (or 122), then U+2026.
  static std::string CutHistoryName(std::string_view name) {
    if (name.size() <= 128) return std::string(name);
    std::size_t keep = 122;
    for (std::size_t n = 125; n >= 122; --n) {
      if ((static_cast<unsigned char>(name[n]) & 0xC0) != 0x80) {
        keep = n;
        break;
      }
    }
    return std::string(name.substr(0, keep)) + "\u2026";
  }

 private:
  static bool StartsWith(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
  }

  // Consul's DirEntry.Equal for the no-op rule: LockIndex, Key, Flags, Value,
  // Session.
  static bool SameContent(const KvEntry& a, const KvEntry& b) {
    return a.lock_index == b.lock_index && a.key == b.key && a.flags == b.flags &&
           a.value == b.value && a.session == b.session;
  }

  // Writes `e` at `index` unless it is a no-op; returns true if written.
  bool Put(KvEntry e, LogIndex index, std::set<std::string>* changed) {
    auto it = kv.find(e.key);
    if (it != kv.end() && SameContent(it->second, e)) return false;
    Write(std::move(e), index, changed);
    return true;
  }

  // Writes `e` at `index` even when nothing in it changed (etcd's Put is
  // always a new revision).
  void Write(KvEntry e, LogIndex index, std::set<std::string>* changed) {
    auto it = kv.find(e.key);
    if (it == kv.end()) live_tombstones.erase(e.key);
    ZkNoteWrite(e.key, it == kv.end(), index);
    // etcd's version: how many times the key was written since it was
    // last created (decision 0048).
    e.version = it == kv.end() ? 1 : it->second.version + 1;
    e.modify_index = index;
    kv_index = index;
    changed->insert(e.key);
    kv[e.key] = std::move(e);
  }

  bool Erase(const std::string& key, LogIndex index, std::set<std::string>* changed) {
    auto it = kv.find(key);
    if (it == kv.end()) return false;
    kv.erase(it);
    ZkNoteErase(key, index);
    tombstones[key] = index;
    live_tombstones[key] = index;
    kv_index = index;
    changed->insert(key);
    return true;
  }

  // The node records every API's writes keep (decision 0056): a key that is
  // a valid path and the direct child of a record's path counts as created
  // under it or deleted from it; a change of a key with a record is a new
  // mtime; a deleted key loses its record ("/" is no key and keeps its own).
  static std::optional<std::string> ZkParentOfKey(const std::string& key) {
    if (key.size() < 2 || key[0] != '/' || !ZkPathError(key).empty()) return std::nullopt;
    const std::size_t slash = key.rfind('/');
    return slash == 0 ? std::string("/") : key.substr(0, slash);
  }
  void ZkNoteWrite(const std::string& key, bool created, LogIndex index) {
    if (!created) {
      if (auto own = zk_nodes.find(key); own != zk_nodes.end() && key != "/") {
        own->second.mtime = wall_ms;
      }
      return;
    }
    const std::optional<std::string> parent = ZkParentOfKey(key);
    if (!parent) return;
    if (auto it = zk_nodes.find(*parent); it != zk_nodes.end()) {
      ++it->second.created;
      it->second.pzxid = index;
    }
  }
  void ZkNoteErase(const std::string& key, LogIndex index) {
    if (key != "/") zk_nodes.erase(key);
    const std::optional<std::string> parent = ZkParentOfKey(key);
    if (!parent) return;
    if (auto it = zk_nodes.find(*parent); it != zk_nodes.end()) it->second.pzxid = index;
  }

  // kvsSetTxn with updateSession=false.
  KvEntry SetEntry(const std::string& key, const std::string& value, std::uint64_t flags,
                   LogIndex index) const {
    KvEntry e;
    e.key = key;
    e.value = value;
    e.flags = flags;
    e.lock_index = 0;
    const KvEntry* existing = Find(key);
    if (existing != nullptr) {
      e.create_index = existing->create_index;
      e.session = existing->session;
      e.fence = existing->fence;
      e.modify_index = existing->modify_index;
    } else {
      e.create_index = index;
    }
    return e;
  }

  bool CasPasses(const std::string& key, LogIndex cas) const {
    const KvEntry* existing = Find(key);
    if (cas.is_none()) return existing == nullptr;
    return existing != nullptr && existing->modify_index == cas;
  }

  enum class LockOutcome { kLocked, kHeld, kMissingSession, kInvalidSession };

  LockOutcome Lock(const std::string& key, const std::string& value, std::uint64_t flags,
                   const SessionId& session, LogIndex index, std::set<std::string>* changed) {
    if (session.empty()) return LockOutcome::kMissingSession;
    if (sessions.count(session) == 0) return LockOutcome::kInvalidSession;
    const KvEntry* existing = Find(key);
    KvEntry e;
    e.key = key;
    e.value = value;
    e.flags = flags;
    e.session = session;
    if (existing != nullptr) {
      e.create_index = existing->create_index;
      e.modify_index = existing->modify_index;
      if (existing->session == session) {
        e.lock_index = existing->lock_index;
        e.fence = existing->fence;
      } else if (!existing->session.empty()) {
        return LockOutcome::kHeld;
      } else {
        e.lock_index = existing->lock_index + 1;
        e.fence = index;
      }
    } else {
      e.create_index = index;
      e.lock_index = 1;
      e.fence = index;
    }
    Put(std::move(e), index, changed);
    return LockOutcome::kLocked;
  }

  bool Unlock(const std::string& key, const std::string& value, std::uint64_t flags,
              const SessionId& session, LogIndex index, std::set<std::string>* changed) {
    const KvEntry* existing = Find(key);
    if (existing == nullptr || existing->session != session) return false;
    KvEntry e = *existing;
    e.value = value;
    e.flags = flags;
    e.session = SessionId();
    e.fence = LogIndex();
    Put(std::move(e), index, changed);
    return true;
  }

  // kvsDeleteCASTxn: a missing key answers true.
  bool DeleteCas(const std::string& key, LogIndex cas, LogIndex index,
                 std::set<std::string>* changed) {
    const KvEntry* existing = Find(key);
    if (existing == nullptr) return true;
    if (existing->modify_index != cas) return false;
    Erase(key, index, changed);
    return true;
  }

  void DeleteTree(const std::string& prefix, LogIndex index, std::set<std::string>* changed) {
    std::vector<std::string> doomed;
    for (const auto& [key, e] : kv) {
      if (StartsWith(key, prefix)) doomed.push_back(key);
    }
    for (const std::string& key : doomed) Erase(key, index, changed);
  }

  void ApplyBody(const KvSet& c, LogIndex index, ModelResult* r) {
    Put(SetEntry(c.key, c.value, c.flags, index), index, &r->changed_keys);
    r->check_ok = true;
    r->ok = true;
  }

  void ApplyBody(const KvCas& c, LogIndex index, ModelResult* r) {
    r->check_ok = true;
    r->ok = CasPasses(c.key, c.index);
    if (r->ok) Put(SetEntry(c.key, c.value, c.flags, index), index, &r->changed_keys);
  }

  void ApplyBody(const KvAcquire& c, LogIndex index, ModelResult* r) {
    if (ActiveLockDelay(c.key)) {
      r->check_ok = true;
      r->ok = false;
      r->lock_delayed = true;
      r->delay_or_session_error = c.session.empty() || sessions.count(c.session) == 0;
      return;
    }
    if (!c.session.empty() && sessions.count(c.session) != 0) {
      Settle(c.key, index, r);
      if (QueueBlocks(c.key, c.session)) {
        r->check_ok = true;
        r->ok = false;
        return;
      }
    }
    switch (Lock(c.key, c.value, c.flags, c.session, index, &r->changed_keys)) {
      case LockOutcome::kLocked:
        r->check_ok = true;
        r->ok = true;
        r->check_fence = true;
        r->fence = kv.at(c.key).fence;
        return;
      case LockOutcome::kHeld:
        r->check_ok = true;
        r->ok = false;
        return;
      case LockOutcome::kMissingSession:
        r->error = "missing session";
        return;
      case LockOutcome::kInvalidSession:
        r->error = "invalid session " + GoQuote(c.session.str());
        return;
    }
  }

  void ApplyBody(const KvRelease& c, LogIndex index, ModelResult* r) {
    if (c.session.empty()) {
      r->error = "missing session";
      return;
    }
    r->check_ok = true;
    r->ok = Unlock(c.key, c.value, c.flags, c.session, index, &r->changed_keys);
    if (r->ok) {
      Settle(c.key, index, r);
    } else if (Leave(c.key, c.session, r)) {
      r->ok = true;  // a waiter gives up its place; nothing else changes
    }
  }

  void ApplyBody(const KvDelete& c, LogIndex index, ModelResult* r) {
    r->check_ok = true;
    if (c.has_cas) {
      r->ok = DeleteCas(c.key, c.index, index, &r->changed_keys);
    } else {
      Erase(c.key, index, &r->changed_keys);
      r->ok = true;
    }
    if (r->ok) DropQueue(c.key, r);
  }

  void ApplyBody(const KvDeleteTree& c, LogIndex index, ModelResult* r) {
    DeleteTree(c.prefix, index, &r->changed_keys);
    std::vector<std::string> doomed;
    for (const auto& [key, q] : queues) {
      if (StartsWith(key, c.prefix)) doomed.push_back(key);
    }
    for (const std::string& key : doomed) DropQueue(key, r);
    r->check_ok = true;
    r->ok = true;
  }

  void ApplyBody(const SessionCreate& c, LogIndex index, ModelResult* r) {
    // An id in use (a lease number granted twice, decision 0048 section 3).
    if (sessions.count(c.session.id) != 0) {
      r->error = "session " + GoQuote(c.session.id.str()) + " already exists";
      return;
    }
    Session s = c.session;
    s.create_index = index;
    sessions[s.id] = std::move(s);
    sessions_index = index;
    r->sessions_changed = true;
  }

  void ApplyBody(const SessionDestroy& c, LogIndex index, ModelResult* r) {
    auto it = sessions.find(c.id);
    if (it == sessions.end()) return;  // idempotent
    const Session s = it->second;
    sessions.erase(it);
    sessions_index = index;
    r->sessions_changed = true;
    const DurationNs delay_ns = std::min<DurationNs>(s.lock_delay_ns, limits::kLockDelayMaxNs);
    const std::vector<std::string> held = HeldKeys(s.id);
    for (const std::string& key : held) {
      if (s.behavior == Behavior::kDelete) {
        Erase(key, index, &r->changed_keys);
      } else {
        KvEntry e = kv.at(key);
        e.session = SessionId();
        e.fence = LogIndex();
        Put(std::move(e), index, &r->changed_keys);
      }
      if (delay_ns > 0) lock_delays[key] = now_ms + delay_ns / kNsPerMs;
    }
    // The dead session leaves every queue (keys in order), then each key it
    // held goes to its queue's head unless lock-delay holds it.
    for (auto& [key, q] : queues) {
      for (auto w = q.begin(); w != q.end(); ++w) {
        if (w->session == c.id) {
          q.erase(w);
          r->queue_events.push_back({key, c.id, QueueEvent::Kind::kLeft, LogIndex()});
          break;
        }
      }
    }
    std::erase_if(queues, [](const auto& kq) { return kq.second.empty(); });
    for (const std::string& key : held) Settle(key, index, r);
  }

  // --- the fair acquire -----------------------------------------------------------
  bool QueueBlocks(const std::string& key, const SessionId& session) const {
    if (queues.count(key) == 0) return false;
    const KvEntry* e = Find(key);
    return e == nullptr || e->session != session;
  }

  void Settle(const std::string& key, LogIndex index, ModelResult* r) {
    auto q = queues.find(key);
    if (q == queues.end()) return;
    const KvEntry* e = Find(key);
    if ((e != nullptr && !e->session.empty()) || ActiveLockDelay(key)) return;
    ModelWaiter head = q->second.front();
    q->second.erase(q->second.begin());
    if (q->second.empty()) queues.erase(q);
    if (Lock(key, head.value, head.flags, head.session, index, &r->changed_keys) !=
        LockOutcome::kLocked) {
      std::fputs("model: a waiter's grant failed\n", stderr);
      std::abort();
    }
    r->queue_events.push_back({key, head.session, QueueEvent::Kind::kGranted, kv.at(key).fence});
  }

  bool Waits(const std::string& key, const SessionId& session) const {
    auto q = queues.find(key);
    if (q == queues.end()) return false;
    for (const ModelWaiter& w : q->second) {
      if (w.session == session) return true;
    }
    return false;
  }

  bool Leave(const std::string& key, const SessionId& session, ModelResult* r) {
    auto q = queues.find(key);
    if (q == queues.end()) return false;
    for (auto w = q->second.begin(); w != q->second.end(); ++w) {
      if (w->session == session) {
        q->second.erase(w);
        if (q->second.empty()) queues.erase(q);
        r->queue_events.push_back({key, session, QueueEvent::Kind::kLeft, LogIndex()});
        return true;
      }
    }
    return false;
  }

  void DropQueue(const std::string& key, ModelResult* r) {
    auto q = queues.find(key);
    if (q == queues.end()) return;
    for (const ModelWaiter& w : q->second) {
      r->queue_events.push_back({key, w.session, QueueEvent::Kind::kLeft, LogIndex()});
    }
    queues.erase(q);
  }

  std::size_t WaiterCount() const {
    std::size_t n = 0;
    for (const auto& [key, q] : queues) n += q.size();
    return n;
  }

  void ApplyBody(const KvEnqueue& c, LogIndex index, ModelResult* r) {
    if (c.session.empty()) {
      r->error = "missing session";
      return;
    }
    if (sessions.count(c.session) == 0) {
      r->error = "invalid session " + GoQuote(c.session.str());
      return;
    }
    if (!c.hold) Settle(c.key, index, r);  // hold: the leader's guard grants nothing
    const KvEntry* e = Find(c.key);
    const bool holder = e != nullptr && e->session == c.session;
    const bool free = e == nullptr || e->session.empty();
    r->check_ok = true;
    if (holder || (free && queues.count(c.key) == 0 && !c.hold && !ActiveLockDelay(c.key))) {
      Lock(c.key, c.value, c.flags, c.session, index, &r->changed_keys);
      r->ok = true;
      r->check_fence = true;
      r->fence = kv.at(c.key).fence;
      return;
    }
    r->ok = false;
    std::vector<ModelWaiter>& q = queues[c.key];
    for (const ModelWaiter& w : q) {
      if (w.session == c.session) {
        r->queued = true;
        return;
      }
    }
    if (q.size() >= Store::kQueueWaitersPerKeyMax) {
      r->error = "too many waiters for key " + GoQuote(c.key) + " (limit " +
                 std::to_string(Store::kQueueWaitersPerKeyMax) + ")";
      return;
    }
    std::size_t waits = 0;
    for (const auto& [key, waiters] : queues) {
      for (const ModelWaiter& w : waiters) waits += w.session == c.session ? 1 : 0;
    }
    if (waits >= Store::kQueueKeysPerSessionMax) {
      if (q.empty()) queues.erase(c.key);
      r->error = "session " + GoQuote(c.session.str()) + " already waits in the queues of " +
                 std::to_string(Store::kQueueKeysPerSessionMax) + " keys (limit " +
                 std::to_string(Store::kQueueKeysPerSessionMax) + ")";
      return;
    }
    if (WaiterCount() >= Store::kQueueWaitersMax) {
      if (q.empty()) queues.erase(c.key);
      r->error = "too many queued waiters (limit " + std::to_string(Store::kQueueWaitersMax) + ")";
      return;
    }
    q.push_back({c.session, c.value, c.flags, wall_ms});
    r->queued = true;
  }

  void ApplyBody(const KvDequeue& c, LogIndex index, ModelResult* r) {
    if (!c.hold) Settle(c.key, index, r);
    Leave(c.key, c.session, r);
    const KvEntry* e = Find(c.key);
    r->check_ok = true;
    r->ok = e != nullptr && !c.session.empty() && e->session == c.session;
    if (r->ok) {
      r->check_fence = true;
      r->fence = e->fence;
    }
  }

  void ApplyBody(const KvQueueGrant& c, LogIndex index, ModelResult* r) { Settle(c.key, index, r); }

  // After a committed txn: waiters that unlocked leave their queues first;
  // waiters the holder chose leave theirs with the key (granted, or left if
  // a later op released it again); then deletes drop queues and unlocks by
  // holders hand off, in op order.
  void TxnQueueActions(const std::vector<TxnOp>& ops, LogIndex index, ModelResult* r) {
    std::vector<bool> leaving(ops.size(), false);
    for (std::size_t i = 0; i < ops.size(); ++i) leaving[i] = txn_leave_ops.count(i) != 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (leaving[i]) Leave(ops[i].key, ops[i].session, r);
    }
    for (const auto& chosen : txn_chosen) {
      // Not a structured binding: clang 14 cannot capture one in a lambda.
      const std::string& key = chosen.first;
      const SessionId& session = chosen.second;
      auto q = queues.find(key);
      auto w = std::find_if(q->second.begin(), q->second.end(),
                            [&](const ModelWaiter& mw) { return mw.session == session; });
      q->second.erase(w);
      if (q->second.empty()) queues.erase(q);
      const KvEntry* e = Find(key);
      if (e != nullptr && e->session == session) {
        r->queue_events.push_back({key, session, QueueEvent::Kind::kGranted, e->fence});
      } else {  // a later delete in the txn
        r->queue_events.push_back({key, session, QueueEvent::Kind::kLeft, LogIndex()});
      }
    }
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const TxnOp& op = ops[i];
      switch (op.verb) {
        case TxnVerb::kUnlock:
          if (!leaving[i] && txn_consumed_unlocks.count(i) == 0) Settle(op.key, index, r);
          break;
        case TxnVerb::kDelete:
        case TxnVerb::kDeleteCas:
          DropQueue(op.key, r);
          break;
        case TxnVerb::kDeleteTree: {
          std::vector<std::string> doomed;
          for (const auto& [key, q] : queues) {
            if (StartsWith(key, op.key)) doomed.push_back(key);
          }
          for (const std::string& key : doomed) DropQueue(key, r);
          break;
        }
        default:
          break;
      }
    }
  }

  void ApplyBody(const Txn& c, LogIndex index, ModelResult* r) {
    r->is_txn = true;
    RunTxn(c.ops, index, /*commit=*/true, r);
  }

  // Members touch no KV or session state (tested in members_test.cc).
  void ApplyBody(const SetMember& /*c*/, LogIndex /*index*/, ModelResult* /*r*/) {}
  void ApplyBody(const RemoveMember& /*c*/, LogIndex /*index*/, ModelResult* /*r*/) {}
  // Checkpoints compare digests and change no state (store.h).
  void ApplyBody(const Checkpoint& /*c*/, LogIndex /*index*/, ModelResult* /*r*/) {}
  // The generator never restores a snapshot (restore_test.cc tests it).
  void ApplyBody(const RestoreState& /*c*/, LogIndex /*index*/, ModelResult* /*r*/) {
    std::fputs("the model does not restore snapshots\n", stderr);
    std::abort();
  }
  // model_etcd.h.
  void ApplyBody(const EtcdTxn& c, LogIndex index, ModelResult* r);
  // model_zk.h.
  void ApplyBody(const ZkWrite& c, LogIndex index, ModelResult* r);
  // The first secret stays: a second is refused.
  void ApplyBody(const ZkSecret& c, LogIndex /*index*/, ModelResult* r) {
    if (!zk_secret.empty()) {
      r->error = "the ZooKeeper session secret is set already";
      return;
    }
    zk_secret = c.secret;
  }
  // etcd's kvstore.compact rule (decision 0048 section 1): a revision at or
  // below the compaction point is compacted; this entry's own revision or
  // a later one is the future (no client can have seen it); any other moves
  // the point. Nothing else changes: no key, no session, no history.
  void ApplyBody(const EtcdCompact& c, LogIndex index, ModelResult* r) {
    r->is_etcd = true;
    r->check_ok = true;
    if (c.revision <= compact_revision) {
      r->ok = false;
      r->etcd_errors = {{etcd_texts::GrpcCode::kOutOfRange,
                         "etcdserver: mvcc: required revision has been compacted"}};
    } else if (c.revision >= index) {
      r->ok = false;
      r->etcd_errors = {{etcd_texts::GrpcCode::kOutOfRange,
                         "etcdserver: mvcc: required revision is a future revision"}};
    } else {
      compact_revision = c.revision;
    }
  }
  void ApplyBody(const RestoreChunk& c, LogIndex index, ModelResult* r) {
    const bool same = staging && staging->id == c.restore_id;
    if (c.offset == 0) {
      staging = ModelStaging{c.restore_id, c.total, "", LogIndex(), ClusterMs()};
    } else if (!same || staging->total != c.total || staging->bytes.size() != c.offset) {
      r->error = "snapshot restore refused: its chunk at offset " + std::to_string(c.offset) +
                 " does not continue the staged bytes (" +
                 (same ? std::to_string(staging->bytes.size()) : std::string("none")) +
                 "); another restore or a change of leader came between; try again";
      if (same) staging.reset();
      return;
    }
    staging->bytes += c.bytes;
    staging->last_chunk = index;
    staging->last_chunk_ms = now_ms;
  }
  void ApplyBody(const RestoreStaged& c, LogIndex /*index*/, ModelResult* r) {
    const bool same = staging && staging->id == c.restore_id;
    if (same && staging->bytes.size() == c.total) {
      std::fputs("the model does not restore snapshots\n", stderr);
      std::abort();
    }
    r->error = "snapshot restore refused: " +
               (same ? std::to_string(staging->bytes.size()) + " of its " +
                           std::to_string(c.total) + " bytes are staged"
                     : std::string("its bytes are no longer staged")) +
               "; another restore or a change of leader came between; try again";
    if (same) staging.reset();
  }

  template <typename AclCommand>
  requires requires(ModelAcl& a, const AclCommand& c, LogIndex i) { a.Apply(c, i, UnixMs()); }
  void ApplyBody(const AclCommand& c, LogIndex index, ModelResult* r) {
    r->is_acl = true;
    r->acl_applied = acl.Apply(c, index, wall_ms);
  }

  void ApplyBody(const ReapTombstones& c, LogIndex /*index*/, ModelResult* /*r*/) {
    for (auto it = tombstones.begin(); it != tombstones.end();) {
      if (it->second <= c.index) {
        reaped_tombstone_index = std::max(reaped_tombstone_index, it->second);
        it = tombstones.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = live_tombstones.begin(); it != live_tombstones.end();) {
      if (it->second <= c.index) {
        reaped_live_tombstone_index = std::max(reaped_live_tombstone_index, it->second);
        it = live_tombstones.erase(it);
      } else {
        ++it;
      }
    }
    reaped_index = std::max(reaped_index, c.index);
  }

  // Evaluates ops in order on a copy of the KV state (Consul's txnDispatch:
  // a failing op changes nothing and evaluation continues); commits the copy
  // only if no op failed and `commit` is set.
  void RunTxn(const std::vector<TxnOp>& ops, LogIndex index, bool commit, ModelResult* r) {
    r->is_txn = true;
    ModelStore work = *this;
    work.granted_in_txn.clear();
    work.txn_leave_ops.clear();
    work.txn_leavers.clear();
    work.txn_holder_unlocked.clear();
    work.txn_chosen.clear();
    work.txn_consumed_unlocks.clear();
    std::set<std::string> changed;
    std::vector<HistoryEvent> events;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const TxnOp& op = ops[i];
      const Holders before_op = work.HolderMap();
      struct DiffAfter {  // diffs the op's holder changes whichever way it leaves
        ModelStore& w;
        const Holders& before;
        std::vector<HistoryEvent>* out;
        ~DiffAfter() { DiffHolders(before, w.HolderMap(), w.kv, EndCause::kNone, out); }
      } diff_after{work, before_op, &events};
      if (op.verb == TxnVerb::kLock && ActiveLockDelay(op.key)) {
        std::string what = "failed to lock key " + GoQuote(op.key) + " due to lock delay";
        r->errors_precheck.push_back({i, what});
        r->errors_full.push_back({i, what});
        continue;
      }
      std::optional<std::string> error = work.TxnOpApply(op, i, index, &changed, &r->results);
      if (error) r->errors_full.push_back({i, *error == "\x01" ? std::nullopt : error});
    }
    if (!r->errors_full.empty()) {
      r->results.clear();
      return;
    }
    if (commit) {
      kv = std::move(work.kv);
      tombstones = std::move(work.tombstones);
      live_tombstones = std::move(work.live_tombstones);
      zk_nodes = std::move(work.zk_nodes);
      kv_index = work.kv_index;
      r->changed_keys = std::move(changed);
      history_events_ = std::move(events);
      txn_leave_ops = std::move(work.txn_leave_ops);
      txn_chosen = std::move(work.txn_chosen);
      txn_consumed_unlocks = std::move(work.txn_consumed_unlocks);
    }
  }

  // One op on this (working) copy. Returns the error text, "\x01" for "any
  // text", nullopt on success.
  std::optional<std::string> TxnOpApply(const TxnOp& op, std::size_t i, LogIndex index,
                                        std::set<std::string>* changed,
                                        std::vector<ModelTxnResult>* results) {
    const std::string q = GoQuote(op.key);
    auto entry_result = [&](const std::string& key, bool with_value) {
      results->push_back({kv.at(key), with_value, false});
    };
    switch (op.verb) {
      case TxnVerb::kSet:
        Put(SetEntry(op.key, op.value, op.flags, index), index, changed);
        entry_result(op.key, false);
        return std::nullopt;
      case TxnVerb::kCas:
        if (!CasPasses(op.key, op.index)) return "failed to set key " + q + ", index is stale";
        Put(SetEntry(op.key, op.value, op.flags, index), index, changed);
        entry_result(op.key, false);
        return std::nullopt;
      case TxnVerb::kLock: {
        // One raft entry, one fencing token: a key may get only one new
        // holder per transaction.
        const auto* current = Find(op.key);
        bool new_grant = current == nullptr || current->session != op.session;
        // The holder may name its successor among the waiters: after its
        // own unlock in this txn, for a waiter that is not leaving.
        bool chosen = false;
        if (QueueBlocks(op.key, op.session)) {
          const bool left = txn_leavers.count({op.key, op.session}) != 0;
          chosen = txn_holder_unlocked.count(op.key) != 0 && current != nullptr &&
                   current->session.empty() && Waits(op.key, op.session) && !left &&
                   granted_in_txn.count(op.key) == 0;
          if (!chosen) return "failed to lock key " + q + ", lock is already held";
        }
        if (new_grant && granted_in_txn.count(op.key) != 0) {
          return "failed to lock key " + q + ", it was already granted in this transaction";
        }
        switch (Lock(op.key, op.value, op.flags, op.session, index, changed)) {
          case LockOutcome::kLocked:
            if (kv.at(op.key).fence == index) granted_in_txn.insert(op.key);
            if (chosen) {
              txn_consumed_unlocks.insert(txn_holder_unlocked.at(op.key));
              txn_holder_unlocked.erase(op.key);
              txn_chosen.emplace_back(op.key, op.session);
            }
            entry_result(op.key, false);
            return std::nullopt;
          case LockOutcome::kHeld:
            return "failed to lock key " + q + ", lock is already held";
          case LockOutcome::kMissingSession:
            return std::string("missing session");
          case LockOutcome::kInvalidSession:
            return "invalid session " + GoQuote(op.session.str());
        }
        return std::nullopt;
      }
      case TxnVerb::kUnlock:
        for (const auto& [key, session] : txn_chosen) {
          if (key == op.key) {
            return "failed to unlock key " + q + ", it was handed to a waiter in this transaction";
          }
        }
        if (op.session.empty()) return std::string("missing session");
        if (!Unlock(op.key, op.value, op.flags, op.session, index, changed)) {
          if (Waits(op.key, op.session)) {  // a waiter leaves at commit
            txn_leave_ops.insert(i);
            txn_leavers.insert({op.key, op.session});
            KvEntry shown;
            shown.key = op.key;
            const KvEntry* e = Find(op.key);
            results->push_back({e != nullptr ? *e : shown, false, false});
            return std::nullopt;
          }
          return "failed to unlock key " + q + ", lock isn't held, or is held by another session";
        }
        txn_holder_unlocked[op.key] = i;
        entry_result(op.key, false);
        return std::nullopt;
      case TxnVerb::kGet:
        if (Find(op.key) == nullptr) return "key " + q + " doesn't exist";
        entry_result(op.key, true);
        return std::nullopt;
      case TxnVerb::kGetOrEmpty:
        if (Find(op.key) == nullptr) {
          KvEntry empty;
          empty.key = op.key;
          results->push_back({empty, true, false});
        } else {
          entry_result(op.key, true);
        }
        return std::nullopt;
      case TxnVerb::kGetTree:
        for (const KvEntry& e : List(op.key)) results->push_back({e, true, false});
        return std::nullopt;
      case TxnVerb::kCheckIndex: {
        const KvEntry* e = Find(op.key);
        if (e == nullptr) return "failed to check index, key " + q + " doesn't exist";
        if (e->modify_index != op.index) {
          return "failed index check for key " + q + ", current modify index " +
                 std::to_string(e->modify_index.value()) +
                 " != " + std::to_string(op.index.value());
        }
        entry_result(op.key, false);
        return std::nullopt;
      }
      case TxnVerb::kCheckSession: {
        const KvEntry* e = Find(op.key);
        if (e == nullptr) return "failed to check session, key " + q + " doesn't exist";
        if (e->session != op.session) {
          return "failed session check for key " + q + ", current session " +
                 GoQuote(e->session.str()) + " != " + GoQuote(op.session.str());
        }
        entry_result(op.key, false);
        return std::nullopt;
      }
      case TxnVerb::kCheckNotExists:
        if (Find(op.key) != nullptr) return "key " + q + " exists";
        return std::nullopt;
      case TxnVerb::kDelete:
        txn_holder_unlocked.erase(op.key);
        Erase(op.key, index, changed);
        return std::nullopt;
      case TxnVerb::kDeleteTree:
        std::erase_if(txn_holder_unlocked,
                      [&](const auto& held) { return StartsWith(held.first, op.key); });
        DeleteTree(op.key, index, changed);
        return std::nullopt;
      case TxnVerb::kDeleteCas:
        if (!DeleteCas(op.key, op.index, index, changed)) {
          return "failed to delete key " + q + ", index is stale";
        }
        txn_holder_unlocked.erase(op.key);
        return std::nullopt;
      case TxnVerb::kCheckFence: {
        const KvEntry* e = Find(op.key);
        if (e == nullptr || e->session.empty() || e->fence != op.index) {
          return std::string("\x01");
        }
        results->push_back({*e, false, true});
        return std::nullopt;
      }
    }
    return std::nullopt;
  }
};

}  // namespace tenure::state::testutil

// The etcd part defines ModelStore::ApplyBody(const EtcdTxn&), the
// ZooKeeper part ModelStore::ApplyBody(const ZkWrite&).
#include "unit/state/model_etcd.h"
#include "unit/state/model_zk.h"
