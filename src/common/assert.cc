#include "common/assert.h"

#include <cstdio>
#include <cstdlib>

namespace tenure::detail {

void AssertFail(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "tenure: assertion failed: %s (%s:%d)\n", condition, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace tenure::detail
