// Connection admission: whether the server serves a newly accepted connection. The one place that
// decides it, so a fairer policy (per-peer shares, waiting instead of closing) replaces only this.
//
// Today: a fixed cap on concurrent connections; past it new connections are closed at once (each
// holds a socket, a 64 KiB receive buffer and a coroutine frame). Thread-safe.
#ifndef KVCS_HTTP_ADMISSION_H_
#define KVCS_HTTP_ADMISSION_H_

#include <atomic>
#include <cstddef>

namespace kvcs::http {

class ConnectionAdmission {
 public:
  explicit ConnectionAdmission(size_t max_connections) : max_(max_connections) {}

  // True when the connection may be served; the caller then calls Release() once when it ends.
  bool TryAdmit() {
    size_t n = active_.load();
    while (n < max_) {
      if (active_.compare_exchange_weak(n, n + 1)) return true;
    }
    return false;
  }
  // Ends an admitted connection; returns the number still active.
  size_t Release() { return --active_; }

  size_t active() const { return active_.load(); }
  size_t max() const { return max_; }

 private:
  const size_t max_;
  std::atomic<size_t> active_{0};
};

}  // namespace kvcs::http

#endif  // KVCS_HTTP_ADMISSION_H_
