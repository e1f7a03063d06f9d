#include "history.h"

#include <fmt/core.h>

namespace tenure::sim {

void History::Add(RealMs now_ms, std::string line) {
  std::string stamped = fmt::format("t={:>9} {}", now_ms, line);
  if (echo_ != nullptr) std::fprintf(echo_, "%s\n", stamped.c_str());
  lines_.push_back(std::move(stamped));
  if (lines_.size() > keep_) lines_.pop_front();
  ++total_;
}

std::string History::Tail(std::size_t n) const {
  std::string out;
  std::size_t start = lines_.size() > n ? lines_.size() - n : 0;
  for (std::size_t i = start; i < lines_.size(); ++i) {
    out += lines_[i];
    out += '\n';
  }
  return out;
}

}  // namespace tenure::sim
