#include "kvcs_stream/stream_error.h"

namespace kvcs::stream {

std::string_view StreamErrorName(StreamError e) {
  switch (e) {
    case StreamError::kNone:
      return "none";
    case StreamError::kBadArgument:
      return "bad argument";
    case StreamError::kOutOfOrder:
      return "out of order";
    case StreamError::kSegmentOpen:
      return "segment still open";
    case StreamError::kPublicationEnded:
      return "publication ended";
    case StreamError::kManifestInvalid:
      return "manifest invalid";
    case StreamError::kUnsignedManifest:
      return "unsigned manifest";
    case StreamError::kUnknownKid:
      return "unknown kid";
    case StreamError::kBadSignature:
      return "bad signature";
    case StreamError::kCompatMismatch:
      return "compat_id mismatch";
    case StreamError::kDescriptorMismatch:
      return "descriptor mismatch";
    case StreamError::kBlockKeysMismatch:
      return "block keys mismatch";
    case StreamError::kManifestConflict:
      return "manifest conflict";
    case StreamError::kPublicationRefused:
      return "publication refused";
    case StreamError::kForeignPublication:
      return "foreign publication";
    case StreamError::kObjectInvalid:
      return "object invalid";
    case StreamError::kListedDigestMismatch:
      return "listed digest mismatch";
    case StreamError::kUndecodable:
      return "undecodable";
    case StreamError::kBufferFull:
      return "buffer full";
    case StreamError::kTrackNotOffered:
      return "track not offered";
    case StreamError::kRequestRefused:
      return "request refused";
    case StreamError::kMissing:
      return "missing";
    case StreamError::kDeadline:
      return "deadline";
    case StreamError::kNotCovered:
      return "not covered";
    case StreamError::kUndecryptable:
      return "undecryptable";
    case StreamError::kUnknownKeyId:
      return "unknown key id";
    case StreamError::kNotEncrypted:
      return "not encrypted";
  }
  return "unknown";
}

}  // namespace kvcs::stream
