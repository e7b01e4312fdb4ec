// The parsed head of one HTTP/1.1 request, as the server hands it to routes and handlers.
//
// The server fills it once the request line and headers have been read: the path is already
// percent-decoded and starts with '/', the query is already split and decoded (a request whose
// target does not decode is answered 400 by the server and never reaches a route). The body is
// not part of it (see BodyReader).
#ifndef KVCS_HTTP_REQUEST_H_
#define KVCS_HTTP_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/headers.h"
#include "http/uri.h"

namespace kvcs::http {

struct Request {
  std::string method;  // "GET", "PUT", "POST", "HEAD", "DELETE", ...
  std::string target;  // raw request-target as received ("/b/k?x=1")
  std::string path;    // percent-decoded path ("/b/k")
  QueryList query;     // percent-decoded query parameters in received order
  HeaderList headers;  // as received (names in the client's case)
  // The body length: Content-Length when the request has one. A layer that decodes the body
  // (S3's aws-chunked) may replace it by the decoded length in its own copy.
  std::optional<uint64_t> content_length;

  // First header named `name` (case-insensitive).
  std::optional<std::string_view> Header(std::string_view name) const {
    return FindHeader(headers, name);
  }
  // First query parameter named `name` (case-sensitive).
  std::optional<std::string_view> Query(std::string_view name) const;
  bool HasQuery(std::string_view name) const { return Query(name).has_value(); }
};

}  // namespace kvcs::http

#endif  // KVCS_HTTP_REQUEST_H_
