// The reference model's ZooKeeper tree (decision 0056 section 4), written
// naively from ZooKeeper 3.8's rules as docs/zookeeper-compat.md lists them
// and not from state/store_zk.cc: a znode is found by walking its parents,
// children are counted by scanning every key, a visible cversion is
// computed from the creations a record saw, a failed multi is undone by
// restoring a copy of the whole model. Test-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "common/limits.h"
#include "state/zk_path.h"
#include "state/zk_tree.h"
#include "unit/state/model_etcd.h"
#include "unit/state/model_store.h"

namespace tenure::state::testutil {

class ModelZk {
 public:
  // ZooKeeper's parent: the text before the last '/', "/" for "" (the root).
  static std::string Parent(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == 0 ? std::string("/") : path.substr(0, slash);
  }

  static bool IsZnode(const ModelStore& m, const std::string& path) {
    if (path == "/") return true;
    if (!ZkPathError(path).empty() || m.Find(path) == nullptr) return false;
    return IsZnode(m, Parent(path));
  }

  // The names of the keys directly under `path` that are valid paths.
  static std::vector<std::string> Children(const ModelStore& m, const std::string& path) {
    std::vector<std::string> names;
    for (const auto& [key, e] : m.kv) {
      if (key.size() < 2 || key[0] != '/' || !ZkPathError(key).empty()) continue;
      if (Parent(key) != path) continue;
      names.push_back(key.substr(path == "/" ? 1 : path.size() + 1));
    }
    return names;
  }

  // A numbered session that deletes its keys owns them as ephemerals.
  static std::int64_t Owner(const ModelStore& m, const KvEntry& e) {
    const std::optional<std::int64_t> number = ModelLeaseNumber(e.session);
    if (!number) return 0;
    auto s = m.sessions.find(e.session);
    return s != m.sessions.end() && s->second.behavior == Behavior::kDelete ? *number : 0;
  }

  static std::int32_t Wrap(std::int64_t n) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(n)));
  }

  static std::optional<ZkStat> Stat(const ModelStore& m, const std::string& path) {
    if (!IsZnode(m, path)) return std::nullopt;
    ZkStat stat;
    const std::vector<std::string> children = Children(m, path);
    const auto count = static_cast<std::int64_t>(children.size());
    stat.num_children = Wrap(count);
    if (const KvEntry* e = path == "/" ? nullptr : m.Find(path)) {
      stat.czxid = static_cast<std::int64_t>(e->create_index.value());
      stat.mzxid = static_cast<std::int64_t>(e->modify_index.value());
      stat.version = Wrap(static_cast<std::int64_t>(e->version) - 1);
      stat.ephemeral_owner = Owner(m, *e);
      stat.data_length = static_cast<std::int32_t>(e->value.size());
    }
    auto record = m.zk_nodes.find(path);
    if (record != m.zk_nodes.end()) {
      stat.ctime = record->second.ctime.ms();
      stat.mtime = record->second.mtime.ms();
      stat.aversion = record->second.aversion;
      stat.cversion = Wrap(2 * record->second.created - count);
      stat.pzxid = static_cast<std::int64_t>(record->second.pzxid.value());
    } else {
      stat.cversion = Wrap(count);
      stat.pzxid = std::max(stat.czxid, NewestChild(m, path));
    }
    return stat;
  }

  static void Apply(ModelStore& m, const ZkWrite& c, LogIndex index, ModelResult* r) {
    r->is_zk = true;
    r->check_ok = true;
    if (!c.session.empty() && m.sessions.count(c.session) == 0) {
      r->ok = false;
      r->zk_error = ZkCode::kSessionExpired;
      return;
    }
    const ModelStore before = m;
    std::vector<std::string> deleted;
    std::size_t failed = c.ops.size();
    for (std::size_t i = 0; i < c.ops.size() && failed == c.ops.size(); ++i) {
      const ModelStore::Holders holders_before = m.HolderMap();
      ZkOpResult out;
      const ZkOp& op = c.ops[i];
      switch (op.kind) {
        case ZkOp::Kind::kCreate:
          out.code = Create(m, op, c.session, index, &out, r);
          break;
        case ZkOp::Kind::kDelete:
          out.code = Delete(m, op, index, &deleted, r);
          break;
        case ZkOp::Kind::kSetData:
          out.code = SetData(m, op, index, &out, r);
          break;
        case ZkOp::Kind::kCheck:
          out.code = Check(m, op);
          break;
        case ZkOp::Kind::kSetAcl:
          out.code = SetAcl(m, op, &out);
          break;
      }
      ModelStore::DiffHolders(holders_before, m.HolderMap(), m.kv, EndCause::kNone,
                              &m.history_events_);
      if (out.code != ZkCode::kOk) failed = i;
      r->zk.push_back(std::move(out));
    }
    if (failed == c.ops.size()) {
      for (const std::string& key : deleted) m.DropQueue(key, r);
      r->ok = true;
      return;
    }
    // ZooKeeper's answer to a failed multi: 0 before, the code, then -2.
    const ZkCode code = r->zk[failed].code;
    m = before;
    r->changed_keys.clear();
    r->ok = false;
    r->zk.assign(c.ops.size(), ZkOpResult());
    r->zk[failed].code = code;
    for (std::size_t i = failed + 1; i < c.ops.size(); ++i) {
      r->zk[i].code = ZkCode::kRuntimeInconsistency;
    }
  }

 private:
  static std::int64_t NewestChild(const ModelStore& m, const std::string& path) {
    std::int64_t newest = 0;
    for (const std::string& name : Children(m, path)) {
      const std::string key = path == "/" ? "/" + name : path + "/" + name;
      newest = std::max(newest, static_cast<std::int64_t>(m.Find(key)->create_index.value()));
    }
    return newest;
  }

  static bool Reserved(const std::string& path) {
    return path == "/zookeeper" || path.rfind("/zookeeper/", 0) == 0;
  }

  static bool VersionMatches(std::int32_t want, const ModelStore& m, const std::string& path) {
    if (want == -1) return true;
    if (path == "/") return want == 0;
    return want == Wrap(static_cast<std::int64_t>(m.Find(path)->version) - 1);
  }

  // The record of `path`, as the decision makes one for a key no ZooKeeper
  // write touched: times unknown, each child as created once, pzxid the
  // newest of the key's own and its children's creations.
  static ModelZkNode& Record(ModelStore& m, const std::string& path) {
    auto it = m.zk_nodes.find(path);
    if (it != m.zk_nodes.end()) return it->second;
    ModelZkNode node;
    node.created = static_cast<std::int64_t>(Children(m, path).size());
    const KvEntry* e = path == "/" ? nullptr : m.Find(path);
    node.pzxid = LogIndex(static_cast<std::uint64_t>(
        std::max(e != nullptr ? static_cast<std::int64_t>(e->create_index.value()) : 0,
                 NewestChild(m, path))));
    return m.zk_nodes.emplace(path, node).first->second;
  }

  // pRequest2TxnCreate's checks, in its order.
  static ZkCode Create(ModelStore& m, const ZkOp& op, const SessionId& session, LogIndex index,
                       ZkOpResult* out, ModelResult* r) {
    if (op.container && op.ephemeral) return ZkCode::kBadArguments;
    if (op.ephemeral) {
      auto s = m.sessions.find(session);
      if (session.empty() || s == m.sessions.end() || !ModelLeaseNumber(session) ||
          s->second.behavior != Behavior::kDelete) {
        return ZkCode::kEphemeralOnLocalSession;
      }
    }
    if (op.path.find('/') == std::string::npos || op.path.find('\0') != std::string::npos ||
        Reserved(op.path)) {
      return ZkCode::kBadArguments;
    }
    const std::string parent = Parent(op.path);
    if (!IsZnode(m, parent)) return ZkCode::kNoNode;
    std::string path = op.path;
    if (op.sequential) {
      auto record = m.zk_nodes.find(parent);
      const std::int64_t counter = record != m.zk_nodes.end()
                                       ? record->second.created
                                       : static_cast<std::int64_t>(Children(m, parent).size());
      char suffix[16];
      std::snprintf(suffix, sizeof suffix, "%010d", Wrap(counter));
      path += suffix;
    }
    if (!ZkPathError(path).empty() || path.size() > limits::kKvKeyBytesMax) {
      return ZkCode::kBadArguments;
    }
    if (path == "/" || m.Find(path) != nullptr) return ZkCode::kNodeExists;
    // Taken for a holder: a lock-delay window or waiters on the name.
    if (op.ephemeral && (m.ActiveLockDelay(path) || m.queues.count(path) != 0)) {
      return ZkCode::kNodeExists;
    }
    if (parent != "/" && Owner(m, *m.Find(parent)) != 0) return ZkCode::kNoChildrenForEphemerals;
    Record(m, parent);
    KvEntry e;
    e.key = path;
    e.value = op.data;
    e.create_index = index;
    if (op.ephemeral) {
      e.session = session;
      e.fence = index;
      e.lock_index = 1;
    }
    m.Write(std::move(e), index, &r->changed_keys);
    ModelZkNode& node = Record(m, path);
    node.ctime = m.wall_ms;
    node.mtime = m.wall_ms;
    node.container = op.container;
    out->path = path;
    out->stat = *Stat(m, path);
    return ZkCode::kOk;
  }

  static ZkCode Delete(ModelStore& m, const ZkOp& op, LogIndex index,
                       std::vector<std::string>* deleted, ModelResult* r) {
    const std::string& path = op.path;
    if (path.find('/') == std::string::npos || path.find('\0') != std::string::npos ||
        path == "/" || path == "/zookeeper/quota" || path == "/zookeeper/config" ||
        Reserved(path)) {
      return ZkCode::kBadArguments;
    }
    if (!IsZnode(m, path)) return ZkCode::kNoNode;
    if (!VersionMatches(op.version, m, path)) return ZkCode::kBadVersion;
    if (!Children(m, path).empty()) return ZkCode::kNotEmpty;
    m.Erase(path, index, &r->changed_keys);
    deleted->push_back(path);
    return ZkCode::kOk;
  }

  static ZkCode SetData(ModelStore& m, const ZkOp& op, LogIndex index, ZkOpResult* out,
                        ModelResult* r) {
    const std::string& path = op.path;
    if (!ZkPathError(path).empty() || path == "/" || Reserved(path)) return ZkCode::kBadArguments;
    if (!IsZnode(m, path)) return ZkCode::kNoNode;
    if (!VersionMatches(op.version, m, path)) return ZkCode::kBadVersion;
    Record(m, path);
    KvEntry e = *m.Find(path);
    e.value = op.data;
    m.Write(std::move(e), index, &r->changed_keys);
    out->stat = *Stat(m, path);
    return ZkCode::kOk;
  }

  // setACL: only the aversion counts it (the list is not stored).
  static ZkCode SetAcl(ModelStore& m, const ZkOp& op, ZkOpResult* out) {
    if (!ZkPathError(op.path).empty() || Reserved(op.path)) return ZkCode::kBadArguments;
    if (!IsZnode(m, op.path)) return ZkCode::kNoNode;
    ModelZkNode& node = Record(m, op.path);
    if (op.version != -1 && op.version != node.aversion) return ZkCode::kBadVersion;
    node.aversion = Wrap(static_cast<std::int64_t>(node.aversion) + 1);
    out->stat = *Stat(m, op.path);
    return ZkCode::kOk;
  }

  static ZkCode Check(const ModelStore& m, const ZkOp& op) {
    if (!ZkPathError(op.path).empty()) return ZkCode::kBadArguments;
    if (!IsZnode(m, op.path)) return ZkCode::kNoNode;
    return VersionMatches(op.version, m, op.path) ? ZkCode::kOk : ZkCode::kBadVersion;
  }
};

inline void ModelStore::ApplyBody(const ZkWrite& c, LogIndex index, ModelResult* r) {
  ModelZk::Apply(*this, c, index, r);
}

}  // namespace tenure::state::testutil
