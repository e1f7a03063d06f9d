// Report: see report.h.
#include "report.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace tenure::bench {
namespace {

std::string FirstMatch(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      std::string value = line.substr(prefix.size());
      std::size_t start = value.find_first_not_of(" \t:=\"");
      if (start == std::string::npos) return "";
      value = value.substr(start);
      while (!value.empty() && (value.back() == '"' || value.back() == ' ')) value.pop_back();
      return value;
    }
  }
  return "";
}

// The filesystem holding `path`: the /proc/mounts entry with the longest
// mount point that is a prefix of the canonical path.
std::string FilesystemOf(const std::string& path) {
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  std::ifstream in("/proc/self/mounts");
  std::string device, mount, type, options, best_mount, best;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (!(fields >> device >> mount >> type >> options)) continue;
    bool prefix =
        canonical == mount ||
        (canonical.rfind(mount, 0) == 0 &&
         (mount == "/" || (canonical.size() > mount.size() && canonical[mount.size()] == '/')));
    if (prefix && mount.size() >= best_mount.size()) {
      best_mount = mount;
      best = fmt::format("{} ({} on {}, {})", type, device, mount, options);
    }
  }
  return fmt::format("{} -> {}", canonical, best.empty() ? "unknown" : best);
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return fmt::format("{}", v);
}

// Thousands separators make 123456.7 readable as 123,457 in the table.
std::string FormatNumber(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  std::string text = fmt::format("{:.{}f}", v, decimals);
  std::size_t dot = text.find('.');
  std::size_t int_end = dot == std::string::npos ? text.size() : dot;
  std::size_t int_start = (text[0] == '-') ? 1 : 0;
  std::string grouped;
  for (std::size_t i = int_start; i < int_end; ++i) {
    grouped += text[i];
    std::size_t left = int_end - i - 1;
    if (left > 0 && left % 3 == 0) grouped += ',';
  }
  return text.substr(0, int_start) + grouped + text.substr(int_end);
}

// The metric labels of a workload, in first-seen order across runs.
std::vector<std::pair<std::string, std::pair<std::string, int>>> MetricOrder(
    const WorkloadResult& workload) {
  std::vector<std::pair<std::string, std::pair<std::string, int>>> order;
  for (const RunResult& run : workload.runs) {
    for (const Metric& m : run.metrics) {
      bool seen =
          std::any_of(order.begin(), order.end(), [&](const auto& o) { return o.first == m.key; });
      if (!seen) order.push_back({m.key, {m.label, m.decimals}});
    }
  }
  return order;
}

const Metric* FindMetric(const RunResult& run, const std::string& key) {
  for (const Metric& m : run.metrics) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

double MedianOf(const WorkloadResult& workload, const std::string& key) {
  std::vector<double> values;
  for (const RunResult& run : workload.runs) {
    // A failed run's numbers are shown but not folded into the median.
    if (!run.error.empty()) continue;
    if (const Metric* m = FindMetric(run, key)) values.push_back(m->value);
  }
  return values.empty() ? NAN : Median(values);
}

}  // namespace

double SortedPercentile(const std::vector<std::int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  double rank = std::ceil(q * static_cast<double>(sorted.size()));
  std::size_t index = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return static_cast<double>(sorted[std::min(index, sorted.size() - 1)]);
}

double Percentile(std::vector<std::int64_t>* samples, double q) {
  std::sort(samples->begin(), samples->end());
  return SortedPercentile(*samples, q);
}

double Median(std::vector<double> values) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::vector<std::pair<std::string, std::string>> MachineFacts(const std::string& data_parent,
                                                              const std::string& tenure_binary) {
  std::vector<std::pair<std::string, std::string>> facts;
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  facts.push_back({"date", date});
  facts.push_back({"nproc", std::to_string(sysconf(_SC_NPROCESSORS_ONLN))});
  utsname uts{};
  uname(&uts);
  facts.push_back(
      {"kernel", fmt::format("{} {} {} {}", uts.sysname, uts.release, uts.version, uts.machine)});
  std::string cpu = FirstMatch("/proc/cpuinfo", "model name");
  facts.push_back({"cpu", cpu.empty() ? "unknown" : cpu});
  std::string mem = FirstMatch("/proc/meminfo", "MemTotal");
  facts.push_back({"memory", mem});
  std::string os = FirstMatch("/etc/os-release", "PRETTY_NAME");
  std::string debian = FirstMatch("/etc/debian_version", "");
  facts.push_back({"os", debian.empty() ? os : fmt::format("{} ({})", os, debian)});
  facts.push_back({"data dir filesystem", FilesystemOf(data_parent)});
  std::error_code ec;
  // Relative to the working directory (the checkout) when inside it: the
  // report lands in docs/, which must not name this machine's paths.
  std::filesystem::path canonical = std::filesystem::weakly_canonical(tenure_binary, ec);
  std::filesystem::path relative = canonical.lexically_relative(std::filesystem::current_path(ec));
  std::string binary =
      !relative.empty() && *relative.begin() != ".." ? relative.string() : canonical.string();
  auto size = std::filesystem::file_size(tenure_binary, ec);
  facts.push_back({"tenure binary", ec ? binary : fmt::format("{} ({} bytes)", binary, size)});
  facts.push_back({"bench compiler", "g++ " __VERSION__});
  return facts;
}

std::string DiskSyncWriteLatency(const std::string& dir) {
  std::string path = dir + "/tenure-bench-disk-probe.XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) return fmt::format("unknown ({})", std::strerror(errno));
  close(fd);
  fd = open(path.c_str(), O_WRONLY | O_DIRECT | O_DSYNC);
  unlink(path.c_str());
  if (fd < 0) return fmt::format("unknown (O_DIRECT: {})", std::strerror(errno));
  void* block = nullptr;
  if (posix_memalign(&block, 4096, 4096) != 0) {
    close(fd);
    return "unknown (no memory)";
  }
  std::memset(block, 'x', 4096);
  // At most 200 writes or 1 s: enough for a median, short on a slow disk.
  std::vector<std::int64_t> ns;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200 && std::chrono::steady_clock::now() - start < std::chrono::seconds(1);
       ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (pwrite(fd, block, 4096, static_cast<off_t>(i % 16) * 4096) != 4096) break;
    ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  }
  std::free(block);
  close(fd);
  if (ns.empty()) return "unknown (write failed)";
  std::size_t n = ns.size();
  double p50 = Percentile(&ns, 0.5), p90 = SortedPercentile(ns, 0.9);
  return fmt::format("p50 {:.0f} us, p90 {:.0f} us ({} writes of 4 KiB, O_DIRECT|O_DSYNC)",
                     p50 / 1e3, p90 / 1e3, n);
}

void PrintMarkdown(std::FILE* out, const Report& report) {
  std::size_t runs = 0;
  for (const WorkloadResult& w : report.workloads) runs = std::max(runs, w.runs.size());

  fmt::print(out, "# tenure benchmark\n\nCommand:\n\n```\n{}\n```\n\nMachine:\n\n", report.command);
  for (const auto& [key, value] : report.machine) fmt::print(out, "- {}: {}\n", key, value);
  fmt::print(out, "\nSettings:\n\n");
  for (const auto& [key, value] : report.settings) fmt::print(out, "- {}: {}\n", key, value);

  bool any_headline = false;
  for (const Headline& h : report.headlines) {
    for (const WorkloadResult& w : report.workloads) {
      if (w.name != h.workload) continue;
      const Metric* sample = nullptr;
      for (const RunResult& run : w.runs) {
        if ((sample = FindMetric(run, h.key))) break;
      }
      if (!sample) continue;
      if (!any_headline) {
        fmt::print(out,
                   "\nHeadline (median of runs):\n\n| what | median | target "
                   "|\n|---|---:|---|\n");
        any_headline = true;
      }
      fmt::print(out, "| {} | {} | {} |\n", h.label,
                 FormatNumber(MedianOf(w, h.key), sample->decimals), h.target);
    }
  }

  fmt::print(out, "\nAll numbers:\n\n| workload | metric |");
  for (std::size_t r = 1; r <= runs; ++r) fmt::print(out, " run {} |", r);
  fmt::print(out, " **median** |\n|---|---|");
  for (std::size_t r = 0; r <= runs; ++r) fmt::print(out, "---:|");
  fmt::print(out, "\n");
  for (const WorkloadResult& w : report.workloads) {
    for (const auto& [key, label_decimals] : MetricOrder(w)) {
      const auto& [label, decimals] = label_decimals;
      fmt::print(out, "| {} | {} |", w.title, label);
      for (std::size_t r = 0; r < runs; ++r) {
        const Metric* m = r < w.runs.size() ? FindMetric(w.runs[r], key) : nullptr;
        bool failed = r < w.runs.size() && !w.runs[r].error.empty();
        fmt::print(out, " {}{} |", m ? FormatNumber(m->value, decimals) : "-",
                   failed ? " (failed)" : "");
      }
      fmt::print(out, " **{}** |\n", FormatNumber(MedianOf(w, key), decimals));
    }
  }

  bool any_detail = false;
  for (const WorkloadResult& w : report.workloads) {
    for (std::size_t r = 0; r < w.runs.size(); ++r) {
      const RunResult& run = w.runs[r];
      if (run.error.empty() && run.note.empty()) continue;
      if (!any_detail) fmt::print(out, "\nRun details:\n\n");
      any_detail = true;
      if (!run.error.empty()) {
        // The server's log tail goes in a code block inside the list item.
        constexpr std::string_view kLog = "\n--- server log ---\n";
        std::size_t split = run.error.find(kLog);
        fmt::print(out, "- {} run {}: ERROR: {}\n", w.name, r + 1, run.error.substr(0, split));
        if (split != std::string::npos) {
          std::string log = run.error.substr(split + kLog.size());
          std::string indented;
          for (std::size_t at = 0; at < log.size();) {
            std::size_t eol = log.find('\n', at);
            if (eol == std::string::npos) eol = log.size();
            indented += "  " + log.substr(at, eol - at) + "\n";
            at = eol + 1;
          }
          fmt::print(out, "\n  server log (tail):\n\n  ```\n{}  ```\n\n", indented);
        }
      }
      if (!run.note.empty()) fmt::print(out, "- {} run {}: {}\n", w.name, r + 1, run.note);
    }
  }
  if (!report.notes.empty()) {
    fmt::print(out, "\nHow each number is measured:\n\n");
    for (const std::string& note : report.notes) fmt::print(out, "- {}\n", note);
  }
}

void PrintJson(std::FILE* out, const Report& report) {
  auto pairs = [](const std::vector<std::pair<std::string, std::string>>& kv) {
    std::string s = "{";
    for (std::size_t i = 0; i < kv.size(); ++i) {
      s += (i ? "," : "") + JsonString(kv[i].first) + ":" + JsonString(kv[i].second);
    }
    return s + "}";
  };
  std::string s = "{\"command\":" + JsonString(report.command) +
                  ",\"machine\":" + pairs(report.machine) +
                  ",\"settings\":" + pairs(report.settings) + ",\"workloads\":[";
  for (std::size_t i = 0; i < report.workloads.size(); ++i) {
    const WorkloadResult& w = report.workloads[i];
    s += (i ? "," : "") + std::string("{\"name\":") + JsonString(w.name) +
         ",\"title\":" + JsonString(w.title) + ",\"runs\":[";
    for (std::size_t r = 0; r < w.runs.size(); ++r) {
      const RunResult& run = w.runs[r];
      s += (r ? "," : "") + std::string("{\"ok\":") + (run.error.empty() ? "true" : "false");
      if (!run.error.empty()) s += ",\"error\":" + JsonString(run.error);
      if (!run.note.empty()) s += ",\"note\":" + JsonString(run.note);
      s += ",\"metrics\":{";
      for (std::size_t m = 0; m < run.metrics.size(); ++m) {
        s += (m ? "," : "") + JsonString(run.metrics[m].key) + ":" +
             JsonNumber(run.metrics[m].value);
      }
      s += "}}";
    }
    s += "],\"median\":{";
    bool first = true;
    for (const auto& [key, label_decimals] : MetricOrder(w)) {
      s += (first ? "" : ",") + JsonString(key) + ":" + JsonNumber(MedianOf(w, key));
      first = false;
    }
    s += "}}";
  }
  s += "]}\n";
  std::fputs(s.c_str(), out);
}

std::string ShellQuote(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    bool plain = !arg.empty() && arg.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789-_./=:,+@%") == std::string::npos;
    if (i) out += ' ';
    if (plain) {
      out += arg;
    } else {
      out += '\'';
      for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

}  // namespace tenure::bench
