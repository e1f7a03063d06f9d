# Warning flags for our own targets (not for third-party headers, which are SYSTEM).
function(tenure_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough
    -Wno-missing-field-initializers)
  if(TENURE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(TENURE_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
  if(TENURE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
