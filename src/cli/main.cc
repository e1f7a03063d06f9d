// tenure: one binary for the server and every client command.
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/malloc_huge_pages.h"

namespace {

constexpr char kUsage[] =
    "Usage: tenure <command> [options] [args]\n"
    "\n"
    "Commands:\n"
    "  server     run a tenure server (Consul-compatible HTTP API on 127.0.0.1:8500)\n"
    "  kv         get, put and delete keys (kv get|put|delete)\n"
    "  session    create, inspect, renew and destroy sessions\n"
    "  watch      run a command on every change of a key (-type=key -key=K)\n"
    "  leader     who leads an election (service/NAME/leader); -watch follows changes\n"
    "  leader-get read an election's leader settings (service/NAME/settings/)\n"
    "  history    an election's past leaders: fence, holder, held for, how it ended\n"
    "  run        run a command only while leading an election (run NAME -- CMD)\n"
    "  lock       run a command while holding a lock or semaphore slot, as consul lock\n"
    "  elect      a candidate agent with hooks and a local socket (elect NAME)\n"
    "  is-leader  ask the local agent: True only while leadership is guaranteed\n"
    "  leader-set write leader settings through the local agent (leader only)\n"
    "  resign     make the local agent give up leadership (-to CANDIDATE hands it over)\n"
    "  members    the cluster's raft servers: node, id, address, leader, voter\n"
    "  operator   cluster operations (operator raft transfer-leader|list-peers|remove-peer)\n"
    "  acl        ACL bootstrap, policies and tokens (acl bootstrap|policy|token)\n"
    "  snapshot   save, restore or inspect a backup of the whole state\n"
    "  keygen     print a new cluster key for -raft-key-file\n"
    "  recover    check a stopped server's data dir; -repair cuts damage away\n"
    "  validate   check config files of `tenure server` (docs/config.md)\n"
    "  version    print the version\n"
    "\n"
    "Run 'tenure <command> -h' for a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  // A write to a socket whose peer went away must be an error, not a signal
  // that kills the server (libuv writes with writev, not MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
#if defined(M_MMAP_THRESHOLD) && !defined(TENURE_MIMALLOC)
  // glibc's malloc (decision 0060): blocks of 1 MiB or more (a snapshot's
  // encoding, ~90 bytes a session, and its copy for raft) are mapped and
  // unmapped on their own. glibc would otherwise raise this threshold to the
  // size of the first such block freed and then serve the next snapshots
  // from the heap, whose freed holes among long-lived Store nodes stay
  // resident: 100,000 idle sessions took ~130 bytes each more RSS (decision
  // 0032). KV values (at most 512 KiB) stay below.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string_view command = argv[1];
#ifndef TENURE_MIMALLOC
  // glibc's malloc: huge pages for the server (decision 0046). Not with
  // mimalloc, whose huge pages kept a large answer's memory resident
  // (decision 0060).
  if (command == "server") tenure::cli::ReexecWithMallocHugePages(argv);
#endif
  tenure::cli::Args args(argv + 2, argv + argc);
  if (command == "server") return tenure::cli::ServerCommand(args);
  if (command == "kv") return tenure::cli::KvCommand(args);
  if (command == "session") return tenure::cli::SessionCommand(args);
  if (command == "watch") return tenure::cli::WatchCommand(args);
  if (command == "leader") return tenure::cli::LeaderCommand(args);
  if (command == "leader-get") return tenure::cli::LeaderGetCommand(args);
  if (command == "history") return tenure::cli::HistoryCommand(args);
  if (command == "run") return tenure::cli::RunCommand(args);
  if (command == "lock") return tenure::cli::LockCommand(args);
  if (command == "elect") return tenure::cli::ElectCommand(args);
  if (command == "is-leader") return tenure::cli::IsLeaderCommand(args);
  if (command == "leader-set") return tenure::cli::LeaderSetCommand(args);
  if (command == "resign") return tenure::cli::ResignCommand(args);
  if (command == "operator") return tenure::cli::OperatorCommand(args);
  if (command == "members") return tenure::cli::MembersCommand(args);
  if (command == "keygen") return tenure::cli::KeygenCommand(args);
  if (command == "acl") return tenure::cli::AclCommand(args);
  if (command == "recover") return tenure::cli::RecoverCommand(args);
  if (command == "validate") return tenure::cli::ValidateCommand(args);
  if (command == "snapshot") return tenure::cli::SnapshotCommand(args);
  if (command == "version" || command == "-v" || command == "--version") {
    std::printf("tenure %s\n", TENURE_VERSION);
    return 0;
  }
  if (command == "help" || command == "-h" || command == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "tenure: unknown command \"%s\"\n\n%s", argv[1], kUsage);
  return 2;
}
