// Results of benchmark runs and their presentation: percentiles, medians over
// runs, machine facts, and the markdown table (or JSON with --json).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace tenure::bench {

// One number a run produced, e.g. {"puts_per_s", "puts/s", 41234.5, 0}.
struct Metric {
  std::string key;    // machine name, for --json
  std::string label;  // table text, with its unit
  double value = 0;
  int decimals = 0;  // for the table
};

struct RunResult {
  std::vector<Metric> metrics;
  std::string error;  // empty: the run succeeded
  std::string note;   // a detail worth printing (e.g. how parking was confirmed)

  void Add(std::string key, std::string label, double value, int decimals) {
    metrics.push_back({std::move(key), std::move(label), value, decimals});
  }
};

struct WorkloadResult {
  std::string name;   // e.g. kv_put_c64
  std::string title;  // e.g. "KV put, 64 clients"
  std::vector<RunResult> runs;
};

// Nearest-rank percentile (q in [0, 1]) of unsorted samples; sorts in place.
// 0 for no samples.
double Percentile(std::vector<std::int64_t>* samples, double q);
// Percentile of already sorted samples.
double SortedPercentile(const std::vector<std::int64_t>& sorted, double q);
// Median of values (the mean of the two middle ones for an even count).
double Median(std::vector<double> values);

// "key: value" facts: date, nproc, kernel, CPU model, memory, OS, the data
// dir's filesystem, the tenure binary.
std::vector<std::pair<std::string, std::string>> MachineFacts(const std::string& data_parent,
                                                              const std::string& tenure_binary);

// A line of the headline table: one metric's median next to its target.
struct Headline {
  std::string workload;  // WorkloadResult::name
  std::string key;       // Metric::key
  std::string label;
  std::string target;  // free text, e.g. "> 30,000 (etcd 3.4: 8,450)"
};

// Latency of 4 KiB O_DIRECT|O_DSYNC writes in `dir` (what a raft append
// costs), e.g. "p50 212 us, p90 260 us (200 writes)": durable-write numbers
// are worthless without it, since this VM's disk latency varies 10x with
// what else runs on the host.
std::string DiskSyncWriteLatency(const std::string& dir);

struct Report {
  std::string command;  // the exact command line, shell-quoted
  std::vector<std::pair<std::string, std::string>> machine;
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<WorkloadResult> workloads;
  std::vector<Headline> headlines;
  std::vector<std::string> notes;  // how each workload is measured
};

void PrintMarkdown(std::FILE* out, const Report& report);
void PrintJson(std::FILE* out, const Report& report);

// Quotes argv for a POSIX shell so the printed command can be pasted back.
std::string ShellQuote(int argc, char** argv);

}  // namespace tenure::bench
