// Fuzz target: a message as an etcd client sends it, in protobuf or in the
// gateway's JSON (decision 0048; the first byte picks which request, and
// which coding: 0-5 protobuf, 6-11 JSON, 12 a gRPC stream of txns, 13 a
// gateway keep-alive body of JSON requests; 4 and 10 try a compaction and a
// watch request). Decoding either refuses it with
// a reason or yields a message that encodes to bytes decoding to the same message (ours are
// canonical, so those encode to themselves), and whose counted size (ProtoSize) is its
// protobuf encoding's; a txn that decodes goes through the API's checks
// (state/etcd_check.h) as a request would.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "etcd/gateway.h"
#include "etcd/grpc_wire.h"
#include "etcd/json_codec.h"
#include "etcd/messages.h"
#include "etcd/messages_services.h"
#include "etcd/proto_codec.h"
#include "fuzz_check.h"
#include "state/etcd_check.h"

namespace {

struct Proto {
  template <typename M>
  static std::string Decode(std::string_view in, M* m) {
    return tenure::etcd::DecodeProto(in, m);
  }
  template <typename M>
  static void Encode(const M& m, std::string* out) {
    tenure::etcd::EncodeProto(m, out);
  }
};
struct Json {
  template <typename M>
  static std::string Decode(std::string_view in, M* m) {
    return tenure::etcd::DecodeJson(in, m);
  }
  template <typename M>
  static void Encode(const M& m, std::string* out) {
    tenure::etcd::EncodeJson(m, out);
  }
};

template <typename M, typename Coding>
void RoundTrip(std::string_view bytes) {
  M m;
  const std::string error = Coding::Decode(bytes, &m);
  if (!error.empty()) return;
  std::string encoded;
  Coding::Encode(m, &encoded);
  M again;
  FUZZ_CHECK(Coding::Decode(encoded, &again).empty());
  FUZZ_CHECK(again == m);
  std::string twice;
  Coding::Encode(again, &twice);
  FUZZ_CHECK(twice == encoded);
  // etcd's request-size rule counts what the protobuf encoding writes.
  std::string proto;
  tenure::etcd::EncodeProto(m, &proto);
  FUZZ_CHECK(tenure::etcd::ProtoSize(m) == proto.size());
  if constexpr (std::is_same_v<M, tenure::state::EtcdTxnRequest>) {
    (void)tenure::state::CheckEtcdTxn(m);
  }
}

template <typename Coding>
void Pick(int which, std::string_view bytes) {
  using namespace tenure;
  switch (which) {
    case 0:
      RoundTrip<state::EtcdTxnRequest, Coding>(bytes);
      break;
    case 1:
      RoundTrip<state::EtcdRangeRequest, Coding>(bytes);
      break;
    case 2:
      RoundTrip<state::EtcdPutRequest, Coding>(bytes);
      break;
    case 3:
      RoundTrip<state::EtcdDeleteRangeRequest, Coding>(bytes);
      break;
    case 4:
      RoundTrip<etcd::CompactionRequest, Coding>(bytes);
      RoundTrip<etcd::WatchRequest, Coding>(bytes);
      break;
    default:
      // The answers a follower decodes from the leader (etcd/leader_relay.h).
      RoundTrip<etcd::TxnResponse, Coding>(bytes);
      RoundTrip<etcd::RangeResponse, Coding>(bytes);
      RoundTrip<etcd::PutResponse, Coding>(bytes);
      RoundTrip<etcd::DeleteRangeResponse, Coding>(bytes);
      RoundTrip<etcd::CompactionResponse, Coding>(bytes);
      RoundTrip<etcd::LeaseGrantResponse, Coding>(bytes);
      RoundTrip<etcd::LeaseRevokeResponse, Coding>(bytes);
      RoundTrip<etcd::LeaseKeepAliveResponse, Coding>(bytes);
      RoundTrip<etcd::LeaseTimeToLiveResponse, Coding>(bytes);
      break;
  }
}

// A gRPC stream's DATA in reads of 1 to 64 bytes (each read's length is
// the byte before it): every whole message is decoded as a txn; the
// splitter never holds more than one message's bytes past its bound.
void Stream(std::string_view bytes) {
  tenure::etcd::GrpcMessageSplitter splitter(4096);
  std::string message;
  while (!bytes.empty()) {
    const std::size_t n =
        std::min<std::size_t>(bytes.size() - 1, 1 + static_cast<unsigned char>(bytes.front()) % 64);
    splitter.Feed(bytes.substr(1, n));
    bytes.remove_prefix(1 + n);
    while (splitter.Next(&message)) {
      FUZZ_CHECK(message.size() <= 4096);
      RoundTrip<tenure::state::EtcdTxnRequest, Proto>(message);
    }
    if (!splitter.error().ok()) {
      FUZZ_CHECK(!splitter.partial());
      return;
    }
  }
}

// A keep-alive body as the gateway reads it: split into at most 16 objects
// (or refused whole), each a lease request that round-trips.
void KeepAliveBody(std::string_view bytes) {
  std::string error;
  const std::vector<std::string_view> values = tenure::etcd::SplitJsonObjects(bytes, 16, &error);
  FUZZ_CHECK(values.size() <= 16);
  if (!error.empty()) FUZZ_CHECK(values.empty());
  for (std::string_view value : values) {
    FUZZ_CHECK(!value.empty() && value.front() == '{' && value.back() == '}');
    RoundTrip<tenure::etcd::LeaseIdRequest, Json>(value);
    RoundTrip<tenure::etcd::LeaseGrantRequest, Json>(value);
    RoundTrip<tenure::etcd::LeaseTimeToLiveRequest, Json>(value);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int mode = data[0] % 14;
  if (mode < 6) {
    Pick<Proto>(mode, bytes);
  } else if (mode < 12) {
    Pick<Json>(mode - 6, bytes);
  } else if (mode == 12) {
    Stream(bytes);
  } else {
    KeepAliveBody(bytes);
  }
  return 0;
}
