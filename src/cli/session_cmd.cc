// tenure session create|info|list|renew|destroy: the session endpoints from
// the shell (Consul has no such CLI command; messages follow `consul kv`'s
// style). JSON results are printed 4-space indented, fields in the server's
// order. Exit codes: 0 success, 1 a failed operation, 2 bad usage.
#include <cstdio>

#include "cli/client_support.h"
#include "cli/commands.h"

namespace tenure::cli {
namespace {

constexpr char kSessionUsage[] =
    "Usage: tenure session <subcommand> [options] [args]\n"
    "\n"
    "  create   [-name=N] [-ttl=15s] [-lock-delay=15s] [-behavior=release|delete] [-node=N]\n"
    "           creates a session and prints its ID\n"
    "  info     ID      prints the session as JSON\n"
    "  list     [-node=N]  prints all sessions (or a node's) as a JSON array\n"
    "  renew    ID      renews a TTL session and prints it as JSON\n"
    "  destroy  ID      destroys the session, releasing (or deleting) its locks\n"
    "\n"
    "Run 'tenure session <subcommand> -h' for its options.\n";

constexpr char kCreateUsage[] =
    "Usage: tenure session create [options]\n"
    "\n"
    "  Creates a session and prints its ID. Options not given take the server's\n"
    "  defaults: no TTL, lock-delay 15s, behavior release, this agent's node.\n"
    "\n";
constexpr char kListUsage[] =
    "Usage: tenure session list [options]\n\n  Prints all sessions as a JSON array.\n\n";

// The request failed, or answered with a status other than 200. Prints
// "Error! <what>: <why>" and returns 1; returns 0 when the response is usable.
int CheckResponse(const Result<net::ClientResponse>& response, std::string_view what) {
  if (!response.ok()) {
    PrintErr("Error! " + std::string(what) + ": " + std::string(response.status().message()));
    return 1;
  }
  if (response->status != 200) {
    PrintErr("Error! " + std::string(what) + ": " + UnexpectedResponse(*response));
    return 1;
  }
  return 0;
}

// Prints a JSON body, or (unwrap) the first element of a JSON array body.
int PrintJsonBody(const std::string& body, bool unwrap, std::string_view id) {
  auto parsed = ParseJson(body);
  if (!parsed || !parsed->is_array()) {
    PrintErr("Error! Unexpected response from the server: " + body);
    return 1;
  }
  if (!unwrap) {
    PrintOut(GoJson(*parsed, 4));
    return 0;
  }
  if (parsed->empty()) {
    PrintErr("Error! Session ID not found: " + std::string(id));
    return 1;
  }
  PrintOut(GoJson((*parsed)[0], 4));
  return 0;
}

int Create(const Args& args) {
  std::string name, ttl, lock_delay, behavior, node;
  HttpFlags http;
  Flags flags("session create");
  flags.String("name", &name, "a human-readable name");
  flags.String("ttl", &ttl, "time to live as a Go duration, 10s..24h (default: none)");
  flags.String("lock-delay", &lock_delay,
               "how long a released lock cannot be re-acquired, e.g. 15s or 0s (default 15s)");
  flags.String("behavior", &behavior,
               "what happens to held keys when the session ends: release or delete "
               "(default release)");
  flags.String("node", &node, "the node the session belongs to (default: the agent's)");
  http.Register(&flags);
  if (auto exit_code = ParseFlags(&flags, args, kCreateUsage, 2)) return *exit_code;
  if (!flags.positional().empty()) {
    PrintErr("Error! Unexpected argument: " + flags.positional()[0]);
    return 2;
  }
  if (flags.WasSet("behavior") && behavior != "release" && behavior != "delete") {
    PrintErr("Error! -behavior must be release or delete, got \"" + behavior + "\"");
    return 2;
  }

  // Only the options given go into the body, so the server's defaults apply
  // to the rest exactly as for any other client.
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
  if (flags.WasSet("name")) body["Name"] = name;
  if (flags.WasSet("node")) body["Node"] = node;
  if (flags.WasSet("lock-delay")) body["LockDelay"] = lock_delay;
  if (flags.WasSet("behavior")) body["Behavior"] = behavior;
  if (flags.WasSet("ttl")) body["TTL"] = ttl;

  auto client = http.MakeClient();
  auto response = client->Request("PUT", "/v1/session/create", GoJson(body, 0));
  if (int failed = CheckResponse(response, "Failed to create session")) return failed;
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object() || !parsed->contains("ID") || !(*parsed)["ID"].is_string()) {
    PrintErr("Error! Unexpected response from the server: " + response->body);
    return 1;
  }
  PrintOut((*parsed)["ID"].get<std::string>());
  return 0;
}

int List(const Args& args) {
  std::string node;
  HttpFlags http;
  Flags flags("session list");
  flags.String("node", &node, "only the sessions of this node");
  http.Register(&flags);
  if (auto exit_code = ParseFlags(&flags, args, kListUsage, 2)) return *exit_code;
  if (!flags.positional().empty()) {
    PrintErr("Error! Unexpected argument: " + flags.positional()[0]);
    return 2;
  }
  std::string target =
      node.empty() ? "/v1/session/list" : "/v1/session/node/" + net::EscapeQueryValue(node);
  auto client = http.MakeClient();
  auto response = client->Request("GET", target);
  if (int failed = CheckResponse(response, "Failed to list sessions")) return failed;
  return PrintJsonBody(response->body, /*unwrap=*/false, "");
}

// info, renew and destroy: one session ID argument.
int OnSession(std::string_view sub, const Args& args) {
  HttpFlags http;
  Flags flags("session " + std::string(sub));
  http.Register(&flags);
  std::string usage = "Usage: tenure session " + std::string(sub) + " [options] ID\n\n";
  if (auto exit_code = ParseFlags(&flags, args, usage, 2)) return *exit_code;
  const auto& positional = flags.positional();
  if (positional.empty() || positional[0].empty()) {
    PrintErr("Error! Missing session ID argument");
    return 2;
  }
  if (positional.size() > 1) {
    PrintErr("Error! Too many arguments (expected 1, got " + std::to_string(positional.size()) +
             ")");
    return 2;
  }
  const std::string& id = positional[0];
  const std::string escaped = net::EscapeQueryValue(id);
  auto client = http.MakeClient();

  if (sub == "info") {
    auto response = client->Request("GET", "/v1/session/info/" + escaped);
    if (int failed = CheckResponse(response, "Failed to read session")) return failed;
    return PrintJsonBody(response->body, /*unwrap=*/true, id);
  }
  if (sub == "renew") {
    auto response = client->Request("PUT", "/v1/session/renew/" + escaped);
    if (response.ok() && response->status == 404) {
      PrintErr("Error! Session ID not found: " + id);
      return 1;
    }
    if (int failed = CheckResponse(response, "Failed to renew session")) return failed;
    return PrintJsonBody(response->body, /*unwrap=*/true, id);
  }
  auto response = client->Request("PUT", "/v1/session/destroy/" + escaped);
  if (int failed = CheckResponse(response, "Failed to destroy session")) return failed;
  if (response->body.find("true") == std::string::npos) {
    PrintErr("Error! Did not destroy session: " + id);
    return 1;
  }
  PrintOut("Success! Destroyed session: " + id);
  return 0;
}

}  // namespace

int SessionCommand(const Args& args) {
  return DispatchSubcommand(
      "session", kSessionUsage, args,
      {{"create", Create},
       {"list", List},
       {"info", [](const Args& rest) { return OnSession("info", rest); }},
       {"renew", [](const Args& rest) { return OnSession("renew", rest); }},
       {"destroy", [](const Args& rest) { return OnSession("destroy", rest); }}},
      2);
}

}  // namespace tenure::cli
