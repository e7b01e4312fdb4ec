// Fuzzes the Index Service's request and response parsers (KVSP §7): the input goes to every
// parser; none crashes, every failure is typed, and an accepted message serializes to JSON that
// parses back to the same value and is a fixed point.
#include <cstdlib>
#include <string_view>

#include "index/index_wire.h"

namespace {

template <typename T, typename Parse>
void RoundTrip(std::string_view in, Parse parse) {
  kvcs::Result<T> m = parse(in);
  if (!m.ok()) {
    if (m.status().detail() == 0) std::abort();  // every failure is typed
    if (kvcs::index::HttpStatusFor(m.status()) != 400) std::abort();
    return;
  }
  std::string out = kvcs::index::ToJson(*m);
  kvcs::Result<T> again = parse(out);
  if (!again.ok() || !(*again == *m) || kvcs::index::ToJson(*again) != out) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvcs::index;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  RoundTrip<LookupRequest>(in, ParseLookupRequest);
  RoundTrip<RegisterRequest>(in, ParseRegisterRequest);
  RoundTrip<WithdrawRequest>(in, ParseWithdrawRequest);
  RoundTrip<LookupResponse>(in, ParseLookupResponse);
  RoundTrip<AnchorsResponse>(in, ParseAnchorsResponse);
  // The anchors endpoint's three path/query values: split the input at '/'.
  size_t a = in.find('/'), b = a == in.npos ? in.npos : in.find('/', a + 1);
  if (b != in.npos) {
    auto r = ParseAnchorsRequest(in.substr(0, a), in.substr(a + 1, b - a - 1), in.substr(b + 1));
    if (!r.ok() && r.status().detail() == 0) std::abort();
  }
  return 0;
}
