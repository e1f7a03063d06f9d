#include "raft/wire/cluster_key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/assert.h"
#include "common/base64.h"

namespace tenure::raft::wire {

Result<ClusterKey> ClusterKey::FromBase64(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.remove_suffix(1);
  }
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  std::optional<std::string> secret = Base64Decode(text);
  if (!secret) {
    return Status::InvalidArgument(
        "cluster key: not standard base64 (generate one with `tenure keygen`)");
  }
  if (secret->size() < kClusterKeyBytesMin || secret->size() > kClusterKeyBytesMax) {
    return Status::InvalidArgument(
        "cluster key: " + std::to_string(secret->size()) +
        " bytes; a key has 16 to 64 (generate one with `tenure keygen`)");
  }
  ClusterKey key;
  key.secret_ = std::move(*secret);
  return key;
}

Mac ClusterKey::Sign(std::string_view message) const {
  TENURE_ASSERT(!secret_.empty());
  Mac mac{};
  unsigned int length = 0;
  unsigned char* done = HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
                             reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                             mac.data(), &length);
  TENURE_ASSERT(done != nullptr);
  TENURE_ASSERT(length == kMacBytes);
  return mac;
}

bool ClusterKey::Verify(std::string_view message, const Mac& mac) const {
  Mac expected = Sign(message);
  return CRYPTO_memcmp(expected.data(), mac.data(), kMacBytes) == 0;
}

Result<ClusterKey> LoadClusterKey(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::InvalidArgument("-raft-key-file " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("-raft-key-file " + path + ": not a regular file");
  }
  // As ssh does with private keys: a secret others can read is no secret.
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    return Status::InvalidArgument("-raft-key-file " + path +
                                   ": readable by group or others (chmod 600 it)");
  }
  std::string text(4096, '\0');
  ssize_t n = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (n < 0) return Status::InvalidArgument("-raft-key-file " + path + ": " + std::strerror(errno));
  text.resize(static_cast<std::size_t>(n));
  Result<ClusterKey> key = ClusterKey::FromBase64(text);
  if (!key.ok()) return key.status().Annotate("-raft-key-file " + path);
  return key;
}

std::string GenerateClusterKeyText() {
  std::string bytes(32, '\0');
  RandomBytes(reinterpret_cast<std::uint8_t*>(bytes.data()), bytes.size());
  return Base64Encode(bytes);
}

void RandomBytes(std::uint8_t* out, std::size_t n) {
  // A CSPRNG failure leaves nothing safe to do: nonces must not repeat.
  TENURE_ASSERT(RAND_bytes(out, static_cast<int>(n)) == 1);
}

}  // namespace tenure::raft::wire
