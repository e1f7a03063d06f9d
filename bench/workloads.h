// The benchmark's workloads (docs/benchmarks.md):
// durable KV puts, acquire+release cycles, session create+destroy pairs,
// renewals, blocking-query wake latency, and RSS per idle session. Each runs
// against a fresh server the caller started, and reports its numbers as a
// RunResult (no pass/fail thresholds: an error or zero throughput only).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loop.h"
#include "report.h"
#include "server_process.h"

namespace tenure::bench {

struct Settings {
  double seconds = 5;                 // time limit of each timed phase
  int clients = 64;                   // the "many clients" count
  std::uint64_t max_ops = 5'000'000;  // operation bound of each timed phase
  int keys = 1000;                    // KV puts spread over this many names
  int value_bytes = 100;              // KV put value size
  int renew_sessions = 1000;          // sessions the renewal clients cycle through
  int watchers = 1000;                // parked blocking queries on one key
  int rounds = 20;                    // wake rounds
  int rss_sessions = 100'000;         // idle sessions for the RSS measurement
  double rss_seconds = 300;           // time limit for creating them
};

struct Workload {
  std::string name;   // for --only and JSON, e.g. kv_put_c64
  std::string title;  // for the table
  std::function<RunResult(Loop&, ServerProcess&, const Settings&)> run;
};

std::vector<Workload> AllWorkloads(const Settings& settings);
// One line per workload: what exactly is measured (printed under the table).
std::vector<std::string> WorkloadNotes(const Settings& settings);

}  // namespace tenure::bench
