// gtest printers (and fmt formatters) for tenure's strong types (found by ADL), so that a failed
// EXPECT_EQ/EXPECT_GE on instants or log indexes shows numbers instead of
// bytes. Test-only: common/types.h stays free of iostream. Include it in
// every test file whose gtest assertions compare UnixMs or LogIndex values.
#pragma once

#include <fmt/format.h>

#include <ostream>

#include "common/types.h"

namespace tenure {

inline void PrintTo(const UnixMs& t, std::ostream* os) { *os << "UnixMs(" << t.ms() << ")"; }
inline void PrintTo(const LogIndex& i, std::ostream* os) { *os << "LogIndex(" << i.value() << ")"; }
// For the tests' own diagnostics (state comparisons, histories): the number.
inline std::ostream& operator<<(std::ostream& os, LogIndex i) { return os << i.value(); }

}  // namespace tenure

// For the tests' fmt::format diagnostics (the simulation's checkers): the number.
template <>
struct fmt::formatter<tenure::LogIndex> : fmt::formatter<std::uint64_t> {
  auto format(tenure::LogIndex i, fmt::format_context& ctx) const {
    return fmt::formatter<std::uint64_t>::format(i.value(), ctx);
  }
};
