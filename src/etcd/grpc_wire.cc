#include "etcd/grpc_wire.h"

#include "common/json_string.h"

namespace tenure::etcd {

namespace {

// The prefix at `at` for a message of `size` bytes: not compressed, then
// the 4-byte big-endian length.
void PutGrpcPrefix(char* at, std::size_t size) {
  const auto n = static_cast<std::uint32_t>(size);
  at[0] = '\0';
  for (std::size_t i = 0; i < 4; ++i) at[1 + i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
}

}  // namespace

EtcdError MessageLargerThanMax(std::string_view size, std::size_t max) {
  return etcd_texts::Error(GrpcCode::kResourceExhausted,
                           "grpc: received message larger than max (" + std::string(size) +
                               " vs. " + std::to_string(max) + ")");
}

void AppendGrpcMessage(std::string* out, std::string_view message) {
  const std::size_t at = out->size();
  out->append(kGrpcPrefixBytes, '\0');
  out->append(message);
  PutGrpcPrefix(out->data() + at, message.size());
}

void SetGrpcPrefix(std::string* framed) {
  PutGrpcPrefix(framed->data(), framed->size() - kGrpcPrefixBytes);
}

bool GrpcMessageSplitter::Next(std::string* message) {
  if (!error_.ok() || buffer_.size() < 5) return false;
  const auto flag = static_cast<std::uint8_t>(buffer_[0]);
  std::uint64_t n = 0;
  for (std::size_t i = 1; i < 5; ++i) n = (n << 8) | static_cast<std::uint8_t>(buffer_[i]);
  if (flag == 1) {
    // No compression is ever negotiated (a grpc-encoding other than
    // identity is refused with the call), so grpc-go's text for this.
    error_ = etcd_texts::Error(GrpcCode::kInternal,
                               "grpc: compressed flag set with identity or empty encoding");
  } else if (flag > 1) {
    error_ = etcd_texts::Error(GrpcCode::kInternal,
                               "grpc: received unexpected payload format " + std::to_string(flag));
  } else if (n > max_bytes_) {
    error_ = MessageLargerThanMax(std::to_string(n), max_bytes_);
  }
  if (!error_.ok()) {
    buffer_.clear();
    return false;
  }
  if (buffer_.size() - 5 < n) return false;
  message->assign(buffer_, 5, static_cast<std::size_t>(n));
  buffer_.erase(0, 5 + static_cast<std::size_t>(n));
  return true;
}

std::optional<std::int64_t> ParseGrpcTimeout(std::string_view text) {
  if (text.size() < 2 || text.size() > 9) return std::nullopt;
  std::int64_t value = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  // 8 digits of hours is past int64 nanoseconds: such deadlines are "never".
  constexpr std::int64_t kMax = INT64_MAX;
  auto scaled = [&](std::int64_t unit) -> std::int64_t {
    return value > kMax / unit ? kMax : value * unit;
  };
  switch (text.back()) {
    case 'H':
      return scaled(3'600'000'000'000);
    case 'M':
      return scaled(60'000'000'000);
    case 'S':
      return scaled(1'000'000'000);
    case 'm':
      return scaled(1'000'000);
    case 'u':
      return scaled(1'000);
    case 'n':
      return value;
    default:
      return std::nullopt;
  }
}

std::string PercentEncodeGrpcMessage(std::string_view message) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : message) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b <= 0x7e && b != '%') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
    }
  }
  return out;
}

std::string PercentDecodeGrpcMessage(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);  // grpc-go keeps a malformed escape as it is
    }
  }
  return out;
}

int HttpStatusFromGrpcCode(GrpcCode code) {
  switch (code) {
    case GrpcCode::kOk:
      return 200;
    case GrpcCode::kCancelled:
      return 408;
    case GrpcCode::kUnknown:
      return 500;
    case GrpcCode::kInvalidArgument:
      return 400;
    case GrpcCode::kDeadlineExceeded:
      return 504;
    case GrpcCode::kNotFound:
      return 404;
    case GrpcCode::kAlreadyExists:
      return 409;
    case GrpcCode::kPermissionDenied:
      return 403;
    case GrpcCode::kUnauthenticated:
      return 401;
    case GrpcCode::kResourceExhausted:
      return 429;
    case GrpcCode::kFailedPrecondition:
      return 412;
    case GrpcCode::kAborted:
      return 409;
    case GrpcCode::kOutOfRange:
      return 400;
    case GrpcCode::kUnimplemented:
      return 501;
    case GrpcCode::kInternal:
      return 500;
    case GrpcCode::kUnavailable:
      return 503;
    case GrpcCode::kDataLoss:
      return 500;
  }
  return 500;
}

std::string_view HttpReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 412:
      return "Precondition Failed";
    case 429:
      return "Too Many Requests";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Internal Server Error";
  }
}

std::string GatewayErrorBody(const EtcdError& error) {
  std::string out = "{\"error\":";
  json::AppendString(&out, error.message);
  out += ",\"message\":";
  json::AppendString(&out, error.message);
  out += ",\"code\":" + std::to_string(static_cast<int>(error.code)) + "}";
  return out;
}

std::string GatewayStreamError(const EtcdError& error) {
  const int status = HttpStatusFromGrpcCode(error.code);
  std::string out = "{\"error\":{\"grpc_code\":" + std::to_string(static_cast<int>(error.code)) +
                    ",\"http_code\":" + std::to_string(status) + ",\"message\":";
  json::AppendString(&out, error.message);
  out += ",\"http_status\":";
  json::AppendString(&out, HttpReasonPhrase(status));
  out += "}}";
  return out;
}

}  // namespace tenure::etcd
