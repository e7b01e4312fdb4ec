// Fuzzes the request-head parsers the server runs before any handler: query parsing, URI
// decoding, Range parsing, HTTP date parsing, addressing and SigV4 verification of arbitrary
// Authorization headers and presigned queries.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "s3/http_util.h"
#include "s3/sigv4.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string s(reinterpret_cast<const char*>(data), size);
  using namespace kvcs::s3;
  auto q = ParseQuery(s);
  (void)UriDecode(s);
  ByteRange r;
  (void)ParseRange(s, 1000, &r);
  (void)ParseRange(s, 0, &r);
  (void)ParseHttpDate(s);
  (void)ParseAmzDate(s);
  (void)ResolveAddress(s, "/" + s, {"localhost"});
  static const std::map<std::string, std::string> kSecrets = {{"AK", "SK"}};
  HeaderPairs headers = {{"Host", "h"},
                         {"x-amz-date", "20130524T000000Z"},
                         {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
                         {"Authorization", s}};
  HeaderPairs none;
  SigV4Input in{"GET", "/b/k", &none, &headers};
  (void)VerifySigV4(in, kSecrets, 1369353600);
  if (q.ok()) {
    HeaderPairs h2 = {{"Host", "h"}};
    SigV4Input in2{"GET", "/b/k", &*q, &h2};
    (void)VerifySigV4(in2, kSecrets, 1369353600);
  }
  return 0;
}
