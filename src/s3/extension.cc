#include "s3/extension.h"

#include "s3/http_util.h"

namespace kvcs::s3 {

std::optional<std::string_view> ExtensionRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return std::string_view(v);
  }
  return std::nullopt;
}

std::optional<std::string_view> ExtensionRequest::Query(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return std::string_view(v);
  }
  return std::nullopt;
}

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

}  // namespace kvcs::s3
