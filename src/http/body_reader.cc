#include "http/body_reader.h"

#include <string>

namespace kvcs::http {

Awaitable<Result<Bytes>> BodyReader::ReadAll(size_t limit) {
  Bytes out;
  uint8_t buf[16 * 1024];
  for (;;) {
    auto n = co_await Read(std::span<uint8_t>(buf, sizeof buf));
    if (!n.ok()) co_return n.status();
    if (*n == 0) break;
    if (out.size() + *n > limit) {
      co_return Status(Code::kResourceExhausted,
                       "request body larger than " + std::to_string(limit) + " bytes");
    }
    out.insert(out.end(), buf, buf + *n);
  }
  co_return out;
}

}  // namespace kvcs::http
