// Small string helpers. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tenure {

// Go's %q (strconv.Quote) for the strings Consul quotes in its error texts.
std::string GoQuote(std::string_view text);

bool StartsWith(std::string_view text, std::string_view prefix);

// 16 lower-case hex digits ("00000000000000ff"), as digests are printed.
std::string HexU64(unsigned long long value);

// "a,,b," split at `sep` into {"a", "b"}: empty parts are dropped.
std::vector<std::string> SplitNonEmpty(std::string_view text, char sep);

// ASCII lower case (header names, URL schemes); other bytes unchanged.
std::string AsciiLower(std::string_view text);
void AsciiLowerInPlace(std::string* text);

// ASCII case-insensitive comparison (header and JSON field names).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Equality of two secrets in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace tenure
