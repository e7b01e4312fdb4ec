// Routing: which handler serves a request, decided on its head alone.
//
// A Route is a predicate on the parsed head plus a coroutine handler. For every request the
// server asks the routes in the order they were added; the first whose matcher is true handles
// the request. When none matches, the fallback handler does; without a fallback the server
// answers 404 itself. A module mounts its API as one or more routes (S3 mounts the fallback: it
// owns every path nothing else claims).
//
// Lifetimes: the HandlerContext and everything reachable from it are valid only until the
// handler's awaitable completes. Routes are added before Server::Start and never change after.
//
// Threading: matchers may be called concurrently from several I/O threads: keep them pure. A
// handler runs inside its connection's coroutine (requests on one connection are sequential);
// blocking calls from it occupy one of the server's I/O threads.
//
// Errors: a handler that returns without starting a response gets a 500 from the server; one
// that fails after starting should return, and the server closes the connection (a chunked body
// is left unterminated so the client sees a truncated response). A body the handler left unread
// is drained when small (ServerOptions::limits.max_drain_bytes), else the connection is closed.
#ifndef KVCS_HTTP_ROUTER_H_
#define KVCS_HTTP_ROUTER_H_

#include <functional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "http/awaitable.h"
#include "http/body_reader.h"
#include "http/request.h"
#include "http/response_writer.h"

namespace kvcs::http {

// Everything a handler may touch while it runs.
struct HandlerContext {
  const Request& request;
  BodyReader& body;
  ResponseWriter& response;
  boost::asio::any_io_executor executor;  // the connection's executor (for timers, co_spawn)
};

using Handler = std::function<Awaitable<void>(HandlerContext&)>;
using Matcher = std::function<bool(const Request&)>;

struct Route {
  std::string name;  // for logs
  Matcher matches;
  Handler handle;
};

class Router {
 public:
  // Appends a route (first added, first asked). REQUIRES: before Server::Start.
  void Add(Route route);
  // Serves requests no route matches. REQUIRES: before Server::Start.
  void SetFallback(Handler handler);

  // The handler for `request`: the first matching route's, else the fallback; null if neither.
  // Thread-safe once routes no longer change.
  const Handler* Find(const Request& request) const;

  // Matchers for the common cases.
  static Matcher PathPrefix(std::string prefix);                       // path starts with prefix
  static Matcher MethodAndPath(std::string method, std::string path);  // exact method and path

 private:
  std::vector<Route> routes_;
  Handler fallback_;
};

}  // namespace kvcs::http

#endif  // KVCS_HTTP_ROUTER_H_
