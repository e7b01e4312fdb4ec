// Decoders of the S3 XML response documents the client reads (ListAllMyBucketsResult,
// ListBucketResult (V2), InitiateMultipartUploadResult, CompleteMultipartUploadResult,
// CopyObjectResult, ListPartsResult, ListMultipartUploadsResult), over the s3 module's bounded
// strict XML parser (s3/xml.h). ETags are returned without quotes.
//
// Every failure is a Status with ClientError::kMalformedXml. Pure; thread-safe.
#ifndef KVCS_S3CLIENT_XML_RESPONSES_H_
#define KVCS_S3CLIENT_XML_RESPONSES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kvcs::s3client {

struct BucketEntry {
  std::string name;
  int64_t created_ms = 0;
};

struct ObjectEntry {
  std::string key;
  uint64_t size = 0;
  std::string etag;
  int64_t last_modified_ms = 0;
};

struct ListObjectsPage {
  std::vector<ObjectEntry> objects;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_continuation_token;
};

struct PartEntry {
  int part_number = 0;
  uint64_t size = 0;
  std::string etag;
  int64_t last_modified_ms = 0;
};

struct ListPartsPage {
  std::vector<PartEntry> parts;
  bool truncated = false;
  int next_part_number_marker = 0;
};

struct UploadEntry {
  std::string key;
  std::string upload_id;
  int64_t initiated_ms = 0;
};

struct ListUploadsPage {
  std::vector<UploadEntry> uploads;
  bool truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};

struct CopyResult {
  std::string etag;
  int64_t last_modified_ms = 0;
};

// "2009-10-12T17:50:30.000Z" (fraction optional) -> Unix milliseconds.
std::optional<int64_t> ParseIsoDateMs(std::string_view s);
// Removes one pair of surrounding double quotes (S3 ETags are quoted on the wire).
std::string StripQuotes(std::string_view etag);

Result<std::vector<BucketEntry>> ParseListBuckets(std::string_view xml);
Result<ListObjectsPage> ParseListObjectsV2(std::string_view xml);
Result<std::string> ParseInitiateMultipart(std::string_view xml);  // the UploadId
// The ETag; empty when the service leaves <ETag> empty (radosgw 16.2 does).
Result<std::string> ParseCompleteMultipart(std::string_view xml);
Result<CopyResult> ParseCopyObject(std::string_view xml);
Result<ListPartsPage> ParseListParts(std::string_view xml);
Result<ListUploadsPage> ParseListUploads(std::string_view xml);

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_XML_RESPONSES_H_
