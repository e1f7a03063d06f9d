// Fuzz target: a protobuf message as an etcd client sends it (decision 0048;
// its first byte picks which request). Decoding either refuses it with a
// reason or yields a message that encodes to bytes decoding to the same
// message (ours are canonical, so those encode to themselves); a txn that
// decodes goes through the API's checks (state/etcd_check.h) as a request
// would.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "etcd/messages.h"
#include "etcd/proto_codec.h"
#include "fuzz_check.h"
#include "state/etcd_check.h"

namespace {

template <typename M>
void RoundTrip(std::string_view bytes) {
  M m;
  const std::string error = tenure::etcd::DecodeProto(bytes, &m);
  if (!error.empty()) return;
  std::string encoded;
  tenure::etcd::EncodeProto(m, &encoded);
  M again;
  FUZZ_CHECK(tenure::etcd::DecodeProto(encoded, &again).empty());
  FUZZ_CHECK(again == m);
  std::string twice;
  tenure::etcd::EncodeProto(again, &twice);
  FUZZ_CHECK(twice == encoded);
  if constexpr (std::is_same_v<M, tenure::state::EtcdTxnRequest>) {
    (void)tenure::state::CheckEtcdTxn(m);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace tenure;
  switch (data[0] % 6) {
    case 0:
      RoundTrip<state::EtcdTxnRequest>(bytes);
      break;
    case 1:
      RoundTrip<state::EtcdRangeRequest>(bytes);
      break;
    case 2:
      RoundTrip<state::EtcdPutRequest>(bytes);
      break;
    case 3:
      RoundTrip<state::EtcdDeleteRangeRequest>(bytes);
      break;
    case 4:
      RoundTrip<etcd::CompactionRequest>(bytes);
      break;
    default:
      RoundTrip<etcd::TxnResponse>(bytes);
      break;
  }
  return 0;
}
