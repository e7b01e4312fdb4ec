// Typed errors of the KVCS stream folder: why the publisher refused a call, and why the consumer
// refused a manifest or an object from a peer (KVCS profile §5.4). Every refusal is a Status whose
// detail is a StreamError; the message keeps the profile's own error name (ObjectError,
// ManifestError, CoseError) so a user sees the exact check that failed.
#ifndef KVCS_KVCS_STREAM_STREAM_ERROR_H_
#define KVCS_KVCS_STREAM_STREAM_ERROR_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace kvcs::stream {

enum class StreamError {
  kNone = 0,
  // ---- publisher (caller errors)
  kBadArgument = 1,   // sizes or tokens that do not fit the descriptor
  kOutOfOrder,        // a layer or block not the next one of the current segment
  kSegmentOpen,       // AddSegment before the current segment completed
  kPublicationEnded,  // a call after Finish()
  // ---- consumer: manifests
  kManifestInvalid,     // the manifest (or its COSE_Sign1) is malformed
  kUnsignedManifest,    // only an unsigned manifest exists and signatures are required
  kUnknownKid,          // signed by a kid that is not in the keyring
  kBadSignature,        // the COSE signature (or its algorithm) does not verify
  kCompatMismatch,      // CompatId(manifest compat) != the namespace's compat_id
  kDescriptorMismatch,  // the manifest's descriptor (layers, ...) is not the caller's
  kBlockKeysMismatch,   // a segment's block_keys_sha256 is not the caller's Block Keys
  kManifestConflict,    // a later manifest version contradicts an earlier one
  kPublicationRefused,  // the publication was refused earlier; nothing more is taken from it
  // ---- consumer: objects
  kForeignPublication,    // an object of a track of another publication
  kObjectInvalid,         // a §3.5 check failed (layer, block, length, digest, header fields)
  kListedDigestMismatch,  // the object's Data Digest differs from the manifest's
  kUndecodable,           // the codec could not decode the verified Data
  kBufferFull,            // more unverified bytes than the consumer's bound
  // ---- consumer: outcomes
  kTrackNotOffered,  // the selected encoding is not offered for a needed segment
  kRequestRefused,   // SUBSCRIBE/FETCH refused by the peer (REQUEST_ERROR) or session closed
  kMissing,          // the track ended (or the fetch finished) without the object
  kDeadline,         // not verified within the recompute bound
  kNotCovered,       // no usable segment of the publication covers the block
  // ---- consumer: secure objects (discarded before verification, so treated as missing)
  kUndecryptable,  // the object does not authenticate or decrypt (tampered, moved, wrong key)
  kUnknownKeyId,   // the object names a Key ID the consumer's keyring does not hold
  kNotEncrypted,   // a plaintext object where encryption is required
};
std::string_view StreamErrorName(StreamError e);

inline Status StreamStatus(Code code, StreamError e, std::string message) {
  return {code, "kvcs stream: " + std::string(StreamErrorName(e)) + ": " + std::move(message),
          static_cast<int>(e)};
}

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_STREAM_ERROR_H_
