#include "profile/track_name.h"

#include <gtest/gtest.h>

namespace kvcs::profile {
namespace {

TEST(TrackName, ValidTable) {
  struct Case {
    const char* name;
    TrackName want;
  };
  const std::string c32(32, 'z');
  const Case cases[] = {
      {"manifest", ManifestTrack(false)},
      {"manifest.cose", ManifestTrack(true)},
      {"k.raw.s0", DataTrack(Component::kK, "raw", 0)},
      {"v.raw.s0", DataTrack(Component::kV, "raw", 0)},
      {"kv.zstd.s1", DataTrack(Component::kKV, "zstd", 1)},
      {"k.fp8-e4m3.s10", DataTrack(Component::kK, "fp8-e4m3", 10)},
      {"v.int4.s4294967295", DataTrack(Component::kV, "int4", 4294967295u)},
      {"kv.-.s7", DataTrack(Component::kKV, "-", 7)},
      {"k.0.s9", DataTrack(Component::kK, "0", 9)},
      {"k.a1-b2.s1000000", DataTrack(Component::kK, "a1-b2", 1000000)},
  };
  for (const Case& c : cases) {
    auto r = ParseTrackName(c.name);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.name;
    EXPECT_EQ(FormatTrackName(*r), c.name);
  }
  std::string longest = "kv." + c32 + ".s4294967295";
  EXPECT_EQ(longest.size(), kMaxTrackNameLength);
  auto r = ParseTrackName(longest);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->codec, c32);
  EXPECT_EQ(FormatTrackName(*r), longest);
}

TEST(TrackName, InvalidTable) {
  struct Case {
    std::string name;
    TrackNameError want;
  };
  const std::string c33(33, 'a');
  const Case cases[] = {
      {"", TrackNameError::kEmpty},
      {"kv." + std::string(32, 'z') + ".s42949672950", TrackNameError::kTooLong},
      {std::string(1000, 'k'), TrackNameError::kTooLong},
      {"Manifest", TrackNameError::kBadComponent},
      {"manifest.", TrackNameError::kBadComponent},
      {"manifest.cose.", TrackNameError::kBadComponent},
      {"manifest.json", TrackNameError::kBadComponent},
      {"x.raw.s0", TrackNameError::kBadComponent},
      {"K.raw.s0", TrackNameError::kBadComponent},
      {"vk.raw.s0", TrackNameError::kBadComponent},
      {".raw.s0", TrackNameError::kBadComponent},
      {"k", TrackNameError::kMissingCodec},
      {"kv", TrackNameError::kMissingCodec},
      {"k..s0", TrackNameError::kMissingCodec},
      {"k.", TrackNameError::kMissingCodec},
      {"k.Raw.s0", TrackNameError::kBadCodecChar},
      {"k.ra_w.s0", TrackNameError::kBadCodecChar},
      {"k.ra w.s0", TrackNameError::kBadCodecChar},
      {std::string("k.r\0w.s0", 8), TrackNameError::kBadCodecChar},
      {"k.r\xc3\xa9.s0", TrackNameError::kBadCodecChar},
      {"k." + c33 + ".s0", TrackNameError::kCodecTooLong},
      {"k.raw", TrackNameError::kMissingSegment},
      {"k.raw.", TrackNameError::kMissingSegment},
      {"k.raw.0", TrackNameError::kMissingSegment},
      {"k.raw.S0", TrackNameError::kMissingSegment},
      {"k.raw.seg0", TrackNameError::kBadSegment},
      {"k.raw.s", TrackNameError::kBadSegment},
      {"k.raw.s-1", TrackNameError::kBadSegment},
      {"k.raw.s+1", TrackNameError::kBadSegment},
      {"k.raw.s1.", TrackNameError::kBadSegment},
      {"k.raw.s0.s0", TrackNameError::kBadSegment},
      {"k.raw.s 1", TrackNameError::kBadSegment},
      {"k.raw.s1 ", TrackNameError::kBadSegment},
      {"k.raw.s0x10", TrackNameError::kBadSegment},
      {"k.raw.s00", TrackNameError::kLeadingZero},
      {"k.raw.s01", TrackNameError::kLeadingZero},
      {"k.raw.s0000000000", TrackNameError::kLeadingZero},
      {"k.raw.s4294967296", TrackNameError::kSegmentOverflow},
      {"k.raw.s9999999999", TrackNameError::kSegmentOverflow},
      {"k.raw.s18446744073709551616", TrackNameError::kSegmentOverflow},
  };
  for (const Case& c : cases) {
    auto r = ParseTrackName(c.name);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_TRUE(r.status().Is(c.want)) << "\"" << c.name << "\": got " << r.status().ToString()
                                       << ", want " << TrackNameErrorName(c.want);
  }
}

TEST(PublisherPriority, FloorOf128GOverL) {
  EXPECT_EQ(*DataPublisherPriority(0, 32), 0);
  EXPECT_EQ(*DataPublisherPriority(1, 32), 4);
  EXPECT_EQ(*DataPublisherPriority(31, 32), 124);
  EXPECT_EQ(*DataPublisherPriority(2, 3), 85);  // floor(256/3)
  EXPECT_EQ(*DataPublisherPriority(0, 1), 0);
  EXPECT_EQ(*DataPublisherPriority(254, 255), 127);
  EXPECT_EQ(*DataPublisherPriority(999, 1000), 127);
  // Large values do not overflow 64 bits.
  uint64_t big = uint64_t{1} << 62;
  EXPECT_EQ(*DataPublisherPriority(big - 1, big), 127);
  EXPECT_EQ(*DataPublisherPriority(big / 2, big), 64);
  EXPECT_EQ(*DataPublisherPriority(UINT64_MAX - 1, UINT64_MAX), 127);
  // Monotone in g.
  for (uint64_t g = 1; g < 80; ++g) {
    EXPECT_GE(*DataPublisherPriority(g, 80), *DataPublisherPriority(g - 1, 80));
  }
  EXPECT_FALSE(DataPublisherPriority(0, 0).ok());
  EXPECT_FALSE(DataPublisherPriority(32, 32).ok());
  EXPECT_FALSE(DataPublisherPriority(UINT64_MAX, 32).ok());
  EXPECT_EQ(kManifestPublisherPriority, 0);
}

}  // namespace
}  // namespace kvcs::profile
