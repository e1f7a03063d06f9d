#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "common/json_string.h"
#include "common/strings.h"

namespace tenure::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<bool> g_json{false};

// RFC 3339 in UTC with milliseconds, as Consul's JSON logs stamp "@timestamp".
void AppendTime(std::string* out, long long unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[40];
  const int n = std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                              utc.tm_min, utc.tm_sec, static_cast<int>(unix_ms % 1000));
  out->append(buffer, static_cast<std::size_t>(n));
}

std::string_view TextPrefix(std::string_view component) {
  if (component == "raft") return "tenure raft";
  if (component == "http") return "http";
  return "tenure";
}

}  // namespace

Result<Level> ParseLevel(std::string_view name) {
  const std::string lower = AsciiLower(name);
  if (lower == "trace") return Level::kTrace;
  if (lower == "debug") return Level::kDebug;
  if (lower == "info") return Level::kInfo;
  if (lower == "warn") return Level::kWarn;
  if (lower == "error") return Level::kError;
  return Status::InvalidArgument("unknown log level \"" + std::string(name) +
                                 "\" (trace, debug, info, warn or error)");
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kTrace:
      return "trace";
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

void Configure(Options options) {
  g_level.store(static_cast<int>(options.level));
  g_json.store(options.json);
}

bool Enabled(Level level) { return static_cast<int>(level) >= g_level.load(); }

std::string FormatLine(const Options& options, long long unix_ms, Level level,
                       std::string_view component, std::string_view message,
                       std::initializer_list<Field> fields) {
  std::string line;
  if (!options.json) {
    line.append(TextPrefix(component)).append(": ").append(message);
    return line;
  }
  line.append("{\"time\":\"");
  AppendTime(&line, unix_ms);
  line.append("\",\"level\":\"").append(LevelName(level)).append("\",\"component\":");
  json::AppendString(&line, component);
  line.append(",\"message\":");
  json::AppendString(&line, message);
  for (const Field& field : fields) {
    line.push_back(',');
    json::AppendString(&line, field.key);
    line.push_back(':');
    if (field.number) {
      line.append(field.value);
    } else {
      json::AppendString(&line, field.value);
    }
  }
  line.push_back('}');
  return line;
}

void Write(Level level, std::string_view component, std::string_view message,
           std::initializer_list<Field> fields) {
  if (!Enabled(level)) return;
  const long long unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
  std::string line =
      FormatLine({Level::kTrace, g_json.load()}, unix_ms, level, component, message, fields);
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace tenure::log
