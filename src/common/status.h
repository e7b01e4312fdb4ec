// Status and Result<T>: how every fallible kvcs call reports failure.
//
// A Status is a code (the broad class: malformed input, corruption, need more bytes...), an
// optional module-specific typed detail (an enum value such as ObjectError::kBadMagic, so tests
// and callers can tell exact failures apart), and a human message that says what is wrong and,
// where it can, what to do next. Peer or file input never throws and never crashes: it returns
// a Status. Thread-compatible value types.
#ifndef KVCS_COMMON_STATUS_H_
#define KVCS_COMMON_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kvcs {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // the caller's input or a peer's message is malformed
  kCorruption,       // stored or received bytes fail a digest or consistency check
  kNeedMoreData,     // a decoder ran out of bytes; retry once more arrive (not an error yet)
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,  // a named bound was exceeded
  kUnsupported,        // well-formed but not implemented (an unknown codec, say)
  kFailedPrecondition,
  kOutOfRange,
  kIoError,
  kUnavailable,  // a peer or service could not be reached; retrying may help
  kInternal,     // our bug
};

std::string_view CodeName(Code code);

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message, int detail = 0)
      : code_(code), detail_(detail), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // Module-specific typed error (an enum value cast to int); 0 when none.
  int detail() const { return detail_; }
  template <typename E>
  bool Is(E e) const {
    return detail_ == static_cast<int>(e) && detail_ != 0;
  }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Prefixes the message with context ("container: " + message).
  Status WithContext(std::string_view context) const;

 private:
  Code code_ = Code::kOk;
  int detail_ = 0;
  std::string message_;
};

inline Status InvalidArgument(std::string m, int d = 0) {
  return {Code::kInvalidArgument, std::move(m), d};
}
inline Status Corruption(std::string m, int d = 0) { return {Code::kCorruption, std::move(m), d}; }
inline Status NeedMoreData(std::string m = "need more bytes", int d = 0) {
  return {Code::kNeedMoreData, std::move(m), d};
}
inline Status NotFound(std::string m, int d = 0) { return {Code::kNotFound, std::move(m), d}; }
inline Status Unsupported(std::string m, int d = 0) {
  return {Code::kUnsupported, std::move(m), d};
}
inline Status ResourceExhausted(std::string m, int d = 0) {
  return {Code::kResourceExhausted, std::move(m), d};
}
inline Status IoError(std::string m, int d = 0) { return {Code::kIoError, std::move(m), d}; }
inline Status Internal(std::string m, int d = 0) { return {Code::kInternal, std::move(m), d}; }

// Result<T>: a T or a non-OK Status. Like absl::StatusOr.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kvcs

// Returns early from a function returning Status or Result<T> when `expr` (a Status) fails.
#define KVCS_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::kvcs::Status kvcs_status_ = (expr);        \
    if (!kvcs_status_.ok()) return kvcs_status_; \
  } while (0)

#define KVCS_CONCAT_INNER_(a, b) a##b
#define KVCS_CONCAT_(a, b) KVCS_CONCAT_INNER_(a, b)
// KVCS_ASSIGN_OR_RETURN(auto x, MakeX()): binds the value or returns the Status.
#define KVCS_ASSIGN_OR_RETURN(lhs, rexpr) \
  KVCS_ASSIGN_OR_RETURN_IMPL_(KVCS_CONCAT_(kvcs_result_, __LINE__), lhs, rexpr)
#define KVCS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#endif  // KVCS_COMMON_STATUS_H_
