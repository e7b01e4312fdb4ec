// Fuzzes the strict XML parser and the DeleteObjects / CompleteMultipartUpload decoders: any input
// must yield a value or a MalformedXML status, never a crash, hang or unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "s3/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view doc(reinterpret_cast<const char*>(data), size);
  (void)kvcs::s3::ParseXml(doc);
  (void)kvcs::s3::ParseDeleteRequest(doc);
  (void)kvcs::s3::ParseCompleteMultipartUpload(doc);
  return 0;
}
