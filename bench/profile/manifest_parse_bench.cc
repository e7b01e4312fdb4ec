// Manifest parse and write rates: the one-pass reader (profile/manifest_one_pass.h) and writer
// (ManifestToJson) against their nlohmann references (ParseManifestReference,
// ManifestToJsonReference), same text, same run. The manifest is the last version of a
// complete 64K-token publication (4096 blocks of 16 tokens, 32 layers, k.raw + v.raw, every
// object digest listed: the version a consumer joining at the end parses), ~17 MB.
//
//   manifest_parse_bench [tokens=65536] [reps=5]
// Prints MB/s of each (best of reps) and the ratios, with the load average.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/support/bench_util.h"
#include "profile/manifest.h"
#include "profile/manifest_one_pass.h"
#include "tensorio/synthetic.h"

namespace kvcs {
namespace {

profile::Manifest Build(uint64_t tokens) {
  profile::Manifest m;
  m.compat = tensorio::Llama31_8BDescriptor();
  const kvsp::Descriptor& d = m.compat;
  m.layers = d.layers;
  m.block_tokens = d.block_tokens;
  profile::ManifestSegment s;
  s.blocks = tokens / d.block_tokens;
  s.block_keys_sha256.fill(0x5a);
  s.tracks = {profile::DataTrack(profile::Component::kK, "raw", 0),
              profile::DataTrack(profile::Component::kV, "raw", 0)};
  s.complete = true;
  auto& od = s.object_digests.emplace();
  uint32_t x = 1;
  for (const char* t : {"k.raw.s0", "v.raw.s0"}) {
    auto& groups = od[t];
    groups.resize(d.layers);
    for (auto& g : groups) {
      g.resize(s.blocks);
      for (Digest& dg : g) {
        for (uint8_t& b : dg) b = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 16);
      }
    }
  }
  m.segments = {std::move(s)};
  return m;
}

template <typename F>
double BestSeconds(int reps, F&& parse) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t0 = bench::Now();
    if (!parse()) {
      std::fprintf(stderr, "parse failed\n");
      std::exit(1);
    }
    best = std::min(best, bench::Now() - t0);
  }
  return best;
}

}  // namespace
}  // namespace kvcs

int main(int argc, char** argv) {
  using namespace kvcs;
  const uint64_t tokens = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 65536;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const profile::Manifest built = Build(tokens);
  auto text = profile::ManifestToJson(built);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
    return 1;
  }
  const double mb = static_cast<double>(text->size()) / 1e6;
  const double ref = BestSeconds(reps, [&] { return profile::ParseManifestReference(*text).ok(); });
  const double one =
      BestSeconds(reps, [&] { return profile::ParseManifestOnePass(*text).has_value(); });
  const double api = BestSeconds(reps, [&] { return profile::ParseManifest(*text).ok(); });
  const double enc = BestSeconds(reps, [&] { return profile::ManifestToJson(built).ok(); });
  const double enc_ref =
      BestSeconds(reps, [&] { return profile::ManifestToJsonReference(built).ok(); });
  std::printf("manifest of %llu tokens: %.1f MB, best of %d, load %s\n",
              static_cast<unsigned long long>(tokens), mb, reps, bench::LoadAvg().c_str());
  std::printf("  nlohmann reference  %8.1f MB/s  %7.1f ms\n", mb / ref, ref * 1e3);
  std::printf("  one-pass reader     %8.1f MB/s  %7.1f ms\n", mb / one, one * 1e3);
  std::printf("  ParseManifest       %8.1f MB/s  %7.1f ms\n", mb / api, api * 1e3);
  std::printf("  ratio one-pass / reference: %.1fx\n", ref / one);
  std::printf("writing it (the publisher's cost per version):\n");
  std::printf("  nlohmann reference  %8.1f MB/s  %7.1f ms\n", mb / enc_ref, enc_ref * 1e3);
  std::printf("  ManifestToJson      %8.1f MB/s  %7.1f ms\n", mb / enc, enc * 1e3);
  std::printf("  ratio one-pass / reference: %.1fx\n", enc_ref / enc);
  return 0;
}
