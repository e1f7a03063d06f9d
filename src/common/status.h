// Status and Result<T>: how every layer reports expected failures.
//
// A small closed set of codes; the message names the component and the value
// ("kv acquire: session \"9f1c...\" does not exist"). OK costs nothing. Broken
// invariants are not Statuses: they are TENURE_ASSERTs (common/assert.h).
// Pure value types, usable from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/assert.h"

namespace tenure {

enum class Code : unsigned char {
  kOk = 0,
  kInvalidArgument,     // the request is malformed (HTTP 400)
  kNotFound,            // the thing asked for does not exist (HTTP 404)
  kFailedPrecondition,  // a domain check failed (lost CAS, lock held) when it is an error
  kConflict,            // a transaction rolled back (HTTP 409)
  kTooLarge,            // a limit was exceeded (HTTP 413)
  kNotLeader,           // this server cannot serve the request now (HTTP 500, Consul style)
  kUnavailable,         // transient: retry (HTTP 500)
  kTimeout,
  kIoError,
  kCorruption,
  kInternal,  // server-side validation errors Consul reports as 500
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  static Status Conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
  static Status TooLarge(std::string m) { return {Code::kTooLarge, std::move(m)}; }
  static Status NotLeader(std::string m) { return {Code::kNotLeader, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Timeout(std::string m) { return {Code::kTimeout, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  // The message without the code name: this is what reaches HTTP bodies.
  std::string_view message() const { return rep_ ? std::string_view(rep_->message) : ""; }
  // "context: message", same code.
  Status Annotate(std::string_view context) const;
  // "invalid argument: message", for logs.
  std::string ToString() const;

 private:
  struct Rep {
    Code code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

// Holds a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    TENURE_ASSERT(!status_.ok());
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    TENURE_ASSERT(ok());
    return *value_;
  }
  const T& value() const& {
    TENURE_ASSERT(ok());
    return *value_;
  }
  T&& value() && {
    TENURE_ASSERT(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace tenure

#define TENURE_CONCAT_INNER(a, b) a##b
#define TENURE_CONCAT(a, b) TENURE_CONCAT_INNER(a, b)

#define TENURE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::tenure::Status tenure_status_ = (expr);        \
    if (!tenure_status_.ok()) return tenure_status_; \
  } while (0)

#define TENURE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define TENURE_ASSIGN_OR_RETURN(lhs, expr) \
  TENURE_ASSIGN_OR_RETURN_IMPL(TENURE_CONCAT(tenure_result_, __LINE__), lhs, expr)
