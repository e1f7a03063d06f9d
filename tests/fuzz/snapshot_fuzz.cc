// Fuzz target: a snapshot file or an InstallSnapshot's data. With the first
// byte odd the harness appends the right checksum, so the fuzzer explores
// the body decoder rather than the CRC; even, the bytes go in as they are.
// A snapshot that decodes re-encodes to one that decodes to the same state.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/coding.h"
#include "common/crc32.h"
#include "fuzz_check.h"
#include "state/store.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) tenure::ByteWriter(&bytes).PutFixed32(tenure::Crc32(bytes));
  (void)tenure::state::Store::CheckSnapshotBytes(bytes);
  auto store = tenure::state::Store::DecodeSnapshot(bytes);
  if (!store.ok()) return 0;
  FUZZ_CHECK(store->Validate().ok());
  std::string again;
  store->EncodeSnapshot(&again);
  auto decoded = tenure::state::Store::DecodeSnapshot(again);
  FUZZ_CHECK(decoded.ok());
  FUZZ_CHECK(decoded->Digest() == store->Digest());
  return 0;
}
