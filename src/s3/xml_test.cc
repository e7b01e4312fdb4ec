#include "s3/xml.h"

#include <gtest/gtest.h>

#include "s3/s3_error.h"

namespace kvcs::s3 {
namespace {

TEST(Xml, DeleteRequest) {
  auto r = ParseDeleteRequest(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><!-- c -->"
      "<Object><Key>a &amp; b</Key></Object><Object><Key> spaced </Key><VersionId>1</VersionId>"
      "</Object><Object><Key><![CDATA[<raw>]]></Key></Object><Object><Key>&#x263A;&#65;</Key>"
      "</Object><Quiet>true</Quiet></Delete>");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->quiet);
  EXPECT_EQ(r->keys, (std::vector<std::string>{"a & b", " spaced ", "<raw>",
                                               "\xE2\x98\xBA"
                                               "A"}));
}

TEST(Xml, CompleteMultipart) {
  auto r = ParseCompleteMultipartUpload(
      "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"abc\"</ETag></Part>"
      "<Part><ETag>&quot;def&quot;</ETag><PartNumber> 2 </PartNumber><ChecksumCRC32>x"
      "</ChecksumCRC32></Part></CompleteMultipartUpload>");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].part_number, 1);
  EXPECT_EQ((*r)[0].etag, "\"abc\"");
  EXPECT_EQ((*r)[1].part_number, 2);
  EXPECT_EQ((*r)[1].etag, "\"def\"");
}

TEST(Xml, MalformedInputsAreTypedErrors) {
  const char* bad[] = {
      "",
      "<Delete>",
      "<Delete></Remove>",
      "<Delete><Object><Key>k</Key></Object></Delete><Delete/>",
      "<Delete><Object><Key>k</Key></Object></Delete>trailing",
      "<!DOCTYPE x [<!ENTITY a \"b\">]><Delete/>",
      "<Delete><Object><Key>&bogus;</Key></Object></Delete>",
      "<Delete><Object><Key>&#0;</Key></Object></Delete>",
      "<Delete><Object><Key>&#x110000;</Key></Object></Delete>",
      "<Delete a=b><Object><Key>k</Key></Object></Delete>",
      "<Delete><Object></Object></Delete>",
      "<Delete></Delete>",
      "<Other><Object><Key>k</Key></Object></Other>",
      "<Delete><Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>",
      "<Delete><!-- unterminated",
      "<Delete><Object><Key>k</Key></Object><![CDATA[x</Delete>",
  };
  for (const char* doc : bad) {
    auto r = ParseDeleteRequest(doc);
    EXPECT_FALSE(r.ok()) << doc;
    EXPECT_TRUE(r.status().Is(S3Error::kMalformedXML)) << doc;
  }
  for (const char* doc :
       {"<CompleteMultipartUpload/>",
        "<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>e</ETag></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>123456</PartNumber><ETag>e</ETag></Part>"
        "</CompleteMultipartUpload>"}) {
    EXPECT_TRUE(ParseCompleteMultipartUpload(doc).status().Is(S3Error::kMalformedXML)) << doc;
  }
  // Depth bound.
  std::string deep;
  for (int i = 0; i < kMaxXmlDepth + 1; ++i) deep += "<a>";
  for (int i = 0; i < kMaxXmlDepth + 1; ++i) deep += "</a>";
  EXPECT_FALSE(ParseXml(deep).ok());
  // Every truncation of a valid document fails.
  std::string good = "<Delete><Object><Key>k&amp;</Key></Object></Delete>";
  ASSERT_TRUE(ParseDeleteRequest(good).ok());
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ParseDeleteRequest(good.substr(0, n)).ok()) << n;
  }
  // Too many objects.
  std::string many = "<Delete>";
  for (int i = 0; i <= store::kMaxDeleteKeys; ++i) many += "<Object><Key>k</Key></Object>";
  many += "</Delete>";
  EXPECT_TRUE(ParseDeleteRequest(many).status().Is(S3Error::kMalformedXML));
}

}  // namespace
}  // namespace kvcs::s3
