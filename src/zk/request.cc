#include "zk/request.h"

#include <fmt/format.h>

#include "zk/jute.h"

namespace tenure::zk {
namespace {

template <typename R>
R ReadBody(JuteReader& reader) {
  R record{};
  Fields(reader, record);
  return record;
}

// One op of a multi (writes) or a multiRead (reads) by its type, as
// ZooKeeper's MultiOperationRecord reads it; false for any other type.
bool ReadMultiOp(JuteReader& reader, bool read_only, MultiOp* op) {
  switch (static_cast<OpCode>(op->type)) {
    case OpCode::kCreate:
    case OpCode::kCreate2:
    case OpCode::kCreateContainer:
      if (read_only) return false;
      op->op = ReadBody<CreateRequest>(reader);
      return true;
    case OpCode::kCreateTtl:
      if (read_only) return false;
      op->op = ReadBody<CreateTtlRequest>(reader);
      return true;
    case OpCode::kDelete:
    case OpCode::kCheck:
      if (read_only) return false;
      op->op = ReadBody<PathVersionRequest>(reader);
      return true;
    case OpCode::kSetData:
      if (read_only) return false;
      op->op = ReadBody<SetDataRequest>(reader);
      return true;
    case OpCode::kGetChildren:
    case OpCode::kGetData:
      if (!read_only) return false;
      op->op = ReadBody<PathWatchRequest>(reader);
      return true;
    default:
      return false;
  }
}

// Reads a multi's ops up to the closing header (done = true).
MultiRequest ReadMulti(JuteReader& reader, bool read_only, ErrorCode* limit_error,
                       std::string* why) {
  MultiRequest multi;
  for (;;) {
    MultiHeader header;
    Fields(reader, header);
    if (reader.failed() || header.done) break;
    if (multi.ops.size() == kMultiOpsMax) {
      *limit_error = ErrorCode::kBadArguments;
      *why = fmt::format("multi: more than {} ops", kMultiOpsMax);
      break;
    }
    MultiOp op;
    op.type = header.type;
    if (!ReadMultiOp(reader, read_only, &op)) {
      reader.Fail("multi op type",
                  fmt::format("{} ({}) cannot be in a {}", header.type, OpName(header.type),
                              read_only ? "multiRead" : "multi"));
    }
    if (reader.failed()) break;
    multi.ops.push_back(std::move(op));
  }
  return multi;
}

// The body of `type`; false if this decoder does not know the op code.
bool ReadRequestBody(std::int32_t type, JuteReader& reader, RequestBody* body,
                     ErrorCode* limit_error, std::string* why) {
  switch (static_cast<OpCode>(type)) {
    case OpCode::kPing:
    case OpCode::kCloseSession:
    case OpCode::kWhoAmI:
      *body = NoBody{};
      return true;
    case OpCode::kCreate:
    case OpCode::kCreate2:
    case OpCode::kCreateContainer:
      *body = ReadBody<CreateRequest>(reader);
      return true;
    case OpCode::kCreateTtl:
      *body = ReadBody<CreateTtlRequest>(reader);
      return true;
    case OpCode::kDelete:
    case OpCode::kCheck:
      *body = ReadBody<PathVersionRequest>(reader);
      return true;
    case OpCode::kExists:
    case OpCode::kGetData:
    case OpCode::kGetChildren:
    case OpCode::kGetChildren2:
      *body = ReadBody<PathWatchRequest>(reader);
      return true;
    case OpCode::kSync:
    case OpCode::kGetAcl:
    case OpCode::kGetEphemerals:
    case OpCode::kGetAllChildrenNumber:
    case OpCode::kDeleteContainer:
      *body = ReadBody<PathRecord>(reader);
      return true;
    case OpCode::kSetData:
      *body = ReadBody<SetDataRequest>(reader);
      return true;
    case OpCode::kSetAcl:
      *body = ReadBody<SetAclRequest>(reader);
      return true;
    case OpCode::kCheckWatches:
    case OpCode::kRemoveWatches:
    case OpCode::kAddWatch:
      *body = ReadBody<PathModeRequest>(reader);
      return true;
    case OpCode::kMulti:
    case OpCode::kMultiRead:
      *body = ReadMulti(reader, type == static_cast<std::int32_t>(OpCode::kMultiRead), limit_error,
                        why);
      return true;
    case OpCode::kAuth:
      *body = ReadBody<AuthPacket>(reader);
      return true;
    case OpCode::kSetWatches:
      *body = ReadBody<SetWatches>(reader);
      return true;
    case OpCode::kSetWatches2:
      *body = ReadBody<SetWatches2>(reader);
      return true;
    case OpCode::kReconfig:
      *body = ReadBody<ReconfigRequest>(reader);
      return true;
    default:
      return false;
  }
}

struct BodyWriter {
  JuteWriter& writer;
  void operator()(const NoBody&) const {}
  void operator()(const MultiRequest& multi) const {
    for (const MultiOp& op : multi.ops) {
      writer.Record("multi", MultiHeader{op.type, false, -1});
      std::visit([&](const auto& record) { writer.Record("op", record); }, op.op);
    }
    writer.Record("multi", MultiHeader{-1, true, -1});
  }
  template <typename R>
  void operator()(const R& record) const {
    writer.Record("body", record);
  }
};

}  // namespace

std::optional<DecodedRequest> DecodeRequest(std::string_view frame, std::string* why) {
  JuteReader reader(frame);
  DecodedRequest decoded;
  Fields(reader, decoded.header);
  if (reader.failed()) {
    *why = fmt::format("request header: {}", reader.error());
    return std::nullopt;
  }
  const std::int32_t type = decoded.header.type;
  if (type == static_cast<std::int32_t>(OpCode::kSasl)) {
    decoded.error = ErrorCode::kUnimplemented;
    decoded.why = "sasl: tenure has no SASL; present a token with auth (docs/zookeeper-compat.md)";
    return decoded;
  }
  if (type == static_cast<std::int32_t>(OpCode::kCreateSession)) {
    decoded.error = ErrorCode::kMarshallingError;
    decoded.why = "createSession: sent by servers, not clients";
    return decoded;
  }
  ErrorCode limit_error = ErrorCode::kOk;
  if (!ReadRequestBody(type, reader, &decoded.body, &limit_error, &decoded.why)) {
    decoded.error = ErrorCode::kUnimplemented;
    decoded.why = fmt::format("op {} is not a ZooKeeper operation", type);
    decoded.body = NoBody{};
    decoded.ends_connection = true;
    return decoded;
  }
  if (limit_error != ErrorCode::kOk) {
    decoded.error = limit_error;
    decoded.body = NoBody{};
    return decoded;
  }
  if (reader.failed()) {
    decoded.error = ErrorCode::kMarshallingError;
    decoded.why = fmt::format("{} request: {}", OpName(type), reader.error());
    decoded.body = NoBody{};
    decoded.ends_connection = type == static_cast<std::int32_t>(OpCode::kAuth);
  }
  return decoded;
}

std::optional<ConnectRequest> DecodeConnectRequest(std::string_view frame, std::string* why) {
  JuteReader reader(frame);
  ConnectRequest request;
  Fields(reader, request);
  if (reader.failed()) {
    *why = fmt::format("connect request: {}", reader.error());
    return std::nullopt;
  }
  return request;
}

std::string EncodeRequest(const RequestHeader& header, const RequestBody& body) {
  std::string out;
  JuteWriter writer(&out);
  writer.Record("header", header);
  std::visit(BodyWriter{writer}, body);
  return out;
}

std::string EncodeReply(const ReplyHeader& header) { return EncodeRecord(header); }

std::int32_t ReplyError(std::string_view reply) {
  if (reply.size() < 16) return 0;
  const auto byte = [reply](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(reply[i]));
  };
  return static_cast<std::int32_t>(byte(12) << 24 | byte(13) << 16 | byte(14) << 8 | byte(15));
}

std::string EncodeMultiReply(const ReplyHeader& header, const std::vector<MultiResult>& results) {
  std::string out;
  JuteWriter writer(&out);
  writer.Record("header", header);
  for (const MultiResult& result : results) {
    const bool failed = result.type == static_cast<std::int32_t>(OpCode::kError);
    writer.Record("multi", MultiHeader{result.type, false, failed ? result.err : 0});
    if (failed) {
      writer.Record("error", ErrorResponse{result.err});
    } else {
      std::visit(BodyWriter{writer}, result.result);
    }
  }
  writer.Record("multi", MultiHeader{-1, true, -1});
  return out;
}

std::string EncodeNotification(const WatcherEvent& event) {
  std::string out;
  JuteWriter writer(&out);
  writer.Record("header", ReplyHeader{kNotificationXid, -1, 0});
  writer.Record("event", event);
  return out;
}

std::string EncodeConnectResponse(const ConnectResponse& response) {
  return EncodeRecord(response);
}

}  // namespace tenure::zk
