// TENURE_ASSERT: invariants that must hold, checked in every build (release
// included). A failure is a bug, never bad input: it prints the place and
// aborts. Split compound conditions so the failing one is named.
#pragma once

namespace tenure::detail {
[[noreturn]] void AssertFail(const char* condition, const char* file, int line);
}  // namespace tenure::detail

#define TENURE_ASSERT(cond) \
  ((cond) ? static_cast<void>(0) : ::tenure::detail::AssertFail(#cond, __FILE__, __LINE__))
