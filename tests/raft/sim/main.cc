// tenure_sim: runs the seeded simulation (simulation.h) for one or many
// seeds, for the soak tier (scripts/soak-sim) and for reproducing a seed.
//
//   tenure_sim --seed N [--seeds K] [--steps S] [--nodes 3|5] [--multiplier M]
//              [--drift-ppm P] [--pause-max-ms D] [--acl-percent N] [--queue-percent N]
//              [--day-jumps] [--restore-percent N] [--lease-percent N] [--duration-s T]
//              [--trace] [-v]
//
// Runs seeds N, N+1, ... (K of them, or until T seconds of wall time have
// passed). A failing seed prints
//   FAILED seed=N (reproduce: <this program> --seed N --steps S ...)
// with the violation and the history before it, and the exit status is 1.
// The wall clock only bounds how many seeds run; no run ever reads it.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"
#include "simulation.h"

namespace {

[[noreturn]] void Usage(const char* message) {
  std::fprintf(stderr,
               "tenure_sim: %s\nusage: tenure_sim --seed N [--seeds K] [--steps S] "
               "[--nodes 3|5] [--multiplier M] [--drift-ppm P] [--pause-max-ms D] [--acl-percent "
               "N] [--queue-percent N] [--day-jumps] [--restore-percent N] [--lease-percent N] "
               "[--duration-s T] [--trace] [-v]\n",
               message);
  std::exit(2);
}

// What a crash (an assertion, or libraft itself) prints: written before
// each seed runs, since a signal handler may not format anything.
char crash_line[512];

extern "C" void OnFatalSignal(int signal) {
  ssize_t ignored = ::write(STDOUT_FILENO, crash_line, std::strlen(crash_line));
  (void)ignored;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

std::int64_t Number(int argc, char** argv, int* i) {
  if (*i + 1 >= argc) Usage("a flag is missing its value");
  char* end = nullptr;
  long long value = std::strtoll(argv[++*i], &end, 10);
  if (*end != '\0') Usage("flag values are integers");
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  tenure::sim::SimConfig config;
  std::int64_t seeds = 1;
  std::int64_t duration_s = 0;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--seed") {
      config.seed = static_cast<std::uint64_t>(Number(argc, argv, &i));
    } else if (flag == "--seeds") {
      seeds = Number(argc, argv, &i);
    } else if (flag == "--steps") {
      config.steps = static_cast<std::uint64_t>(Number(argc, argv, &i));
    } else if (flag == "--nodes") {
      config.nodes = static_cast<unsigned>(Number(argc, argv, &i));
      if (config.nodes != 3 && config.nodes != 5) Usage("--nodes is 3 or 5");
    } else if (flag == "--multiplier") {
      config.ttl_multiplier = static_cast<int>(Number(argc, argv, &i));
      if (config.ttl_multiplier < 1 || config.ttl_multiplier > 10) Usage("--multiplier is 1..10");
    } else if (flag == "--drift-ppm") {
      config.drift_ppm_max = Number(argc, argv, &i);
      if (config.drift_ppm_max < 0 || config.drift_ppm_max >= 500'000) Usage("bad --drift-ppm");
    } else if (flag == "--pause-max-ms") {
      config.pause_max_ms = Number(argc, argv, &i);
      if (config.pause_max_ms < 200) Usage("--pause-max-ms is at least 200");
    } else if (flag == "--acl-percent") {
      config.acl_percent = static_cast<unsigned>(Number(argc, argv, &i));
      if (config.acl_percent > 50) Usage("--acl-percent is 0..50");
    } else if (flag == "--queue-percent") {
      config.queue_percent = static_cast<unsigned>(Number(argc, argv, &i));
      if (config.queue_percent > 50) Usage("--queue-percent is 0..50");
    } else if (flag == "--day-jumps") {
      config.day_jumps = true;
    } else if (flag == "--restore-percent") {
      config.restore_percent = static_cast<unsigned>(Number(argc, argv, &i));
      if (config.restore_percent > 50) Usage("--restore-percent is 0..50");
    } else if (flag == "--lease-percent") {
      config.lease_percent = static_cast<unsigned>(Number(argc, argv, &i));
      if (config.lease_percent > 100) Usage("--lease-percent is 0..100");
    } else if (flag == "--duration-s") {
      duration_s = Number(argc, argv, &i);
    } else if (flag == "--trace") {
      config.trace = stdout;
    } else if (flag == "-v" || flag == "--verbose") {
      verbose = true;
    } else {
      Usage(("unknown flag " + flag).c_str());
    }
  }
  // A lease waits TTL x (1 + rho): a clock faster than rho would end it
  // early, which is outside what the product promises, not a bug.
  if (config.lease_percent > 0 && config.drift_ppm_max > 10'000) {
    Usage("--lease-percent needs --drift-ppm at most 10000 (rho = 1%)");
  }
  // Every member logs every lock transition it applies (docs/logs.md): a
  // soak applies millions. Warnings and errors only, unless --verbose.
  if (!verbose) tenure::log::Configure({.level = tenure::log::Level::kWarn});
  auto started = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    return duration_s > 0 &&
           std::chrono::steady_clock::now() - started >= std::chrono::seconds(duration_s);
  };
  for (int signal : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(signal, OnFatalSignal);
  std::uint64_t first = config.seed;
  std::uint64_t ran = 0;
  std::uint64_t failed = 0;
  for (std::uint64_t seed = first;
       duration_s > 0 ? !out_of_time() : seed < first + static_cast<std::uint64_t>(seeds); ++seed) {
    config.seed = seed;
    std::snprintf(crash_line, sizeof crash_line, "\nFAILED seed=%llu (reproduce: %s): crashed\n",
                  static_cast<unsigned long long>(seed),
                  tenure::sim::ReproduceCommand(config, argv[0]).c_str());
    tenure::sim::SimResult result = tenure::sim::RunSimulation(config);
    ++ran;
    if (verbose || !result.ok) std::printf("%s\n", result.summary.c_str());
    if (!result.ok) {
      ++failed;
      std::printf("FAILED seed=%llu (reproduce: %s)\n  %s\n--- last events ---\n%s\n",
                  static_cast<unsigned long long>(seed),
                  tenure::sim::ReproduceCommand(config, argv[0]).c_str(), result.failure.c_str(),
                  result.history.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("tenure_sim: %llu seeds from %llu, %llu failed\n",
              static_cast<unsigned long long>(ran), static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(failed));
  return failed == 0 ? 0 : 1;
}
