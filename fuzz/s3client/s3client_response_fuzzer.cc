// libFuzzer target: the S3 client's decoders of response bodies from the network (S3 XML error
// documents and the list/multipart/copy results, ISO dates) and the Content-Range header. Any input
// must yield a value or a typed Status (ClientError::kMalformedXml), never a crash, hang or
// unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "s3client/errors.h"
#include "s3client/http_headers.h"
#include "s3client/xml_responses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvcs::s3client;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto check = [](const kvcs::Status& s) {
    if (!s.ok() && !s.Is(ClientError::kMalformedXml)) __builtin_trap();
  };
  check(ParseErrorBody(in).status());
  check(ParseListBuckets(in).status());
  check(ParseListObjectsV2(in).status());
  check(ParseInitiateMultipart(in).status());
  check(ParseCompleteMultipart(in).status());
  check(ParseCopyObject(in).status());
  check(ParseListParts(in).status());
  check(ParseListUploads(in).status());
  (void)ParseIsoDateMs(in);
  (void)StripQuotes(in);
  if (auto r = ParseContentRange(in); r && !(r->first <= r->last && r->last < r->total)) {
    __builtin_trap();
  }
  return 0;
}
