// Fuzz target: bytes a client sends on an HTTP connection. They go through
// the server's RequestReader (Beast's parser with tenure's limits, target
// splitting, percent-decoding) split into reads as the first byte says, then
// every complete request through Consul's query options and the body and
// path decoders the handlers use. Pipelined requests follow each other, as
// on a keep-alive connection.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "http/query_options.h"
#include "http/request_bodies.h"
#include "listen/request_reader.h"

namespace {

using tenure::listen::RequestReader;

void Decode(const tenure::listen::HttpRequest& request) {
  FUZZ_CHECK(!request.method.empty());
  auto options = tenure::http::ParseQueryOptions(request);
  if (options.ok()) FUZZ_CHECK(options->wait_ms >= 0);
  if (request.path.starts_with("/v1/session/create")) {
    (void)tenure::http::ParseSessionCreate(request.body, "fuzz");
  } else if (request.path.starts_with("/v1/txn")) {
    (void)tenure::http::ParseTxn(request.body);
  } else if (request.path.starts_with("/v1/session/")) {
    const auto slash = request.path.rfind('/');
    (void)tenure::http::CheckSessionId(std::string_view(request.path).substr(slash + 1));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte: how many bytes each read delivers (1..256), so requests
  // arrive whole, in pieces, and split across header, body and chunk lines.
  const std::size_t read_size = std::size_t{data[0]} + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  RequestReader reader;
  reader.Begin();
  std::string pending;
  std::size_t offset = 0;
  int requests = 0;
  while (offset < stream.size() || !pending.empty()) {
    const std::size_t n = std::min(read_size, stream.size() - offset);
    pending.append(stream.substr(offset, n));
    offset += n;
    std::size_t used = 0;
    const auto outcome = reader.Feed(pending.data(), pending.size(), &used);
    FUZZ_CHECK(used <= pending.size());
    pending.erase(0, used);
    if (outcome == RequestReader::Outcome::kError) {
      const auto refusal = reader.TakeError();
      FUZZ_CHECK(refusal.status >= 400 && refusal.status < 600);
      return 0;  // the connection closes
    }
    (void)reader.TakeContinue();
    if (outcome == RequestReader::Outcome::kComplete) {
      auto parsed = reader.Take();
      if (parsed.refusal) {
        FUZZ_CHECK(parsed.refusal->status == 400 || parsed.refusal->status == 505);
        return 0;
      }
      Decode(parsed.request);
      if (!parsed.keep_alive || ++requests > 64) return 0;
      reader.Begin();
      continue;
    }
    if (n == 0) break;  // the stream ended inside a request: the client went away
  }
  return 0;
}
