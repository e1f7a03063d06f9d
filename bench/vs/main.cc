// tenure_vs: see driver.h. Usage (bench/vs_etcd.py is the normal caller):
//   tenure_vs --system tenure|etcd|zk --addr IP:PORT --workload NAME [options]
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "driver.h"
#include "http_conn.h"
#include "tls/context.h"

namespace tenure::vs {
namespace {

[[noreturn]] void Die(const std::string& message) {
  fmt::print(stderr, "tenure_vs: {}\n", message);
  std::fflush(stderr);
  _exit(2);
}

long ParseLong(const std::string& flag, const std::string& text, long min) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min)
    Die(fmt::format("bad value for {}: '{}'", flag, text));
  return v;
}

double ParseDouble(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0))
    Die(fmt::format("bad value for {}: '{}'", flag, text));
  return v;
}

Options ParseFlags(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + arg);
      return argv[++i];
    };
    if (arg == "--system") {
      o.system = next();
    } else if (arg == "--workload") {
      o.workload = next();
    } else if (arg == "--addr") {
      o.addr = next();
    } else if (arg == "--clients") {
      o.clients = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--seconds") {
      o.seconds = ParseDouble(arg, next());
    } else if (arg == "--max-ops") {
      o.max_ops = static_cast<std::uint64_t>(ParseLong(arg, next(), 1));
    } else if (arg == "--keys") {
      o.keys = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--value-bytes") {
      o.value_bytes = static_cast<int>(ParseLong(arg, next(), 0));
    } else if (arg == "--sessions") {
      o.sessions = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--watchers") {
      o.watchers = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--rounds") {
      o.rounds = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--count") {
      o.count = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--conns") {
      o.conns = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--ttl") {
      o.ttl_s = static_cast<int>(ParseLong(arg, next(), 1));
    } else if (arg == "--key") {
      o.key = next();
    } else if (arg == "--server-pid") {
      o.server_pid = static_cast<pid_t>(ParseLong(arg, next(), 1));
    } else if (arg == "--ca-file") {
      o.ca_file = next();
    } else if (arg == "--cert-file") {
      o.cert_file = next();
    } else if (arg == "--key-file") {
      o.key_file = next();
    } else if (arg == "--server-name") {
      o.server_name = next();
    } else if (arg == "--client") {
      o.client = next();
      if (o.client != "grpc" && o.client != "h2")
        Die("--client is grpc or h2, got '" + o.client + "'");
    } else if (arg == "--mode") {
      o.mode = next();
      if (o.mode != "consul" && o.mode != "fair")
        Die("--mode is consul or fair, got '" + o.mode + "'");
    } else {
      Die("unknown argument: " + arg +
          "\nusage: tenure_vs --system tenure|etcd|zk --addr IP:PORT --workload NAME "
          "[--clients N --seconds S --max-ops N --keys N --value-bytes N --sessions N "
          "--watchers N --rounds N --count N --conns N --ttl S --key K --server-pid PID "
          "--ca-file F [--cert-file F --key-file F] [--server-name N] [--mode consul|fair] "
          "[--client grpc|h2]]");
    }
  }
  if (o.addr.empty() || o.system.empty() || o.workload.empty()) {
    Die("--system, --addr and --workload are required");
  }
  if (o.ca_file.empty() && (!o.cert_file.empty() || !o.key_file.empty())) {
    Die("--cert-file and --key-file need --ca-file (TLS)");
  }
  if (o.cert_file.empty() != o.key_file.empty()) {
    Die("--cert-file and --key-file go together");
  }
  if (o.mode == "fair" && (o.system != "tenure" || o.workload != "lock_hot")) {
    Die("--mode fair is tenure's queued acquire: only with --system tenure --workload lock_hot");
  }
  return o;
}

// tenure over HTTPS: every HttpConn from now on.
void SetUpTenureTls(const Options& o) {
  if (o.ca_file.empty()) return;
  auto context = tls::Context::ForClient(
      {.ca_file = o.ca_file, .cert_file = o.cert_file, .key_file = o.key_file});
  if (!context.ok()) Die("TLS: " + std::string(context.status().message()));
  bench::HttpConn::SetTls(*context, o.server_name);
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Thousands of watchers need thousands of descriptors.
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace
}  // namespace tenure::vs

int main(int argc, char** argv) {
  using namespace tenure::vs;
  Options o = ParseFlags(argc, argv);
  RaiseFileLimit();
  Result r;
  if (o.system == "tenure") {
    SetUpTenureTls(o);
    r = RunTenure(o);
  } else if (o.system == "etcd") {
    r = o.client == "h2" ? RunEtcdLight(o) : RunEtcd(o);
  } else if (o.system == "zk") {
    if (!o.ca_file.empty()) Die("ZooKeeper over TLS is not implemented here");
    r = RunZk(o);
  } else {
    Die("unknown --system " + o.system);
  }
  std::string json = "{\"system\":" + JsonString(o.system) +
                     ",\"workload\":" + JsonString(o.workload) + ",\"metrics\":{";
  for (std::size_t i = 0; i < r.metrics.size(); ++i) {
    double v = r.metrics[i].second;
    json += fmt::format("{}{}:{}", i ? "," : "", JsonString(r.metrics[i].first),
                        std::isfinite(v) ? fmt::format("{}", v) : "null");
  }
  json += "},\"error\":" + JsonString(r.error) + ",\"note\":" + JsonString(r.note) +
          (r.unsupported ? ",\"unsupported\":true" : "") + "}\n";
  std::fputs(json.c_str(), stdout);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(r.unsupported ? 3 : r.error.empty() ? 0 : 1);
}
