#include "http/router.h"

#include <utility>

namespace kvcs::http {

void Router::Add(Route route) { routes_.push_back(std::move(route)); }

void Router::SetFallback(Handler handler) { fallback_ = std::move(handler); }

const Handler* Router::Find(const Request& request) const {
  for (const Route& r : routes_) {
    if (r.matches && r.matches(request)) return &r.handle;
  }
  return fallback_ ? &fallback_ : nullptr;
}

Matcher Router::PathPrefix(std::string prefix) {
  return [prefix = std::move(prefix)](const Request& r) { return r.path.rfind(prefix, 0) == 0; };
}

Matcher Router::MethodAndPath(std::string method, std::string path) {
  return [method = std::move(method), path = std::move(path)](const Request& r) {
    return r.method == method && r.path == path;
  };
}

}  // namespace kvcs::http
