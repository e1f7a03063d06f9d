#include "common/status.h"

namespace tenure {

namespace detail {
void RequireFailed(const char* condition, const char* file, int line) {
  AssertFail(condition, file, line);
}
}  // namespace detail

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kNotFound:
      return "not found";
    case Code::kFailedPrecondition:
      return "failed precondition";
    case Code::kConflict:
      return "conflict";
    case Code::kTooLarge:
      return "too large";
    case Code::kNotLeader:
      return "not leader";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kTimeout:
      return "timeout";
    case Code::kIoError:
      return "io error";
    case Code::kCorruption:
      return "corruption";
    case Code::kInternal:
      return "internal";
    case Code::kPermissionDenied:
      return "permission denied";
  }
  return "unknown";
}

Status::Status(Code code, std::string message) {
  TENURE_ASSERT(code != Code::kOk);
  rep_ = std::make_unique<Rep>(Rep{code, std::move(message)});
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
  return *this;
}

Status Status::Annotate(std::string_view context) const {
  if (ok()) return Status();
  std::string message(context);
  message += ": ";
  message += rep_->message;
  return Status(rep_->code, std::move(message));
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(CodeName(rep_->code));
  out += ": ";
  out += rep_->message;
  return out;
}

}  // namespace tenure
