#include "kvcs_stream/object_protection.h"

#include <utility>

#include "kvcs_stream/stream_error.h"
#include "secure_objects/secure_object_error.h"

namespace kvcs::stream {
PayloadDecryptor::PayloadDecryptor(ObjectDecryption options)
    : opener_(std::move(options.keyring)), require_encryption_(options.require_encryption) {}

Result<ByteSpan> PayloadDecryptor::Open(const moqt::FullTrackName& track,
                                        const moqt::ReceivedObject& o,
                                        secure::OpenedPayload* storage) {
  auto ref = secure::ParseKeyRef(o.properties);
  if (!ref.ok() && ref.status().Is(secure::SecureObjectError::kNoKeyId)) {
    if (!require_encryption_) return o.payload;
    return StreamStatus(Code::kPermissionDenied, StreamError::kNotEncrypted,
                        "object without a Key ID and encryption is required");
  }
  auto r = opener_.Open(track, {o.location.group, o.location.object, o.publisher_priority},
                        o.properties, o.payload);
  if (!r.ok()) {
    const bool unknown = r.status().Is(secure::SecureObjectError::kUnknownKeyId);
    return StreamStatus(unknown ? Code::kNotFound : Code::kPermissionDenied,
                        unknown ? StreamError::kUnknownKeyId : StreamError::kUndecryptable,
                        r.status().message());
  }
  *storage = std::move(*r);
  return storage->payload();
}

}  // namespace kvcs::stream
