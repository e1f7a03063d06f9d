// gtest printers (and fmt formatters) for tenure's strong types (found by ADL), so that a failed
// EXPECT_EQ/EXPECT_GE on instants, log indexes or session ids shows numbers
// and text instead of bytes. Test-only: common/types.h and state/types.h stay
// free of iostream. Include it in every test file whose gtest assertions
// compare UnixMs, LogIndex or state::SessionId values.
#pragma once

#include <fmt/format.h>

#include <ostream>

#include "common/types.h"
#include "state/types.h"

namespace tenure {

inline void PrintTo(const UnixMs& t, std::ostream* os) { *os << "UnixMs(" << t.ms() << ")"; }
inline void PrintTo(const LogIndex& i, std::ostream* os) { *os << "LogIndex(" << i.value() << ")"; }
// For the tests' own diagnostics (state comparisons, histories): the number.
inline std::ostream& operator<<(std::ostream& os, LogIndex i) { return os << i.value(); }

}  // namespace tenure

namespace tenure::state {

inline void PrintTo(const SessionId& id, std::ostream* os) {
  *os << "SessionId(\"" << id.view() << "\")";
}
// For the tests' own diagnostics (state comparisons, command descriptions): the id.
inline std::ostream& operator<<(std::ostream& os, const SessionId& id) { return os << id.view(); }

}  // namespace tenure::state

// For the tests' fmt::format diagnostics (the simulation's checkers): the number.
template <>
struct fmt::formatter<tenure::LogIndex> : fmt::formatter<std::uint64_t> {
  auto format(tenure::LogIndex i, fmt::format_context& ctx) const {
    return fmt::formatter<std::uint64_t>::format(i.value(), ctx);
  }
};

// The same for session ids: the id.
template <>
struct fmt::formatter<tenure::state::SessionId> : fmt::formatter<std::string_view> {
  auto format(const tenure::state::SessionId& id, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(id.view(), ctx);
  }
};
