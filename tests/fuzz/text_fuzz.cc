// Fuzz target: the small text decoders that see client input, chosen by the
// first byte: Go durations, decimal integers, percent-encoding and query
// strings, base64, host:port, and the JSON bodies of session create and txn.
// Where a decoder has an inverse, the round trip must give the value back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/base64.h"
#include "common/duration.h"
#include "common/host_port.h"
#include "fuzz_check.h"
#include "http/query_options.h"
#include "http/request_bodies.h"
#include "listen/request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0: {
      auto ns = tenure::ParseGoDuration(text);
      if (ns.ok()) {
        auto again = tenure::ParseGoDuration(tenure::FormatGoDuration(*ns));
        FUZZ_CHECK(again.ok());
        FUZZ_CHECK(*again == *ns);
      }
      break;
    }
    case 1: {
      auto value = tenure::http::ParseUint64(text);
      if (value.ok()) FUZZ_CHECK(*tenure::http::ParseUint64(std::to_string(*value)) == *value);
      break;
    }
    case 2:
      (void)tenure::listen::PercentDecode(text, data[0] & 0x80);
      (void)tenure::listen::ParseQuery(text);
      break;
    case 3: {
      // Go's StdEncoding ignores the unused bits of the last character, so
      // "YWwEaxG=" and "YWwEaxE=" decode alike: compare bytes, not texts.
      auto decoded = tenure::Base64Decode(text);
      if (decoded) FUZZ_CHECK(tenure::Base64Decode(tenure::Base64Encode(*decoded)) == decoded);
      auto again = tenure::Base64Decode(tenure::Base64Encode(text));
      FUZZ_CHECK(again && *again == text);
      break;
    }
    case 4: {
      auto parsed = tenure::ParseHostPort(text, data[0] & 0x80);
      if (parsed.ok()) {
        auto again = tenure::ParseHostPort(tenure::FormatHostPort(*parsed), true);
        FUZZ_CHECK(again.ok());
        FUZZ_CHECK(again->host == parsed->host && again->port == parsed->port);
      }
      break;
    }
    case 5:
      (void)tenure::http::ParseSessionCreate(text, "fuzz");
      break;
    case 6:
      (void)tenure::http::ParseTxn(text);
      break;
    case 7:
      (void)tenure::http::CheckSessionId(text);
      break;
  }
  return 0;
}
