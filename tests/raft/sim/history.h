// History: what happened in a simulated run, one line per event, for the
// failure report (the last lines before the violation) and --verbose.
#pragma once

#include <cstddef>
#include <cstdio>
#include <deque>
#include <string>

#include "sim_clock.h"

namespace tenure::sim {

class History {
 public:
  explicit History(std::size_t keep = 400) : keep_(keep) {}

  void set_echo(std::FILE* echo) { echo_ = echo; }
  void Add(RealMs now_ms, std::string line);
  // The last `n` lines, oldest first, each ending in a newline.
  std::string Tail(std::size_t n) const;
  std::size_t size() const { return total_; }

 private:
  std::size_t keep_;
  std::size_t total_ = 0;
  std::deque<std::string> lines_;
  std::FILE* echo_ = nullptr;
};

}  // namespace tenure::sim
