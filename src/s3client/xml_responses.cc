#include "s3client/xml_responses.h"

#include "common/strings.h"
#include "s3/xml.h"
#include "s3client/errors.h"

namespace kvcs::s3client {
namespace {

Status Bad(std::string what) {
  return ClientStatus(ClientError::kMalformedXml, "S3 response: " + std::move(what));
}

Result<s3::XmlElement> Root(std::string_view xml, std::string_view name) {
  auto doc = s3::ParseXml(xml);
  if (!doc.ok()) return Bad("not well-formed XML: " + doc.status().message());
  if (doc->name != name)
    return Bad("expected <" + std::string(name) + ">, got <" + doc->name + ">");
  return std::move(doc).value();
}

std::string Text(const s3::XmlElement& e, std::string_view child) {
  const s3::XmlElement* c = e.Child(child);
  return c ? c->text : std::string();
}

Result<uint64_t> U64(const s3::XmlElement& e, std::string_view child) {
  auto v = ParseDecimal<uint64_t>(Text(e, child));
  if (!v) return Bad("<" + std::string(child) + "> is not a number");
  return *v;
}

int64_t DateOrZero(const s3::XmlElement& e, std::string_view child) {
  return ParseIsoDateMs(Text(e, child)).value_or(0);
}

}  // namespace

std::optional<int64_t> ParseIsoDateMs(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fff]Z
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
      s.back() != 'Z') {
    return std::nullopt;
  }
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  auto field = [&](size_t pos, size_t len, int* out) {
    auto v = ParseDecimal<uint16_t>(s.substr(pos, len));  // at most 4 digits
    if (v) *out = *v;
    return v.has_value();
  };
  if (!field(0, 4, &y) || !field(5, 2, &mo) || !field(8, 2, &d) || !field(11, 2, &h) ||
      !field(14, 2, &mi) || !field(17, 2, &se)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  int ms = 0;
  std::string_view frac = s.substr(19, s.size() - 20);
  if (!frac.empty()) {
    if (frac[0] != '.' || frac.size() < 2) return std::nullopt;
    frac.remove_prefix(1);
    int digits = 0;
    for (char c : frac) {
      if (c < '0' || c > '9') return std::nullopt;
      if (digits < 3) ms = ms * 10 + (c - '0');
      ++digits;
    }
    for (; digits < 3; ++digits) ms *= 10;
  }
  // Days from civil (proleptic Gregorian), Howard Hinnant's algorithm.
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = int64_t{era} * 146097 + static_cast<int64_t>(doe) - 719468;
  return ((days * 24 + h) * 60 + mi) * 60000 + int64_t{se} * 1000 + ms;
}

std::string StripQuotes(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

Result<std::vector<BucketEntry>> ParseListBuckets(std::string_view xml) {
  KVCS_ASSIGN_OR_RETURN(s3::XmlElement root, Root(xml, "ListAllMyBucketsResult"));
  std::vector<BucketEntry> out;
  if (const s3::XmlElement* buckets = root.Child("Buckets")) {
    for (const auto& b : buckets->children) {
      if (b.name != "Bucket") continue;
      BucketEntry e;
      e.name = Text(b, "Name");
      if (e.name.empty()) return Bad("bucket without <Name>");
      e.created_ms = DateOrZero(b, "CreationDate");
      out.push_back(std::move(e));
    }
  }
  return out;
}

Result<ListObjectsPage> ParseListObjectsV2(std::string_view xml) {
  KVCS_ASSIGN_OR_RETURN(s3::XmlElement root, Root(xml, "ListBucketResult"));
  ListObjectsPage page;
  for (const auto& c : root.children) {
    if (c.name == "Contents") {
      ObjectEntry e;
      e.key = Text(c, "Key");
      if (e.key.empty()) return Bad("<Contents> without <Key>");
      KVCS_ASSIGN_OR_RETURN(e.size, U64(c, "Size"));
      e.etag = StripQuotes(Text(c, "ETag"));
      e.last_modified_ms = DateOrZero(c, "LastModified");
      page.objects.push_back(std::move(e));
    } else if (c.name == "CommonPrefixes") {
      std::string p = Text(c, "Prefix");
      if (p.empty()) return Bad("<CommonPrefixes> without <Prefix>");
      page.common_prefixes.push_back(std::move(p));
    } else if (c.name == "IsTruncated") {
      page.truncated = c.text == "true";
    } else if (c.name == "NextContinuationToken") {
      page.next_continuation_token = c.text;
    }
  }
  if (page.truncated && page.next_continuation_token.empty()) {
    return Bad("truncated listing without <NextContinuationToken>");
  }
  return page;
}

Result<std::string> ParseInitiateMultipart(std::string_view xml) {
  KVCS_ASSIGN_OR_RETURN(s3::XmlElement root, Root(xml, "InitiateMultipartUploadResult"));
  std::string id = Text(root, "UploadId");
  if (id.empty()) return Bad("no <UploadId>");
  return id;
}

Result<std::string> ParseCompleteMultipart(std::string_view xml) {
  KVCS_ASSIGN_OR_RETURN(s3::XmlElement root, Root(xml, "CompleteMultipartUploadResult"));
  // May be empty: radosgw 16.2 answers <ETag></ETag>; callers HEAD the object then.
  return StripQuotes(Text(root, "ETag"));
}

Result<CopyResult> ParseCopyObject(std::string_view xml) {
  KVCS_ASSIGN_OR_RETURN(s3::XmlElement root, Root(xml, "CopyObjectResult"));
  CopyResult r;
  r.etag = StripQuotes(Text(root, "ETag"));
  if (r.etag.empty()) return Bad("no <ETag>");
  r.last_modified_ms = DateOrZero(root, "LastModified");
  return r;
}

Result<ListPartsPage> ParseListParts(std::string_view xml) {
  KVCS_ASSIGN_OR_RETURN(s3::XmlElement root, Root(xml, "ListPartsResult"));
  ListPartsPage page;
  for (const auto& c : root.children) {
    if (c.name == "Part") {
      PartEntry p;
      KVCS_ASSIGN_OR_RETURN(uint64_t n, U64(c, "PartNumber"));
      if (n < 1 || n > 10000) return Bad("<PartNumber> out of range");
      p.part_number = static_cast<int>(n);
      KVCS_ASSIGN_OR_RETURN(p.size, U64(c, "Size"));
      p.etag = StripQuotes(Text(c, "ETag"));
      p.last_modified_ms = DateOrZero(c, "LastModified");
      page.parts.push_back(std::move(p));
    } else if (c.name == "IsTruncated") {
      page.truncated = c.text == "true";
    } else if (c.name == "NextPartNumberMarker") {
      auto n = ParseDecimal<uint64_t>(c.text);
      if (n && *n <= 10000) page.next_part_number_marker = static_cast<int>(*n);
    }
  }
  if (page.truncated && page.next_part_number_marker == 0) {
    return Bad("truncated part list without <NextPartNumberMarker>");
  }
  return page;
}

Result<ListUploadsPage> ParseListUploads(std::string_view xml) {
  KVCS_ASSIGN_OR_RETURN(s3::XmlElement root, Root(xml, "ListMultipartUploadsResult"));
  ListUploadsPage page;
  for (const auto& c : root.children) {
    if (c.name == "Upload") {
      UploadEntry u;
      u.key = Text(c, "Key");
      u.upload_id = Text(c, "UploadId");
      if (u.key.empty() || u.upload_id.empty()) return Bad("<Upload> without Key or UploadId");
      u.initiated_ms = DateOrZero(c, "Initiated");
      page.uploads.push_back(std::move(u));
    } else if (c.name == "IsTruncated") {
      page.truncated = c.text == "true";
    } else if (c.name == "NextKeyMarker") {
      page.next_key_marker = c.text;
    } else if (c.name == "NextUploadIdMarker") {
      page.next_upload_id_marker = c.text;
    }
  }
  if (page.truncated && page.next_key_marker.empty()) {
    return Bad("truncated upload list without <NextKeyMarker>");
  }
  return page;
}

}  // namespace kvcs::s3client
