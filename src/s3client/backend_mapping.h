// How S3BackendStore translates between the store's vocabulary (store/object_store.h) and the S3
// client's (s3_client.h): client errors to StoreErrors, store PutOptions to the headers of a PUT
// (with the object's SHA-256 in user metadata kvcs-sha256), and HEAD's answer to ObjectMeta.
// Shared by the store, its readers and its writers. Pure; thread-safe.
#ifndef KVCS_S3CLIENT_BACKEND_MAPPING_H_
#define KVCS_S3CLIENT_BACKEND_MAPPING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/crypto.h"
#include "common/status.h"
#include "s3client/s3_client.h"
#include "store/object_store.h"

namespace kvcs::s3client {

// User-metadata name (after x-amz-meta-) that carries the object's SHA-256 in hex.
inline constexpr char kSha256MetaName[] = "kvcs-sha256";

// Maps a client Status to a store Status (StoreError detail; the Code is kept, so kUnavailable
// still says "retrying may help").
Status ToStoreStatus(const Status& client_status);

// A store failure: `code` with StoreError `error` as its detail.
Status StoreErr(Code code, store::StoreError error, std::string message);

// The PUT headers for store options `o`; `sha`, when known, goes in kSha256MetaName (a caller's
// own kSha256MetaName is dropped: only the store writes it).
PutObjectOptions ToClientOptions(const store::PutOptions& o, const std::optional<Digest>& sha);

// The store's view of HEAD's answer for `key`: kSha256MetaName becomes ObjectMeta::sha256, the
// multipart part count comes from the ETag's "-N" suffix.
store::ObjectMeta MetaFromHead(std::string_view key, ObjectHead h);

// The part count in a multipart ETag ("<hex>-N"); 0 for a single-PUT ETag or a bad suffix.
int PartsCountFromEtag(std::string_view etag);

// The wall clock in Unix milliseconds (last_modified_ms of what a writer commits).
int64_t NowMs();

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_BACKEND_MAPPING_H_
