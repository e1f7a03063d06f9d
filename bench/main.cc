// tenure_bench: the single-node benchmark (docs/benchmarks.md). Starts
// `tenure server` itself (a fresh one per workload per run), drives it from
// one asio thread with many keep-alive connections, and prints per-run
// numbers and the median as a markdown table (or JSON with --json), with the
// command line and machine facts. Not a test: no thresholds. It exits 1 if
// any run failed (an error or zero throughput), which is what the
// bench.smoke test checks.
//
//   tenure_bench --tenure build/src/tenure [--runs 3] [--seconds 5] ...
//   tenure_bench --tenure build/src/tenure --smoke      (tiny, < 20 s)
//   tenure_bench --addr 127.0.0.1:8501 --only kv_put_c1  (a server already
//       running, e.g. a cluster's leader: bench/cluster_throughput.py)
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "http_conn.h"
#include "loop.h"
#include "report.h"
#include "server_process.h"
#include "workloads.h"

namespace tenure::bench {
namespace {

struct Flags {
  std::string tenure;
  std::string addr;  // --addr: drive this running server instead of starting one
  std::string data_parent;
  std::string token_file;  // --token-file: ACL tokens, one per line
  int runs = 3;
  bool smoke = false;
  bool json = false;
  std::set<std::string> only;
  Settings settings;
};

void Usage(std::FILE* out) {
  Settings d;
  fmt::print(
      out,
      "usage: tenure_bench --tenure PATH [options]\n"
      "       tenure_bench --addr IP:PORT [options]\n"
      "  --tenure PATH        the tenure binary to start (required unless --addr)\n"
      "  --addr IP:PORT       drive a server that is already running (e.g. a cluster's\n"
      "                       leader) instead of starting one per run: every run uses it\n"
      "                       as it is (no fresh state), it is never stopped, and its\n"
      "                       CPU and RSS are not sampled (the RSS workload fails)\n"
      "  --runs R             runs per workload, each on a fresh server (default 3)\n"
      "  --seconds S          time limit of each timed phase (default {})\n"
      "  --clients N          the many-clients count (default {})\n"
      "  --max-ops N          operation bound of each timed phase (default {})\n"
      "  --keys N             KV put key names (default {})\n"
      "  --value-bytes N      KV put value size (default {})\n"
      "  --renew-sessions N   sessions the renewal clients cycle through (default {})\n"
      "  --watchers N         parked blocking queries (default {})\n"
      "  --rounds N           wake rounds (default {})\n"
      "  --rss-sessions N     idle sessions for the RSS number (default {})\n"
      "  --rss-seconds S      time limit for creating them (default {})\n"
      "  --only a,b           run only these workloads (names as in --json)\n"
      "  --token-file F       ACL tokens, one per line: each connection sends the next\n"
      "                       one as X-Consul-Token (bench/acl_ab.py)\n"
      "  --data-dir-parent D  where temporary data dirs go (default $TMPDIR or /tmp)\n"
      "  --json               machine-readable output instead of markdown\n"
      "  --smoke              tiny counts and short phases (< 20 s): proves the harness works\n"
      "  --list               list the workload names and exit\n",
      d.seconds, d.clients, d.max_ops, d.keys, d.value_bytes, d.renew_sessions, d.watchers,
      d.rounds, d.rss_sessions, d.rss_seconds);
}

[[noreturn]] void Die(const std::string& message) {
  fmt::print(stderr, "tenure_bench: {}\n", message);
  std::exit(2);
}

long ParseLong(const std::string& flag, const std::string& text, long min) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min) {
    Die(fmt::format("bad value for {}: '{}'", flag, text));
  }
  return v;
}

double ParseDouble(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0)) {
    Die(fmt::format("bad value for {}: '{}'", flag, text));
  }
  return v;
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  // --smoke first, so explicit flags after it still override its values.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) f.smoke = true;
  }
  if (f.smoke) {
    f.runs = 1;
    f.settings.seconds = 0.5;
    f.settings.clients = 16;
    f.settings.renew_sessions = 64;
    f.settings.watchers = 50;
    f.settings.rounds = 3;
    f.settings.rss_sessions = 2000;
    f.settings.rss_seconds = 10;
  }
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (std::size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (!value.empty()) return value;
      if (i + 1 >= argc) Die("missing value for " + arg);
      return argv[++i];
    };
    Settings& s = f.settings;
    if (arg == "--help" || arg == "-h") {
      Usage(stdout);
      std::exit(0);
    } else if (arg == "--smoke") {
    } else if (arg == "--json") {
      f.json = true;
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "--tenure") {
      f.tenure = next();
    } else if (arg == "--addr") {
      f.addr = next();
    } else if (arg == "--data-dir-parent") {
      f.data_parent = next();
    } else if (arg == "--runs") {
      f.runs = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--seconds") {
      s.seconds = ParseDouble(arg, next());
    } else if (arg == "--clients") {
      s.clients = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--max-ops") {
      s.max_ops = static_cast<std::uint64_t>(ParseLong(arg, next(), 1));
    } else if (arg == "--keys") {
      s.keys = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--value-bytes") {
      s.value_bytes = static_cast<int>(ParseLong(arg, next(), 0));
    } else if (arg == "--renew-sessions") {
      s.renew_sessions = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--watchers") {
      s.watchers = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--rounds") {
      s.rounds = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--rss-sessions") {
      s.rss_sessions = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--rss-seconds") {
      s.rss_seconds = ParseDouble(arg, next());
    } else if (arg == "--token-file") {
      f.token_file = next();
    } else if (arg == "--only") {
      std::stringstream names(next());
      std::string name;
      while (std::getline(names, name, ',')) {
        if (!name.empty()) f.only.insert(name);
      }
    } else {
      Usage(stderr);
      Die("unknown argument: " + arg);
    }
  }
  if (list) {
    for (const Workload& w : AllWorkloads(f.settings)) fmt::print("{}\t{}\n", w.name, w.title);
    std::exit(0);
  }
  if (!f.addr.empty() && !f.tenure.empty()) Die("--addr and --tenure exclude each other");
  if (!f.addr.empty()) {
    std::size_t colon = f.addr.rfind(':');
    boost::system::error_code ec;
    asio::ip::make_address(f.addr.substr(0, colon == std::string::npos ? 0 : colon), ec);
    if (ec || colon + 1 >= f.addr.size()) Die("--addr: expected IP:PORT, got '" + f.addr + "'");
  }
  if (f.tenure.empty() && f.addr.empty()) {
    Usage(stderr);
    Die("--tenure (or --addr) is required");
  }
  if (!f.tenure.empty() && access(f.tenure.c_str(), X_OK) != 0) {
    Die("not an executable: " + f.tenure);
  }
  if (f.data_parent.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    f.data_parent = tmp && *tmp ? tmp : "/tmp";
  }
  return f;
}

// 1,000 watchers plus the other connections exceed the usual soft limit of
// 1,024 descriptors.
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

std::string LoadAverage() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return "unknown";
  double a = 0, b = 0, c = 0;
  int n = std::fscanf(f, "%lf %lf %lf", &a, &b, &c);
  std::fclose(f);
  return n == 3 ? fmt::format("{:.2f} {:.2f} {:.2f}", a, b, c) : "unknown";
}

std::string Summary(const RunResult& r) {
  std::string text;
  for (std::size_t i = 0; i < r.metrics.size() && i < 4; ++i) {
    text += fmt::format("{}{}={:.{}f}", i ? " " : "", r.metrics[i].key, r.metrics[i].value,
                        r.metrics[i].decimals);
  }
  if (!r.error.empty()) text += " ERROR: " + r.error;
  return text;
}

int Main(int argc, char** argv) {
  Flags flags = ParseFlags(argc, argv);
  RaiseFileLimit();
  if (!flags.token_file.empty()) {
    std::ifstream in(flags.token_file);
    if (!in) Die("--token-file: cannot read " + flags.token_file);
    std::vector<std::string> tokens;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) tokens.push_back(line);
    }
    if (tokens.empty()) Die("--token-file: no tokens in " + flags.token_file);
    HttpConn::SetTokens(std::move(tokens));
  }
  const Settings& s = flags.settings;

  std::vector<Workload> workloads = AllWorkloads(s);
  if (!flags.only.empty()) {
    std::vector<Workload> chosen;
    for (Workload& w : workloads) {
      if (flags.only.count(w.name)) chosen.push_back(std::move(w));
    }
    if (chosen.size() != flags.only.size()) Die("--only names an unknown workload (see --list)");
    workloads = std::move(chosen);
  }

  Report report;
  report.command = ShellQuote(argc, argv);
  report.machine = MachineFacts(flags.data_parent, flags.tenure);
  if (!flags.addr.empty()) {
    for (auto& [key, value] : report.machine) {
      if (key == "tenure binary")
        value = "not started by the benchmark (--addr " + flags.addr + ")";
    }
  }
  report.machine.push_back({"load average at start (1/5/15 min)", LoadAverage()});
  report.machine.push_back(
      {"disk sync-write latency at start", DiskSyncWriteLatency(flags.data_parent)});
  report.settings = {
      {"runs per workload", std::to_string(flags.runs)},
      {"timed phase",
       fmt::format("{} s or {} operations, whichever comes first", s.seconds, s.max_ops)},
      {"many clients", std::to_string(s.clients)},
      {"KV", fmt::format("{}-byte values over {} keys", s.value_bytes, s.keys)},
      {"renewals", fmt::format("{} sessions", s.renew_sessions)},
      {"wake", fmt::format("{} watchers, {} rounds", s.watchers, s.rounds)},
      {"RSS", fmt::format("{} idle sessions (time limit {} s)", s.rss_sessions, s.rss_seconds)},
      {"mode", flags.smoke ? "smoke (tiny counts: numbers are not meaningful)" : "full"},
  };
  if (!flags.addr.empty()) {
    report.settings.push_back(
        {"server", "already running at " + flags.addr + " (--addr), the same one for every run"});
  }
  report.notes = WorkloadNotes(s);
  if (!flags.addr.empty()) {  // the first note describes the fresh server per run
    report.notes.front() =
        "Every run uses the server already running at " + flags.addr +
        " (--addr): it is not restarted between runs, so state (raft log, keys) carries over; "
        "it must name a leader and commit a probe write first.";
  }
  const std::string many = std::to_string(s.clients);
  report.headlines = {
      {"kv_put_c1", "puts_per_s", "durable KV puts/s, 1 client", "-"},
      {"kv_put_c" + many, "puts_per_s", "durable KV puts/s, " + many + " clients",
       "> 30,000 at 64 clients (etcd side by side: docs/benchmarks-vs-etcd.md)"},
      {"kv_put_c" + many, "p99_ms", "KV put p99 ms, " + many + " clients", "-"},
      {"lock_cycle_c1", "cycles_per_s", "acquire+release cycles/s, 1 client", "-"},
      {"lock_cycle_c" + many, "cycles_per_s", "acquire+release cycles/s, " + many + " clients",
       "-"},
      {"session_pair_c" + many, "pairs_per_s", "session create+destroy pairs/s", "-"},
      {"renew_c" + many, "renewals_per_s", "renewals/s", "> 100,000"},
      {"wake_w" + std::to_string(s.watchers), "wake_p50_ms",
       "wake p50 ms, " + std::to_string(s.watchers) + " watchers", "-"},
      {"wake_w" + std::to_string(s.watchers), "wake_p99_ms",
       "wake p99 ms, " + std::to_string(s.watchers) + " watchers", "< 5 ms"},
      {"wake_w" + std::to_string(s.watchers), "last_wake_median_ms",
       "last watcher woken ms (median round)", "-"},
      {"idle_rss_s" + std::to_string(s.rss_sessions), "bytes_per_session",
       "RSS bytes per idle session", "< 1,024"},
  };
  for (const Workload& w : workloads) report.workloads.push_back({w.name, w.title, {}});

  Loop loop;
  bool all_ok = true;
  // Runs are interleaved (run 1 of every workload, then run 2...) so slow
  // drift of the machine (page cache, other tenants of the VM) spreads over
  // all workloads instead of biasing one.
  for (int run = 1; run <= flags.runs; ++run) {
    for (std::size_t i = 0; i < workloads.size(); ++i) {
      const Workload& w = workloads[i];
      RunResult result;
      ServerProcess server(flags.tenure, flags.data_parent);
      std::string error;
      Clock::time_point start = Clock::now();
      if (!flags.addr.empty() ? !server.Attach(loop, flags.addr, &error)
                              : !server.Start(loop, &error)) {
        result.error = "server did not start: " + error;
      } else {
        result = w.run(loop, server, s);
        std::string exit;
        if (!server.Alive(&exit)) {
          result.error =
              exit + " during the workload" + (result.error.empty() ? "" : "; " + result.error);
        }
        if (!result.error.empty() && flags.addr.empty()) {
          result.error += "\n--- server log ---\n" + server.LogTail(1500);
        }
      }
      server.Stop();
      double took = std::chrono::duration<double>(Clock::now() - start).count();
      fmt::print(stderr, "[run {}/{}] {:<22} {:5.1f} s  {}\n", run, flags.runs, w.name, took,
                 Summary(result));
      if (!result.error.empty()) all_ok = false;
      report.workloads[i].runs.push_back(std::move(result));
    }
  }

  // Other processes competing for the two cores skew every number; record
  // how busy the machine was so a reader can tell.
  report.machine.push_back({"load average at end (1/5/15 min)", LoadAverage()});
  report.machine.push_back(
      {"disk sync-write latency at end", DiskSyncWriteLatency(flags.data_parent)});

  if (flags.json) {
    PrintJson(stdout, report);
  } else {
    PrintMarkdown(stdout, report);
  }
  std::fflush(stdout);
  if (!all_ok) fmt::print(stderr, "tenure_bench: some runs FAILED (see the run details)\n");
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace tenure::bench

int main(int argc, char** argv) { return tenure::bench::Main(argc, argv); }
