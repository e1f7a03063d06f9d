// Fuzz target: what a ZooKeeper client sends (decision 0056): the first
// byte picks 0 a request frame of an established session, 1 the connect
// request that opens a connection, 2 a connection's bytes (frames split by
// their lengths, each decoded), 3 a path (the rules of state/zk_path.h: a valid
// path's parent is valid too, and its name is not empty). Decoding either refuses the bytes with
// a reason (an unreadable header: nothing to answer; else an error code
// for the answer) or yields a request that encodes to bytes decoding to
// the same request, which encode to themselves (nulls are written as
// empty, so those bytes are never longer than the input).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "state/zk_path.h"
#include "zk/framing.h"
#include "zk/jute.h"
#include "zk/records.h"
#include "zk/request.h"

namespace {

using tenure::zk::DecodedRequest;
using tenure::zk::ErrorCode;

void RequestFrame(std::string_view bytes) {
  std::string why;
  std::optional<DecodedRequest> decoded = tenure::zk::DecodeRequest(bytes, &why);
  if (!decoded.has_value()) {
    FUZZ_CHECK(!why.empty());
    FUZZ_CHECK(bytes.size() < 8);
    return;
  }
  if (decoded->error != ErrorCode::kOk) {
    FUZZ_CHECK(!decoded->why.empty());
    FUZZ_CHECK(decoded->body == tenure::zk::RequestBody(tenure::zk::NoBody{}));
    return;
  }
  const std::string encoded = tenure::zk::EncodeRequest(decoded->header, decoded->body);
  FUZZ_CHECK(encoded.size() <= bytes.size());  // bytes after a body are ignored, never added
  std::optional<DecodedRequest> again = tenure::zk::DecodeRequest(encoded, &why);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->error == ErrorCode::kOk);
  FUZZ_CHECK(again->header == decoded->header);
  FUZZ_CHECK(again->body == decoded->body);
  FUZZ_CHECK(tenure::zk::EncodeRequest(again->header, again->body) == encoded);
}

void ConnectRequest(std::string_view bytes) {
  std::string why;
  std::optional<tenure::zk::ConnectRequest> request = tenure::zk::DecodeConnectRequest(bytes, &why);
  if (!request.has_value()) {
    FUZZ_CHECK(why.rfind("connect request: jute: ", 0) == 0);
    return;
  }
  // A null password (-1) reads as empty and is written as empty, bytes
  // after readOnly are ignored: the same record, never more bytes.
  const std::string encoded = tenure::zk::EncodeRecord(*request);
  FUZZ_CHECK(encoded.size() <= bytes.size());
  FUZZ_CHECK(tenure::zk::DecodeRecord<tenure::zk::ConnectRequest>(encoded) == request);
  FUZZ_CHECK(tenure::zk::EncodeRecord(*request) == encoded);
}

void Stream(std::string_view bytes) {
  tenure::zk::FrameSplitter splitter;
  std::string frame;
  // Fed in pieces of a size the input picks, as reads would bring them.
  const std::size_t piece = bytes.empty() ? 1 : 1 + static_cast<std::uint8_t>(bytes[0]) % 64;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    splitter.Feed(bytes.substr(at, piece));
    while (splitter.Next(&frame)) {
      FUZZ_CHECK(frame.size() <= tenure::zk::kFrameBytesMax);
      RequestFrame(frame);
    }
    FUZZ_CHECK(splitter.buffered() <= bytes.size());
  }
  if (!splitter.error().empty()) FUZZ_CHECK(splitter.buffered() == 0);
}

void Path(std::string_view path) {
  if (!tenure::state::ZkPathError(path).empty() || path == "/") return;
  FUZZ_CHECK(tenure::state::ZkPathError(tenure::state::ZkParentOf(path)).empty());
  FUZZ_CHECK(!tenure::state::ZkNameOf(path).empty());
  FUZZ_CHECK(tenure::state::ZkParentOf(path).size() < path.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      RequestFrame(bytes);
      break;
    case 1:
      ConnectRequest(bytes);
      break;
    case 2:
      Stream(bytes);
      break;
    default:
      Path(bytes);
      break;
  }
  return 0;
}
