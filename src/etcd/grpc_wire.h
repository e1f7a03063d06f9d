// gRPC's part of the wire that is not HTTP/2 (decision 0048 section 5): the
// 5-byte prefix of each message, the `grpc-timeout` header, the
// percent-encoding of `grpc-message`, and the gateway's mapping of gRPC
// codes to HTTP statuses and its error bodies (etcd 3.4's grpc-gateway).
// Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/etcd_texts.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;

// etcd's largest request (--max-request-bytes, 1.5 MiB) plus gRPC's 512 KiB
// of overhead: what etcd's server lets a message be.
inline constexpr std::size_t kMaxGrpcMessageBytes = 1536 * 1024 + 512 * 1024;
// grpc-go's answer to a message past `max` bytes; `size` is its bytes as
// the text gives them.
EtcdError MessageLargerThanMax(std::string_view size, std::size_t max = kMaxGrpcMessageBytes);

// Appends `message` with its prefix: not compressed, 4-byte big-endian length.
void AppendGrpcMessage(std::string* out, std::string_view message);
// The prefix's bytes; SetGrpcPrefix fills them in `framed` (the prefix,
// then the message written after it) for the message that follows.
inline constexpr std::size_t kGrpcPrefixBytes = 5;
void SetGrpcPrefix(std::string* framed);

// Splits a stream's DATA into messages as they complete. Holds at most one
// message's bytes: a prefix announcing more than `max_bytes` is refused
// before any of it is kept, as grpc-go's texts say.
class GrpcMessageSplitter {
 public:
  explicit GrpcMessageSplitter(std::size_t max_bytes = kMaxGrpcMessageBytes)
      : max_bytes_(max_bytes) {}
  // Adds bytes of the stream; then Next() until it answers false.
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole message, if there is one. After an error, always false.
  bool Next(std::string* message);
  // Set once the stream broke gRPC's rules (a compressed message, one too
  // large); the stream answers it and ends.
  const EtcdError& error() const { return error_; }
  // Whether a message was started and not finished (at the stream's end:
  // grpc-go's "unexpected EOF", Internal).
  bool partial() const { return !buffer_.empty(); }

 private:
  std::size_t max_bytes_;
  std::string buffer_;
  EtcdError error_;
};

// `grpc-timeout` (1 to 8 digits and a unit of H, M, S, m, u or n) in
// nanoseconds; nullopt when malformed.
std::optional<std::int64_t> ParseGrpcTimeout(std::string_view text);

// A call whose grpc-encoding is not identity, as grpc-go refuses it.
inline EtcdError UnsupportedEncoding(std::string_view encoding) {
  return etcd_texts::Error(
      GrpcCode::kUnimplemented,
      "grpc: Decompressor is not installed for grpc-encoding \"" + std::string(encoding) + "\"");
}

// `grpc-message`'s value: the bytes outside 0x20-0x7e, and '%', as %XX.
std::string PercentEncodeGrpcMessage(std::string_view message);
std::string PercentDecodeGrpcMessage(std::string_view text);

// The gateway's HTTP status for a gRPC code (grpc-gateway's
// HTTPStatusFromCode), and its reason phrase.
int HttpStatusFromGrpcCode(GrpcCode code);
std::string_view HttpReasonPhrase(int status);

// The gateway's error answers: a unary call's body, and a stream's error
// line ({"error": {...}}), as etcd 3.4's gateway writes them.
std::string GatewayErrorBody(const EtcdError& error);
std::string GatewayStreamError(const EtcdError& error);

}  // namespace tenure::etcd
