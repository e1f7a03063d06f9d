// One ZooKeeper request frame of an established session, decoded: its
// header and, by its op code, its body. And the answer frames a server
// writes: a reply (header and body), a watch notification, the connect
// answer. Frames here exclude the 4-byte length prefix (zk/framing.h
// splits a byte stream into frames). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "zk/jute.h"
#include "zk/protocol.h"
#include "zk/records.h"

namespace tenure::zk {

// One op of a multi (create*, delete, setData, check) or multiRead
// (getChildren, getData).
struct MultiOp {
  std::int32_t type = 0;  // OpCode
  std::variant<CreateRequest, CreateTtlRequest, PathVersionRequest, SetDataRequest,
               PathWatchRequest>
      op;
  bool operator==(const MultiOp&) const = default;
};

struct MultiRequest {
  std::vector<MultiOp> ops;
  bool operator==(const MultiRequest&) const = default;
};

// A request with no body: ping, closeSession, whoAmI.
struct NoBody {
  bool operator==(const NoBody&) const = default;
};

using RequestBody =
    std::variant<NoBody, CreateRequest, CreateTtlRequest, PathVersionRequest, PathWatchRequest,
                 PathRecord, SetDataRequest, SetAclRequest, PathModeRequest, MultiRequest,
                 AuthPacket, SetWatches, SetWatches2, ReconfigRequest>;

struct DecodedRequest {
  RequestHeader header;
  RequestBody body;
  // kOk; kUnimplemented for an op code ZooKeeper does not define (0 and -1
  // included) and for sasl (tenure has no SASL); kMarshallingError for a
  // body that does not parse, and for createSession, which only servers
  // send; kBadArguments for a multi past kMultiOpsMax. With an error the
  // body is NoBody and `why` says what was wrong; the header is still good
  // for the answer's xid.
  ErrorCode error = ErrorCode::kOk;
  std::string why;
  // After the answer the connection ends, as ZooKeeper's server ends it:
  // for an op code it does not define, and for an auth packet that does
  // not parse (ZooKeeper closes without an answer; the answer is kept here
  // so the client reads why).
  bool ends_connection = false;
};

// Decodes a request frame. nullopt (and *why) if the frame is shorter than
// its header: nothing can be answered, the connection ends. Bytes after a
// body are ignored, as ZooKeeper's server ignores them.
std::optional<DecodedRequest> DecodeRequest(std::string_view frame, std::string* why);

// The body's bytes as a client writes them (for tests, fuzzing and tenure's
// own clients): DecodeRequest(EncodeRequest(r)) == r for any decodable r.
std::string EncodeRequest(const RequestHeader& header, const RequestBody& body);

// A reply frame: the header, then the body's record unless err is set
// (ZooKeeper writes no body with an error, except a multi's per-op
// results, which are its body).
// Room for most replies: a header (16 bytes) and a Stat (68), or a short
// path with them.
inline constexpr std::size_t kReplyReserve = 128;
template <typename Body>
std::string EncodeReply(const ReplyHeader& header, const Body& body) {
  std::string out;
  out.reserve(kReplyReserve);  // a header and a Stat, without growing
  JuteWriter writer(&out);
  writer.Record("header", header);
  if (header.err == 0) writer.Record("body", body);
  return out;
}
std::string EncodeReply(const ReplyHeader& header);

// The err field of a reply frame (0 for a frame shorter than its header).
std::int32_t ReplyError(std::string_view reply);

// A multi's answer body: for each op a MultiHeader (its type, or -1 with an
// ErrorResponse when it failed or did not run) and its result record; then
// the closing header {-1, true, -1}.
struct MultiResult {
  std::int32_t type = 0;  // the op's OpCode, or kError
  std::int32_t err = 0;   // with kError
  std::variant<NoBody, PathRecord, Create2Response, StatRecord, GetDataResponse, ChildrenResponse>
      result;
  bool operator==(const MultiResult&) const = default;
};
std::string EncodeMultiReply(const ReplyHeader& header, const std::vector<MultiResult>& results);

// A watch notification: xid -1, zxid -1 (ZooKeeper's server never puts a
// zxid there, and the C client would take a positive one as the last zxid
// it saw), err 0, then the event.
std::string EncodeNotification(const WatcherEvent& event);

// A connection's first frame. Bytes after readOnly are ignored, as
// ZooKeeper's server ignores them.
std::optional<ConnectRequest> DecodeConnectRequest(std::string_view frame, std::string* why);

// The answer to a ConnectRequest (no reply header).
std::string EncodeConnectResponse(const ConnectResponse& response);

}  // namespace tenure::zk
