#include "state/numbered_session.h"

#include <string_view>

namespace tenure::state {
namespace {

constexpr std::string_view kUpperHalf = "00000000-0000-0000-";
constexpr std::size_t kIdSize = 36;
constexpr std::size_t kDash = 23;  // between the fourth and fifth groups

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::optional<std::int64_t> SessionNumber(std::string_view id) {
  if (id.size() != kIdSize || id.substr(0, kUpperHalf.size()) != kUpperHalf || id[kDash] != '-') {
    return std::nullopt;
  }
  std::uint64_t bits = 0;
  for (std::size_t i = kUpperHalf.size(); i < kIdSize; ++i) {
    if (i == kDash) continue;
    const int digit = HexDigit(id[i]);
    if (digit < 0) return std::nullopt;
    bits = bits << 4 | static_cast<std::uint64_t>(digit);
  }
  return static_cast<std::int64_t>(bits);
}

bool IsNumberedSession(std::string_view id) { return SessionNumber(id).has_value(); }

SessionId NumberedSessionId(std::int64_t number) {
  static constexpr char kDigits[] = "0123456789abcdef";
  // On the stack: a std::string of 36 bytes is a heap allocation, and a
  // ZooKeeper request makes this id twice.
  char id[kIdSize];
  kUpperHalf.copy(id, kUpperHalf.size());
  auto bits = static_cast<std::uint64_t>(number);
  for (std::size_t i = kIdSize; i-- > kUpperHalf.size();) {
    if (i == kDash) {
      id[i] = '-';
      continue;
    }
    id[i] = kDigits[bits & 0xf];
    bits >>= 4;
  }
  return SessionId(std::string_view(id, kIdSize));
}

}  // namespace tenure::state
