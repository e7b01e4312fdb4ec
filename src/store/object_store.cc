// Pure helpers shared by every ObjectStore implementation.
#include "store/object_store.h"

#include <openssl/evp.h>

#include <algorithm>

#include "common/hex.h"

namespace kvcs::store {

namespace {
Status StoreErr(Code code, StoreError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
}  // namespace

Status ValidateBucketName(std::string_view name) {
  auto bad = [&](const char* why) {
    return StoreErr(Code::kInvalidArgument, StoreError::kInvalidBucketName,
                    "invalid bucket name: " + std::string(why));
  };
  if (name.size() < kMinBucketNameBytes || name.size() > kMaxBucketNameBytes) {
    return bad("must be 3 to 63 characters");
  }
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '.' && c != '-') return bad("only a-z, 0-9, '.' and '-'");
  }
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) {
    return bad("must start and end with a letter or digit");
  }
  if (name.find("..") != std::string_view::npos) return bad("no two adjacent periods");
  if (name.find(".-") != std::string_view::npos || name.find("-.") != std::string_view::npos) {
    return bad("no period next to a hyphen");
  }
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  auto ends = [&](std::string_view p) {
    return name.size() >= p.size() && name.substr(name.size() - p.size()) == p;
  };
  if (starts("xn--") || starts("sthree-")) return bad("reserved prefix");
  if (ends("-s3alias") || ends("--ol-s3")) return bad("reserved suffix");
  int dots = 0;
  bool digits_and_dots = true;
  for (char c : name) {
    if (c == '.')
      ++dots;
    else if (c < '0' || c > '9')
      digits_and_dots = false;
  }
  if (digits_and_dots && dots == 3) return bad("must not look like an IPv4 address");
  return Status::Ok();
}

Status ObjectStore::SetBucketAcl(std::string_view bucket, std::string_view acl) {
  (void)bucket;
  (void)acl;
  return StoreErr(Code::kUnsupported, StoreError::kNotImplemented,
                  "this store keeps no bucket ACLs");
}

Status ObjectStore::SetObjectAcl(std::string_view bucket, std::string_view key,
                                 std::string_view acl) {
  (void)bucket;
  (void)key;
  (void)acl;
  return StoreErr(Code::kUnsupported, StoreError::kNotImplemented,
                  "this store keeps no object ACLs");
}

PutOptions RepresentationOf(const ObjectMeta& m) {
  PutOptions o;
  o.content_type = m.content_type;
  o.content_encoding = m.content_encoding;
  o.content_disposition = m.content_disposition;
  o.cache_control = m.cache_control;
  o.expires = m.expires;
  o.user_meta = m.user_meta;
  return o;
}

Status CheckWriteCondition(const WriteCondition& c, const ObjectMeta* current) {
  auto listed = [&](const std::vector<std::string>& etags) {
    for (const std::string& e : etags) {
      if (e == "*" || (current && e == current->etag)) return current != nullptr;
    }
    return false;
  };
  if (!c.if_match.empty()) {
    if (!current) {
      return StoreErr(Code::kNotFound, StoreError::kNoSuchKey, "If-Match: the key does not exist");
    }
    if (!listed(c.if_match)) {
      return StoreErr(Code::kFailedPrecondition, StoreError::kPreconditionFailed,
                      "If-Match: the object's ETag differs");
    }
  }
  if (!c.if_none_match.empty() && listed(c.if_none_match)) {
    return StoreErr(Code::kFailedPrecondition, StoreError::kPreconditionFailed,
                    "If-None-Match: the object exists");
  }
  return Status::Ok();
}

Status ValidateKey(std::string_view key) {
  if (key.empty()) {
    return StoreErr(Code::kInvalidArgument, StoreError::kInvalidKey, "empty object key");
  }
  if (key.size() > kMaxKeyBytes) {
    return StoreErr(Code::kInvalidArgument, StoreError::kKeyTooLong,
                    "object key longer than " + std::to_string(kMaxKeyBytes) + " bytes");
  }
  if (key.find('\0') != std::string_view::npos) {
    return StoreErr(Code::kInvalidArgument, StoreError::kInvalidKey, "object key contains NUL");
  }
  return Status::Ok();
}

std::string MultipartEtag(std::span<const Md5> part_md5s) {
  Md5Hasher h;
  for (const Md5& m : part_md5s) h.Update(ByteSpan(m.data(), m.size()));
  Md5 all = h.Finish();
  return ToHex(all) + "-" + std::to_string(part_md5s.size());
}

PutOptions CopyPutOptions(const ObjectMeta& sm, std::optional<PutOptions> replace) {
  // COPY: the source's representation; its ACL is not copied (as S3).
  PutOptions po = replace ? std::move(*replace) : RepresentationOf(sm);
  po.condition = {};  // copies are unconditional (see PutOptions::condition)
  po.expected_md5.reset();
  po.expected_sha256 = sm.sha256;  // re-verifies the source bytes as they are copied
  po.expected_size = sm.size;
  return po;
}

Result<ObjectMeta> StreamCopy(const ObjectReader& source, ObjectWriter& dest, size_t chunk_bytes) {
  const uint64_t size = source.meta().size;
  Bytes buf(static_cast<size_t>(std::min<uint64_t>(chunk_bytes, std::max<uint64_t>(size, 1))));
  for (uint64_t off = 0; off < size;) {
    KVCS_ASSIGN_OR_RETURN(size_t n, source.ReadAt(off, buf));
    if (n == 0) return StoreErr(Code::kCorruption, StoreError::kCorrupt, "source truncated");
    KVCS_RETURN_IF_ERROR(dest.Write(ByteSpan(buf.data(), n)));
    off += n;
  }
  auto meta = dest.Commit();
  if (!meta.ok() && meta.status().Is(StoreError::kSha256Mismatch)) {
    return StoreErr(Code::kCorruption, StoreError::kCorrupt, "copy source failed its SHA-256");
  }
  return meta;
}

struct Md5Hasher::Ctx {
  EVP_MD_CTX* ctx = nullptr;
};

Md5Hasher::Md5Hasher() : ctx_(std::make_unique<Ctx>()) {
  ctx_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx_->ctx, EVP_md5(), nullptr);
}
Md5Hasher::~Md5Hasher() { EVP_MD_CTX_free(ctx_->ctx); }
void Md5Hasher::Update(ByteSpan data) { EVP_DigestUpdate(ctx_->ctx, data.data(), data.size()); }
Md5 Md5Hasher::Finish() {
  Md5 out{};
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_->ctx, out.data(), &n);
  EVP_DigestInit_ex(ctx_->ctx, EVP_md5(), nullptr);
  return out;
}

}  // namespace kvcs::store
