// TENURE_EXPORT marks what libtenure.so exports. The library is built with
// -fvisibility=hidden, so everything else in it (the HTTP client, Boost,
// nlohmann::json, fmt) stays private to it. Standard C++ only, like every
// header of include/tenure.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define TENURE_EXPORT [[gnu::visibility("default")]]
#else
#define TENURE_EXPORT
#endif
