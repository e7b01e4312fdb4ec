#include "s3/handlers.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "common/base64.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/strings.h"
#include "s3/access.h"
#include "s3/acl.h"
#include "s3/http_util.h"
#include "s3/s3_error.h"
#include "s3/sigv4.h"
#include "s3/user_metadata.h"
#include "s3/xml.h"

namespace kvcs::s3 {
namespace {

using store::ObjectMeta;
using store::PutOptions;

constexpr std::string_view kXmlDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
constexpr std::string_view kNs = " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"";
// ListParts / ListMultipartUploads page size (S3's default and maximum).
constexpr int kMaxListParts = 1000;
// Streaming buffers kept for reuse: a fresh 1 MiB allocation per request costs page faults and
// zeroing that dominate small GETs. Beyond this many idle buffers, extras are freed.
constexpr size_t kMaxPooledBuffers = 64;

// A kStreamBufferBytes buffer from a process-wide free list (uninitialized memory).
class PooledBuffer {
 public:
  PooledBuffer() {
    {
      std::lock_guard<std::mutex> l(mu());
      if (!free_list().empty()) {
        buf_ = std::move(free_list().back());
        free_list().pop_back();
      }
    }
    if (!buf_) buf_.reset(new uint8_t[kStreamBufferBytes]);
  }
  ~PooledBuffer() {
    std::lock_guard<std::mutex> l(mu());
    if (free_list().size() < kMaxPooledBuffers) free_list().push_back(std::move(buf_));
  }
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  std::span<uint8_t> span() { return {buf_.get(), kStreamBufferBytes}; }

 private:
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::vector<std::unique_ptr<uint8_t[]>>& free_list() {
    static auto* v = new std::vector<std::unique_ptr<uint8_t[]>>();
    return *v;
  }
  std::unique_ptr<uint8_t[]> buf_;
};

std::string Quoted(std::string_view etag) { return "\"" + std::string(etag) + "\""; }

std::string StripEtag(std::string_view e) {
  while (!e.empty() && e.front() == ' ') e.remove_prefix(1);
  while (!e.empty() && e.back() == ' ') e.remove_suffix(1);
  if (e.substr(0, 2) == "W/") e.remove_prefix(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return std::string(e);
}

// The ETags of an If-Match / If-None-Match list, unquoted ("*" kept).
std::vector<std::string> EtagList(std::string_view header) {
  std::vector<std::string> out;
  while (!header.empty()) {
    size_t comma = header.find(',');
    if (std::string one = StripEtag(header.substr(0, comma)); !one.empty()) out.push_back(one);
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return out;
}

bool EtagListMatches(std::string_view header, std::string_view etag) {
  for (const std::string& one : EtagList(header)) {
    if (one == "*" || one == etag) return true;
  }
  return false;
}

// A missing key is NoSuchKey only for who may list `bucket` (READ); others get AccessDenied, as
// S3 answers, so that names cannot be probed. Other statuses pass unchanged.
Status HideMissingKey(const store::BucketInfo& bucket, std::string_view user_id, Status s) {
  if (s.Is(store::StoreError::kNoSuchKey) &&
      !CheckBucketPermission(bucket, user_id, Permission::kRead).ok()) {
    return S3Status(S3Error::kAccessDenied, "Access Denied");
  }
  return s;
}

// Every configured user may be named in a grant.
KnownUser KnownUsers(const ServerConfig& config) {
  return [&config](std::string_view id) { return IsKnownUser(config, id); };
}

// The ACL a request's x-amz-acl / x-amz-grant-* headers state, encoded for the store ("" when
// none or private). A store that keeps no ACLs (RecordsOwners false) takes only private.
Result<std::string> AclTextFromHeaders(const S3Context& ctx) {
  KVCS_ASSIGN_OR_RETURN(auto acl, AclFromHeaders(ctx.request, KnownUsers(ctx.config)));
  if (!acl || acl->grants.empty()) return std::string();
  if (!ctx.store.RecordsOwners()) {
    return S3Status(S3Error::kNotImplemented, "this store's backend keeps no ACLs: only private");
  }
  return EncodeAcl(*acl);
}

Result<PutOptions> OptionsFromHeaders(const ExtensionRequest& r) {
  PutOptions o;
  if (auto v = r.Header("content-type")) o.content_type = std::string(*v);
  if (auto v = r.Header("content-encoding")) {
    // aws-chunked is transport framing, not a property of the stored object.
    std::string kept;
    std::string_view rest = *v;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view tok = rest.substr(0, comma);
      while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
      while (!tok.empty() && tok.back() == ' ') tok.remove_suffix(1);
      if (!tok.empty() && !AsciiIEquals(tok, "aws-chunked")) {
        if (!kept.empty()) kept += ",";
        kept += tok;
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    o.content_encoding = kept;
  }
  if (auto v = r.Header("content-disposition")) o.content_disposition = std::string(*v);
  if (auto v = r.Header("cache-control")) o.cache_control = std::string(*v);
  if (auto v = r.Header("expires")) o.expires = std::string(*v);
  KVCS_ASSIGN_OR_RETURN(o.user_meta, UserMetadataFromHeaders(r.headers));
  if (auto v = r.Header("content-md5")) {
    auto md5 = Base64Decode(*v);
    if (!md5.ok() || md5->size() != 16) {
      return S3Status(S3Error::kInvalidDigest, "The Content-MD5 you specified was invalid.");
    }
    store::Md5 m;
    std::copy(md5->begin(), md5->end(), m.begin());
    o.expected_md5 = m;
  }
  o.expected_size = r.content_length;
  return o;
}

HeaderList ObjectHeaders(const ObjectMeta& m) {
  HeaderList h;
  h.emplace_back("ETag", Quoted(m.etag));
  h.emplace_back("Last-Modified", FormatHttpDate(m.last_modified_ms / 1000));
  h.emplace_back("Accept-Ranges", "bytes");
  if (!m.content_encoding.empty()) h.emplace_back("Content-Encoding", m.content_encoding);
  if (!m.content_disposition.empty()) h.emplace_back("Content-Disposition", m.content_disposition);
  if (!m.cache_control.empty()) h.emplace_back("Cache-Control", m.cache_control);
  if (!m.expires.empty()) h.emplace_back("Expires", m.expires);
  for (const auto& [k, v] : m.user_meta) {
    h.emplace_back(std::string(kUserMetaPrefix) + k, EncodeUserMetadataValue(v));
  }
  if (m.parts_count > 0) h.emplace_back("x-amz-mp-parts-count", std::to_string(m.parts_count));
  return h;
}

Awaitable<void> SendXml(S3Context& ctx, int status, const std::string& body,
                        HeaderList extra = {}) {
  extra.emplace_back("Content-Type", "application/xml");
  Status s = co_await ctx.response.Start(status, std::move(extra), body.size());
  if (s.ok()) s = co_await ctx.response.Write(AsBytes(body));
  if (s.ok()) co_await ctx.response.Finish();
}

Awaitable<void> SendEmpty(S3Context& ctx, int status, HeaderList extra = {}) {
  Status s = co_await ctx.response.Start(status, std::move(extra), 0);
  if (s.ok()) co_await ctx.response.Finish();
}

// <ID> and <DisplayName> of `u` (the children of <Owner> and of a CanonicalUser <Grantee>).
std::string UserXml(const User& u) {
  return XmlTag("ID", u.id) + XmlTag("DisplayName", u.display_name);
}

// The owner of the request's bucket and (bucket owner enforced) its objects and uploads; an
// owner-less bucket shows the requester, whom it lets do everything.
User BucketOwner(const S3Context& ctx) {
  if (!ctx.bucket.owner.empty()) return UserById(ctx.config, ctx.bucket.owner);
  return UserOf(ctx.config, ctx.request.access_key);
}

// The <Owner> of what a request on a bucket sees.
std::string Owner(const S3Context& ctx) {
  return "<Owner>" + UserXml(BucketOwner(ctx)) + "</Owner>";
}

// ---------------------------------------------------------------- buckets

Awaitable<void> ListBuckets(S3Context& ctx) {
  auto buckets = ctx.store.ListBuckets();
  if (!buckets.ok()) co_return co_await SendS3Error(ctx, buckets.status());
  std::string x(kXmlDecl);
  x += "<ListAllMyBucketsResult" + std::string(kNs) + "><Owner>" +
       UserXml(UserOf(ctx.config, ctx.request.access_key)) + "</Owner><Buckets>";
  for (const auto& b : *buckets) {
    if (!IsBucketOwner(b, ctx.request.user_id)) continue;  // another user's
    x += "<Bucket>" + XmlTag("Name", b.name) + XmlTag("CreationDate", FormatIsoDate(b.created_ms)) +
         "</Bucket>";
  }
  x += "</Buckets></ListAllMyBucketsResult>";
  co_await SendXml(ctx, 200, x);
}

Awaitable<void> CreateBucket(S3Context& ctx) {
  auto body = co_await ctx.body.ReadAll(kMaxSmallBodyBytes);  // CreateBucketConfiguration: ignored
  if (!body.ok()) co_return co_await SendS3Error(ctx, body.status());
  auto acl = AclTextFromHeaders(ctx);
  if (!acl.ok()) co_return co_await SendS3Error(ctx, acl.status());
  Status s = ctx.store.CreateBucketOwnedBy(ctx.request.bucket, ctx.request.user_id);
  // A crash between the two leaves the bucket private: the safe side.
  if (s.ok() && !acl->empty()) s = ctx.store.SetBucketAcl(ctx.request.bucket, *acl);
  if (s.Is(store::StoreError::kBucketAlreadyExists)) {
    // Another user's name: BucketAlreadyExists. Our own: us-east-1 answers 200 (the legacy
    // behaviour boto3 and awscli expect there), other regions BucketAlreadyOwnedByYou.
    auto existing = ctx.store.HeadBucket(ctx.request.bucket);
    bool mine = existing.ok() && IsBucketOwner(*existing, ctx.request.user_id);
    if (!mine) {
      s = S3Status(S3Error::kBucketAlreadyExists,
                   "The requested bucket name is not available. The bucket namespace is shared "
                   "by all users of the system. Please select a different name and try again.");
    } else if (ctx.config.region == "us-east-1") {
      s = Status::Ok();
    }
  }
  if (!s.ok()) co_return co_await SendS3Error(ctx, s);
  HeaderList h;
  h.emplace_back("Location", "/" + ctx.request.bucket);
  co_await SendEmpty(ctx, 200, std::move(h));
}

Awaitable<void> DeleteBucket(S3Context& ctx) {
  Status s = ctx.store.DeleteBucket(ctx.request.bucket);
  if (!s.ok()) co_return co_await SendS3Error(ctx, s);
  co_await SendEmpty(ctx, 204);
}

Awaitable<void> HeadBucket(S3Context& ctx) {
  HeaderList h;
  h.emplace_back("x-amz-bucket-region", ctx.config.region);
  co_await SendEmpty(ctx, 200, std::move(h));
}

Awaitable<void> GetBucketLocation(S3Context& ctx) {
  std::string region = ctx.config.region == "us-east-1" ? "" : ctx.config.region;
  co_await SendXml(ctx, 200,
                   std::string(kXmlDecl) + "<LocationConstraint" + std::string(kNs) + ">" +
                       XmlEscape(region) + "</LocationConstraint>");
}

Awaitable<void> GetBucketVersioning(S3Context& ctx) {
  co_await SendXml(ctx, 200,
                   std::string(kXmlDecl) + "<VersioningConfiguration" + std::string(kNs) + "/>");
}

// GetBucketAcl (`acl_text` = the bucket's) and GetObjectAcl (the object's).
Awaitable<void> SendAcl(S3Context& ctx, std::string_view acl_text) {
  auto acl = DecodeAcl(acl_text);
  if (!acl.ok()) co_return co_await SendS3Error(ctx, acl.status());
  const ServerConfig& config = ctx.config;
  co_await SendXml(ctx, 200,
                   AccessControlPolicyXml(BucketOwner(ctx), *acl, [&](std::string_view id) {
                     return UserById(config, id);
                   }));
}

// The ACL a PutBucketAcl / PutObjectAcl states: its x-amz-acl / x-amz-grant-* headers, else its
// <AccessControlPolicy> body. Encoded for the store.
Awaitable<Result<std::string>> AclOfPutAcl(S3Context& ctx) {
  auto body = co_await ctx.body.ReadAll(kMaxSmallBodyBytes);
  if (!body.ok()) co_return body.status();
  auto from_headers = AclFromHeaders(ctx.request, KnownUsers(ctx.config));
  if (!from_headers.ok()) co_return from_headers.status();
  Acl acl;
  if (*from_headers) {
    if (!body->empty()) {
      co_return S3Status(S3Error::kUnexpectedContent,
                         "This request does not support content with ACL headers");
    }
    acl = std::move(**from_headers);
  } else {
    if (body->empty()) {
      co_return S3Status(S3Error::kMissingSecurityHeader,
                         "Your request was missing a required header: x-amz-acl or a body");
    }
    auto parsed = ParseAccessControlPolicy(AsStringView(*body), KnownUsers(ctx.config));
    if (!parsed.ok()) co_return parsed.status();
    acl = std::move(*parsed);
  }
  if (!ctx.store.RecordsOwners()) {
    co_return S3Status(S3Error::kNotImplemented, "this store's backend keeps no ACLs");
  }
  co_return EncodeAcl(acl);
}

Awaitable<void> PutBucketAcl(S3Context& ctx) {
  auto acl = co_await AclOfPutAcl(ctx);
  if (!acl.ok()) co_return co_await SendS3Error(ctx, acl.status());
  Status s = ctx.store.SetBucketAcl(ctx.request.bucket, *acl);
  if (!s.ok()) co_return co_await SendS3Error(ctx, s);
  co_await SendEmpty(ctx, 200);
}

Awaitable<void> PutObjectAcl(S3Context& ctx) {
  auto acl = co_await AclOfPutAcl(ctx);
  if (!acl.ok()) co_return co_await SendS3Error(ctx, acl.status());
  Status s = ctx.store.SetObjectAcl(ctx.request.bucket, ctx.request.key, *acl);
  if (!s.ok()) co_return co_await SendS3Error(ctx, s);
  co_await SendEmpty(ctx, 200);
}

Result<int> ParseMaxKeys(const ExtensionRequest& r, const char* name, int dflt) {
  auto v = r.Query(name);
  if (!v) return dflt;
  if (v->empty() || v->size() > 9 ||
      !std::all_of(v->begin(), v->end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return S3Status(S3Error::kInvalidArgument, std::string(name) + " must be a non-negative int");
  }
  return std::min(std::atoi(std::string(*v).c_str()), dflt);
}

Awaitable<void> ListObjects(S3Context& ctx, bool v2) {
  const ExtensionRequest& r = ctx.request;
  store::ListOptions o;
  o.prefix = std::string(r.Query("prefix").value_or(""));
  o.delimiter = std::string(r.Query("delimiter").value_or(""));
  auto max_keys = ParseMaxKeys(r, "max-keys", store::kMaxListKeys);
  if (!max_keys.ok()) co_return co_await SendS3Error(ctx, max_keys.status());
  o.max_keys = *max_keys;
  bool url = r.Query("encoding-type") == std::optional<std::string_view>("url");
  if (auto et = r.Query("encoding-type"); et && *et != "url") {
    co_return co_await SendS3Error(
        ctx, S3Status(S3Error::kInvalidArgument, "Invalid Encoding Method specified in Request"));
  }
  std::optional<std::string> token;  // an empty one is no token, echoed as S3 does
  if (v2) {
    o.start_after = std::string(r.Query("start-after").value_or(""));
    if (auto t = r.Query("continuation-token")) {
      auto raw = FromHex(*t);
      if (!raw.ok()) {
        co_return co_await SendS3Error(
            ctx,
            S3Status(S3Error::kInvalidArgument, "The continuation token provided is incorrect"));
      }
      token = std::string(*t);
      o.start_after = std::max(o.start_after, std::string(AsStringView(*raw)));
    }
  } else {
    o.start_after = std::string(r.Query("marker").value_or(""));
  }
  auto list = ctx.store.List(r.bucket, o);
  if (!list.ok()) co_return co_await SendS3Error(ctx, list.status());
  auto enc = [&](std::string_view s) { return url ? UriEncode(s, false) : std::string(s); };
  std::string x(kXmlDecl);
  x += "<ListBucketResult" + std::string(kNs) + ">" + XmlTag("Name", r.bucket) +
       XmlTag("Prefix", enc(o.prefix));
  if (v2) {
    x += XmlTag("KeyCount", std::to_string(list->objects.size() + list->common_prefixes.size()));
    if (token) x += XmlTag("ContinuationToken", *token);
    if (auto sa = r.Query("start-after")) x += XmlTag("StartAfter", enc(*sa));
    if (list->truncated) x += XmlTag("NextContinuationToken", ToHex(AsBytes(list->next_marker)));
  } else {
    x += XmlTag("Marker", enc(o.start_after));
    if (list->truncated) x += XmlTag("NextMarker", enc(list->next_marker));
  }
  x += XmlTag("MaxKeys", std::to_string(o.max_keys));
  if (!o.delimiter.empty()) x += XmlTag("Delimiter", enc(o.delimiter));
  if (url) x += XmlTag("EncodingType", "url");
  x += XmlTag("IsTruncated", list->truncated ? "true" : "false");
  bool owner = !v2 || r.Query("fetch-owner") == std::optional<std::string_view>("true");
  for (const auto& m : list->objects) {
    x += "<Contents>" + XmlTag("Key", enc(m.key)) +
         XmlTag("LastModified", FormatIsoDate(m.last_modified_ms)) +
         XmlTag("ETag", Quoted(m.etag)) + XmlTag("Size", std::to_string(m.size)) +
         (owner ? Owner(ctx) : "") + "<StorageClass>STANDARD</StorageClass></Contents>";
  }
  for (const auto& p : list->common_prefixes) {
    x += "<CommonPrefixes>" + XmlTag("Prefix", enc(p)) + "</CommonPrefixes>";
  }
  x += "</ListBucketResult>";
  co_await SendXml(ctx, 200, x);
}

Awaitable<void> DeleteObjects(S3Context& ctx) {
  auto body = co_await ctx.body.ReadAll(kMaxSmallBodyBytes);
  if (!body.ok()) co_return co_await SendS3Error(ctx, body.status());
  if (auto md5h = ctx.request.Header("content-md5")) {
    auto want = Base64Decode(*md5h);
    store::Md5Hasher h;
    h.Update(*body);
    store::Md5 got = h.Finish();
    if (!want.ok() || want->size() != 16) {
      co_return co_await SendS3Error(
          ctx, S3Status(S3Error::kInvalidDigest, "The Content-MD5 you specified was invalid."));
    }
    if (!std::equal(got.begin(), got.end(), want->begin())) {
      co_return co_await SendS3Error(
          ctx, S3Status(S3Error::kBadDigest,
                        "The Content-MD5 you specified did not match what we received."));
    }
  }
  auto req = ParseDeleteRequest(AsStringView(*body));
  if (!req.ok()) co_return co_await SendS3Error(ctx, req.status());
  auto b = ctx.store.HeadBucket(ctx.request.bucket);
  if (!b.ok()) co_return co_await SendS3Error(ctx, b.status());
  std::string x(kXmlDecl);
  x += "<DeleteResult" + std::string(kNs) + ">";
  for (const std::string& key : req->keys) {
    Status s = ctx.store.Delete(ctx.request.bucket, key);
    if (s.ok()) {
      if (!req->quiet) x += "<Deleted>" + XmlTag("Key", key) + "</Deleted>";
    } else {
      x += "<Error>" + XmlTag("Key", key) + XmlTag("Code", Describe(ToS3Error(s)).code) +
           XmlTag("Message", s.message()) + "</Error>";
    }
  }
  x += "</DeleteResult>";
  co_await SendXml(ctx, 200, x);
}

// ---------------------------------------------------------------- objects

// Streams the request body into `writer`; returns the committed metadata.
Awaitable<Result<ObjectMeta>> ReceiveInto(S3Context& ctx, store::ObjectWriter& writer) {
  PooledBuffer pooled;
  std::span<uint8_t> buf = pooled.span();
  for (;;) {
    auto n = co_await ctx.body.Read(buf);
    if (!n.ok()) co_return n.status();
    if (*n == 0) break;
    Status s = writer.Write(ByteSpan(buf.data(), *n));
    if (!s.ok()) co_return s;
  }
  co_return writer.Commit();
}

Awaitable<void> PutObject(S3Context& ctx) {
  auto opts = OptionsFromHeaders(ctx.request);
  if (!opts.ok()) co_return co_await SendS3Error(ctx, opts.status());
  auto acl = AclTextFromHeaders(ctx);
  if (!acl.ok()) co_return co_await SendS3Error(ctx, acl.status());
  opts->acl = std::move(*acl);
  // Conditional write: the store checks it atomically when it publishes the object.
  if (auto v = ctx.request.Header("if-match")) opts->condition.if_match = EtagList(*v);
  if (auto v = ctx.request.Header("if-none-match")) opts->condition.if_none_match = EtagList(*v);
  if (ctx.request.content_length && *ctx.request.content_length > store::kMaxObjectBytes) {
    co_return co_await SendS3Error(
        ctx, S3Status(S3Error::kEntityTooLarge, "Your proposed upload exceeds the maximum size"));
  }
  auto w = ctx.store.Put(ctx.request.bucket, ctx.request.key, std::move(*opts));
  if (!w.ok()) co_return co_await SendS3Error(ctx, w.status());
  auto meta = co_await ReceiveInto(ctx, **w);
  if (!meta.ok()) co_return co_await SendS3Error(ctx, meta.status());
  KVCS_LOG_DEBUG("s3: put {}/{} {} bytes", ctx.request.bucket, ctx.request.key, meta->size);
  HeaderList h;
  h.emplace_back("ETag", Quoted(meta->etag));
  co_await SendEmpty(ctx, 200, std::move(h));
}

struct CopySource {
  std::string bucket, key;
  std::shared_ptr<const store::ObjectReader> reader;  // the version being copied
};

// Parses x-amz-copy-source ("[/]bucket/key[?versionId=...]", percent-encoded), checks that the
// requester may read the source object (object READ) and opens it. A missing source is
// NoSuchKey for who may list the source bucket, AccessDenied for others.
Result<CopySource> OpenCopySource(S3Context& ctx, std::string_view source) {
  auto bad = [] {
    return S3Status(S3Error::kInvalidArgument,
                    "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
  };
  size_t q = source.find('?');
  if (q != std::string_view::npos) {
    std::string_view query = source.substr(q + 1);
    if (query.substr(0, 10) == "versionId=" && query != "versionId=null") {
      return S3Status(S3Error::kNotImplemented, "versioning is not supported");
    }
    source = source.substr(0, q);
  }
  auto decoded = UriDecode(source);
  if (!decoded.ok()) return bad();
  std::string_view src = *decoded;
  if (!src.empty() && src.front() == '/') src.remove_prefix(1);
  size_t slash = src.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == src.size()) return bad();
  CopySource out{std::string(src.substr(0, slash)), std::string(src.substr(slash + 1)), nullptr};
  KVCS_ASSIGN_OR_RETURN(store::BucketInfo sb, ctx.store.HeadBucket(out.bucket));
  auto reader = ctx.store.Open(out.bucket, out.key);
  if (!reader.ok()) return HideMissingKey(sb, ctx.request.user_id, reader.status());
  KVCS_RETURN_IF_ERROR(
      CheckObjectPermission(sb, (*reader)->meta().acl, ctx.request.user_id, Permission::kRead));
  if (auto cond = ctx.request.Header("x-amz-copy-source-if-match")) {
    if (!EtagListMatches(*cond, (*reader)->meta().etag)) {
      return S3Status(S3Error::kPreconditionFailed,
                      "At least one of the pre-conditions you specified did not hold");
    }
  }
  out.reader = std::move(*reader);
  return out;
}

Awaitable<void> CopyObject(S3Context& ctx, std::string_view source) {
  auto src = OpenCopySource(ctx, source);
  if (!src.ok()) co_return co_await SendS3Error(ctx, src.status());
  const std::string& sb = src->bucket;
  const std::string& sk = src->key;
  bool replace =
      ctx.request.Header("x-amz-metadata-directive") == std::optional<std::string_view>("REPLACE");
  if (!replace && sb == ctx.request.bucket && sk == ctx.request.key) {
    co_return co_await SendS3Error(
        ctx, S3Status(S3Error::kInvalidRequest,
                      "This copy request is illegal because it is trying to copy an object to "
                      "itself without changing the object's metadata."));
  }
  // The destination's representation: the request's (REPLACE) or the source's (COPY); its ACL
  // is the request's, never the source's (as S3).
  PutOptions opts;
  if (replace) {
    auto o = OptionsFromHeaders(ctx.request);
    if (!o.ok()) co_return co_await SendS3Error(ctx, o.status());
    o->expected_md5.reset();
    o->expected_size.reset();
    opts = std::move(*o);
  } else {
    opts = store::RepresentationOf(src->reader->meta());
  }
  auto acl = AclTextFromHeaders(ctx);
  if (!acl.ok()) co_return co_await SendS3Error(ctx, acl.status());
  opts.acl = std::move(*acl);
  src->reader.reset();
  auto meta = ctx.store.Copy(sb, sk, ctx.request.bucket, ctx.request.key, std::move(opts));
  if (!meta.ok()) co_return co_await SendS3Error(ctx, meta.status());
  co_await SendXml(ctx, 200,
                   std::string(kXmlDecl) + "<CopyObjectResult" + std::string(kNs) + ">" +
                       XmlTag("LastModified", FormatIsoDate(meta->last_modified_ms)) +
                       XmlTag("ETag", Quoted(meta->etag)) + "</CopyObjectResult>");
}

// Query parameters of a (presigned) GET that override response headers.
constexpr std::pair<const char*, const char*> kResponseOverrides[] = {
    {"response-content-disposition", "Content-Disposition"},
    {"response-cache-control", "Cache-Control"},
    {"response-content-encoding", "Content-Encoding"},
    {"response-content-language", "Content-Language"},
    {"response-expires", "Expires"}};

// RFC 7232 section 6 evaluation order. Returns kNone, kPreconditionFailed or kNotModified.
S3Error EvaluateConditions(const ExtensionRequest& r, const ObjectMeta& m) {
  int64_t lm = m.last_modified_ms / 1000;
  if (auto v = r.Header("if-match")) {
    if (!EtagListMatches(*v, m.etag)) return S3Error::kPreconditionFailed;
  } else if (auto v2 = r.Header("if-unmodified-since")) {
    auto t = ParseHttpDate(*v2);
    if (t && lm > *t) return S3Error::kPreconditionFailed;
  }
  if (auto v = r.Header("if-none-match")) {
    if (EtagListMatches(*v, m.etag)) return S3Error::kNotModified;
  } else if (auto v2 = r.Header("if-modified-since")) {
    auto t = ParseHttpDate(*v2);
    if (t && lm <= *t) return S3Error::kNotModified;
  }
  return S3Error::kNone;
}

Awaitable<void> GetObject(S3Context& ctx) {
  const ExtensionRequest& r = ctx.request;
  bool head = r.method == "HEAD";
  auto reader = ctx.store.Open(r.bucket, r.key);
  if (!reader.ok()) {
    co_return co_await SendS3Error(ctx, HideMissingKey(ctx.bucket, r.user_id, reader.status()));
  }
  const ObjectMeta& m = (*reader)->meta();
  // Object READ, decided on the metadata the open just read (no extra I/O).
  if (Status a = CheckObjectPermission(ctx.bucket, m.acl, r.user_id, Permission::kRead); !a.ok()) {
    co_return co_await SendS3Error(ctx, a);
  }
  S3Error cond = EvaluateConditions(r, m);
  if (cond == S3Error::kNotModified) {
    HeaderList h;
    h.emplace_back("ETag", Quoted(m.etag));
    h.emplace_back("Last-Modified", FormatHttpDate(m.last_modified_ms / 1000));
    Status s = co_await ctx.response.Start(304, std::move(h), std::nullopt);
    if (s.ok()) co_await ctx.response.Finish();
    co_return;
  }
  if (cond == S3Error::kPreconditionFailed) {
    co_return co_await SendS3Error(
        ctx, S3Status(S3Error::kPreconditionFailed,
                      "At least one of the pre-conditions you specified did not hold"));
  }
  ByteRange range{0, m.size ? m.size - 1 : 0};
  bool partial = false;
  if (auto rh = r.Header("range")) {
    RangeKind k = ParseRange(*rh, m.size, &range);
    if (k == RangeKind::kUnsatisfiable) {
      Status st = S3Status(S3Error::kInvalidRange, "The requested range is not satisfiable");
      co_return co_await SendS3Error(ctx, st);
    }
    partial = k == RangeKind::kSatisfiable;
  }
  uint64_t length = m.size == 0 ? 0 : (partial ? range.length() : m.size);
  HeaderList h = ObjectHeaders(m);
  std::string ct = m.content_type;
  if (auto v = r.Query("response-content-type")) ct = std::string(*v);
  h.emplace_back("Content-Type", ct);
  for (const auto& [q, name] : kResponseOverrides) {
    if (auto v = r.Query(q)) h.emplace_back(name, std::string(*v));
  }
  if (partial) {
    h.emplace_back("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                        std::to_string(range.last) + "/" + std::to_string(m.size));
  }
  Status s = co_await ctx.response.Start(partial ? 206 : 200, std::move(h), length);
  if (!s.ok() || head) {
    if (s.ok()) co_await ctx.response.Finish();
    co_return;
  }
  // Whole-object reads are verified against the stored SHA-256; a mismatch aborts the response
  // (the connection closes before Content-Length bytes), so a client never accepts bad bytes.
  bool verify = !partial && m.sha256.has_value();
  Sha256 sha;
  PooledBuffer pooled;
  std::span<uint8_t> buf = pooled.span();
  uint64_t off = partial ? range.first : 0, left = length;
  while (left > 0) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    auto n = (*reader)->ReadAt(off, std::span<uint8_t>(buf.data(), want));
    if (!n.ok() || *n != want) {
      KVCS_LOG_ERROR("s3: read failed for {}/{} at {}: {}", r.bucket, r.key, off,
                     n.ok() ? "short read" : n.status().ToString());
      co_return;  // abort: the server closes the connection mid-body
    }
    if (verify) sha.Update(ByteSpan(buf.data(), want));
    s = co_await ctx.response.Write(ByteSpan(buf.data(), want));
    if (!s.ok()) co_return;
    off += want;
    left -= want;
  }
  if (verify && sha.Finish() != *m.sha256) {
    KVCS_LOG_ERROR("s3: {}/{} failed its SHA-256 on read; response aborted", r.bucket, r.key);
    co_return;
  }
  co_await ctx.response.Finish();
}

Awaitable<void> DeleteObject(S3Context& ctx) {
  Status s = ctx.store.Delete(ctx.request.bucket, ctx.request.key);
  if (!s.ok()) co_return co_await SendS3Error(ctx, s);
  co_await SendEmpty(ctx, 204);
}

// ---------------------------------------------------------------- multipart

Awaitable<void> CreateMultipart(S3Context& ctx) {
  auto opts = OptionsFromHeaders(ctx.request);
  if (!opts.ok()) co_return co_await SendS3Error(ctx, opts.status());
  opts->expected_md5.reset();
  opts->expected_size.reset();
  auto id = ctx.store.CreateMultipart(ctx.request.bucket, ctx.request.key, std::move(*opts));
  if (!id.ok()) co_return co_await SendS3Error(ctx, id.status());
  co_await SendXml(ctx, 200,
                   std::string(kXmlDecl) + "<InitiateMultipartUploadResult" + std::string(kNs) +
                       ">" + XmlTag("Bucket", ctx.request.bucket) + XmlTag("Key", ctx.request.key) +
                       XmlTag("UploadId", *id) + "</InitiateMultipartUploadResult>");
}

// x-amz-copy-source-range "bytes=first-last" of an object of `size` bytes: InvalidArgument when
// malformed, InvalidRange when outside the object. Absent: the whole object.
Result<ByteRange> CopySourceRange(const ExtensionRequest& r, uint64_t size) {
  auto v = r.Header("x-amz-copy-source-range");
  if (!v) {
    if (size == 0) return ByteRange{0, 0};
    return ByteRange{0, size - 1};
  }
  auto bad = [] {
    return S3Status(S3Error::kInvalidArgument,
                    "The x-amz-copy-source-range value must be of the form bytes=first-last where "
                    "first and last are the zero-based offsets of the first and last bytes to "
                    "copy");
  };
  std::string_view s = Trim(*v);
  if (s.substr(0, 6) != "bytes=") return bad();
  s.remove_prefix(6);
  size_t dash = s.find('-');
  if (dash == std::string_view::npos) return bad();
  auto first = ParseDecimal<uint64_t>(s.substr(0, dash));
  auto last = ParseDecimal<uint64_t>(s.substr(dash + 1));
  if (!first || !last || *first > *last) return bad();
  if (*last >= size) {
    return S3Status(S3Error::kInvalidRange,
                    "The specified copy range is outside the source object (size " +
                        std::to_string(size) + ")");
  }
  if (*last - *first + 1 > store::kMaxPartBytes) {
    return S3Status(S3Error::kInvalidArgument, "a part copies at most 5 GiB");
  }
  return ByteRange{*first, *last};
}

// UploadPartCopy: the part's bytes are (a range of) another object.
Awaitable<void> UploadPartCopy(S3Context& ctx, std::string_view upload_id, int part,
                               std::string_view source) {
  auto src = OpenCopySource(ctx, source);
  if (!src.ok()) co_return co_await SendS3Error(ctx, src.status());
  const ObjectMeta& sm = src->reader->meta();
  auto range = CopySourceRange(ctx.request, sm.size);
  if (!range.ok()) co_return co_await SendS3Error(ctx, range.status());
  uint64_t length = sm.size == 0 ? 0 : range->length();
  PutOptions po;
  po.expected_size = length;
  auto w = ctx.store.PutPart(ctx.request.bucket, ctx.request.key, upload_id, part, std::move(po));
  if (!w.ok()) co_return co_await SendS3Error(ctx, w.status());
  PooledBuffer pooled;
  std::span<uint8_t> buf = pooled.span();
  for (uint64_t off = range->first, left = length; left > 0;) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    auto n = src->reader->ReadAt(off, buf.first(want));
    if (!n.ok()) co_return co_await SendS3Error(ctx, n.status());
    if (*n != want) {
      co_return co_await SendS3Error(ctx, Status(Code::kCorruption, "copy source truncated"));
    }
    if (Status s = (*w)->Write(ByteSpan(buf.data(), want)); !s.ok()) {
      co_return co_await SendS3Error(ctx, s);
    }
    off += want;
    left -= want;
  }
  auto meta = (*w)->Commit();
  if (!meta.ok()) co_return co_await SendS3Error(ctx, meta.status());
  co_await SendXml(ctx, 200,
                   std::string(kXmlDecl) + "<CopyPartResult" + std::string(kNs) + ">" +
                       XmlTag("LastModified", FormatIsoDate(meta->last_modified_ms)) +
                       XmlTag("ETag", Quoted(meta->etag)) + "</CopyPartResult>");
}

Awaitable<void> UploadPart(S3Context& ctx, std::string_view upload_id, std::string_view part) {
  int n = 0;
  if (part.empty() || part.size() > 5 ||
      !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      (n = std::atoi(std::string(part).c_str())) < 1 || n > store::kMaxPartNumber) {
    co_return co_await SendS3Error(
        ctx, S3Status(S3Error::kInvalidArgument,
                      "Part number must be an integer between 1 and 10000, inclusive"));
  }
  if (auto src = ctx.request.Header("x-amz-copy-source")) {
    co_return co_await UploadPartCopy(ctx, upload_id, n, *src);
  }
  auto opts = OptionsFromHeaders(ctx.request);
  if (!opts.ok()) co_return co_await SendS3Error(ctx, opts.status());
  if (ctx.request.content_length && *ctx.request.content_length > store::kMaxPartBytes) {
    co_return co_await SendS3Error(
        ctx, S3Status(S3Error::kEntityTooLarge, "Your proposed upload exceeds the maximum size"));
  }
  auto w = ctx.store.PutPart(ctx.request.bucket, ctx.request.key, upload_id, n, std::move(*opts));
  if (!w.ok()) co_return co_await SendS3Error(ctx, w.status());
  auto meta = co_await ReceiveInto(ctx, **w);
  if (!meta.ok()) co_return co_await SendS3Error(ctx, meta.status());
  HeaderList h;
  h.emplace_back("ETag", Quoted(meta->etag));
  co_await SendEmpty(ctx, 200, std::move(h));
}

Awaitable<void> CompleteMultipart(S3Context& ctx, std::string_view upload_id) {
  if (ctx.request.Header("if-match") || ctx.request.Header("if-none-match")) {
    co_return co_await SendS3Error(
        ctx, S3Status(S3Error::kNotImplemented,
                      "conditional CompleteMultipartUpload is not supported; use a conditional "
                      "PutObject"));
  }
  auto body = co_await ctx.body.ReadAll(kMaxSmallBodyBytes);
  if (!body.ok()) co_return co_await SendS3Error(ctx, body.status());
  auto parts = ParseCompleteMultipartUpload(AsStringView(*body));
  if (!parts.ok()) co_return co_await SendS3Error(ctx, parts.status());
  auto meta = ctx.store.CompleteMultipart(ctx.request.bucket, ctx.request.key, upload_id, *parts);
  if (!meta.ok()) co_return co_await SendS3Error(ctx, meta.status());
  co_await SendXml(ctx, 200,
                   std::string(kXmlDecl) + "<CompleteMultipartUploadResult" + std::string(kNs) +
                       ">" + XmlTag("Location", "/" + ctx.request.bucket + "/" + ctx.request.key) +
                       XmlTag("Bucket", ctx.request.bucket) + XmlTag("Key", ctx.request.key) +
                       XmlTag("ETag", Quoted(meta->etag)) + "</CompleteMultipartUploadResult>");
}

Awaitable<void> AbortMultipart(S3Context& ctx, std::string_view upload_id) {
  Status s = ctx.store.AbortMultipart(ctx.request.bucket, ctx.request.key, upload_id);
  if (!s.ok()) co_return co_await SendS3Error(ctx, s);
  co_await SendEmpty(ctx, 204);
}

Awaitable<void> ListParts(S3Context& ctx, std::string_view upload_id) {
  auto parts = ctx.store.ListParts(ctx.request.bucket, ctx.request.key, upload_id);
  if (!parts.ok()) co_return co_await SendS3Error(ctx, parts.status());
  auto max_parts = ParseMaxKeys(ctx.request, "max-parts", kMaxListParts);
  if (!max_parts.ok()) co_return co_await SendS3Error(ctx, max_parts.status());
  int marker = 0;
  if (auto v = ctx.request.Query("part-number-marker")) marker = std::atoi(std::string(*v).c_str());
  std::string x(kXmlDecl);
  x += "<ListPartsResult" + std::string(kNs) + ">" + XmlTag("Bucket", ctx.request.bucket) +
       XmlTag("Key", ctx.request.key) + XmlTag("UploadId", upload_id) +
       XmlTag("PartNumberMarker", std::to_string(marker)) + Owner(ctx) +
       "<StorageClass>STANDARD</StorageClass>";
  int count = 0, last = marker;
  bool truncated = false;
  std::string items;
  for (const auto& p : *parts) {
    if (p.part_number <= marker) continue;
    if (count >= *max_parts) {
      truncated = true;
      break;
    }
    ++count;
    last = p.part_number;
    items += "<Part>" + XmlTag("PartNumber", std::to_string(p.part_number)) +
             XmlTag("LastModified", FormatIsoDate(p.last_modified_ms)) +
             XmlTag("ETag", Quoted(p.etag)) + XmlTag("Size", std::to_string(p.size)) + "</Part>";
  }
  x += XmlTag("NextPartNumberMarker", std::to_string(last)) +
       XmlTag("MaxParts", std::to_string(*max_parts)) +
       XmlTag("IsTruncated", truncated ? "true" : "false") + items + "</ListPartsResult>";
  co_await SendXml(ctx, 200, x);
}

Awaitable<void> ListUploads(S3Context& ctx) {
  std::string prefix(ctx.request.Query("prefix").value_or(""));
  auto ups = ctx.store.ListMultipartUploads(ctx.request.bucket, prefix);
  if (!ups.ok()) co_return co_await SendS3Error(ctx, ups.status());
  std::string x(kXmlDecl);
  x += "<ListMultipartUploadsResult" + std::string(kNs) + ">" +
       XmlTag("Bucket", ctx.request.bucket) +
       "<KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>" + XmlTag("Prefix", prefix) +
       XmlTag("MaxUploads", std::to_string(store::kMaxListKeys)) +
       "<IsTruncated>false</IsTruncated>";
  for (const auto& u : *ups) {
    x += "<Upload>" + XmlTag("Key", u.key) + XmlTag("UploadId", u.upload_id) + Owner(ctx) +
         "<Initiator><ID>kvcs</ID><DisplayName>kvcs</DisplayName></Initiator>"
         "<StorageClass>STANDARD</StorageClass>" +
         XmlTag("Initiated", FormatIsoDate(u.initiated_ms)) + "</Upload>";
  }
  x += "</ListMultipartUploadsResult>";
  co_await SendXml(ctx, 200, x);
}

Awaitable<void> NotImplemented(S3Context& ctx, std::string what) {
  co_await SendS3Error(ctx, S3Status(S3Error::kNotImplemented, what + " is not implemented"));
}

// Bucket sub-resources we do not implement (answered 501 rather than misrouted to a listing).
constexpr std::string_view kUnsupportedBucketSubresources[] = {
    "policy",      "cors",       "lifecycle",           "tagging",           "encryption",
    "website",     "logging",    "notification",        "replication",       "requestPayment",
    "object-lock", "accelerate", "ownershipControls",   "publicAccessBlock", "analytics",
    "metrics",     "inventory",  "intelligent-tiering", "versions"};

}  // namespace

Awaitable<void> SendS3Error(S3Context& ctx, const Status& status) {
  S3Error e = ToS3Error(status);
  S3ErrorInfo info = Describe(e);
  if (info.http_status >= 500) {
    KVCS_LOG_WARN("s3: {} {}: {}", ctx.request.method, ctx.request.target, status.ToString());
  } else {
    KVCS_LOG_DEBUG("s3: {} {}: {} {}", ctx.request.method, ctx.request.target, info.code,
                   status.message());
  }
  HeaderList h;
  if (e == S3Error::kInvalidRange) {
    if (auto m = ctx.store.Head(ctx.request.bucket, ctx.request.key); m.ok()) {
      h.emplace_back("Content-Range", "bytes */" + std::to_string(m->size));
    }
  }
  std::string resource = ctx.request.path;
  std::string x(kXmlDecl);
  x += "<Error>" + XmlTag("Code", info.code) + XmlTag("Message", status.message());
  if (!ctx.request.bucket.empty()) x += XmlTag("BucketName", ctx.request.bucket);
  if (e == S3Error::kNoSuchKey) x += XmlTag("Key", ctx.request.key);
  x += XmlTag("Resource", resource) + XmlTag("RequestId", ctx.request_id) + "</Error>";
  co_await SendXml(ctx, info.http_status, x, std::move(h));
}

Awaitable<void> HandleS3(S3Context& ctx) {
  const ExtensionRequest& r = ctx.request;
  const std::string& m = r.method;
  const bool anonymous = r.user_id.empty();
  // Statuses, not awaitables: SendS3Error keeps a reference to its Status until it is awaited.
  auto not_allowed = [] {
    return S3Status(S3Error::kMethodNotAllowed,
                    "The specified method is not allowed against this resource.");
  };
  auto denied = [] { return S3Status(S3Error::kAccessDenied, "Access Denied"); };
  if (r.bucket.empty()) {
    if (m != "GET") co_return co_await SendS3Error(ctx, not_allowed());
    if (anonymous) co_return co_await SendS3Error(ctx, denied());
    co_return co_await ListBuckets(ctx);
  }
  // Versions: KV blocks are immutable and buckets unversioned; only the "null" version exists.
  if (auto v = r.Query("versionId"); v && *v != "null") {
    co_return co_await NotImplemented(ctx, "versioning (versionId)");
  }
  const bool bucket_put = r.key.empty() && m == "PUT";
  if (bucket_put && !r.HasQuery("acl") && !r.HasQuery("versioning")) {
    bool sub = false;
    for (std::string_view q : kUnsupportedBucketSubresources) sub = sub || r.HasQuery(q);
    if (!sub) {
      if (anonymous) co_return co_await SendS3Error(ctx, denied());
      co_return co_await CreateBucket(ctx);
    }
  }
  // Every other request names an existing bucket; what the requester may do with it and its
  // objects is access.h's: the owner everything, others what an ACL grants.
  auto info = ctx.store.HeadBucket(r.bucket);
  if (!info.ok()) co_return co_await SendS3Error(ctx, info.status());
  ctx.bucket = std::move(*info);
  auto need = [&](Permission p) { return CheckBucketPermission(ctx.bucket, r.user_id, p); };
  auto owner_only = [&] { return CheckBucketAccess(ctx.bucket, r.user_id); };
  // The object's ACL decides (the bucket owner always passes); a missing key is NoSuchKey for
  // who may list the bucket, AccessDenied for others.
  auto need_object = [&](Permission p) -> Status {
    if (IsBucketOwner(ctx.bucket, r.user_id)) return Status::Ok();
    auto h = ctx.store.Head(r.bucket, r.key);
    if (h.ok()) return CheckObjectPermission(ctx.bucket, h->acl, r.user_id, p);
    return HideMissingKey(ctx.bucket, r.user_id, h.status());
  };
  Status a;
  if (r.key.empty()) {
    for (std::string_view sub : kUnsupportedBucketSubresources) {
      if (!r.HasQuery(sub)) continue;
      if (a = owner_only(); !a.ok()) co_return co_await SendS3Error(ctx, a);
      co_return co_await NotImplemented(ctx, "?" + std::string(sub));
    }
    if (m == "GET") {
      if (r.HasQuery("location") || r.HasQuery("versioning")) {
        if (a = owner_only(); !a.ok()) co_return co_await SendS3Error(ctx, a);
        if (r.HasQuery("location")) co_return co_await GetBucketLocation(ctx);
        co_return co_await GetBucketVersioning(ctx);
      }
      if (r.HasQuery("acl")) {
        if (a = need(Permission::kReadAcp); !a.ok()) co_return co_await SendS3Error(ctx, a);
        co_return co_await SendAcl(ctx, ctx.bucket.acl);
      }
      if (a = need(Permission::kRead); !a.ok()) co_return co_await SendS3Error(ctx, a);
      if (r.HasQuery("uploads")) co_return co_await ListUploads(ctx);
      co_return co_await ListObjects(ctx,
                                     r.Query("list-type") == std::optional<std::string_view>("2"));
    }
    if (m == "PUT") {
      if (r.HasQuery("acl")) {
        if (a = need(Permission::kWriteAcp); !a.ok()) co_return co_await SendS3Error(ctx, a);
        co_return co_await PutBucketAcl(ctx);
      }
      if (a = owner_only(); !a.ok()) co_return co_await SendS3Error(ctx, a);
      co_return co_await NotImplemented(ctx, "versioning (KV blocks are immutable)");
    }
    if (m == "DELETE") {
      if (a = owner_only(); !a.ok()) co_return co_await SendS3Error(ctx, a);
      co_return co_await DeleteBucket(ctx);
    }
    if (m == "HEAD") {
      if (a = need(Permission::kRead); !a.ok()) co_return co_await SendS3Error(ctx, a);
      co_return co_await HeadBucket(ctx);
    }
    if (m == "POST" && r.HasQuery("delete")) {
      if (a = need(Permission::kWrite); !a.ok()) co_return co_await SendS3Error(ctx, a);
      co_return co_await DeleteObjects(ctx);
    }
    co_return co_await SendS3Error(ctx, not_allowed());
  }
  auto upload_id = r.Query("uploadId");
  if ((m == "GET" || m == "PUT") && r.HasQuery("acl") && !upload_id) {
    a = need_object(m == "GET" ? Permission::kReadAcp : Permission::kWriteAcp);
    if (!a.ok()) co_return co_await SendS3Error(ctx, a);
    if (m == "PUT") co_return co_await PutObjectAcl(ctx);
    auto h = ctx.store.Head(r.bucket, r.key);
    if (!h.ok()) co_return co_await SendS3Error(ctx, h.status());
    co_return co_await SendAcl(ctx, h->acl);
  }
  if (m == "GET" || m == "HEAD") {
    if (upload_id && m == "GET") {
      if (a = need(Permission::kWrite); !a.ok()) co_return co_await SendS3Error(ctx, a);
      co_return co_await ListParts(ctx, *upload_id);
    }
    if (r.HasQuery("tagging") || r.HasQuery("attributes")) {
      if (a = owner_only(); !a.ok()) co_return co_await SendS3Error(ctx, a);
      co_return co_await NotImplemented(ctx, "object tagging/attributes");
    }
    co_return co_await GetObject(ctx);  // object READ: checked on the metadata it opens
  }
  // Writes: bucket WRITE (objects, uploads and their parts all belong to the bucket's owner).
  if (m == "PUT" || m == "DELETE" || m == "POST") {
    if (a = need(Permission::kWrite); !a.ok()) co_return co_await SendS3Error(ctx, a);
  }
  if (m == "PUT") {
    if (upload_id) {
      co_return co_await UploadPart(ctx, *upload_id, r.Query("partNumber").value_or(""));
    }
    if (r.HasQuery("tagging") || r.HasQuery("retention")) {
      co_return co_await NotImplemented(ctx, "object configuration");
    }
    if (auto src = r.Header("x-amz-copy-source")) co_return co_await CopyObject(ctx, *src);
    co_return co_await PutObject(ctx);
  }
  if (m == "DELETE") {
    if (upload_id) co_return co_await AbortMultipart(ctx, *upload_id);
    co_return co_await DeleteObject(ctx);
  }
  if (m == "POST") {
    if (r.HasQuery("uploads")) co_return co_await CreateMultipart(ctx);
    if (upload_id) co_return co_await CompleteMultipart(ctx, *upload_id);
  }
  co_await SendS3Error(ctx, not_allowed());
}

}  // namespace kvcs::s3
