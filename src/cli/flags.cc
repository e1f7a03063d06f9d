#include "cli/flags.h"

#include <algorithm>

#include "common/strings.h"

namespace tenure::cli {

void Flags::String(std::string name, std::string* target, std::string help) {
  flags_[std::move(name)] = {Flag::Kind::kString, target, std::move(help)};
}
void Flags::Bool(std::string name, bool* target, std::string help) {
  flags_[std::move(name)] = {Flag::Kind::kBool, target, std::move(help)};
}
void Flags::Uint64(std::string name, std::uint64_t* target, std::string help) {
  flags_[std::move(name)] = {Flag::Kind::kUint64, target, std::move(help)};
}
void Flags::Int(std::string name, int* target, std::string help) {
  flags_[std::move(name)] = {Flag::Kind::kInt, target, std::move(help)};
}
void Flags::Strings(std::string name, std::vector<std::string>* target, std::string help) {
  flags_[std::move(name)] = {Flag::Kind::kStrings, target, std::move(help)};
}

void Flags::Func(std::string name, std::function<Status(const std::string&)> on_value,
                 std::string help) {
  flags_[std::move(name)] = {Flag::Kind::kFunc, nullptr, std::move(help), std::move(on_value)};
}

bool Flags::WasSet(std::string_view name) const {
  return std::find(set_.begin(), set_.end(), name) != set_.end();
}

Status Flags::Parse(const std::vector<std::string>& args) {
  positional_.clear();
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {  // a positional argument
      if (!interspersed_) break;
      positional_.push_back(arg);
      continue;
    }
    std::string_view body(arg);
    body.remove_prefix(body.substr(0, 2) == "--" ? 2 : 1);
    std::string name(body.substr(0, body.find('=')));
    bool has_value = body.find('=') != std::string_view::npos;
    std::string value = has_value ? std::string(body.substr(body.find('=') + 1)) : "";
    if (name == "h" || name == "help") {
      return Status::InvalidArgument(Usage());
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) {
      return Status::InvalidArgument("flag provided but not defined: -" + name + "\n" + Usage());
    }
    Flag& flag = it->second;
    if (flag.kind == Flag::Kind::kBool) {
      bool v = true;
      if (has_value) {
        if (value == "true" || value == "1")
          v = true;
        else if (value == "false" || value == "0")
          v = false;
        else
          return Status::InvalidArgument("invalid boolean value " + GoQuote(value) + " for -" +
                                         name);
      }
      *static_cast<bool*>(flag.target) = v;
      set_.push_back(name);
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return Status::InvalidArgument("flag needs an argument: -" + name);
      value = args[++i];
    }
    switch (flag.kind) {
      case Flag::Kind::kString:
        *static_cast<std::string*>(flag.target) = value;
        break;
      case Flag::Kind::kStrings:
        static_cast<std::vector<std::string>*>(flag.target)->push_back(value);
        break;
      case Flag::Kind::kFunc:
        if (Status taken = flag.on_value(value); !taken.ok()) {
          return Status::InvalidArgument("invalid value " + GoQuote(value) + " for flag -" + name +
                                         ": " + std::string(taken.message()));
        }
        break;
      case Flag::Kind::kUint64:
      case Flag::Kind::kInt: {
        std::uint64_t v = 0;
        bool ok = !value.empty() && value.size() <= 20;
        for (char c : value) ok = ok && c >= '0' && c <= '9';
        if (ok) {
          for (char c : value) {
            std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
            if (v > (UINT64_MAX - digit) / 10) ok = false;
            v = v * 10 + digit;
          }
        }
        if (!ok || (flag.kind == Flag::Kind::kInt && v > 1'000'000'000)) {
          return Status::InvalidArgument("invalid value " + GoQuote(value) + " for flag -" + name);
        }
        if (flag.kind == Flag::Kind::kInt)
          *static_cast<int*>(flag.target) = static_cast<int>(v);
        else
          *static_cast<std::uint64_t*>(flag.target) = v;
        break;
      }
      case Flag::Kind::kBool:
        break;
    }
    set_.push_back(name);
  }
  positional_.insert(positional_.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return Status();
}

std::string Flags::Usage() const {
  std::string out = "Usage: tenure " + command_ + " [options]\n\nOptions:\n";
  for (const auto& [name, flag] : flags_) {
    out += "  -" + name;
    if (flag.kind != Flag::Kind::kBool) out += "=<value>";
    out += "\n      " + flag.help;
    if (flag.kind == Flag::Kind::kStrings) out += " (may be given more than once)";
    out += "\n";
  }
  return out;
}

}  // namespace tenure::cli
