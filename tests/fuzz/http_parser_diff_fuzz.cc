// Differential fuzz target: the same bytes go to tenure's request parser
// (listen/request_reader.cc, fed in reads of the size the first byte says, as
// a socket delivers them) and to Boost.Beast's request_parser (the parser it
// replaced, fed everything at once, with the same limits). For every request
// both accept they must agree on the method, target, version, keep-alive,
// header names (ours lower-cased) and values in order, the body, and where
// the request ends (pipelined requests follow, up to 16).
//
// Deliberate differences (docs/decisions/0022-own-http-request-parser.md),
// where ours refuses what Beast accepts; each is recognised below from the
// input itself, so any other disagreement fails:
//   - obs-fold (a field line starting with SP or HTAB): ours answers
//     "bad obs-fold" (RFC 9112 5.2 lets a server reject it); Beast joins it.
//   - Content-Length as a list ("3, 3"), twice, or over 19 digits: ours
//     "bad Content-Length"; Beast takes equal numbers.
//   - Transfer-Encoding other than exactly "chunked" ("gzip, chunked",
//     "chunked, x", "identity"): ours "bad Transfer-Encoding" (tenure decodes
//     no other coding, RFC 9112 6.1); Beast ignores unknown codings.
//   - a request target with bytes over 0x7f: ours "bad target".
//   - HTTP versions other than 1.0 and 1.1: ours answers 505 (RFC 9110
//     15.6.6); Beast "bad version" (400). Both refuse.
// And in timing only: ours parses the header once it is whole, so a
// malformed start shows when the header ends, while Beast refuses it early
// (ours is then still waiting: no answer either way; the check is that it
// never accepts what Beast refused); and ours judges a chunk line or a
// header when its CRLF is in while Beast may wait for more (then Beast,
// given a CRLF CRLF more, must not accept).
// Trailer fields: Beast adds them to the header; ours checks, bounds and
// drops them, so only the fields before the body are compared.
#include <algorithm>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/limits.h"
#include "common/strings.h"
#include "fuzz_check.h"
#include "listen/request_reader.h"

namespace {

namespace beast_http = boost::beast::http;
using tenure::listen::RequestReader;

struct BeastResult {
  enum { kNeedMore, kComplete, kError } outcome = kNeedMore;
  std::size_t used = 0;
  std::optional<beast_http::request_parser<beast_http::string_body>> parser;
};

void BeastParse(std::string_view stream, BeastResult& result) {
  auto& parser = result.parser.emplace();
  parser.header_limit(static_cast<std::uint32_t>(tenure::limits::kHttpHeaderBytesMax));
  parser.body_limit(std::uint64_t{tenure::limits::kHttpBodyBytesMax});
  parser.eager(true);
  while (result.used < stream.size()) {
    boost::system::error_code ec;
    std::size_t n = 0;
    try {
      n = parser.put(
          boost::asio::const_buffer(stream.data() + result.used, stream.size() - result.used), ec);
    } catch (const std::exception&) {
      result.outcome = BeastResult::kError;
      return;
    }
    result.used += n;
    if (ec == beast_http::error::need_more) break;
    if (ec) {
      result.outcome = BeastResult::kError;
      return;
    }
    if (parser.is_done()) {
      result.outcome = BeastResult::kComplete;
      return;
    }
    if (n == 0) break;
  }
}

struct OursResult {
  RequestReader::Outcome outcome = RequestReader::Outcome::kNeedMore;
  std::size_t used = 0;
  std::optional<RequestReader::Parsed> parsed;
  std::string error;  // the refusal's body
};

// Feeds `stream` in reads of `read_size`, keeping what the reader leaves, as
// Connection does.
OursResult OursParse(RequestReader& reader, std::string_view stream, std::size_t read_size) {
  OursResult result;
  reader.Begin();
  std::size_t offset = 0;  // bytes handed over so far
  for (;;) {
    const std::size_t n = std::min(read_size, stream.size() - offset);
    offset += n;
    std::size_t used = 0;
    result.outcome = reader.Feed(stream.data() + result.used, offset - result.used, &used);
    FUZZ_CHECK(used <= offset - result.used);
    result.used += used;
    if (result.outcome == RequestReader::Outcome::kError) {
      result.error = reader.TakeError().body;
      return result;
    }
    (void)reader.TakeContinue();
    if (result.outcome == RequestReader::Outcome::kComplete) {
      result.parsed = reader.Take();
      return result;
    }
    if (n == 0) return result;
  }
}

bool HasObsFold(std::string_view request) {
  return request.find("\r\n ") != std::string_view::npos ||
         request.find("\r\n\t") != std::string_view::npos;
}

// An obs-fold inside the header (before its blank line), where ours
// refuses every one: whichever line ours judges first (a Transfer-Encoding
// whose value Beast unfolded into "chunked" reads as empty to ours), the
// refusal is the fold's.
bool HasObsFoldInHeader(std::string_view request) {
  const std::size_t end = request.find("\r\n\r\n");
  return HasObsFold(request.substr(0, end == std::string_view::npos ? request.size() : end + 2));
}

bool HasHighByte(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return true;
  }
  return false;
}

// Whether what Beast accepted (in `request`, the bytes from its start) is one ours
// refuses on purpose, with the reason ours gave. An obs-fold may be in the
// header or in a trailer.
bool DeliberatelyStricter(const beast_http::request_parser<beast_http::string_body>& parser,
                          std::string_view request, std::string_view why) {
  const auto& fields = parser.get();
  if (why == "400 Bad Request: bad obs-fold") return HasObsFold(request);
  if (why.starts_with("400 ") && HasObsFoldInHeader(request)) return true;
  if (why == "400 Bad Request: bad target") {
    const auto target = parser.get().target();
    return HasHighByte({target.data(), target.size()});
  }
  if (why == "400 Bad Request: bad Content-Length") {
    const auto [first, last] = fields.equal_range(beast_http::field::content_length);
    int count = 0;
    bool list = false;
    for (auto it = first; it != last; ++it) {
      ++count;
      const auto value = it->value();
      list |= std::string_view(value.data(), value.size()).find(',') != std::string_view::npos ||
              value.size() > 19;
    }
    return count > 1 || list;
  }
  if (why == "400 Bad Request: bad Transfer-Encoding") {
    const auto [first, last] = fields.equal_range(beast_http::field::transfer_encoding);
    int count = 0;
    bool other = false;
    for (auto it = first; it != last; ++it) {
      ++count;
      const auto value = it->value();
      other |= !tenure::EqualsIgnoreCase({value.data(), value.size()}, "chunked");
    }
    return count > 1 || other;
  }
  return false;
}

void Compare(const beast_http::request_parser<beast_http::string_body>& beast,
             const RequestReader::Parsed& ours) {
  const auto& message = beast.get();
  const tenure::listen::HttpRequest& request = ours.request;
  const auto method = message.method_string();
  FUZZ_CHECK(request.method == std::string_view(method.data(), method.size()));
  const auto target = message.target();
  FUZZ_CHECK(request.target == std::string_view(target.data(), target.size()));
  FUZZ_CHECK(ours.http10 == (message.version() == 10));
  FUZZ_CHECK(ours.keep_alive == beast.keep_alive() || ours.refusal);
  FUZZ_CHECK(request.body == message.body());
  // Beast's fields: the header's, then any trailer's; a field whose name
  // came before goes after the last of that name (Beast keeps them
  // together). So both sides are compared by name, in order within a name.
  using Fields = std::vector<std::pair<std::string, std::string>>;
  Fields ours_fields;
  for (const auto [name, value] : request.headers) {
    FUZZ_CHECK(tenure::AsciiLower(name) == name);
    ours_fields.emplace_back(name, value);
  }
  Fields beast_fields;
  for (const auto& field : message) {
    const auto name = field.name_string();
    const auto value = field.value();
    beast_fields.emplace_back(tenure::AsciiLower({name.data(), name.size()}),
                              std::string(value.data(), value.size()));
  }
  // Trailer fields come last in Beast's list; ours has none.
  FUZZ_CHECK(beast_fields.size() >= ours_fields.size());
  if (!beast.chunked()) FUZZ_CHECK(beast_fields.size() == ours_fields.size());
  const auto by_name = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (beast_fields.size() == ours_fields.size()) {
    std::stable_sort(ours_fields.begin(), ours_fields.end(), by_name);
    std::stable_sort(beast_fields.begin(), beast_fields.end(), by_name);
    FUZZ_CHECK(ours_fields == beast_fields);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t read_size = std::size_t{data[0]} + 1;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  RequestReader reader;
  for (int requests = 0; requests < 16 && !stream.empty(); ++requests) {
    BeastResult beast;
    BeastParse(stream, beast);
    const OursResult ours = OursParse(reader, stream, read_size);
    switch (ours.outcome) {
      case RequestReader::Outcome::kComplete:
        FUZZ_CHECK(beast.outcome == BeastResult::kComplete);
        FUZZ_CHECK(ours.used == beast.used);
        Compare(*beast.parser, *ours.parsed);
        if (ours.parsed->refusal || !ours.parsed->keep_alive) return 0;
        stream.remove_prefix(ours.used);
        continue;
      case RequestReader::Outcome::kError:
        if (beast.outcome != BeastResult::kError) {
          // A limit ours reached first (it bounds what is buffered), or a
          // deliberate refusal of what Beast accepts.
          const bool limit =
              ours.error.starts_with("431 ") || ours.error.starts_with("Request body");
          // Beast not done judging: ours refuses a header or chunk line
          // when its CRLF is in, Beast may wait for more (a version
          // "1\r\n\r\n" is 8 bytes short; a last chunk waits for its whole
          // trailer). Given a CRLF CRLF more, which ends any header or
          // trailer it waits for, Beast must not accept.
          bool beast_refuses_later = false;
          if (beast.outcome == BeastResult::kNeedMore) {
            const std::string padded = std::string(stream) + "\r\n\r\n";
            BeastResult again;
            BeastParse(padded, again);
            beast_refuses_later = again.outcome != BeastResult::kComplete;
          }
          const bool deliberate = beast.parser->is_header_done() &&
                                  DeliberatelyStricter(*beast.parser, stream, ours.error);
          FUZZ_CHECK(limit || beast_refuses_later || deliberate);
        }
        return 0;
      case RequestReader::Outcome::kNeedMore:
        // Ours waits for the whole header before judging it; Beast may have
        // judged the part already there. Ours never finishes what Beast
        // still waits for.
        FUZZ_CHECK(beast.outcome != BeastResult::kComplete);
        return 0;
    }
  }
  return 0;
}
