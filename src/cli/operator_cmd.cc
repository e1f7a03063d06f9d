// tenure operator raft transfer-leader [-id N]: cluster operations over the
// HTTP API (Consul's `consul operator raft ...` counterpart).
#include <string>

#include "cli/client_support.h"
#include "cli/commands.h"

namespace tenure::cli {
namespace {

constexpr char kOperatorUsage[] =
    "Usage: tenure operator raft transfer-leader [-id N] [options]\n"
    "\n"
    "  Hands the raft leadership to the voter with -node-id N (any other voter\n"
    "  without -id). Send it to the current leader (-http-addr).\n"
    "\n";

int TransferLeader(const Args& args) {
  HttpFlags http;
  std::uint64_t id = 0;
  Flags flags("operator raft transfer-leader");
  flags.Uint64("id", &id, "the -node-id of the voter to hand leadership to (default: any)");
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kOperatorUsage, 2)) return *code;
  if (!flags.positional().empty()) {
    PrintErr("tenure operator raft transfer-leader: unexpected arguments");
    return 2;
  }
  std::string target = "/v1/operator/raft/transfer-leader";
  if (flags.WasSet("id")) target += "?id=" + std::to_string(id);
  auto response = http.MakeClient()->Request("POST", target, "");
  if (!response.ok()) {
    PrintErr("Error transferring leadership: " + std::string(response.status().message()));
    return 1;
  }
  if (response->status != 200) {
    PrintErr("Error transferring leadership: " + UnexpectedResponse(*response));
    return 1;
  }
  PrintOut(flags.WasSet("id") ? "Leadership transferred to server " + std::to_string(id)
                              : "Leadership transferred");
  return 0;
}

}  // namespace

int OperatorCommand(const Args& args) {
  if (args.size() >= 2 && args[0] == "raft" && args[1] == "transfer-leader") {
    return TransferLeader(Args(args.begin() + 2, args.end()));
  }
  if (!args.empty() && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")) {
    PrintOut(kOperatorUsage);
    return 0;
  }
  PrintErr(std::string("tenure operator: expected \"raft transfer-leader\"\n\n") + kOperatorUsage);
  return 2;
}

}  // namespace tenure::cli
