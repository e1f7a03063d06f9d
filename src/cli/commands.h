// The `tenure` subcommands. Each returns the process exit code: 0 success,
// 1 a failed operation (Consul's CLI convention), 2 bad usage (1 for the
// commands Consul has too: docs/cli.md).
#pragma once

#include <string>
#include <vector>

namespace tenure::cli {

using Args = std::vector<std::string>;

int ServerCommand(const Args& args);
int KvCommand(const Args& args);
int SessionCommand(const Args& args);
int WatchCommand(const Args& args);
int LeaderCommand(const Args& args);
int LeaderGetCommand(const Args& args);
int HistoryCommand(const Args& args);
int RunCommand(const Args& args);
int LockCommand(const Args& args);
int ElectCommand(const Args& args);
int IsLeaderCommand(const Args& args);
int LeaderSetCommand(const Args& args);
int ResignCommand(const Args& args);
int OperatorCommand(const Args& args);
int MembersCommand(const Args& args);
int KeygenCommand(const Args& args);
int AclCommand(const Args& args);
int RecoverCommand(const Args& args);
int ValidateCommand(const Args& args);
int SnapshotCommand(const Args& args);

}  // namespace tenure::cli
