// tenure elect NAME [options]: the candidate agent (sidecar style). It runs a
// tenure::Candidate for service/NAME/leader, turns its events into Juju's
// hooks, serves its state on a local socket (is-leader, leader-set, resign
// ask it) and optionally a TCP probe that answers 200 only while it leads.
//
// One io_context on the main thread runs the candidate, the hooks (one at a
// time, in order, each under a ChildGroup so none outlives the agent), the
// health check, both servers and SIGINT/SIGTERM. On a signal it resigns if
// leading (the deposed hook runs), destroys its session, waits for the hooks
// (bounded) and exits 0.
// Why one file over 500 lines: Agent is one state machine (candidate
// events, hooks, socket answers) whose parts share its private state, kept
// in this file rather than in a header every command would read.
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/agent_socket.h"
#include "cli/async_child.h"
#include "cli/candidate_flags.h"
#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/oneshot_server.h"
#include "client/candidate.h"
#include "client/kv_pair.h"
#include "client/queue.h"
#include "common/duration.h"
#include "common/limits.h"
#include "net/url.h"

namespace tenure::cli {
namespace {

namespace asio = boost::asio;
using LocalProtocol = asio::local::stream_protocol;

constexpr char kElectUsage[] =
    "Usage: tenure elect NAME [options]\n"
    "\n"
    "  A candidate agent for election NAME (service/NAME/leader), without a child\n"
    "  process. It campaigns, keeps its session alive, and runs hooks with Juju's\n"
    "  semantics, one at a time and in order:\n"
    "    -on-elected           when leadership starts (guaranteed for the window G)\n"
    "    -on-deposed           when it ends (lost, resigned, unhealthy, or no longer\n"
    "                          provable)\n"
    "    -on-settings-changed  as a follower, once per change of the leader settings,\n"
    "                          and once on becoming a follower\n"
    "  Hooks run with /bin/sh -c and get TENURE_HOOK, TENURE_ELECTION, TENURE_CANDIDATE,\n"
    "  TENURE_SOCKET, TENURE_LEADER_KEY, TENURE_SESSION, TENURE_HTTP_ADDR, and\n"
    "  TENURE_FENCING_TOKEN (elected) or TENURE_REASON (deposed).\n"
    "  It serves `tenure is-leader`, `leader-set` and `resign` on a local socket,\n"
    "  and with -probe-addr an HTTP endpoint: GET /leader answers 200 only while it\n"
    "  leads (503 otherwise); GET /status gives its state as JSON.\n"
    "  SIGINT/SIGTERM: resign, run the deposed hook, exit 0.\n"
    "\n";

constexpr DurationMs kStopTimeoutMs = 30'000;
constexpr DurationMs kProbeIdleTimeoutMs = 5'000;
constexpr std::size_t kProbeMaxRequestBytes = 8 * 1024;
// A leader-set is one txn: the fence check plus one operation per setting.
constexpr std::size_t kMaxSettingsPerSet = limits::kTxnOpsMax - 1;

void Note(const std::string& text) { PrintErr("tenure elect: " + text); }

std::string ToJsonLine(const nlohmann::json& value) { return value.dump() + "\n"; }

std::string ErrorLine(const std::string& error) {
  return ToJsonLine({{"Ok", false}, {"Error", error}});
}

struct HookCommands {
  std::string elected, deposed, settings_changed;
};

struct ElectConfig {
  CandidateSetup setup;
  HookCommands hooks;
  std::string socket_path;
  std::string probe_addr;
  std::string health_check;
  DurationMs health_interval_ms = 10'000;
  DurationMs resign_backoff_ms = 2'000;
};

// Creates the socket's directory (0700) and takes the path over from a dead
// agent; refuses when a live agent answers there.
Result<LocalProtocol::acceptor> BindAgentSocket(asio::io_context& io, const std::string& path) {
  sockaddr_un probe{};
  if (path.size() >= sizeof(probe.sun_path)) {
    return Status::InvalidArgument("socket path too long (at most " +
                                   std::to_string(sizeof(probe.sun_path) - 1) + " bytes): " + path);
  }
  const std::size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    for (std::size_t i = 1; i <= dir.size(); ++i) {
      if (i == dir.size() || dir[i] == '/') {
        const std::string part = dir.substr(0, i);
        if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
          return Status::IoError("cannot create " + part + ": " + std::strerror(errno));
        }
      }
    }
  }
  if (::access(path.c_str(), F_OK) == 0) {
    LocalProtocol::socket test(io);
    boost::system::error_code ec;
    test.connect(LocalProtocol::endpoint(path), ec);
    if (!ec) return Status::FailedPrecondition("another agent already serves " + path);
    ::unlink(path.c_str());  // left behind by an agent that died
  }
  LocalProtocol::acceptor acceptor(io);
  boost::system::error_code ec;
  acceptor.open(LocalProtocol(), ec);
  if (!ec) acceptor.bind(LocalProtocol::endpoint(path), ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IoError("cannot listen on " + path + ": " + ec.message());
  ::chmod(path.c_str(), 0600);
  return acceptor;
}

Result<asio::ip::tcp::acceptor> BindProbe(asio::io_context& io, const std::string& addr) {
  const std::size_t colon = addr.rfind(':');
  boost::system::error_code ec;
  asio::ip::address ip;
  if (colon != std::string::npos) ip = asio::ip::make_address(addr.substr(0, colon), ec);
  unsigned long port = 0;
  try {
    if (colon != std::string::npos) port = std::stoul(addr.substr(colon + 1));
  } catch (const std::exception&) {
    port = 70'000;
  }
  if (colon == std::string::npos || ec || port > 65535) {
    return Status::InvalidArgument("invalid -probe-addr \"" + addr + "\": expected IP:PORT");
  }
  asio::ip::tcp::endpoint endpoint(ip, static_cast<unsigned short>(port));
  asio::ip::tcp::acceptor acceptor(io);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IoError("cannot listen on " + addr + ": " + ec.message());
  return acceptor;
}

using Reply = std::function<void(std::string answer)>;

class Agent {
 public:
  Agent(asio::io_context& io, ElectConfig config)
      : io_(io),
        config_(std::move(config)),
        candidate_(io, MakeOptions(), MakeEvents()),
        hook_child_(io),
        health_child_(io),
        stop_timer_(io),
        signals_(io, SIGINT, SIGTERM),
        reader_(io, config_.setup.http) {}

  ~Agent() {
    if (bound_) ::unlink(config_.socket_path.c_str());
  }

  Status Start() {
    auto socket = BindAgentSocket(io_, config_.socket_path);
    if (!socket.ok()) return socket.status();
    bound_ = true;
    socket_server_.emplace(std::move(*socket), "\n", kAgentMaxRequestBytes, kProbeIdleTimeoutMs,
                           [this](const OneShotRequest& request, Reply reply) {
                             HandleAgentRequest(request, std::move(reply));
                           });
    if (!config_.probe_addr.empty()) {
      auto probe = BindProbe(io_, config_.probe_addr);
      if (!probe.ok()) return probe.status();
      probe_server_.emplace(std::move(*probe), "\r\n\r\n", kProbeMaxRequestBytes,
                            kProbeIdleTimeoutMs,
                            [this](const OneShotRequest& request, Reply reply) {
                              HandleProbe(request, std::move(reply));
                            });
    }
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (!ec) Stop();
    });
    Note("candidate " + config_.setup.election.candidate + " for " + candidate_.LeaderKey() +
         "; socket " + config_.socket_path);
    candidate_.Start();
    return Status();
  }

 private:
  client::CandidateOptions MakeOptions() {
    client::CandidateOptions options;
    options.http = config_.setup.http;
    options.session = config_.setup.session;
    options.election = config_.setup.election;
    options.value = config_.setup.value;
    options.resign_backoff_ms = config_.resign_backoff_ms;
    options.health_interval_ms = config_.health_interval_ms;
    if (!config_.health_check.empty()) {
      options.health_check = [this](client::CandidateOptions::HealthReply reply) {
        CheckHealth(std::move(reply));
      };
    }
    return options;
  }

  client::CandidateEvents MakeEvents() {
    client::CandidateEvents events;
    events.elected = [this](std::uint64_t token) {
      Note("elected (fencing token " + std::to_string(token) + ")");
      QueueHook("elected", config_.hooks.elected,
                {"TENURE_FENCING_TOKEN=" + std::to_string(token)});
    };
    events.deposed = [this](const std::string& why) {
      Note("deposed: " + why);
      QueueHook("deposed", config_.hooks.deposed, {"TENURE_REASON=" + why});
    };
    events.settings_changed = [this](const Settings&) {
      QueueHook("settings-changed", config_.hooks.settings_changed, {});
    };
    events.leader_changed = [](const LeaderInfo& leader) {
      Note(leader.has_leader() ? "leader is " + leader.value + " (session " + leader.session + ")"
                               : "no leader");
    };
    events.note = Note;
    return events;
  }

  // ---- hooks: one at a time, in order ----------------------------------------

  struct Hook {
    std::string name, command;
    std::vector<std::string> env;
  };

  void QueueHook(const std::string& name, const std::string& command,
                 std::vector<std::string> env) {
    if (command.empty()) return;
    // A pending settings-changed already reads the latest settings when it runs.
    if (name == "settings-changed") {
      for (const Hook& hook : hooks_) {
        if (hook.name == name) return;
      }
    }
    env.push_back("TENURE_HOOK=" + name);
    env.push_back("TENURE_ELECTION=" + config_.setup.election.name);
    env.push_back("TENURE_CANDIDATE=" + config_.setup.election.candidate);
    env.push_back("TENURE_SOCKET=" + config_.socket_path);
    env.push_back("TENURE_LEADER_KEY=" + candidate_.LeaderKey());
    env.push_back("TENURE_SESSION=" + candidate_.session_id());
    env.push_back("TENURE_HTTP_ADDR=" + config_.setup.http.addresses.front());
    hooks_.push_back({name, command, std::move(env)});
    RunNextHook();
  }

  void RunNextHook() {
    if (hook_child_.running() || hooks_.empty()) {
      MaybeExit();
      return;
    }
    Hook hook = std::move(hooks_.front());
    hooks_.pop_front();
    Status started =
        hook_child_.Start(hook.command, hook.env, 0, [this, name = hook.name](int code) {
          if (code != 0) Note("hook " + name + " exited with code " + std::to_string(code));
          RunNextHook();
        });
    if (!started.ok()) {
      Note("cannot run hook " + hook.name + ": " + std::string(started.message()));
      RunNextHook();
    }
  }

  void CheckHealth(client::CandidateOptions::HealthReply reply) {
    if (health_child_.running()) return;  // the previous check still runs: its answer counts
    Status started = health_child_.Start(
        config_.health_check, {"TENURE_ELECTION=" + config_.setup.election.name},
        config_.health_interval_ms, [reply](int code) {
          reply(code == 0, code == 137 ? "timed out" : "exit code " + std::to_string(code));
        });
    if (!started.ok())
      reply(false, "cannot run the health check: " + std::string(started.message()));
  }

  // ---- the local socket ---------------------------------------------------------

  nlohmann::json StatusJson() const {
    const bool leader = candidate_.IsLeader();
    nlohmann::json out = {
        {"Ok", true},
        {"Election", config_.setup.election.name},
        {"Candidate", config_.setup.election.candidate},
        {"Leader", leader},
        {"FencingToken", candidate_.FencingToken()},
        {"Session", candidate_.session_id()},
        {"ProvenForMs", candidate_.ProvenForMs()},
        {"GuaranteeMs", candidate_.options().session.lease.guarantee_ms},
        {"Healthy", candidate_.healthy()},
        {"Resting", candidate_.resting()},
        {"LeaderSession", candidate_.leader().session},
        {"LeaderValue", candidate_.leader().value},
    };
    return out;
  }

  void HandleAgentRequest(const OneShotRequest& request, Reply reply) {
    if (request.too_large) {
      reply(ErrorLine("request too large (limit " + std::to_string(kAgentMaxRequestBytes) +
                      " bytes)"));
      return;
    }
    auto parsed = nlohmann::json::parse(request.text, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      reply(ErrorLine("malformed request: expected one JSON object on one line"));
      return;
    }
    const auto election = parsed.find("Election");
    if (election != parsed.end() &&
        (!election->is_string() || *election != config_.setup.election.name)) {
      reply(ErrorLine("this agent serves election \"" + config_.setup.election.name + "\", not " +
                      election->dump()));
      return;
    }
    const auto op = parsed.find("Op");
    if (op == parsed.end() || !op->is_string()) {
      reply(ErrorLine("malformed request: missing \"Op\""));
      return;
    }
    if (*op == "status") {
      reply(ToJsonLine(StatusJson()));
    } else if (*op == "leader-set") {
      LeaderSet(parsed, std::move(reply));
    } else if (*op == "resign") {
      Resign(parsed, std::move(reply));
    } else {
      reply(ErrorLine("unknown op " + op->dump() + " (status, leader-set, resign)"));
    }
  }

  void LeaderSet(const nlohmann::json& request, Reply reply) {
    const auto given = request.find("Settings");
    if (given == request.end() || !given->is_object()) {
      reply(ErrorLine("malformed request: \"Settings\" must be an object of strings"));
      return;
    }
    if (given->empty()) {
      reply(ErrorLine("no settings given"));
      return;
    }
    if (given->size() > kMaxSettingsPerSet) {
      reply(ErrorLine("too many settings in one leader-set: " + std::to_string(given->size()) +
                      " (at most " + std::to_string(kMaxSettingsPerSet) + ")"));
      return;
    }
    Settings settings;
    for (const auto& [key, value] : given->items()) {
      if (!value.is_string()) {
        reply(ErrorLine("malformed request: the value of \"" + key + "\" is not a string"));
        return;
      }
      if (key.empty()) {
        reply(ErrorLine("a setting's key must not be empty"));
        return;
      }
      settings[key] = value.get<std::string>();
    }
    candidate_.SetSettings(std::move(settings), [reply = std::move(reply)](Status status) {
      reply(status.ok() ? ToJsonLine({{"Ok", true}}) : ErrorLine(std::string(status.message())));
    });
  }

  void Resign(const nlohmann::json& request, Reply reply) {
    std::optional<std::string> to;
    const auto given = request.find("To");
    if (given != request.end() && !given->is_null()) {
      if (!given->is_string() || given->get<std::string>().empty() ||
          given->get<std::string>().find('/') != std::string::npos) {
        reply(ErrorLine("malformed request: \"To\" must be a candidate name"));
        return;
      }
      to = given->get<std::string>();
    }
    const bool plain = !to.has_value();
    candidate_.Resign(to, [this, plain, reply = std::move(reply)](Status status) mutable {
      if (!status.ok()) {
        reply(ErrorLine(std::string(status.message())));
      } else if (plain) {
        ReplyWithNextLeader(std::move(reply));
      } else {
        reply(ToJsonLine({{"Ok", true}}));
      }
    });
  }

  // After a plain resign: who holds the key now. With the fair queue the
  // release handed it to the next in line in the same raft entry, so the
  // read right after it names them ("NextLeader": their candidate name, or
  // the session id without a registration; "NextSession"). Nobody, or a read
  // that fails: just {"Ok":true}.
  void ReplyWithNextLeader(Reply reply) {
    const std::string leader_key = candidate_.LeaderKey();
    const std::string prefix =
        config_.setup.election.prefix + config_.setup.election.name + "/candidates/";
    auto shared = std::make_shared<Reply>(std::move(reply));
    net::HttpCall look{"GET", "/v1/kv/" + net::EscapeKeyPath(leader_key), "", 5'000, {}};
    reader_.Request(std::move(look), [this, prefix, shared](Result<net::ClientResponse> got) {
      std::string next;
      if (got.ok() && got->status == 200) {
        auto pairs = client::ParseKvPairs(got->body);
        if (pairs.ok() && !pairs->empty()) next = pairs->front().session;
      }
      if (next.empty() || next == candidate_.session_id()) {
        (*shared)(ToJsonLine({{"Ok", true}}));
        return;
      }
      net::HttpCall list{"GET", "/v1/kv/" + net::EscapeKeyPath(prefix) + "?recurse", "", 5'000, {}};
      reader_.Request(std::move(list), [prefix, next, shared](Result<net::ClientResponse> listed) {
        std::vector<client::KvPair> registrations;
        if (listed.ok() && listed->status == 200) {
          auto pairs = client::ParseKvPairs(listed->body);
          if (pairs.ok()) registrations = std::move(*pairs);
        }
        client::QueueWaiter holder;
        holder.session = next;
        auto line = client::LineOfSuccession({holder}, registrations, prefix);
        const std::string name = line.front().candidate.empty() ? next : line.front().candidate;
        (*shared)(ToJsonLine({{"Ok", true}, {"NextLeader", name}, {"NextSession", next}}));
      });
    });
  }

  // ---- the probe ---------------------------------------------------------------

  static std::string HttpAnswer(int status, const char* reason, const std::string& content_type,
                                const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) + " " + reason +
           "\r\nContent-Type: " + content_type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
  }

  void HandleProbe(const OneShotRequest& request, Reply reply) {
    if (request.too_large) {
      reply(
          HttpAnswer(431, "Request Header Fields Too Large", "text/plain", "request too large\n"));
      return;
    }
    const std::size_t line_end = request.text.find("\r\n");
    const std::string line = request.text.substr(0, line_end);
    const std::size_t sp1 = line.find(' ');
    const std::size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos) {
      reply(HttpAnswer(400, "Bad Request", "text/plain", "malformed request line\n"));
      return;
    }
    const std::string method = line.substr(0, sp1);
    std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    if (method != "GET" && method != "HEAD") {
      reply(HttpAnswer(405, "Method Not Allowed", "text/plain", "method not allowed\n"));
      return;
    }
    std::string answer;
    if (path == "/leader" || path == "/") {
      answer = candidate_.IsLeader()
                   ? HttpAnswer(200, "OK", "text/plain", "leader\n")
                   : HttpAnswer(503, "Service Unavailable", "text/plain", "not the leader\n");
    } else if (path == "/status") {
      answer = HttpAnswer(200, "OK", "application/json", ToJsonLine(StatusJson()));
    } else {
      answer = HttpAnswer(404, "Not Found", "text/plain", "not found (try /leader or /status)\n");
    }
    if (method == "HEAD") answer = answer.substr(0, answer.find("\r\n\r\n") + 4);
    reply(std::move(answer));
  }

  // ---- stop --------------------------------------------------------------------

  void Stop() {
    if (stopping_) return;
    stopping_ = true;
    Note("stopping");
    socket_server_.reset();
    probe_server_.reset();
    stop_timer_.expires_after(std::chrono::milliseconds(kStopTimeoutMs));
    stop_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      Note("timed out waiting for the hooks; exiting");
      io_.stop();
    });
    candidate_.Stop([this] {
      stopped_ = true;
      MaybeExit();
    });
  }

  void MaybeExit() {
    if (!stopped_ || hook_child_.running() || !hooks_.empty()) return;
    stop_timer_.cancel();
    signals_.cancel();
    io_.stop();
  }

  asio::io_context& io_;
  ElectConfig config_;
  client::Candidate candidate_;
  AsyncChild hook_child_;
  AsyncChild health_child_;
  std::deque<Hook> hooks_;
  std::optional<OneShotServer<LocalProtocol>> socket_server_;
  std::optional<OneShotServer<asio::ip::tcp>> probe_server_;
  asio::steady_timer stop_timer_;
  asio::signal_set signals_;
  bool bound_ = false;  // the socket path is ours to remove
  bool stopping_ = false;
  bool stopped_ = false;
  // Resign's look at who leads next. Last: destroyed first, so that its
  // cancelled callbacks never reach a socket server already gone.
  net::HttpClient reader_;
};

}  // namespace

int ElectCommand(const Args& args) {
  Args rest = args;
  std::string name;
  TakeElectionName(&rest, &name);
  ElectConfig config;
  CandidateFlags candidate;
  std::string health_interval = "10s", resign_backoff = "2s";
  Flags flags("elect");
  candidate.Register(&flags);
  flags.String("socket", &config.socket_path,
               "the local socket to serve (default $XDG_RUNTIME_DIR/tenure/NAME.sock or "
               "/tmp/tenure-UID/NAME.sock)");
  flags.String("probe-addr", &config.probe_addr,
               "IP:PORT of an HTTP probe: GET /leader is 200 only while leading");
  flags.String("on-elected", &config.hooks.elected, "hook run when leadership starts");
  flags.String("on-deposed", &config.hooks.deposed, "hook run when leadership ends");
  flags.String("on-settings-changed", &config.hooks.settings_changed,
               "hook run on a follower when the leader settings change");
  flags.String("health-check", &config.health_check,
               "command run every -health-interval; while it fails the agent steps down");
  flags.String("health-interval", &health_interval,
               "interval (and time limit) of the health check");
  flags.String("resign-backoff", &resign_backoff, "rest after a resign before campaigning again");
  if (auto code = ParseFlags(&flags, rest, kElectUsage, 2)) return *code;
  if (!FinishElectionName("tenure elect", flags, kElectUsage, &name)) return 2;
  if (!candidate.Resolve("tenure elect", name, &config.setup)) return 2;
  auto parse_duration = [](const std::string& text, const char* flag, DurationMs* target) {
    auto parsed = ParseGoDuration(text);
    if (!parsed.ok() || *parsed <= 0) {
      PrintErr(std::string("tenure elect: invalid ") + flag + " " + text);
      return false;
    }
    *target = *parsed / kNsPerMs;
    return true;
  };
  if (!parse_duration(health_interval, "-health-interval", &config.health_interval_ms) ||
      !parse_duration(resign_backoff, "-resign-backoff", &config.resign_backoff_ms)) {
    return 2;
  }
  if (config.socket_path.empty()) config.socket_path = DefaultAgentSocket(name);

  asio::io_context io;
  Agent agent(io, std::move(config));
  if (Status started = agent.Start(); !started.ok()) {
    PrintErr("tenure elect: " + std::string(started.message()));
    return 1;
  }
  io.run();
  return 0;
}

}  // namespace tenure::cli
