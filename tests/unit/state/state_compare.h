// Comparisons of everything a Store exposes, against the ModelStore oracle
// or against another Store. Each returns "" when equal, else a description
// of the first difference, so a randomized test can print it next to the
// seed and step. Test-only.
#pragma once

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "state/store.h"
#include "unit/common/type_printers.h"
#include "unit/state/etcd_compare.h"
#include "unit/state/model_store.h"
#include "unit/state/random_commands.h"
#include "unit/state/store_fixture.h"

namespace tenure::state::testutil {

inline std::string Show(const KvEntry* e) {
  if (e == nullptr) return "<absent>";
  std::ostringstream os;
  PrintTo(*e, &os);
  return os.str();
}

inline std::string Show(const Session& s) {
  std::ostringstream os;
  PrintTo(s, &os);
  return os.str();
}

template <typename T>
std::string ShowList(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

inline std::string ShowKeys(const std::vector<std::string>& keys) {
  std::vector<std::string> escaped;
  for (const std::string& k : keys) escaped.push_back("\"" + EscapeBytes(k) + "\"");
  return ShowList(escaped);
}

inline std::vector<std::string> HeldList(const Store& s, const SessionId& id) {
  const std::set<std::string>* held = s.HeldKeys(id);
  if (held == nullptr) return {};
  return {held->begin(), held->end()};
}

// Entries equal in every field; `value` only when with_value.
inline bool SameResultEntry(const TxnResultEntry& got, const ModelTxnResult& want) {
  if (got.with_value != want.with_value) return false;
  KvEntry a = got.entry;
  KvEntry b = want.entry;
  if (!want.with_value) {
    a.value.clear();
    b.value.clear();
  }
  return a == b;
}

inline std::string ShowResults(const std::vector<TxnResultEntry>& results) {
  std::ostringstream os;
  for (const TxnResultEntry& r : results) {
    PrintTo(r.entry, &os);
    os << (r.with_value ? "+value " : " ");
  }
  return os.str();
}

inline std::string ShowErrors(const std::vector<TxnError>& errors) {
  std::ostringstream os;
  for (const TxnError& e : errors) os << "{" << e.op_index << ": " << EscapeBytes(e.what) << "} ";
  return os.str();
}

inline std::string ShowModelErrors(const std::vector<ModelTxnError>& errors) {
  std::ostringstream os;
  for (const ModelTxnError& e : errors) {
    os << "{" << e.op_index << ": " << (e.what ? EscapeBytes(*e.what) : "<any text>") << "} ";
  }
  return os.str();
}

inline bool ErrorsMatch(const std::vector<TxnError>& got, const std::vector<ModelTxnError>& want) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i].op_index != want[i].op_index) return false;
    if (want[i].what ? got[i].what != *want[i].what : got[i].what.empty()) return false;
  }
  return true;
}

inline bool ResultsMatch(const std::vector<TxnResultEntry>& got,
                         const std::vector<ModelTxnResult>& want, bool include_check_fence) {
  std::size_t j = 0;
  for (const ModelTxnResult& w : want) {
    if (w.from_check_fence && !include_check_fence) continue;
    if (j >= got.size() || !SameResultEntry(got[j], w)) return false;
    ++j;
  }
  return j == got.size();
}

// The outcome of a txn (apply or read-only) against the model's.
inline std::string CompareTxnOutcome(const TxnOutcome& got, const ModelResult& want) {
  std::ostringstream os;
  const bool full = ErrorsMatch(got.errors, want.errors_full);
  const bool pre = !want.errors_precheck.empty() && ErrorsMatch(got.errors, want.errors_precheck);
  if (!full && !pre) {
    os << "txn errors: got " << ShowErrors(got.errors) << " want "
       << ShowModelErrors(want.errors_full);
    if (!want.errors_precheck.empty()) {
      os << " (or, pre-check only, " << ShowModelErrors(want.errors_precheck) << ")";
    }
    return os.str();
  }
  if (!got.errors.empty()) {
    if (!got.results.empty())
      return "rolled-back txn reported results: " + ShowResults(got.results);
    return "";
  }
  if (!ResultsMatch(got.results, want.results, true) &&
      !ResultsMatch(got.results, want.results, false)) {
    os << "txn results: got " << ShowResults(got.results) << " want ";
    for (const ModelTxnResult& r : want.results) {
      PrintTo(r.entry, &os);
      os << (r.with_value ? "+value" : "") << (r.from_check_fence ? "(check-fence, optional)" : "")
         << " ";
    }
    return os.str();
  }
  return "";
}

inline std::string ShowQueueEvents(const std::vector<QueueEvent>& events) {
  std::string out = "[";
  for (const QueueEvent& e : events) {
    out += "{" + e.key + " " + e.session.str() +
           (e.kind == QueueEvent::Kind::kGranted ? " granted " : " left ") +
           std::to_string(e.fence.value()) + "}";
  }
  return out + "]";
}

// Queue events in order per key (a stable sort by key), for a model result
// that names no order across keys.
inline std::vector<QueueEvent> ByKey(std::vector<QueueEvent> events) {
  std::stable_sort(events.begin(), events.end(),
                   [](const QueueEvent& a, const QueueEvent& b) { return a.key < b.key; });
  return events;
}

inline std::string ShowZkStat(const ZkStat& s) {
  std::ostringstream os;
  os << "{czxid=" << s.czxid << " mzxid=" << s.mzxid << " ctime=" << s.ctime << " mtime=" << s.mtime
     << " version=" << s.version << " cversion=" << s.cversion << " aversion=" << s.aversion
     << " owner=" << s.ephemeral_owner << " length=" << s.data_length
     << " children=" << s.num_children << " pzxid=" << s.pzxid << "}";
  return os.str();
}

inline std::string ShowZk(const std::vector<ZkOpResult>& results, ZkCode error) {
  std::ostringstream os;
  os << "[";
  for (const ZkOpResult& r : results) {
    os << " " << static_cast<int>(r.code);
    if (!r.path.empty()) os << " \"" << EscapeBytes(r.path) << "\"";
    if (r.stat != ZkStat()) os << " " << ShowZkStat(r.stat);
  }
  os << " ] error " << static_cast<int>(error);
  return os.str();
}

// ZooKeeper's view of the tree (decision 0056): every record, and the Stat
// and children of "/" and of every key that starts with "/", against the
// model's naive reading (model_zk.h).
inline std::string CompareZkTree(const Store& s, const ModelStore& m) {
  std::ostringstream os;
  if (s.zk_secret() != m.zk_secret) {
    return "zk secret: got " + std::to_string(s.zk_secret().size()) + " bytes, want " +
           std::to_string(m.zk_secret.size());
  }
  if (s.zk_nodes().size() != m.zk_nodes.size()) {
    os << "zk records: got " << s.zk_nodes().size() << " want " << m.zk_nodes.size();
    return os.str();
  }
  for (const auto& [path, want] : m.zk_nodes) {
    const ZkNode* got = s.FindZkNode(path);
    const auto children = static_cast<std::int32_t>(ModelZk::Children(m, path).size());
    if (got == nullptr || got->ctime != want.ctime || got->mtime != want.mtime ||
        got->children_created != ModelZk::Wrap(want.created) || got->children != children ||
        got->pzxid != want.pzxid || got->aversion != want.aversion ||
        got->container != want.container) {
      os << "zk record \"" << EscapeBytes(path) << "\": got "
         << (got ? "created=" + std::to_string(got->children_created) +
                       " children=" + std::to_string(got->children) +
                       " pzxid=" + std::to_string(got->pzxid.value())
                 : std::string("none"))
         << " want created=" << want.created << " children=" << children << " pzxid=" << want.pzxid;
      return os.str();
    }
  }
  std::vector<std::string> paths = {"/"};
  for (const auto& [key, e] : m.kv) {
    if (!key.empty() && key[0] == '/') paths.push_back(key);
  }
  for (const std::string& path : paths) {
    const std::optional<ZkStat> got = s.ZkStatOf(path);
    const std::optional<ZkStat> want = ModelZk::Stat(m, path);
    if (got != want) {
      os << "ZkStatOf(\"" << EscapeBytes(path) << "\"): got " << (got ? ShowZkStat(*got) : "none")
         << " want " << (want ? ShowZkStat(*want) : "none");
      return os.str();
    }
    std::vector<std::string> got_children;
    for (std::string_view name : s.ZkChildren(path)) got_children.emplace_back(name);
    if (got && got_children != ModelZk::Children(m, path)) {
      os << "ZkChildren(\"" << EscapeBytes(path) << "\"): got " << ShowKeys(got_children)
         << " want " << ShowKeys(ModelZk::Children(m, path));
      return os.str();
    }
  }
  return "";
}

inline std::string CompareApplyResult(const ApplyResult& got, const ModelResult& want) {
  std::ostringstream os;
  if (want.delay_or_session_error) {
    const bool delayed = got.status.ok() && !got.ok && got.lock_delayed;
    if (!delayed && got.status.ok()) {
      os << "acquire in lock-delay with a bad session: want (ok=false, lock_delayed) or an "
            "error, got ok="
         << got.ok << " lock_delayed=" << got.lock_delayed;
    }
    return os.str();
  }
  if (want.error) {
    if (got.status.ok() || got.status.message() != *want.error) {
      os << "status: got \"" << EscapeBytes(got.status.ToString()) << "\" want error \""
         << EscapeBytes(*want.error) << "\"";
    }
    return os.str();
  }
  if (want.is_acl) {
    if (got.status.ok() != want.acl_applied) {
      os << "acl command: got \"" << EscapeBytes(got.status.ToString()) << "\" want "
         << (want.acl_applied ? "OK" : "a refusal");
    }
    return os.str();
  }
  if (!got.status.ok()) return "status: got \"" + got.status.ToString() + "\" want OK";
  if (want.check_ok && got.ok != want.ok) {
    os << "ok: got " << got.ok << " want " << want.ok;
    if (!got.etcd_error.ok()) os << " (etcd error " << ShowEtcdError(got.etcd_error) << ")";
    return os.str();
  }
  if (std::string etcd = CompareEtcd(got, want); !etcd.empty()) return etcd;
  if (got.zk != want.zk || got.zk_error != want.zk_error) {
    os << "zk: got " << ShowZk(got.zk, got.zk_error) << " want " << ShowZk(want.zk, want.zk_error);
    return os.str();
  }
  if (got.lock_delayed != want.lock_delayed) {
    os << "lock_delayed: got " << got.lock_delayed << " want " << want.lock_delayed;
    return os.str();
  }
  if (want.check_fence && got.fence != want.fence) {
    os << "fence: got " << got.fence << " want " << want.fence;
    return os.str();
  }
  if (got.queued != want.queued) {
    os << "queued: got " << got.queued << " want " << want.queued;
    return os.str();
  }
  if (want.queue_events_by_key ? ByKey(got.queue_events) != ByKey(want.queue_events)
                               : got.queue_events != want.queue_events) {
    os << "queue events: got " << ShowQueueEvents(got.queue_events) << " want "
       << ShowQueueEvents(want.queue_events);
    return os.str();
  }
  if (want.is_txn) return CompareTxnOutcome(got.txn, want);
  return "";
}

// The ACL tables, Store against model (or two stores' tables).
inline std::string CompareAcl(const AclTable& got, const ModelAcl& want) {
  std::ostringstream os;
  if (got.policies_index() != want.policies_index || got.tokens_index() != want.tokens_index ||
      got.bootstrap_index() != want.bootstrap_index) {
    os << "acl indexes: got " << got.policies_index() << "/" << got.tokens_index() << "/"
       << got.bootstrap_index() << " want " << want.policies_index << "/" << want.tokens_index
       << "/" << want.bootstrap_index;
    return os.str();
  }
  if (got.policies().size() != want.policies.size()) {
    os << "acl policies: got " << got.policies().size() << " want " << want.policies.size();
    return os.str();
  }
  for (const AclPolicy& p : want.policies) {
    const AclPolicy* mine = got.FindPolicy(p.id);
    if (mine == nullptr || *mine != p) return "acl policy " + p.id + " differs";
    if (got.FindPolicyByName(p.name) != mine) return "acl policy name " + p.name;
  }
  if (got.tokens().size() != want.tokens.size()) {
    os << "acl tokens: got " << got.tokens().size() << " want " << want.tokens.size();
    return os.str();
  }
  for (const AclToken& t : want.tokens) {
    const AclToken* mine = got.FindToken(t.accessor_id);
    if (mine == nullptr || *mine != t) return "acl token " + t.accessor_id + " differs";
    if (got.FindTokenBySecret(t.secret_id) != mine) return "acl token by secret " + t.accessor_id;
  }
  return "";
}

inline std::string CompareChanges(const Changes& got, const ModelResult& want) {
  std::set<std::string> keys(got.keys.begin(), got.keys.end());
  std::ostringstream os;
  if (keys != want.changed_keys) {
    os << "changed keys: got " << ShowKeys(std::vector<std::string>(keys.begin(), keys.end()))
       << " want "
       << ShowKeys(std::vector<std::string>(want.changed_keys.begin(), want.changed_keys.end()));
  } else if (got.sessions != want.sessions_changed) {
    os << "changes.sessions: got " << got.sessions << " want " << want.sessions_changed;
  }
  return os.str();
}

// Everything observable about the state, Store against model.
inline std::string CompareStateWithModel(const Store& s, const ModelStore& m,
                                         const std::vector<SessionId>& session_ids) {
  std::ostringstream os;
  // Single keys.
  for (const std::string& key : CommandGenerator::Keys()) {
    const KvEntry* got = s.FindKv(key);
    const KvEntry* want = m.Find(key);
    if ((got == nullptr) != (want == nullptr) || (got && *got != *want)) {
      os << "FindKv(\"" << EscapeBytes(key) << "\"): got " << Show(got) << " want " << Show(want);
      return os.str();
    }
    if (s.KeyIndex(key) != m.KeyIndex(key)) {
      os << "KeyIndex(\"" << EscapeBytes(key) << "\"): got " << s.KeyIndex(key) << " want "
         << m.KeyIndex(key);
      return os.str();
    }
    const ClusterMs until = s.LockDelayUntil(key);
    if (auto active = m.ActiveLockDelay(key)) {
      if (until != *active) {
        os << "LockDelayUntil(\"" << EscapeBytes(key) << "\"): got " << until.ms() << " want "
           << active->ms() << " (now " << m.now_ms.ms() << ")";
        return os.str();
      }
    } else if (until != ClusterMs(0) && until != m.AnyLockDelay(key)) {
      os << "LockDelayUntil(\"" << EscapeBytes(key) << "\"): got " << until.ms()
         << " want 0 (or the expired " << m.AnyLockDelay(key).ms() << ")";
      return os.str();
    }
  }
  // The whole table.
  std::vector<const KvEntry*> all = s.ListKv("");
  if (all.size() != m.kv.size() || s.kv_count() != m.kv.size()) {
    os << "kv size: ListKv(\"\") " << all.size() << " kv_count " << s.kv_count() << " want "
       << m.kv.size();
    return os.str();
  }
  {
    auto it = m.kv.begin();
    for (const KvEntry* e : all) {
      if (*e != it->second) {
        os << "ListKv(\"\") entry: got " << Show(e) << " want " << Show(&it->second);
        return os.str();
      }
      ++it;
    }
  }
  // Prefixes.
  for (const std::string& prefix : CommandGenerator::Prefixes()) {
    std::vector<std::string> got_keys;
    for (const KvEntry* e : s.ListKv(prefix)) got_keys.push_back(e->key);
    std::vector<std::string> want_keys;
    for (const KvEntry& e : m.List(prefix)) want_keys.push_back(e.key);
    if (got_keys != want_keys) {
      os << "ListKv(\"" << EscapeBytes(prefix) << "\"): got " << ShowKeys(got_keys) << " want "
         << ShowKeys(want_keys);
      return os.str();
    }
    for (const char* sep : {"", "/"}) {
      std::vector<std::string> got_list = s.ListKeys(prefix, sep);
      std::vector<std::string> want_list = m.ListKeys(prefix, sep);
      if (got_list != want_list) {
        os << "ListKeys(\"" << EscapeBytes(prefix) << "\", \"" << sep << "\"): got "
           << ShowKeys(got_list) << " want " << ShowKeys(want_list);
        return os.str();
      }
    }
    const LogIndex got_index = s.PrefixIndex(prefix);
    std::vector<LogIndex> choices = m.PrefixIndexChoices(prefix);
    if (std::find(choices.begin(), choices.end(), got_index) == choices.end()) {
      os << "PrefixIndex(\"" << EscapeBytes(prefix) << "\"): got " << got_index << " want "
         << ShowList(choices) << " (reap floor " << m.reaped_index << ")";
      return os.str();
    }
  }
  // Table indexes and clock.
  if (s.kv_index() != m.kv_index) {
    os << "kv_index: got " << s.kv_index() << " want " << m.kv_index;
    return os.str();
  }
  if (s.sessions_index() != m.sessions_index) {
    os << "sessions_index: got " << s.sessions_index() << " want " << m.sessions_index;
    return os.str();
  }
  if (s.applied_index() != m.applied_index) {
    os << "applied_index: got " << s.applied_index() << " want " << m.applied_index;
    return os.str();
  }
  if (s.compact_revision() != m.compact_revision) {
    os << "compact_revision: got " << s.compact_revision() << " want " << m.compact_revision;
    return os.str();
  }
  if (s.now_ms() != m.now_ms) {
    os << "now_ms: got " << s.now_ms().ms() << " want " << m.now_ms.ms();
    return os.str();
  }
  if (std::string acl = CompareAcl(s.acl(), m.acl); !acl.empty()) return acl;
  if (s.tombstone_count() < m.LiveTombstonesForAbsentKeys() ||
      s.tombstone_count() > m.tombstones.size()) {
    os << "tombstone_count: got " << s.tombstone_count() << " want between "
       << m.LiveTombstonesForAbsentKeys() << " and " << m.tombstones.size();
    return os.str();
  }
  // Sessions.
  std::vector<const Session*> sessions = s.ListSessions();
  if (sessions.size() != m.sessions.size() || s.session_count() != m.sessions.size()) {
    os << "sessions: got " << sessions.size() << " (count " << s.session_count() << ") want "
       << m.sessions.size();
    return os.str();
  }
  {
    auto it = m.sessions.begin();
    for (const Session* got : sessions) {
      if (*got != it->second) {
        os << "ListSessions: got " << Show(*got) << " want " << Show(it->second);
        return os.str();
      }
      ++it;
    }
  }
  for (const std::string& node : {std::string("n1"), std::string("n2"), std::string("n3")}) {
    std::vector<SessionId> got_ids;
    for (const Session* x : s.NodeSessions(node)) got_ids.push_back(x->id);
    std::vector<SessionId> want_ids;
    for (const auto& [id, x] : m.sessions) {
      if (x.node == node) want_ids.push_back(id);
    }
    if (got_ids != want_ids) {
      os << "NodeSessions(" << node << "): got " << ShowList(got_ids) << " want "
         << ShowList(want_ids);
      return os.str();
    }
  }
  for (const SessionId& id : session_ids) {
    const Session* got = s.FindSession(id);
    auto want = m.sessions.find(id);
    if ((got == nullptr) != (want == m.sessions.end())) {
      os << "FindSession(" << id << "): got " << (got ? "present" : "absent");
      return os.str();
    }
    std::vector<std::string> held = HeldList(s, id);
    std::vector<std::string> want_held = m.HeldKeys(id);
    if (held != want_held) {
      os << "HeldKeys(" << id << "): got " << ShowKeys(held) << " want " << ShowKeys(want_held);
      return os.str();
    }
  }
  // The fair-acquire queues: same keys, same waiters in the same order.
  std::size_t model_waiters = 0;
  for (const auto& [key, q] : m.queues) model_waiters += q.size();
  if (s.queues().size() != m.queues.size() || s.queue_waiter_count() != model_waiters) {
    os << "queues: got " << s.queues().size() << " keys, " << s.queue_waiter_count()
       << " waiters; want " << m.queues.size() << ", " << model_waiters;
    return os.str();
  }
  for (const auto& [key, want] : m.queues) {
    const std::deque<QueueWaiter>* got = s.FindQueue(key);
    bool same = got != nullptr && got->size() == want.size();
    for (std::size_t i = 0; same && i < want.size(); ++i) {
      const QueueWaiter& g = (*got)[i];
      same = g.session == want[i].session && g.value == want[i].value && g.flags == want[i].flags &&
             g.since == want[i].since;
    }
    if (!same) {
      os << "queue of \"" << EscapeBytes(key) << "\" differs";
      return os.str();
    }
  }
  // The lock history: same keys, same grants, same causes and times.
  if (s.history().key_count() != m.history.size()) {
    os << "history keys: got " << s.history().key_count() << " want " << m.history.size() << ":";
    for (const std::string& key : CommandGenerator::Keys()) {
      if ((s.FindHistory(key) != nullptr) != (m.history.count(key) != 0)) {
        os << " \"" << EscapeBytes(key) << "\" only in the "
           << (m.history.count(key) ? "model" : "store");
      }
    }
    return os.str();
  }
  if (s.history().bytes() != m.HistoryBytes()) {
    os << "history bytes: got " << s.history().bytes() << " want " << m.HistoryBytes();
    return os.str();
  }
  for (const auto& [key, want] : m.history) {
    const LockHistory::KeyHistory* got = s.FindHistory(key);
    if (got == nullptr) {
      os << "FindHistory(\"" << EscapeBytes(key) << "\"): got none";
      return os.str();
    }
    if (got->modify_index != want.modify_index ||
        !std::equal(got->grants.begin(), got->grants.end(), want.grants.begin(),
                    want.grants.end())) {
      os << "FindHistory(\"" << EscapeBytes(key) << "\"): got " << got->grants.size()
         << " grants (modify " << got->modify_index << ") want " << want.grants.size()
         << " (modify " << want.modify_index << ")";
      for (std::size_t i = 0; i < std::max(got->grants.size(), want.grants.size()); ++i) {
        auto show = [&os](const LockGrant* g) {
          if (g == nullptr) {
            os << "-";
            return;
          }
          os << "{fence=" << g->fence << " session=" << g->session.view() << " end=" << g->end_index
             << " cause=" << EndCauseName(g->end_cause) << " at=" << g->granted_at.ms() << ".."
             << g->ended_at.ms() << "}";
        };
        os << "\n  [" << i << "] got ";
        show(i < got->grants.size() ? &got->grants[i] : nullptr);
        os << " want ";
        show(i < want.grants.size() ? &want.grants[i] : nullptr);
      }
      return os.str();
    }
  }
  return "";
}

// Everything observable, Store against Store (snapshot round trips).
inline std::string CompareStores(const Store& a, const Store& b,
                                 const std::vector<SessionId>& session_ids) {
  std::ostringstream os;
  std::vector<const KvEntry*> ka = a.ListKv("");
  std::vector<const KvEntry*> kb = b.ListKv("");
  if (ka.size() != kb.size()) {
    os << "kv sizes " << ka.size() << " vs " << kb.size();
    return os.str();
  }
  for (std::size_t i = 0; i < ka.size(); ++i) {
    if (*ka[i] != *kb[i]) return "entry " + Show(ka[i]) + " vs " + Show(kb[i]);
  }
  for (const std::string& key : CommandGenerator::Keys()) {
    if (a.KeyIndex(key) != b.KeyIndex(key)) return "KeyIndex(\"" + EscapeBytes(key) + "\")";
    if (a.LockDelayUntil(key) != b.LockDelayUntil(key)) {
      os << "LockDelayUntil(\"" << EscapeBytes(key) << "\") " << a.LockDelayUntil(key).ms()
         << " vs " << b.LockDelayUntil(key).ms();
      return os.str();
    }
  }
  for (const std::string& prefix : CommandGenerator::Prefixes()) {
    if (a.PrefixIndex(prefix) != b.PrefixIndex(prefix)) {
      os << "PrefixIndex(\"" << EscapeBytes(prefix) << "\") " << a.PrefixIndex(prefix) << " vs "
         << b.PrefixIndex(prefix);
      return os.str();
    }
    if (a.ListKeys(prefix, "/") != b.ListKeys(prefix, "/")) return "ListKeys";
  }
  if (a.kv_index() != b.kv_index()) return "kv_index";
  if (a.sessions_index() != b.sessions_index()) return "sessions_index";
  if (a.applied_index() != b.applied_index()) return "applied_index";
  if (a.now_ms() != b.now_ms()) return "now_ms";
  if (a.tombstone_count() != b.tombstone_count()) return "tombstone_count";
  if (!(a.acl() == b.acl())) return "acl tables";
  std::vector<const Session*> sa = a.ListSessions();
  std::vector<const Session*> sb = b.ListSessions();
  if (sa.size() != sb.size()) return "session counts";
  for (std::size_t i = 0; i < sa.size(); ++i) {
    if (*sa[i] != *sb[i]) return "session " + Show(*sa[i]) + " vs " + Show(*sb[i]);
  }
  for (const SessionId& id : session_ids) {
    if (HeldList(a, id) != HeldList(b, id)) return "HeldKeys(" + id.str() + ")";
  }
  return "";
}

}  // namespace tenure::state::testutil
