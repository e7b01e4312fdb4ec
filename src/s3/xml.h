// A small, bounded, strict XML parser for the few S3 request bodies we accept (DeleteObjects and
// CompleteMultipartUpload), and their decoders.
//
// Supported: an optional XML declaration, comments and processing instructions outside or
// inside elements, elements with attributes (parsed and ignored; namespace prefixes are stripped
// from element names), text with the five predefined entities and numeric character references,
// and CDATA sections. Refused: DOCTYPE (so no entity definitions, no expansion attacks),
// mismatched tags, text or a second element after the root, and anything over the bounds below.
// Every failure is a Status with S3Error::kMalformedXML. Pure; thread-safe.
#ifndef KVCS_S3_XML_H_
#define KVCS_S3_XML_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/object_store.h"

namespace kvcs::s3 {

// CompleteMultipartUpload for 10000 parts with checksums is ~2 MiB; DeleteObjects for 1000 keys
// of 1 KiB each, escaped, stays under 4 MiB.
inline constexpr size_t kMaxXmlBytes = 4 << 20;
// Our documents are 3 levels deep; 16 leaves room for clients' extras while bounding recursion.
inline constexpr int kMaxXmlDepth = 16;
// 10000 parts x (Part + PartNumber + ETag + a checksum) plus slack.
inline constexpr size_t kMaxXmlElements = 50000;

struct XmlElement {
  std::string name;  // local name (prefix stripped)
  std::string text;  // concatenated character data directly inside this element
  std::vector<XmlElement> children;

  const XmlElement* Child(std::string_view child_name) const;
};

Result<XmlElement> ParseXml(std::string_view document);

struct DeleteRequest {
  bool quiet = false;
  std::vector<std::string> keys;
};
// <Delete><Quiet>true</Quiet><Object><Key>k</Key></Object>...</Delete>; 1..1000 objects.
Result<DeleteRequest> ParseDeleteRequest(std::string_view document);

// <CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"..."</ETag></Part>...
// 1..10000 parts, in document order (order is checked by the store).
Result<std::vector<store::CompletePart>> ParseCompleteMultipartUpload(std::string_view document);

}  // namespace kvcs::s3

#endif  // KVCS_S3_XML_H_
