#include "common/duration.h"

#include <cstdint>
#include <limits>

namespace tenure {
namespace {

Status Invalid(std::string_view text) {
  return Status::InvalidArgument("time: invalid duration \"" + std::string(text) + "\"");
}

// Returns the unit's size in ns, or 0 when unknown.
std::uint64_t UnitNs(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" /* µ U+00B5 */ || unit == "\xCE\xBCs" /* μ U+03BC */)
    return 1'000;
  if (unit == "ms") return 1'000'000;
  if (unit == "s") return 1'000'000'000;
  if (unit == "m") return 60ull * 1'000'000'000;
  if (unit == "h") return 3600ull * 1'000'000'000;
  return 0;
}

}  // namespace

// Follows the structure of Go's time.ParseDuration: integer and fraction
// parts are accumulated separately so "0.001s" is exact, and any overflow of
// int64 nanoseconds is an error rather than a wrap: of a component's digits,
// of a component times its unit, and of the sum of the components.
Result<DurationNs> ParseGoDuration(std::string_view text) {
  const std::string_view original = text;
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text == "0") return DurationNs{0};
  if (text.empty()) return Invalid(original);

  constexpr std::uint64_t kMax = std::uint64_t{1} << 63;  // |min int64|
  std::uint64_t total = 0;
  while (!text.empty()) {
    if (!(text[0] == '.' || (text[0] >= '0' && text[0] <= '9'))) return Invalid(original);
    // Integer part.
    std::uint64_t whole = 0;
    std::size_t i = 0;
    bool whole_overflow = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
      if (whole > (kMax - digit) / 10)
        whole_overflow = true;
      else
        whole = whole * 10 + digit;
      ++i;
    }
    if (whole_overflow) return Invalid(original);
    bool had_whole = i > 0;
    text.remove_prefix(i);
    // Fraction part.
    std::uint64_t fraction = 0;
    // A float, as in Go: leading zeros keep scaling it past any integer
    // ("0.000...0001s" with 20 zeros once wrapped a uint64 to 0, and the
    // division below with it: found by the text fuzz target).
    long double scale = 1;
    bool had_fraction = false;
    if (!text.empty() && text[0] == '.') {
      text.remove_prefix(1);
      i = 0;
      bool fraction_overflow = false;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        if (!fraction_overflow) {
          std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
          if (fraction > (kMax - digit) / 10) {
            fraction_overflow = true;  // further digits are below precision
          } else {
            fraction = fraction * 10 + digit;
            scale *= 10;
          }
        }
        ++i;
      }
      had_fraction = i > 0;
      text.remove_prefix(i);
    }
    if (!had_whole && !had_fraction) return Invalid(original);
    // Unit.
    i = 0;
    while (i < text.size() && text[i] != '.' && !(text[i] >= '0' && text[i] <= '9')) ++i;
    if (i == 0) {
      return Status::InvalidArgument("time: missing unit in duration \"" + std::string(original) +
                                     "\"");
    }
    std::string_view unit_text = text.substr(0, i);
    text.remove_prefix(i);
    std::uint64_t unit = UnitNs(unit_text);
    if (unit == 0) {
      return Status::InvalidArgument("time: unknown unit \"" + std::string(unit_text) +
                                     "\" in duration \"" + std::string(original) + "\"");
    }
    if (whole > kMax / unit) return Invalid(original);
    std::uint64_t value = whole * unit;
    if (fraction > 0) {
      // fraction/scale * unit, computed in floating point as Go does.
      // fraction < scale, so part < unit: the cast cannot overflow.
      long double part =
          static_cast<long double>(fraction) * static_cast<long double>(unit) / scale;
      value += static_cast<std::uint64_t>(part);
      if (value > kMax) return Invalid(original);
    }
    // Both are at most 2^63, so the sum can wrap uint64 to 0 (Go's own
    // `d += v` does, for "9223372036854775808ns9223372036854775808ns"):
    // compare before adding.
    if (value > kMax - total) return Invalid(original);
    total += value;
  }
  if (negative) return -static_cast<DurationNs>(total - 1) - 1;
  if (total > static_cast<std::uint64_t>(std::numeric_limits<DurationNs>::max()))
    return Invalid(original);
  return static_cast<DurationNs>(total);
}

namespace {

// Writes v / 10^precision with trailing fraction zeros removed, like Go's fmtFrac+fmtInt.
void AppendFraction(std::string& out, std::uint64_t v, int precision) {
  std::string digits;
  bool print = false;
  for (int i = 0; i < precision; ++i) {
    int digit = static_cast<int>(v % 10);
    print = print || digit != 0;
    if (print) digits.insert(digits.begin(), static_cast<char>('0' + digit));
    v /= 10;
  }
  std::string whole = std::to_string(v);
  out += whole;
  if (print) {
    out += '.';
    out += digits;
  }
}

}  // namespace

std::string FormatGoDuration(DurationNs ns) {
  if (ns == 0) return "0s";
  bool negative = ns < 0;
  std::uint64_t u =
      negative ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  std::string out;
  if (negative) out += '-';
  if (u < 1'000'000'000) {
    // Sub-second: ns, µs or ms with a fraction.
    if (u < 1'000) {
      out += std::to_string(u) + "ns";
    } else if (u < 1'000'000) {
      AppendFraction(out, u, 3);
      out += "\xC2\xB5s";
    } else {
      AppendFraction(out, u, 6);
      out += "ms";
    }
    return out;
  }
  std::uint64_t seconds_ns = u % (60ull * 1'000'000'000);
  std::uint64_t minutes_total = u / (60ull * 1'000'000'000);
  std::uint64_t hours = minutes_total / 60;
  std::uint64_t minutes = minutes_total % 60;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (hours > 0 || minutes > 0) out += std::to_string(minutes) + "m";
  AppendFraction(out, seconds_ns, 9);
  out += "s";
  return out;
}

}  // namespace tenure
