// Store: ZooKeeper's tree on the keys (decision 0056 section 4). ZkWrite
// applies a create, delete, setData, check or multi with ZooKeeper 3.8's
// checks in its order (PrepRequestProcessor), all or nothing; the node
// records keep the Stat fields keys do not carry, and every API's writes
// keep them current through PutEntry and DeleteEntry (the Zk* hooks here).
#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/limits.h"
#include "common/strings.h"
#include "state/numbered_session.h"
#include "state/store.h"
#include "state/zk_path.h"

namespace tenure::state {
namespace {

// ZooKeeper's parent of a path that has a '/' (PathUtils' substring up to
// the last one, "" being the root): "/" for "/a", "/a" for "/a/b".
std::string_view ZkParentKey(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 ? path.substr(0, 1) : path.substr(0, slash);
}

// ZooKeeper's own nodes, answered by the zk layer: no write reaches them.
bool ZkReserved(std::string_view path) {
  return path == "/zookeeper" || StartsWith(path, "/zookeeper/");
}

// ZooKeeper's int counters wrap; these do so without signed overflow.
std::int32_t ZkWrap(std::uint64_t n) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(n & 0xffffffffu));
}
std::int32_t ZkAdd(std::int32_t a, std::int64_t b) {
  return ZkWrap(static_cast<std::uint64_t>(static_cast<std::int64_t>(a) + b));
}

// ZooKeeper's version of a key: etcd's version less one (decision 0056).
std::int32_t ZkVersionOf(const KvEntry& entry) { return ZkWrap(entry.version - 1); }

// The direct children of `path` among `kv`'s keys that are valid paths,
// in byte order: each is handed to `f`. A child's own subtree is skipped
// with one search, so the cost is in children, not descendants.
template <typename F>
void ForEachZkChild(const std::map<std::string, KvEntry, std::less<>>& kv, std::string_view path,
                    F&& f) {
  std::string prefix(path);
  if (path != "/") prefix += '/';
  auto it = kv.lower_bound(prefix);
  while (it != kv.end() && StartsWith(it->first, prefix)) {
    const std::string_view name = std::string_view(it->first).substr(prefix.size());
    const std::size_t slash = name.find('/');
    if (slash != std::string_view::npos) {
      // Inside child C's subtree: every key starting "C/" sorts before "C0".
      std::string past = prefix;
      past.append(name.substr(0, slash));
      past += '0';
      it = kv.lower_bound(past);
      continue;
    }
    if (!name.empty() && ZkPathError(it->first).empty()) f(it->second);
    ++it;
  }
}

struct ZkChildScan {
  std::int64_t count = 0;
  LogIndex newest;  // the largest create index among them
};

ZkChildScan ScanZkChildren(const std::map<std::string, KvEntry, std::less<>>& kv,
                           std::string_view path) {
  ZkChildScan scan;
  ForEachZkChild(kv, path, [&scan](const KvEntry& child) {
    ++scan.count;
    scan.newest = std::max(scan.newest, child.create_index);
  });
  return scan;
}

// Whether a valid ZooKeeper path and each of its ancestors but "/" is a
// key (every prefix of a valid path up to a '/' is a valid path too).
bool ZkAncestorsExist(const std::map<std::string, KvEntry, std::less<>>& kv,
                      std::string_view path) {
  for (std::string_view at = path; at != "/"; at = ZkParentKey(at)) {
    if (kv.find(at) == kv.end()) return false;
  }
  return true;
}

}  // namespace

// --- Reads ------------------------------------------------------------------

const ZkNode* Store::FindZkNode(std::string_view path) const {
  auto it = zk_nodes_.find(path);
  return it == zk_nodes_.end() ? nullptr : &it->second;
}

bool Store::IsZnode(std::string_view path) const {
  if (path == "/") return true;
  return ZkPathError(path).empty() && ZkAncestorsExist(kv_, path);
}

std::int64_t Store::EphemeralOwner(const KvEntry& entry) const {
  if (entry.session.empty()) return 0;
  const std::optional<std::int64_t> number = SessionNumber(entry.session.view());
  if (!number) return 0;
  const Session* session = FindSession(entry.session);
  return session != nullptr && session->behavior == Behavior::kDelete ? *number : 0;
}

std::optional<ZkStat> Store::ZkStatOf(std::string_view path) const {
  if (!IsZnode(path)) return std::nullopt;
  return ZkStatOfZnode(path);
}

ZkStat Store::ZkStatOfZnode(std::string_view path) const {
  ZkStat stat;
  const ZkNode* node = FindZkNode(path);
  const KvEntry* entry = path == "/" ? nullptr : FindKv(path);
  if (entry != nullptr) {
    stat.czxid = static_cast<std::int64_t>(entry->create_index.value());
    stat.mzxid = static_cast<std::int64_t>(entry->modify_index.value());
    stat.version = ZkVersionOf(*entry);
    stat.ephemeral_owner = EphemeralOwner(*entry);
    stat.data_length = static_cast<std::int32_t>(entry->value.size());
  }
  if (node != nullptr) {
    stat.ctime = node->ctime.ms();
    stat.mtime = node->mtime.ms();
    stat.aversion = node->aversion;
    stat.num_children = node->children;
    // ZooKeeper stores creations and shows creations plus deletions.
    stat.cversion = ZkAdd(ZkAdd(node->children_created, node->children_created), -node->children);
    stat.pzxid = static_cast<std::int64_t>(node->pzxid.value());
  } else {
    // Never written through ZooKeeper: as if each child was created once.
    const ZkChildScan scan = ScanZkChildren(kv_, path);
    stat.num_children = ZkWrap(static_cast<std::uint64_t>(scan.count));
    stat.cversion = stat.num_children;
    stat.pzxid = std::max(stat.czxid, static_cast<std::int64_t>(scan.newest.value()));
  }
  return stat;
}

std::vector<std::string_view> Store::ZkChildren(std::string_view path) const {
  std::vector<std::string_view> names;
  const std::size_t cut = path == "/" ? 1 : path.size() + 1;
  ForEachZkChild(kv_, path, [&names, cut](const KvEntry& child) {
    names.push_back(std::string_view(child.key).substr(cut));
  });
  return names;
}

// --- Records kept current by every API's writes -------------------------------

void Store::RememberZkForRollback(std::string_view path) {
  if (journal_ == nullptr || !journal_->zk_paths.emplace(path).second) return;
  auto it = zk_nodes_.find(path);
  journal_->zk_nodes.emplace_back(
      std::string(path), it == zk_nodes_.end() ? std::nullopt : std::optional<ZkNode>(it->second));
}

ZkNode& Store::ZkRecord(std::string_view path) {
  auto it = zk_nodes_.find(path);
  if (it != zk_nodes_.end()) return it->second;
  RememberZkForRollback(path);
  const ZkChildScan scan = ScanZkChildren(kv_, path);
  ZkNode node;
  node.children = ZkWrap(static_cast<std::uint64_t>(scan.count));
  node.children_created = node.children;
  const KvEntry* entry = path == "/" ? nullptr : FindKv(path);
  node.pzxid = std::max(entry != nullptr ? entry->create_index : LogIndex(), scan.newest);
  return zk_nodes_.emplace(std::string(path), node).first->second;
}

void Store::ZkNoteCreated(const std::string& key, LogIndex index) {
  if (zk_nodes_.empty() || key.size() < 2 || key.front() != '/') return;
  auto parent = zk_nodes_.find(ZkParentKey(key));
  if (parent == zk_nodes_.end() || !ZkPathError(key).empty()) return;
  RememberZkForRollback(parent->first);
  parent->second.children_created = ZkAdd(parent->second.children_created, 1);
  parent->second.children = ZkAdd(parent->second.children, 1);
  parent->second.pzxid = index;
}

void Store::ZkNoteChanged(const std::string& key) {
  if (zk_nodes_.empty() || key == "/") return;
  auto it = zk_nodes_.find(key);
  if (it == zk_nodes_.end()) return;
  RememberZkForRollback(key);
  it->second.mtime = wall_ms_;
}

void Store::ZkNoteDeleted(std::string_view key, LogIndex index) {
  if (zk_nodes_.empty() || key.size() < 2 || key.front() != '/') return;
  if (auto own = zk_nodes_.find(key); own != zk_nodes_.end()) {
    RememberZkForRollback(key);
    zk_nodes_.erase(own);
  }
  auto parent = zk_nodes_.find(ZkParentKey(key));
  if (parent == zk_nodes_.end() || !ZkPathError(key).empty()) return;
  RememberZkForRollback(parent->first);
  parent->second.children = ZkAdd(parent->second.children, -1);
  parent->second.pzxid = index;
}

// --- ZooKeeper's writes ---------------------------------------------------------

void Store::ApplyZkWrite(const ZkWrite& c, LogIndex index, ApplyResult* result) {
  // ZooKeeper checks the session before anything else of a request.
  if (!c.session.empty() && FindSession(c.session) == nullptr) {
    result->zk_error = ZkCode::kSessionExpired;
    result->ok = false;
    return;
  }
  // A lone setData, delete or check makes every check before its first
  // change, so it never has anything to roll back: no journal (its copies
  // of the entry and the node's record were a fifth of a setData's apply).
  // A create or setACL may make the parent's or its own record first.
  const bool may_roll_back = c.ops.size() != 1 || (c.ops.front().kind != ZkOp::Kind::kSetData &&
                                                   c.ops.front().kind != ZkOp::Kind::kDelete &&
                                                   c.ops.front().kind != ZkOp::Kind::kCheck);
  Journal journal;
  journal_ = may_roll_back ? &journal : nullptr;
  const TxnMarks marks = MarkTxn();
  std::vector<std::string> deleted;
  result->zk.resize(c.ops.size());
  std::size_t failed = c.ops.size();
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    const ZkOp& op = c.ops[i];
    ZkOpResult& out = result->zk[i];
    switch (op.kind) {
      case ZkOp::Kind::kCreate:
        out.code = ZkCreate(op, c.session, index, &out);
        break;
      case ZkOp::Kind::kDelete:
        out.code = ZkDelete(op, index, &deleted);
        break;
      case ZkOp::Kind::kSetData:
        out.code = ZkSetData(op, index, &out);
        break;
      case ZkOp::Kind::kCheck:
        out.code = ZkCheck(op);
        break;
      case ZkOp::Kind::kSetAcl:
        out.code = ZkSetAcl(op, &out);
        break;
    }
    if (out.code != ZkCode::kOk) {
      failed = i;
      break;
    }
  }
  journal_ = nullptr;
  if (failed == c.ops.size()) {
    // A deleted key's fair-acquire queue goes, once nothing can roll back.
    for (const std::string& key : deleted) DropQueue(key, index, result);
    return;
  }
  RollBack(journal, marks);
  // ZooKeeper's answer to a multi that failed: the ops before the failure
  // say 0, the ops after it RUNTIMEINCONSISTENCY; nothing applied.
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    if (i < failed) result->zk[i] = ZkOpResult();
    if (i > failed) result->zk[i].code = ZkCode::kRuntimeInconsistency;
  }
  result->ok = false;
}

// Set once: two leaders' proposals (a change of leader between a proposal
// and its commit) keep the first, so every password stays valid.
void Store::ApplyZkSecret(const ZkSecret& c, ApplyResult* result) {
  if (!zk_secret_.empty()) {
    result->status = Status::Conflict("the ZooKeeper session secret is set already");
    return;
  }
  zk_secret_ = c.secret;
}

// Each op below runs under ApplyZkWrite's journal: whatever a failing op
// changed before it failed is rolled back with the rest of the entry.
ZkCode Store::ZkCreate(const ZkOp& op, const SessionId& session, LogIndex index, ZkOpResult* out) {
  // A container is never ephemeral (createContainer ignores the ephemeral
  // flag; a sequential container is one, as in ZooKeeper).
  if (op.container && op.ephemeral) return ZkCode::kBadArguments;
  if (op.ephemeral) {
    // Its owner must delete it when it ends: a numbered session that
    // deletes its keys (a ZooKeeper session is one).
    const Session* owner = session.empty() ? nullptr : FindSession(session);
    if (owner == nullptr || !IsNumberedSession(session) || owner->behavior != Behavior::kDelete) {
      return ZkCode::kEphemeralOnLocalSession;
    }
  }
  const std::string& path = op.path;
  if (path.find('/') == std::string::npos || path.find('\0') != std::string::npos ||
      ZkReserved(path)) {
    return ZkCode::kBadArguments;
  }
  const std::string_view parent = ZkParentKey(path);
  if (!IsZnode(parent)) return ZkCode::kNoNode;
  // The parent's record (made now if it has none; a failed op rolls it
  // back) counts this child from here on (ZkNoteCreated); its count of
  // children ever created, before this one, is the sequence suffix.
  const ZkNode& parent_record = ZkRecord(parent);
  std::string full = path;
  if (op.sequential) full += ZkSequenceSuffix(parent_record.children_created);
  // A key's size bounds a path (ZooKeeper's only bound is its frame's): the
  // suffix may take one past it.
  if (!ZkPathError(full).empty() || full.size() > limits::kKvKeyBytesMax) {
    return ZkCode::kBadArguments;
  }
  if (full == "/" || FindKv(full) != nullptr) return ZkCode::kNodeExists;
  // A name in a lock-delay window or with fair-acquire waiters is taken for
  // a holder, as for a Consul acquire or an etcd Put with a lease
  // (decision 0056: the name is not free yet; a client's retry can win).
  if (op.ephemeral && (InLockDelay(full) || FindQueue(full) != nullptr)) {
    return ZkCode::kNodeExists;
  }
  if (parent != "/" && EphemeralOwner(*FindKv(parent)) != 0) {
    return ZkCode::kNoChildrenForEphemerals;
  }
  KvEntry entry;
  entry.key = full;
  entry.value = op.data;
  if (op.ephemeral) {
    // Held by its session as an etcd lease holds its keys: a grant, whose
    // token is this entry's index (the node's czxid).
    entry.session = session;
    entry.fence = index;
    entry.lock_index = 1;
  }
  PutEntry(std::move(entry), index);
  // Its record counts the keys already under it, if any (another API may
  // have left some when it deleted an earlier node of this name).
  ZkNode& node = ZkRecord(full);
  node.ctime = wall_ms_;
  node.mtime = wall_ms_;
  node.pzxid = index;
  node.container = op.container;
  out->path = std::move(full);
  out->stat = ZkStatOfZnode(out->path);
  return ZkCode::kOk;
}

ZkCode Store::ZkDelete(const ZkOp& op, LogIndex index, std::vector<std::string>* deleted) {
  const std::string& path = op.path;
  if (path.find('/') == std::string::npos || path.find('\0') != std::string::npos ||
      IsZkSpecialPath(path) || ZkReserved(path)) {
    return ZkCode::kBadArguments;
  }
  if (!IsZnode(path)) return ZkCode::kNoNode;
  const KvEntry& entry = *FindKv(path);
  if (op.version != -1 && op.version != ZkVersionOf(entry)) return ZkCode::kBadVersion;
  const ZkNode* record = FindZkNode(path);
  const std::int64_t children =
      record != nullptr ? record->children : ScanZkChildren(kv_, path).count;
  if (children != 0) return ZkCode::kNotEmpty;
  DeleteEntry(path, index);
  deleted->push_back(path);
  return ZkCode::kOk;
}

ZkCode Store::ZkSetData(const ZkOp& op, LogIndex index, ZkOpResult* out) {
  const std::string& path = op.path;
  if (!ZkPathError(path).empty() || path == "/" || ZkReserved(path)) return ZkCode::kBadArguments;
  if (!ZkAncestorsExist(kv_, path)) return ZkCode::kNoNode;
  const KvEntry& existing = *FindKv(path);
  if (op.version != -1 && op.version != ZkVersionOf(existing)) return ZkCode::kBadVersion;
  KvEntry entry = existing;  // holder, flags and lock index kept
  entry.value = op.data;
  ZkRecord(path);  // so that its mtime is known from here on (ZkNoteChanged)
  PutEntry(std::move(entry), index);
  out->stat = ZkStatOfZnode(path);
  return ZkCode::kOk;
}

ZkCode Store::ZkCheck(const ZkOp& op) const {
  if (!ZkPathError(op.path).empty()) return ZkCode::kBadArguments;
  if (!IsZnode(op.path)) return ZkCode::kNoNode;
  const std::int32_t version = op.path == "/" ? 0 : ZkVersionOf(*FindKv(op.path));
  return op.version == -1 || op.version == version ? ZkCode::kOk : ZkCode::kBadVersion;
}

// setACL as ZooKeeper's pRequest2Txn checks it (the ACL list's shape was
// checked before proposing): the path, the node, the aversion. Nothing
// but the aversion changes: no key, no mzxid, no watch.
ZkCode Store::ZkSetAcl(const ZkOp& op, ZkOpResult* out) {
  const std::string& path = op.path;
  if (!ZkPathError(path).empty() || ZkReserved(path)) return ZkCode::kBadArguments;
  if (!IsZnode(path)) return ZkCode::kNoNode;
  ZkNode& node = ZkRecord(path);
  if (op.version != -1 && op.version != node.aversion) return ZkCode::kBadVersion;
  RememberZkForRollback(path);
  node.aversion = ZkAdd(node.aversion, 1);
  out->stat = ZkStatOfZnode(path);
  return ZkCode::kOk;
}

}  // namespace tenure::state
