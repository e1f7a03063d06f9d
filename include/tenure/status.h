// Status and Result<T>: how libtenure, and every layer of tenure itself,
// reports expected failures. One type for both: the SDK hands back the
// Statuses its internals produce.
//
// A small closed set of codes; the message names the component and the value
// ("kv acquire: session \"9f1c...\" does not exist"). OK costs nothing.
// Broken requirements are not Statuses: Result::value() on an error, or an
// error Status built with Code::kOk, prints the place and aborts.
// Pure value types, usable from any thread. Standard C++17 only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tenure/export.h"

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
  kInternal,          // server-side validation errors Consul reports as 500
  kPermissionDenied,  // the caller's token does not allow it (HTTP 403, Consul's texts)
};

TENURE_EXPORT std::string_view CodeName(Code code);

namespace detail {
// Prints the broken requirement with its place and aborts.
[[noreturn]] TENURE_EXPORT void RequireFailed(const char* condition, const char* file, int line);
}  // namespace detail

class [[nodiscard]] TENURE_EXPORT Status {
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
  static Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }

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
    if (status_.ok()) detail::RequireFailed("!status_.ok()", __FILE__, __LINE__);
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    Require();
    return *value_;
  }
  const T& value() const& {
    Require();
    return *value_;
  }
  T&& value() && {
    Require();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void Require() const {
    if (!ok()) detail::RequireFailed("ok()", __FILE__, __LINE__);
  }

  std::optional<T> value_;
  Status status_;
};

}  // namespace tenure
