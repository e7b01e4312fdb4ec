// Writes seeds for kvcs_stream_consumer_fuzzer (format: stream_input.h) into the directory given
// as argv[1]: a real Publisher's publication of the fuzzer's fixed prompt, as manifest + objects
// in production order, in reverse order (objects before the manifest), and with kv.int8.
//   kvcs_stream_fuzz_seeds fuzz/corpus/kvcs_stream_consumer_fuzzer
#include <cstdio>
#include <fstream>
#include <string>

#include "kvcs_stream/publisher.h"
#include "kvcs_stream/test_tools/test_cache.h"
#include "stream_input.h"

using namespace kvcs;
using namespace kvcs::stream;

namespace {

void Record(Bytes& out, uint8_t kind, uint8_t track, uint64_t group, uint64_t object,
            const Bytes& payload) {
  out.insert(out.end(),
             {kind, track, static_cast<uint8_t>(group), static_cast<uint8_t>(object),
              static_cast<uint8_t>(payload.size() >> 8), static_cast<uint8_t>(payload.size())});
  out.insert(out.end(), payload.begin(), payload.end());
}

bool Write(const std::string& dir, bool int8, bool reverse, uint8_t flags) {
  const kvsp::Descriptor d = test::SmallDescriptor(2, 4);
  moqt::TrackStore store;
  PublisherConfig c;
  c.descriptor = d;
  c.scope_key = fuzz::FuzzScope();
  c.encodings = {int8 ? Encoding{kvsp::Codec::kInt8, true} : Encoding{}};
  auto p = Publisher::Create(&store, c, test::Tokens(fuzz::kTokens));
  if (!p.ok()) return false;
  for (uint32_t l = 0; l < d.layers; ++l) {
    if (!(*p)->PublishLayer(l, test::LayerK(d, l, 0, 2), test::LayerV(d, l, 0, 2)).ok())
      return false;
  }
  Bytes manifest;
  auto mt = store.FindTrack({(*p)->track_namespace(), "manifest"});
  Record(manifest, 0, 4, 0, 0, *mt->Find(*mt->largest_normal())->payload);
  Bytes objects;
  for (uint8_t t = 0; t < fuzz::kTracks.size() - 1; ++t) {
    auto track = store.FindTrack({(*p)->track_namespace(), std::string(fuzz::kTracks[t])});
    if (track == nullptr) continue;
    for (uint64_t g = 0; g < d.layers; ++g) {
      for (uint64_t o = 0; o < 2; ++o) {
        auto obj = track->Find({g, o});
        if (obj && obj->payload) Record(objects, 2, t, g, o, *obj->payload);
      }
    }
  }
  const auto& id = (*p)->ns().pub_id;
  Bytes out(id.begin(), id.end());
  out.push_back(flags);
  const Bytes& first = reverse ? objects : manifest;
  const Bytes& second = reverse ? manifest : objects;
  out.insert(out.end(), first.begin(), first.end());
  out.insert(out.end(), second.begin(), second.end());
  std::string name = dir + "/" + (int8 ? "int8" : "raw") + (reverse ? "_objects_first" : "") +
                     ((flags & 2) ? "_one_block" : "");
  std::ofstream(name, std::ios::binary)
      .write(reinterpret_cast<const char*>(out.data()), out.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  bool ok = Write(argv[1], false, false, 0) && Write(argv[1], false, true, 0) &&
            Write(argv[1], false, false, 2) && Write(argv[1], true, false, 4);
  return ok ? 0 : 1;
}
