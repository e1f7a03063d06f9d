// Flags: command-line options in Go's flag syntax, as Consul's CLI takes
// them: -name, --name, -name=value, -name value; boolean flags take no
// value (or =true/=false); "--" ends the options. Parsing stops at the first
// positional argument unless interspersed is set.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tenure::cli {

class Flags {
 public:
  explicit Flags(std::string command) : command_(std::move(command)) {}

  void String(std::string name, std::string* target, std::string help);
  void Bool(std::string name, bool* target, std::string help);
  void Uint64(std::string name, std::uint64_t* target, std::string help);
  void Int(std::string name, int* target, std::string help);
  // A flag that may be given several times: each value is appended.
  void Strings(std::string name, std::vector<std::string>* target, std::string help);
  // A flag whose every value is handed to on_value, in command-line order
  // with the other Func flags (as Go's flag.Func); its error is the parse's.
  void Func(std::string name, std::function<Status(const std::string&)> on_value, std::string help);

  // Parses args (without the program and command names). On success the
  // positional arguments are in positional(). Errors name the flag.
  Status Parse(const std::vector<std::string>& args);
  // Options may follow positional arguments (`leader-get NAME -format json`).
  void set_interspersed(bool on) { interspersed_ = on; }
  const std::vector<std::string>& positional() const { return positional_; }
  bool WasSet(std::string_view name) const;
  std::string Usage() const;

 private:
  struct Flag {
    enum class Kind { kString, kBool, kUint64, kInt, kStrings, kFunc } kind;
    void* target;
    std::string help;
    std::function<Status(const std::string&)> on_value;  // kFunc
  };
  std::string command_;
  std::map<std::string, Flag, std::less<>> flags_;
  std::vector<std::string> positional_;
  std::vector<std::string> set_;
  bool interspersed_ = false;
};

}  // namespace tenure::cli
