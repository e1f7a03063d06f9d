// Seeded random ZooKeeper writes (decision 0056) for the model test's
// generator (random_commands.h), on paths that Consul's and etcd's
// commands write too: creates of every mode (sequential ones under a
// parent whose counter moves), deletes, setData and checks with versions
// right, wrong and -1, multis that fail midway, paths that break the
// rules, under /zookeeper, under ephemerals and under missing parents; the
// writer a ZooKeeper session (a lease), a Consul session, none, or one
// that ended. Test-only.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "state/command.h"
#include "state/numbered_session.h"
#include "unit/state/model_store.h"
#include "unit/state/model_zk.h"

namespace tenure::state::testutil {

class ZkGenerator {
 public:
  explicit ZkGenerator(std::uint64_t seed) : rng_(seed) {}

  std::uint64_t Uniform(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(int percent) { return Uniform(100) < static_cast<std::uint64_t>(percent); }

  // The paths the generator writes; the model test compares what the store
  // answers for every key starting with "/" besides.
  static const std::vector<std::string>& Paths() {
    static const std::vector<std::string> paths = {
        "/z", "/z/a", "/z/a/c", "/z/q-0000000000", "/z/q-0000000001", "/z/q-0000000002",
        "/y", "/y/e"};
    return paths;
  }

  CommandBody Next(const ModelStore& m, const std::vector<SessionId>& created) {
    // Now and then the session secret (set once: a second is refused).
    if (Chance(4)) {
      std::string secret(kZkSecretBytes, '\0');
      for (char& c : secret) c = static_cast<char>(Uniform(256));
      return ZkSecret{std::move(secret)};
    }
    ZkWrite write;
    write.session = Session(m, created);
    const std::uint64_t ops = Chance(75) ? 1 : Uniform(5);
    for (std::uint64_t i = 0; i < ops; ++i) write.ops.push_back(Op(m));
    return write;
  }

 private:
  SessionId Session(const ModelStore& m, const std::vector<SessionId>& created) {
    const std::uint64_t roll = Uniform(100);
    std::vector<SessionId> numbered;
    for (const auto& [id, s] : m.sessions) {
      if (IsNumberedSession(id)) numbered.push_back(id);
    }
    if (roll < 60 && !numbered.empty()) return numbered[Uniform(numbered.size())];
    if (roll < 70 && !m.sessions.empty()) {  // a Consul session: no ephemerals
      auto it = m.sessions.begin();
      std::advance(it, static_cast<long>(Uniform(m.sessions.size())));
      return it->first;
    }
    if (roll < 74 && !created.empty()) return created[Uniform(created.size())];  // maybe ended
    return SessionId();
  }

  std::string Path() {
    static const std::vector<std::string> odd = {
        "/",         "/z/",        "nope",       "/zookeeper/x", "/zookeeper",
        "/z/a/../b", "/missing/x", "/z/bad\x01", "/z/a/c/d",     "/y/e/f"};
    if (Chance(12)) return odd[Uniform(odd.size())];
    return Paths()[Uniform(Paths().size())];
  }

  std::int32_t Version(const ModelStore& m, const std::string& path) {
    const KvEntry* e = m.Find(path);
    const std::uint64_t roll = Uniform(100);
    if (roll < 50) return -1;
    if (roll < 85 && e != nullptr) return ModelZk::Wrap(static_cast<std::int64_t>(e->version) - 1);
    return static_cast<std::int32_t>(Uniform(4));
  }

  ZkOp Op(const ModelStore& m) {
    ZkOp op;
    // The parents first, most of the time: most writes need them.
    for (const char* parent : {"/z", "/y"}) {
      if (m.Find(parent) == nullptr && Chance(50)) {
        op.path = parent;
        op.container = Chance(20);
        return op;
      }
    }
    const std::uint64_t roll = Uniform(100);
    if (roll < 45) {
      op.kind = ZkOp::Kind::kCreate;
      op.sequential = Chance(35);
      op.path = op.sequential ? (Chance(70) ? "/z/q-" : "/y/") : Path();
      op.ephemeral = Chance(40);
      op.container = Chance(10);
      op.data = Chance(50) ? "" : "d" + std::to_string(Uniform(3));
    } else if (roll < 70) {
      op.kind = ZkOp::Kind::kDelete;
      op.path = Path();
      op.version = Version(m, op.path);
    } else if (roll < 88) {
      op.kind = ZkOp::Kind::kSetData;
      op.path = Path();
      op.data = "s" + std::to_string(Uniform(3));
      op.version = Version(m, op.path);
    } else if (roll < 95) {
      op.kind = ZkOp::Kind::kCheck;
      op.path = Path();
      op.version = Version(m, op.path);
    } else {
      op.kind = ZkOp::Kind::kSetAcl;
      op.path = Path();
      op.version = Chance(50) ? -1 : static_cast<std::int32_t>(Uniform(3));  // an aversion
    }
    return op;
  }

  std::mt19937_64 rng_;
};

}  // namespace tenure::state::testutil
