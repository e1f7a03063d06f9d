// tenure operator raft transfer-leader|remove-peer|list-peers: cluster operations over the
// HTTP API (Consul's `consul operator raft ...` counterpart).
#include <algorithm>
#include <string>
#include <vector>

#include "cli/client_support.h"
#include "cli/commands.h"

namespace tenure::cli {
namespace {

constexpr char kOperatorUsage[] =
    "Usage: tenure operator raft transfer-leader [-id N] [options]\n"
    "       tenure operator raft remove-peer (-id N | -address HOST:PORT) [options]\n"
    "       tenure operator raft list-peers [options]   (also: tenure members)\n"
    "\n"
    "  transfer-leader hands the raft leadership to the voter with -node-id N (any\n"
    "  other voter without -id).\n"
    "  remove-peer takes a server out of the raft configuration (by -node-id or raft\n"
    "  address); stop it first, or it keeps asking to be heard. New servers join with\n"
    "  `tenure server -join`.\n"
    "  list-peers prints the raft configuration as the server at -http-addr sees it.\n"
    "  Any member accepts these: followers forward changes to the leader.\n"
    "  transfer-leader and remove-peer need the servers' operator token\n"
    "  (tenure server -operator-token-file), given with -token or CONSUL_HTTP_TOKEN.\n"
    "\n";

std::string Pad(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

int ListPeers(const Args& args) {
  HttpFlags http;
  Flags flags("operator raft list-peers");
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kOperatorUsage, 1)) return *code;
  if (!flags.positional().empty()) {
    PrintErr("tenure operator raft list-peers: unexpected arguments");
    return 1;
  }
  auto response = http.MakeClient()->Request("GET", "/v1/operator/raft/configuration", "");
  if (!response.ok()) {
    PrintErr("Error getting peers: " + std::string(response.status().message()));
    return 1;
  }
  if (response->status != 200) {
    PrintErr("Error getting peers: " + UnexpectedResponse(*response));
    return 1;
  }
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object() || !(*parsed)["Servers"].is_array()) {
    PrintErr("Error getting peers: unexpected answer " + response->body);
    return 1;
  }
  std::vector<std::vector<std::string>> rows = {{"Node", "ID", "Address", "State", "Voter"}};
  for (const auto& server : (*parsed)["Servers"]) {
    rows.push_back({server.value("Node", std::string()), server.value("ID", std::string()),
                    server.value("Address", std::string()),
                    server.value("Leader", false) ? "leader" : "follower",
                    server.value("Voter", false) ? "true" : "false"});
  }
  std::vector<std::size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += i + 1 == row.size() ? row[i] : Pad(row[i], widths[i] + 2);
    }
    PrintOut(line);
  }
  return 0;
}

int TransferLeader(const Args& args) {
  HttpFlags http;
  std::uint64_t id = 0;
  Flags flags("operator raft transfer-leader");
  flags.Uint64("id", &id, "the -node-id of the voter to hand leadership to (default: any)");
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kOperatorUsage, 1)) return *code;
  if (!flags.positional().empty()) {
    PrintErr("tenure operator raft transfer-leader: unexpected arguments");
    return 1;
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

int RemovePeer(const Args& args) {
  HttpFlags http;
  std::uint64_t id = 0;
  std::string address;
  Flags flags("operator raft remove-peer");
  flags.Uint64("id", &id, "the -node-id of the server to remove");
  flags.String("address", &address, "the raft address (HOST:PORT) of the server to remove");
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kOperatorUsage, 1)) return *code;
  if (!flags.positional().empty()) {
    PrintErr("tenure operator raft remove-peer: unexpected arguments");
    return 1;
  }
  if (flags.WasSet("id") == flags.WasSet("address") || (flags.WasSet("id") && id == 0) ||
      (flags.WasSet("address") && address.empty())) {
    PrintErr(
        "tenure operator raft remove-peer: give exactly one of -id N (positive) or "
        "-address HOST:PORT");
    return 1;
  }
  std::string target = flags.WasSet("id") ? "/v1/operator/raft/peer?id=" + std::to_string(id)
                                          : "/v1/operator/raft/peer?address=" + address;
  auto response = http.MakeClient()->Request("DELETE", target, "");
  if (!response.ok()) {
    PrintErr("Error removing peer: " + std::string(response.status().message()));
    return 1;
  }
  if (response->status != 200) {
    PrintErr("Error removing peer: " + UnexpectedResponse(*response));
    return 1;
  }
  PrintOut(flags.WasSet("id") ? "Removed peer with id \"" + std::to_string(id) + "\""
                              : "Removed peer with address \"" + address + "\"");
  return 0;
}

}  // namespace

int OperatorCommand(const Args& args) {
  if (args.size() >= 2 && args[0] == "raft" && args[1] == "remove-peer") {
    return RemovePeer(Args(args.begin() + 2, args.end()));
  }
  if (args.size() >= 2 && args[0] == "raft" && args[1] == "transfer-leader") {
    return TransferLeader(Args(args.begin() + 2, args.end()));
  }
  if (args.size() >= 2 && args[0] == "raft" && args[1] == "list-peers") {
    return ListPeers(Args(args.begin() + 2, args.end()));
  }
  if (!args.empty() && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")) {
    PrintOut(kOperatorUsage);
    return 0;
  }
  PrintErr(std::string("tenure operator: expected \"raft transfer-leader\", \"raft remove-peer\" "
                       "or \"raft list-peers\"\n\n") +
           kOperatorUsage);
  return 1;
}

int MembersCommand(const Args& args) { return ListPeers(args); }

}  // namespace tenure::cli
