// The server's log: one line per event on stderr, as text (the default,
// "tenure: ..." as always) or, with -log-json, one JSON object a line with
// time, level, component, message and the event's fields, for log shippers.
// -log-level drops the levels below it. Configure once at start, before
// other threads run; Write may then be called from any thread (one fwrite
// per line).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/status.h"

namespace tenure::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError };

// Consul's names: trace, debug, info, warn, error (any case).
Result<Level> ParseLevel(std::string_view name);
std::string_view LevelName(Level level);

struct Options {
  Level level = Level::kInfo;
  bool json = false;
};
void Configure(Options options);
bool Enabled(Level level);

// One field of an event: key and value as text. In JSON the value is a
// string unless `number` (then written bare).
struct Field {
  std::string_view key;
  std::string value;
  bool number = false;
};
template <typename Integer>
requires std::is_integral_v<Integer> Field Num(std::string_view key, Integer value) {
  return {key, std::to_string(value), true};
}

// `component` names the part of the server (raft, http, server, agent).
// The text form is "<prefix>: <message>" with the prefix the lines always
// had ("tenure raft" for raft, "http" for http, "tenure" otherwise), so the
// message should already say what the fields say.
void Write(Level level, std::string_view component, std::string_view message,
           std::initializer_list<Field> fields = {});

inline void Info(std::string_view component, std::string_view message,
                 std::initializer_list<Field> fields = {}) {
  Write(Level::kInfo, component, message, fields);
}
inline void Warn(std::string_view component, std::string_view message,
                 std::initializer_list<Field> fields = {}) {
  Write(Level::kWarn, component, message, fields);
}
inline void Error(std::string_view component, std::string_view message,
                  std::initializer_list<Field> fields = {}) {
  Write(Level::kError, component, message, fields);
}

// The line Write prints, without the newline (for tests). `unix_ms` is
// the time stamped in JSON.
std::string FormatLine(const Options& options, long long unix_ms, Level level,
                       std::string_view component, std::string_view message,
                       std::initializer_list<Field> fields);

}  // namespace tenure::log
