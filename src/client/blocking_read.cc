#include "client/blocking_read.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "client/response.h"

namespace tenure::client {

Result<std::uint64_t> ParseIndexHeader(std::string_view text) {
  if (text.empty()) return std::uint64_t{0};
  std::optional<std::uint64_t> index = ParseDecimalU64(text);
  if (!index) return Status::Corruption("bad X-Consul-Index " + std::string(text));
  return *index;
}

std::uint64_t NextWaitIndex(std::uint64_t returned, std::uint64_t waited) {
  if (returned < waited) return 0;
  return std::max<std::uint64_t>(returned, 1);
}

Result<std::uint64_t> NextWaitIndex(const net::ClientResponse& response, std::uint64_t waited) {
  Result<std::uint64_t> returned = ParseIndexHeader(response.Header(kIndexHeader));
  if (!returned.ok()) return returned.status();
  return NextWaitIndex(*returned, waited);
}

BlockingGet BlockingRead(std::string target, std::uint64_t index, std::int64_t wait_ms) {
  BlockingGet get;
  get.timeout_ms = wait_ms > 0 ? 0 : kBlockingReadTimeoutMs;
  if (index > 0) {
    target += target.find('?') == std::string::npos ? '?' : '&';
    target += "index=" + std::to_string(index);
    if (wait_ms > 0) {
      target += "&wait=" + std::to_string(wait_ms) + "ms";
      get.timeout_ms = wait_ms + wait_ms / 16 + 5'000;
    }
  }
  get.target = std::move(target);
  return get;
}

}  // namespace tenure::client
