// A gtest printer for tenure::UnixMs (found by ADL), so that a failed
// EXPECT_EQ/EXPECT_GE on wall-clock instants shows milliseconds instead of
// bytes. Test-only: common/types.h stays free of iostream. Include it in
// every test file whose gtest assertions compare UnixMs values.
#pragma once

#include <ostream>

#include "common/types.h"

namespace tenure {

inline void PrintTo(const UnixMs& t, std::ostream* os) { *os << "UnixMs(" << t.ms() << ")"; }

}  // namespace tenure
