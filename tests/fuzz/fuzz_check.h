// FUZZ_CHECK: a property a fuzz target asserts about what the code under
// test returned. A failure aborts, which libFuzzer reports as a crash with
// the input that caused it (and the replay driver as a failed test).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
