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
  PutOptions po;
  if (replace) {
    po = std::move(*replace);
  } else {
    po.content_type = sm.content_type;
    po.content_encoding = sm.content_encoding;
    po.content_disposition = sm.content_disposition;
    po.cache_control = sm.cache_control;
    po.user_meta = sm.user_meta;
  }
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
