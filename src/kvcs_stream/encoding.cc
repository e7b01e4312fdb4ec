#include "kvcs_stream/encoding.h"

#include "kvcs_stream/stream_error.h"

namespace kvcs::stream {
namespace {

bool FixedSize(kvsp::Codec c) {
  return c == kvsp::Codec::kRaw || c == kvsp::Codec::kFp8E4m3 || c == kvsp::Codec::kInt8;
}

}  // namespace

Status CheckEncoding(const Encoding& e) {
  if (!kvsp::IsImplemented(e.codec)) {
    return StreamStatus(Code::kUnsupported, StreamError::kBadArgument,
                        "codec " + std::string(kvsp::CodecName(e.codec)) + " is not implemented");
  }
  if (e.joint && !FixedSize(e.codec)) {
    return StreamStatus(Code::kInvalidArgument, StreamError::kBadArgument,
                        "a kv track needs a fixed-size codec (raw, fp8-e4m3, int8), not " +
                            std::string(kvsp::CodecName(e.codec)));
  }
  return Status::Ok();
}

std::vector<profile::TrackName> EncodingTracks(const Encoding& e, uint32_t segment) {
  std::string codec(kvsp::CodecName(e.codec));
  if (e.joint) return {profile::DataTrack(profile::Component::kKV, codec, segment)};
  return {profile::DataTrack(profile::Component::kK, codec, segment),
          profile::DataTrack(profile::Component::kV, codec, segment)};
}

Result<Bytes> EncodeData(const kvsp::Descriptor& d, kvsp::Codec codec, profile::Component c,
                         ByteSpan raw_k, ByteSpan raw_v) {
  Bytes out;
  if (c == profile::Component::kK || c == profile::Component::kKV) {
    KVCS_RETURN_IF_ERROR(kvsp::EncodeSection(codec, kvsp::KShape(d), raw_k, &out));
  }
  if (c == profile::Component::kV || c == profile::Component::kKV) {
    KVCS_RETURN_IF_ERROR(kvsp::EncodeSection(codec, kvsp::VShape(d), raw_v, &out));
  }
  return out;
}

Status DecodeData(const kvsp::Descriptor& d, kvsp::Codec codec, profile::Component c, ByteSpan data,
                  Bytes* k, Bytes* v) {
  auto fail = [](const Status& s) {
    return StreamStatus(Code::kCorruption, StreamError::kUndecodable, s.message());
  };
  ByteSpan k_part = data, v_part = data;
  if (c == profile::Component::kKV) {
    auto k_len = kvsp::MaxEncodedBytes(codec, kvsp::KShape(d));
    if (!k_len.ok()) return fail(k_len.status());
    if (*k_len > data.size()) return fail(Status(Code::kCorruption, "kv Data shorter than K"));
    k_part = data.first(*k_len);
    v_part = data.subspan(*k_len);
  }
  if (c == profile::Component::kK || c == profile::Component::kKV) {
    k->resize(kvsp::KShape(d).raw_bytes());
    Status s = kvsp::DecodeSection(codec, kvsp::KShape(d), k_part, *k);
    if (!s.ok()) return fail(s);
  }
  if (c == profile::Component::kV || c == profile::Component::kKV) {
    v->resize(kvsp::VShape(d).raw_bytes());
    Status s = kvsp::DecodeSection(codec, kvsp::VShape(d), v_part, *v);
    if (!s.ok()) return fail(s);
  }
  return Status::Ok();
}

std::string EncodingName(const Encoding& e) {
  return (e.joint ? "kv." : "k+v ") + std::string(kvsp::CodecName(e.codec));
}

Result<Encoding> ParseEncoding(std::string_view text) {
  Encoding e;
  std::string_view codec;
  if (text.substr(0, 3) == "kv.") {
    e.joint = true;
    codec = text.substr(3);
  } else if (text.substr(0, 4) == "k+v.") {
    codec = text.substr(4);
  } else {
    return InvalidArgument("encoding '" + std::string(text) +
                           "' is neither kv.<codec> nor k+v.<codec>");
  }
  KVCS_ASSIGN_OR_RETURN(e.codec, kvsp::CodecFromName(codec));
  return e;
}

}  // namespace kvcs::stream
