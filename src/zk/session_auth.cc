#include "zk/session_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>

#include "common/assert.h"

namespace tenure::zk {

inline constexpr std::size_t kPasswordBytes = 16;

std::string SessionPassword(std::string_view secret, std::int64_t session_id) {
  TENURE_ASSERT(!secret.empty());
  std::array<unsigned char, 8> id{};
  const auto bits = static_cast<std::uint64_t>(session_id);
  for (std::size_t i = 0; i < id.size(); ++i) {
    id[i] = static_cast<unsigned char>(bits >> (8 * (id.size() - 1 - i)));
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int length = 0;
  const unsigned char* done = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                                   id.data(), id.size(), mac.data(), &length);
  TENURE_ASSERT(done != nullptr && length >= kPasswordBytes);
  return std::string(reinterpret_cast<const char*>(mac.data()), kPasswordBytes);
}

bool PasswordMatches(std::string_view secret, std::int64_t session_id, std::string_view password) {
  if (secret.empty() || password.size() != kPasswordBytes) return false;
  const std::string expected = SessionPassword(secret, session_id);
  return CRYPTO_memcmp(expected.data(), password.data(), kPasswordBytes) == 0;
}

std::int32_t NegotiatedTimeoutMs(std::int32_t requested_ms, std::int32_t min_ms,
                                 std::int32_t max_ms) {
  TENURE_ASSERT(min_ms <= max_ms);
  return std::clamp(requested_ms, min_ms, max_ms);
}

}  // namespace tenure::zk
