// ClusterKey: the secret every member of a cluster is given (-raft-key-file)
// so that the raft transport can tell members from strangers before libraft
// sees a byte (docs/security.md, decision 0012). It authenticates the two
// ends of each raft connection with a challenge-response (handshake.h); it
// neither encrypts nor signs the traffic that follows (TLS does that).
//
// The file holds the standard base64 of 16 to 64 random bytes, as printed by
// `tenure keygen`, and must not be readable by group or others.
//
// Pure apart from LoadClusterKey (reads a file) and RandomBytes (the
// system's CSPRNG). Any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tenure::raft::wire {

inline constexpr std::size_t kClusterKeyBytesMin = 16;
inline constexpr std::size_t kClusterKeyBytesMax = 64;
inline constexpr std::size_t kMacBytes = 32;  // HMAC-SHA256

using Mac = std::array<std::uint8_t, kMacBytes>;

class ClusterKey {
 public:
  // The empty key: no authentication (a cluster without -raft-key-file).
  ClusterKey() = default;
  static Result<ClusterKey> FromBase64(std::string_view text);

  bool empty() const { return secret_.empty(); }
  // HMAC-SHA256 of `message` under the key. REQUIRES: !empty().
  Mac Sign(std::string_view message) const;
  // Constant-time comparison of Sign(message) with `mac`.
  bool Verify(std::string_view message, const Mac& mac) const;

 private:
  std::string secret_;
};

// Reads and checks a key file (permissions, format, length).
Result<ClusterKey> LoadClusterKey(const std::string& path);

// A fresh key for `tenure keygen`: base64 of 32 random bytes.
std::string GenerateClusterKeyText();

// Fills `out` with cryptographically random bytes.
void RandomBytes(std::uint8_t* out, std::size_t n);

}  // namespace tenure::raft::wire
