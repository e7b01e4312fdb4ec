// Fuzzes the KVCS consumer's handling of a hostile peer (src/kvcs_stream/layer_verifier.h):
// arbitrary manifest versions (plain and COSE) and data object payloads at arbitrary locations,
// in any order, fed to a LayerVerifier bound to a fixed prompt (format: stream_input.h).
// Invariants: no crash, no sanitizer report; every delivered layer has the needed block count and
// the descriptor's section sizes; once refused, the publication stays refused; the buffer bound
// holds; the report covers every (block, layer).
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kvcs_stream/layer_verifier.h"
#include "kvcs_stream/test_tools/test_cache.h"
#include "stream_input.h"

using namespace kvcs;
using namespace kvcs::stream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < profile::kPubIdSize + 1) return 0;
  static const kvsp::Descriptor d = test::SmallDescriptor(2, 4);
  static const CacheIdentity identity =
      *CacheIdentity::Compute(d, fuzz::FuzzScope(), test::Tokens(fuzz::kTokens));
  static profile::KeySet keys;
  VerifierConfig c;
  c.identity = identity;
  c.publication.scope_id = identity.scope_id;
  c.publication.compat_id = identity.compat_id;
  c.publication.anchor_key = identity.anchor(identity.blocks());
  std::memcpy(c.publication.pub_id.data(), data, profile::kPubIdSize);
  const uint8_t flags = data[profile::kPubIdSize];
  c.require_signature = flags & 1;
  if (flags & 2) c.max_blocks = 1;
  if (flags & 4) c.encoding = Encoding{kvsp::Codec::kInt8, true};
  c.keys = &keys;
  c.max_buffered_bytes = 64 << 10;
  const uint64_t section = uint64_t{d.block_tokens} * d.kv_heads * d.head_dim * 2;
  const uint64_t blocks = (flags & 2) ? 1 : identity.blocks();
  LayerVerifier v(c, [&](const VerifiedLayer& l) {
    if (l.k.size() != blocks || (!l.v.empty() && l.v.size() != blocks)) std::abort();
    for (ByteSpan s : l.k) {
      if (s.size() != section) std::abort();
    }
  });
  const moqt::TrackNamespace ns = ToMoqtNamespace(c.publication);
  size_t pos = profile::kPubIdSize + 1;
  while (pos + fuzz::kRecordHeader <= size) {
    const uint8_t* h = data + pos;
    size_t len = (size_t{h[4]} << 8) | h[5];
    pos += fuzz::kRecordHeader;
    if (len > size - pos) len = size - pos;
    ByteSpan payload(data + pos, len);
    pos += len;
    const bool was_refused = v.refused();
    Status s;
    if (h[0] == 0 || h[0] == 1) {
      s = v.OnManifest(
          h[0] == 0 ? profile::TrackKind::kManifest : profile::TrackKind::kManifestCose, payload,
          h[2]);
    } else {
      moqt::FullTrackName t{ns, std::string(fuzz::kTracks[h[1] % fuzz::kTracks.size()])};
      if (h[0] & 0x80) t.track_namespace[4][0] ^= 1;  // another publication
      s = v.OnObject(t, moqt::Location{h[2], h[3]}, payload);
    }
    if (was_refused && (s.ok() || !v.refused())) std::abort();
    if (v.buffered_bytes() > c.max_buffered_bytes) std::abort();
  }
  RetrievalReport r = v.Report(StreamError::kMissing);
  if (r.blocks != blocks) std::abort();
  return 0;
}
