#include "common/rfc3339.h"

#include <cstdint>
#include <cstdio>

namespace tenure {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// days_from_civil), and back.
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void CivilFromDays(std::int64_t z, std::int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<std::int64_t>(yoe) + era * 400 + (*m <= 2 ? 1 : 0);
}

bool IsLeap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysIn(std::int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

Status Bad(std::string_view text, std::string_view why) {
  return Status::InvalidArgument("invalid time \"" + std::string(text) + "\": " + std::string(why) +
                                 " (want RFC 3339, as 2026-11-26T10:18:15Z)");
}

}  // namespace

std::string FormatRfc3339(UnixMs time) {
  std::int64_t ms = time.ms();
  std::int64_t days = ms >= 0 ? ms / 86'400'000 : -((-ms + 86'399'999) / 86'400'000);
  std::int64_t in_day = ms - days * 86'400'000;
  std::int64_t y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld", static_cast<long long>(y),
                m, d, static_cast<long long>(in_day / 3'600'000),
                static_cast<long long>(in_day / 60'000 % 60),
                static_cast<long long>(in_day / 1000 % 60));
  std::string out = buf;
  if (unsigned frac = static_cast<unsigned>(in_day % 1000); frac != 0) {
    std::snprintf(buf, sizeof buf, ".%03u", frac);
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out + "Z";
}

Result<UnixMs> ParseRfc3339(std::string_view text) {
  std::size_t pos = 0;
  auto digits = [&](std::size_t n, std::int64_t* out) {
    if (pos + n > text.size()) return false;
    std::int64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      char c = text[pos + i];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    pos += n;
    *out = v;
    return true;
  };
  auto literal = [&](char c) {
    if (pos < text.size() && (text[pos] == c || (c == 'T' && text[pos] == 't'))) {
      ++pos;
      return true;
    }
    return false;
  };
  std::int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(4, &year) || !literal('-') || !digits(2, &month) || !literal('-') ||
      !digits(2, &day) || !literal('T') || !digits(2, &hour) || !literal(':') ||
      !digits(2, &minute) || !literal(':') || !digits(2, &second)) {
    return Bad(text, "malformed");
  }
  if (year < 1970 || month < 1 || month > 12 || day < 1 ||
      day > DaysIn(year, static_cast<unsigned>(month)) || hour > 23 || minute > 59 || second > 59) {
    return Bad(text, "a field is out of range");
  }
  std::int64_t millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    std::size_t start = pos;
    std::int64_t scale = 100;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      millis += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start || pos - start > 9) return Bad(text, "malformed fraction of a second");
  }
  std::int64_t offset_min = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const bool minus = text[pos] == '-';
    ++pos;
    std::int64_t oh = 0, om = 0;
    if (!digits(2, &oh) || !literal(':') || !digits(2, &om) || oh > 23 || om > 59) {
      return Bad(text, "malformed time zone offset");
    }
    offset_min = (minus ? -1 : 1) * (oh * 60 + om);
  } else {
    return Bad(text, "no time zone (Z or +HH:MM)");
  }
  if (pos != text.size()) return Bad(text, "trailing characters");
  const std::int64_t days =
      DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const std::int64_t ms =
      ((days * 24 + hour) * 60 + minute - offset_min) * 60'000 + second * 1000 + millis;
  return UnixMs(ms);
}

}  // namespace tenure
