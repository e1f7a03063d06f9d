# Warning flags for our own targets (not for third-party headers, which are SYSTEM).
# tenure_warnings(target [TEST_CODE]): TEST_CODE marks a test executable's
# own code (gtest bodies, fixtures, reference models), which is compiled for
# a quick build rather than for speed: -O0 in the plain build (the code under
# test keeps -O2), and no fuzz coverage in the sanitized one (no fuzz target
# links it). Together a third of the test build's time (docs/testing.md,
# "Time budget"). NO_FUZZ_COVERAGE marks a library no fuzz target links
# (the client side: cli, client, sdk): the sanitized build compiles it
# without libFuzzer's coverage, which costs a quarter of its compile time
# and would guide no fuzzer.
function(tenure_warnings target)
  set(test_code FALSE)
  if("TEST_CODE" IN_LIST ARGN)
    set(test_code TRUE)
  endif()
  set(fuzz_coverage TRUE)
  if(test_code OR "NO_FUZZ_COVERAGE" IN_LIST ARGN)
    set(fuzz_coverage FALSE)
  endif()
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough
    -Wno-missing-field-initializers)
  if(TENURE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(TENURE_FUZZ AND fuzz_coverage)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
  if(TENURE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  if(test_code AND NOT TENURE_SANITIZE AND CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo")
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()
