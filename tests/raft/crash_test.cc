// kill -9 durability: a child process writes through a single-node Node and
// reports each acknowledged key over a pipe; the parent SIGKILLs it mid-load,
// restarts a Node on the same data dir and checks every acknowledged write.
// This is the regression test for libraft 0.15 losing unpadded entries at
// restart (docs/architecture.md, libraft pitfall 1), with snapshots and segment rollovers mixed in.
// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "raft/node.h"
#include "raft/raft_test_util.h"

namespace tenure::raft {
namespace {

using testing::FreeLoopbackAddress;
using testing::KvSetCommand;
using testing::OddValueSize;
using testing::RunUntil;
using testing::TestKey;

constexpr int kInFlight = 64;
constexpr int kAcksBeforeKill = 3000;

NodeOptions CrashOptions(const std::filesystem::path& dir, const std::string& address) {
  NodeOptions options;
  options.address = address;
  options.data_dir = dir;
  options.bootstrap = {Peer{1, address}};
  options.snapshot_threshold = 1024;  // several snapshots per run
  options.snapshot_trailing = 128;
  options.snapshot_spacing_ms = 0;  // a snapshot every threshold entries, however fast
  return options;
}

// Child process body: writes keys first, first+1, ... with kInFlight in
// flight and reports each acknowledged one on `ack_fd`. Never returns.
[[noreturn]] void RunWriter(const std::filesystem::path& dir, const std::string& address, int first,
                            int ack_fd) {
  boost::asio::io_context io;
  state::Store store;
  Node node(io, store, CrashOptions(dir, address));
  if (!node.Start().ok()) ::_exit(2);
  int next = first;
  std::function<void()> propose_next;
  propose_next = [&] {
    int k = next++;
    node.Propose(KvSetCommand(TestKey(k), OddValueSize(k), k),
                 [&, k](Result<state::ApplyResult> result) {
                   if (!result.ok()) ::_exit(3);
                   std::int32_t id = k;
                   if (::write(ack_fd, &id, sizeof id) != sizeof id) ::_exit(4);
                   propose_next();
                 });
  };
  node.set_on_leadership([&](bool leader) {
    if (!leader) return;
    for (int i = 0; i < kInFlight; ++i) propose_next();
  });
  io.run();
  ::_exit(5);
}

TEST(CrashTest, KillNineKeepsEveryAcknowledgedWrite) {
  std::filesystem::path dir = testing::MakeTempDir("crash");
  testing::DirRemover remover{dir};
  std::string address = FreeLoopbackAddress();
  std::set<int> acked;
  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      RunWriter(dir, address, round * 1'000'000, fds[1]);
    }
    ::close(fds[1]);
    int acks = 0;
    std::int32_t id = 0;
    while (acks < kAcksBeforeKill && ::read(fds[0], &id, sizeof id) == sizeof id) {
      acked.insert(id);
      ++acks;
    }
    ::kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "writer exited early with " << WEXITSTATUS(wstatus);
    while (::read(fds[0], &id, sizeof id) == sizeof id) acked.insert(id);  // acks before the kill
    ::close(fds[0]);
    ASSERT_GE(acks, kAcksBeforeKill);

    boost::asio::io_context io;
    state::Store store;
    Node node(io, store, CrashOptions(dir, address));
    Status started = node.Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    for (int k : acked) {
      const state::KvEntry* entry = store.FindKv(TestKey(k));
      ASSERT_NE(entry, nullptr) << "acknowledged " << TestKey(k) << " lost (round " << round << ")";
      ASSERT_EQ(entry->value.size(), OddValueSize(k));
    }
    store.CheckInvariants();
    bool stopped = false;
    node.Stop([&] { stopped = true; });
    ASSERT_TRUE(RunUntil(io, [&] { return stopped; }));
  }
}

}  // namespace
}  // namespace tenure::raft
