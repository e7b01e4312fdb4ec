#include "common/status.h"

namespace kvcs {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kCorruption:
      return "corruption";
    case Code::kNeedMoreData:
      return "need more data";
    case Code::kNotFound:
      return "not found";
    case Code::kAlreadyExists:
      return "already exists";
    case Code::kPermissionDenied:
      return "permission denied";
    case Code::kResourceExhausted:
      return "resource exhausted";
    case Code::kUnsupported:
      return "unsupported";
    case Code::kFailedPrecondition:
      return "failed precondition";
    case Code::kOutOfRange:
      return "out of range";
    case Code::kIoError:
      return "I/O error";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(CodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m), detail_);
}

}  // namespace kvcs
