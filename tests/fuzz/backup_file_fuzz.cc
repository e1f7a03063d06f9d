// Fuzz target: a snapshot file (state/backup_file.h), as PUT /v1/snapshot
// and `tenure snapshot restore|inspect` read it. With the first byte odd the
// harness writes the right SHA-256 into a file long enough to hold one, so
// the fuzzer explores the header checks and the state decoder rather than
// the checksum; even, the bytes go in as they are. A file that opens holds a
// valid state whose counts match its header, and encodes back to a file
// that opens to the same state.
#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "state/backup_file.h"

namespace {

constexpr std::size_t kShaAt = 8 + 4 + 4 + 88;  // magic, version, size, header
constexpr std::size_t kStateAt = kShaAt + 32;

void FixSha(std::string& file) {
  if (file.size() < kStateAt) return;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char sha[32];
  unsigned int n = 0;
  if (ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
      EVP_DigestUpdate(ctx, file.data(), kShaAt) == 1 &&
      EVP_DigestUpdate(ctx, file.data() + kStateAt, file.size() - kStateAt) == 1 &&
      EVP_DigestFinal_ex(ctx, sha, &n) == 1) {
    file.replace(kShaAt, sizeof sha, reinterpret_cast<const char*>(sha), sizeof sha);
  }
  EVP_MD_CTX_free(ctx);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) FixSha(file);
  auto opened = tenure::state::OpenBackup(file);
  if (!opened.ok()) return 0;
  FUZZ_CHECK(opened->store.Validate().ok());
  FUZZ_CHECK(opened->info.state_bytes == opened->state.size());
  const std::string again = tenure::state::EncodeBackup(opened->store, opened->info.term,
                                                        tenure::UnixMs(opened->info.saved_at_ms));
  auto reopened = tenure::state::OpenBackup(again);
  FUZZ_CHECK(reopened.ok());
  FUZZ_CHECK(reopened->store.Digest() == opened->store.Digest());
  FUZZ_CHECK(reopened->info.keys == opened->info.keys);
  return 0;
}
