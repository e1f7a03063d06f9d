// tenure is-leader / leader-set / resign: questions and orders for the local
// candidate agent (`tenure elect NAME`), over its socket (cli/agent_socket.h).
// They never talk to the server themselves: only the agent holds the session
// whose leadership they are about.
#include <string>

#include "cli/agent_socket.h"
#include "cli/candidate_flags.h"
#include "cli/client_support.h"
#include "cli/commands.h"
#include "common/duration.h"

namespace tenure::cli {
namespace {

constexpr char kIsLeaderUsage[] =
    "Usage: tenure is-leader NAME [options]\n"
    "\n"
    "  Asks the local candidate agent of election NAME (`tenure elect NAME`) whether\n"
    "  it leads and is guaranteed to keep leading for its window G. Prints True or\n"
    "  False and exits 0 when it knows; exits 1 when it cannot know (no agent, no\n"
    "  answer in time): act as a follower then.\n"
    "\n";

constexpr char kLeaderSetUsage[] =
    "Usage: tenure leader-set NAME KEY=VALUE... [options]\n"
    "\n"
    "  Writes leader settings of election NAME as one atomic group, through the local\n"
    "  candidate agent, which must be the leader (the server checks its fencing token\n"
    "  in the same transaction). An empty VALUE deletes KEY. Exits 1 when refused.\n"
    "\n";

constexpr char kResignUsage[] =
    "Usage: tenure resign NAME [-to CANDIDATE] [options]\n"
    "\n"
    "  Makes the local candidate agent of election NAME give up leadership: release\n"
    "  the key (a waiting candidate takes it at once), or with -to hand it to that\n"
    "  registered candidate in one transaction. Exits 1 when not the leader.\n"
    "\n";

struct AgentFlags {
  std::string socket;
  std::string timeout = "5s";
  void Register(Flags* flags) {
    flags->String("socket", &socket,
                  "the agent's socket (default $TENURE_SOCKET, else as tenure elect)");
    flags->String("timeout", &timeout, "how long to wait for the agent's answer");
  }
};

// Parses NAME, the flags and the timeout; returns the exit code on an error.
std::optional<int> Prepare(const char* command, const char* usage, const Args& args, Flags* flags,
                           AgentFlags* agent, std::string* name, DurationMs* timeout_ms) {
  Args rest = args;
  TakeElectionName(&rest, name);
  agent->Register(flags);
  flags->set_interspersed(true);
  if (auto code = ParseFlags(flags, rest, usage, 2)) return code;
  if (name->empty() && !flags->positional().empty() && ValidElectionName(flags->positional()[0])) {
    *name = flags->positional()[0];
  }
  if (!ValidElectionName(*name)) {
    PrintErr(std::string("tenure ") + command + ": expected an election NAME (no '/')\n\n" +
             UsageWithOptions(usage, *flags));
    return 2;
  }
  auto timeout = ParseGoDuration(agent->timeout);
  if (!timeout.ok() || *timeout <= 0) {
    PrintErr(std::string("tenure ") + command + ": invalid -timeout " + agent->timeout);
    return 2;
  }
  *timeout_ms = *timeout / kNsPerMs;
  return std::nullopt;
}

// The positional arguments after NAME (NAME may have come first or as one).
Args ArgsAfterName(const Flags& flags, const std::string& name) {
  Args out = flags.positional();
  if (!out.empty() && out[0] == name) out.erase(out.begin());
  return out;
}

// Sends `request`; prints the agent's error as "tenure <command>: ...".
std::optional<nlohmann::json> Ask(const char* command, const std::string& path,
                                  nlohmann::json request, DurationMs timeout_ms) {
  auto answer = AskAgent(path, request, timeout_ms);
  if (!answer.ok()) {
    PrintErr(std::string("tenure ") + command +
             ": cannot reach the candidate agent: " + std::string(answer.status().message()) +
             " (is `tenure elect " + request.value("Election", std::string()) + "` running?)");
    return std::nullopt;
  }
  if (!answer->value("Ok", false)) {
    PrintErr(std::string("tenure ") + command + ": " +
             answer->value("Error", std::string("refused")));
    return std::nullopt;
  }
  return *answer;
}

}  // namespace

int IsLeaderCommand(const Args& args) {
  Flags flags("is-leader");
  AgentFlags agent;
  std::string name, format = "text";
  DurationMs timeout_ms = 0;
  flags.String("format", &format, "output format: text (True/False), json or yaml (true/false)");
  if (auto code = Prepare("is-leader", kIsLeaderUsage, args, &flags, &agent, &name, &timeout_ms)) {
    return *code;
  }
  if (!ArgsAfterName(flags, name).empty()) {
    PrintErr("tenure is-leader: unexpected arguments");
    return 2;
  }
  if (format != "text" && format != "json" && format != "yaml") {
    PrintErr("tenure is-leader: invalid -format \"" + format + "\" (text, json or yaml)");
    return 2;
  }
  auto answer = Ask("is-leader", ResolveAgentSocket(agent.socket, name),
                    {{"Op", "status"}, {"Election", name}}, timeout_ms);
  if (!answer) return 1;
  const auto leader = answer->find("Leader");
  if (leader == answer->end() || !leader->is_boolean()) {
    PrintErr("tenure is-leader: the agent's answer has no \"Leader\"");
    return 1;
  }
  const bool is_leader = leader->get<bool>();
  if (format == "text")
    PrintOut(is_leader ? "True" : "False");
  else
    PrintOut(is_leader ? "true" : "false");
  return 0;
}

int LeaderSetCommand(const Args& args) {
  Flags flags("leader-set");
  AgentFlags agent;
  std::string name;
  DurationMs timeout_ms = 0;
  if (auto code =
          Prepare("leader-set", kLeaderSetUsage, args, &flags, &agent, &name, &timeout_ms)) {
    return *code;
  }
  nlohmann::json settings = nlohmann::json::object();
  for (const std::string& pair : ArgsAfterName(flags, name)) {
    const std::size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      PrintErr("tenure leader-set: expected KEY=VALUE, got \"" + pair + "\"");
      return 2;
    }
    settings[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  if (settings.empty()) {
    PrintErr(std::string("tenure leader-set: expected KEY=VALUE...\n\n") +
             UsageWithOptions(kLeaderSetUsage, flags));
    return 2;
  }
  auto answer = Ask("leader-set", ResolveAgentSocket(agent.socket, name),
                    {{"Op", "leader-set"}, {"Election", name}, {"Settings", settings}}, timeout_ms);
  return answer ? 0 : 1;
}

int ResignCommand(const Args& args) {
  Flags flags("resign");
  AgentFlags agent;
  std::string name, to;
  DurationMs timeout_ms = 0;
  flags.String("to", &to, "hand leadership to this registered candidate");
  if (auto code = Prepare("resign", kResignUsage, args, &flags, &agent, &name, &timeout_ms)) {
    return *code;
  }
  if (!ArgsAfterName(flags, name).empty()) {
    PrintErr("tenure resign: unexpected arguments");
    return 2;
  }
  nlohmann::json request = {{"Op", "resign"}, {"Election", name}};
  if (!to.empty()) request["To"] = to;
  auto answer = Ask("resign", ResolveAgentSocket(agent.socket, name), request, timeout_ms);
  if (!answer) return 1;
  std::string next;
  if (auto it = answer->find("NextLeader"); it != answer->end() && it->is_string()) {
    next = it->get<std::string>();
  }
  PrintOut(!to.empty()    ? "Handed the leadership of " + name + " to " + to
           : next.empty() ? "Resigned the leadership of " + name
                          : "Resigned the leadership of " + name + "; now led by " + next);
  return 0;
}

}  // namespace tenure::cli
