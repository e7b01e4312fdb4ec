// The generic HTTP helpers: Range parsing, URI coding and query parsing, HTTP dates, header
// lookup.
#include <gtest/gtest.h>

#include "http/date.h"
#include "http/headers.h"
#include "http/range.h"
#include "http/uri.h"

namespace kvcs::http {
namespace {

TEST(HttpHelpers, Ranges) {
  struct Case {
    const char* header;
    uint64_t size;
    RangeKind kind;
    uint64_t first, last;
  } cases[] = {
      {"bytes=0-9", 100, RangeKind::kSatisfiable, 0, 9},
      {"bytes=90-200", 100, RangeKind::kSatisfiable, 90, 99},
      {"bytes=50-", 100, RangeKind::kSatisfiable, 50, 99},
      {"bytes=-10", 100, RangeKind::kSatisfiable, 90, 99},
      {"bytes=-1000", 100, RangeKind::kSatisfiable, 0, 99},
      {"bytes=100-", 100, RangeKind::kUnsatisfiable, 0, 0},
      {"bytes=0-", 0, RangeKind::kUnsatisfiable, 0, 0},
      {"bytes=-0", 100, RangeKind::kUnsatisfiable, 0, 0},
      {"bytes=5-3", 100, RangeKind::kNone, 0, 0},
      {"bytes=0-1,5-6", 100, RangeKind::kNone, 0, 0},
      {"items=0-1", 100, RangeKind::kNone, 0, 0},
      {"bytes=a-b", 100, RangeKind::kNone, 0, 0},
      {"bytes=99999999999999999999-", 100, RangeKind::kNone, 0, 0},
  };
  for (const Case& c : cases) {
    ByteRange r;
    RangeKind k = ParseRange(c.header, c.size, &r);
    EXPECT_EQ(k, c.kind) << c.header;
    if (k == RangeKind::kSatisfiable) {
      EXPECT_EQ(r.first, c.first) << c.header;
      EXPECT_EQ(r.last, c.last) << c.header;
    }
  }
}

TEST(HttpHelpers, UriAndQuery) {
  EXPECT_EQ(UriEncode("a b/c~d+é", false), "a%20b/c~d%2B%C3%A9");
  EXPECT_EQ(UriEncode("a/b", true), "a%2Fb");
  EXPECT_EQ(*UriDecode("a%20b%2Fc+"), "a b/c+");
  EXPECT_FALSE(UriDecode("%2").ok());
  EXPECT_FALSE(UriDecode("%zz").ok());
  auto q = ParseQuery("list-type=2&prefix=a%2Fb&delete&&x=");
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 4u);
  EXPECT_EQ((*q)[1].second, "a/b");
  EXPECT_EQ((*q)[2].first, "delete");
  EXPECT_EQ((*q)[2].second, "");
}

TEST(HttpHelpers, Dates) {
  EXPECT_EQ(FormatHttpDate(1369353600), "Fri, 24 May 2013 00:00:00 GMT");
  EXPECT_EQ(ParseHttpDate("Fri, 24 May 2013 00:00:00 GMT"), 1369353600);
  EXPECT_EQ(ParseHttpDate(" Fri, 24 May 2013 00:00:00 GMT "), 1369353600);
  EXPECT_EQ(ParseHttpDate("2013-05-24T00:00:00"), 1369353600);
  EXPECT_FALSE(ParseHttpDate("yesterday").has_value());
}

TEST(HttpHelpers, Headers) {
  HeaderList h = {{"Content-Type", "text/plain"}, {"X-A", "1"}, {"x-a", "2"}};
  EXPECT_EQ(FindHeader(h, "content-type"), "text/plain");
  EXPECT_EQ(FindHeader(h, "X-a"), "1");  // the first match
  EXPECT_FALSE(FindHeader(h, "x-b").has_value());
}

}  // namespace
}  // namespace kvcs::http
