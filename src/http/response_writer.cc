#include "http/response_writer.h"

namespace kvcs::http {

Awaitable<Status> SendComplete(ResponseWriter& response, int status, HeaderList headers,
                               std::string_view body) {
  Status s = co_await response.Start(status, std::move(headers), body.size());
  if (s.ok()) s = co_await response.Write(AsBytes(body));
  if (s.ok()) s = co_await response.Finish();
  co_return s;
}

}  // namespace kvcs::http
