#include "profile/manifest.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

#include "common/hex.h"
#include "kvsp/descriptor.h"
#include "profile/manifest_one_pass.h"

namespace kvcs::profile {
namespace {

using nlohmann::json;

Digest Fill(uint8_t b) {
  Digest d;
  d.fill(b);
  return d;
}
std::string H(uint8_t b) { return ToHex(Fill(b)); }

kvsp::Descriptor SmallDescriptor() {
  kvsp::Descriptor d;
  d.model = "m";
  d.model_rev = "r";
  d.tokenizer_rev = "t";
  d.attn = "gqa";
  d.layers = 2;
  d.kv_heads = 8;
  d.head_dim = 128;
  d.kv_dtype = "bf16";
  d.block_tokens = 16;
  d.layout = "thd";
  return d;
}

// Two segments: a complete one with k/v raw tracks and digests for k, and a growing one.
Manifest Sample() {
  Manifest m;
  m.compat = SmallDescriptor();
  m.layers = 2;
  m.block_tokens = 16;
  m.deterministic = false;
  ManifestSegment s0;
  s0.segment = 0;
  s0.first_block = 0;
  s0.blocks = 3;
  s0.block_keys_sha256 = Fill(0xaa);
  s0.tracks = {DataTrack(Component::kK, "raw", 0), DataTrack(Component::kV, "raw", 0)};
  s0.complete = true;
  s0.object_digests.emplace();
  (*s0.object_digests)["k.raw.s0"] = {{Fill(0x01), Fill(0x02), Fill(0x03)},
                                      {Fill(0x11), Fill(0x12), Fill(0x13)}};
  ManifestSegment s1;
  s1.segment = 1;
  s1.first_block = 3;
  s1.blocks = 1;
  s1.block_keys_sha256 = Fill(0xbb);
  s1.tracks = {DataTrack(Component::kKV, "zstd", 1)};
  s1.complete = false;
  s1.object_digests.emplace();
  (*s1.object_digests)["kv.zstd.s1"] = {{Fill(0x21)}};
  m.segments = {s0, s1};
  return m;
}

// The golden text of Sample(): compact, members sorted by name.
std::string Golden() {
  return R"({"block_tokens":16,"compat":{"attn":"gqa","block_tokens":16,"head_dim":128,)"
         R"("kv_dtype":"bf16","kv_heads":8,"kvsp":1,"layers":2,"layout":"thd","model":"m",)"
         R"("model_rev":"r","tokenizer_rev":"t"},"deterministic":false,"kvcs":1,"layers":2,)"
         R"("segments":[{"block_keys_sha256":")" +
         H(0xaa) +
         R"(","blocks":3,"complete":true,"first_block":0,"object_digests":{"k.raw.s0":[[")" +
         H(0x01) + R"(",")" + H(0x02) + R"(",")" + H(0x03) + R"("],[")" + H(0x11) + R"(",")" +
         H(0x12) + R"(",")" + H(0x13) +
         R"("]]},"segment":0,"tracks":["k.raw.s0","v.raw.s0"]},{"block_keys_sha256":")" + H(0xbb) +
         R"(","blocks":1,"complete":false,"first_block":3,"object_digests":{"kv.zstd.s1":[[")" +
         H(0x21) + R"("]]},"segment":1,"tracks":["kv.zstd.s1"]}]})";
}

TEST(Manifest, GoldenEncodeAndDecode) {
  auto text = ManifestToJson(Sample());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, Golden());
  auto back = ParseManifest(Golden());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, Sample());
  // What ManifestToJson writes takes the one-pass path, to the same model as the reference.
  std::optional<Manifest> fast = ParseManifestOnePass(Golden());
  ASSERT_TRUE(fast.has_value());
  EXPECT_EQ(*fast, Sample());
  EXPECT_EQ(*ParseManifestReference(Golden()), Sample());
}

// The one-pass writer is the reference's text, byte for byte: the golden sample, a model name
// that needs escapes and non-ASCII, a segment without digests, empty groups, several digest
// tracks (in the map's order), a deterministic manifest, a refused one.
TEST(Manifest, TheOnePassWriterWritesTheReferenceText) {
  std::vector<Manifest> cases;
  cases.push_back(Sample());
  Manifest m = Sample();
  m.compat.model = "a \"quoted\"\\ name\twith \xc3\xa9 and \x01";
  m.deterministic = true;
  cases.push_back(m);
  m = Sample();
  m.segments[0].object_digests.reset();
  (*m.segments[1].object_digests)["kv.zstd.s1"] = {};
  cases.push_back(m);
  m = Sample();
  (*m.segments[0].object_digests)["v.raw.s0"] = {{Fill(7), Fill(8), Fill(9)},
                                                 {Fill(4), Fill(5), Fill(6)}};
  cases.push_back(m);
  for (const Manifest& c : cases) {
    auto ref = ManifestToJsonReference(c);
    auto fast = ManifestToJson(c);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    EXPECT_EQ(*fast, *ref);
    EXPECT_EQ(*ParseManifest(*fast), c);
  }
  m = Sample();
  m.segments.clear();
  EXPECT_EQ(ManifestToJson(m).status().detail(), ManifestToJsonReference(m).status().detail());
}

TEST(Manifest, EveryPrefixFails) {
  std::string g = Golden();
  for (size_t n = 0; n < g.size(); ++n) {
    auto r = ParseManifest(std::string_view(g).substr(0, n));
    ASSERT_FALSE(r.ok()) << "prefix " << n;
    EXPECT_TRUE(r.status().Is(ManifestError::kSyntax)) << n << ": " << r.status().ToString();
    EXPECT_FALSE(ParseManifestOnePass(std::string_view(g).substr(0, n)).has_value()) << n;
  }
}

TEST(Manifest, SeedExampleShapeParses) {
  // The layout of the profile's example (spec member order, whitespace), with a real descriptor.
  std::string text = R"({
    "kvcs": 1,
    "compat": {"kvsp":1,"model":"meta-llama/Llama-3.1-8B-Instruct",
      "model_rev":"0e9e39f249a16976918f6564b8830bc894c89659",
      "tokenizer_rev":"0e9e39f249a16976918f6564b8830bc894c89659","attn":"gqa","layers":32,
      "kv_heads":8,"head_dim":128,"kv_dtype":"bf16","block_tokens":16,"layout":"thd"},
    "layers": 32,
    "block_tokens": 16,
    "deterministic": false,
    "segments": [
      { "segment": 0, "first_block": 0, "blocks": 64,
        "block_keys_sha256": ")" +
                     H(0x5a) + R"(",
        "tracks": ["k.raw.s0", "v.raw.s0"],
        "complete": true },
      { "segment": 1, "first_block": 64, "blocks": 3,
        "block_keys_sha256": ")" +
                     H(0x5b) + R"(",
        "tracks": ["k.raw.s1", "v.raw.s1"],
        "complete": false }
    ]
  })";
  auto m = ParseManifest(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::optional<Manifest> fast = ParseManifestOnePass(text);  // whitespace, spec member order
  ASSERT_TRUE(fast.has_value());
  EXPECT_EQ(*fast, *m);
  EXPECT_EQ(m->layers, 32u);
  EXPECT_EQ(m->segments.size(), 2u);
  EXPECT_FALSE(m->segments[1].object_digests.has_value());
  // The namespace consistency rule, with the KVSP §9 compat_id of this descriptor.
  Namespace ns;
  ns.compat_id =
      *FromHexFixed<32>("851898196c814a8d0029a9e763f8ec354cf226a41ec7fabc5ae9c0c6d14c2fa5");
  EXPECT_TRUE(CheckManifestNamespace(*m, ns).ok());
  ns.compat_id[0] ^= 1;
  Status st = CheckManifestNamespace(*m, ns);
  EXPECT_TRUE(st.Is(ManifestError::kCompatIdMismatch));
  EXPECT_EQ(st.code(), Code::kCorruption);
  // A descriptor that differs in any field gives another compat_id.
  Manifest other = *m;
  other.compat.model_rev = "x";
  ns.compat_id[0] ^= 1;
  EXPECT_TRUE(CheckManifestNamespace(other, ns).Is(ManifestError::kCompatIdMismatch));
}

TEST(Manifest, InvalidDocuments) {
  json good = json::parse(Golden());
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    ManifestError want;
  };
  const Case cases[] = {
      {"root array", [](json& j) { j = json::array(); }, ManifestError::kNotObject},
      {"root string", [](json& j) { j = "x"; }, ManifestError::kNotObject},
      {"unknown member", [](json& j) { j["extra"] = 1; }, ManifestError::kUnknownField},
      {"missing kvcs", [](json& j) { j.erase("kvcs"); }, ManifestError::kMissingField},
      {"missing compat", [](json& j) { j.erase("compat"); }, ManifestError::kMissingField},
      {"missing segments", [](json& j) { j.erase("segments"); }, ManifestError::kMissingField},
      {"missing deterministic", [](json& j) { j.erase("deterministic"); },
       ManifestError::kMissingField},
      {"kvcs 2", [](json& j) { j["kvcs"] = 2; }, ManifestError::kUnsupportedVersion},
      {"kvcs 0", [](json& j) { j["kvcs"] = 0; }, ManifestError::kUnsupportedVersion},
      {"kvcs string", [](json& j) { j["kvcs"] = "1"; }, ManifestError::kWrongType},
      {"kvcs float", [](json& j) { j["kvcs"] = 1.0; }, ManifestError::kWrongType},
      {"kvcs negative", [](json& j) { j["kvcs"] = -1; }, ManifestError::kOutOfRange},
      {"kvcs null", [](json& j) { j["kvcs"] = nullptr; }, ManifestError::kWrongType},
      {"compat unknown field", [](json& j) { j["compat"]["x"] = 1; }, ManifestError::kBadCompat},
      {"compat not object", [](json& j) { j["compat"] = 1; }, ManifestError::kBadCompat},
      {"compat missing layers", [](json& j) { j["compat"].erase("layers"); },
       ManifestError::kBadCompat},
      {"layers float", [](json& j) { j["layers"] = 2.5; }, ManifestError::kWrongType},
      {"layers huge", [](json& j) { j["layers"] = uint64_t{1} << 40; }, ManifestError::kOutOfRange},
      {"layers mismatch", [](json& j) { j["layers"] = 3; }, ManifestError::kLayersMismatch},
      {"block_tokens mismatch", [](json& j) { j["block_tokens"] = 32; },
       ManifestError::kBlockTokensMismatch},
      {"block_tokens above u32", [](json& j) { j["block_tokens"] = uint64_t{1} << 33; },
       ManifestError::kOutOfRange},
      {"deterministic int", [](json& j) { j["deterministic"] = 0; }, ManifestError::kWrongType},
      {"segments object", [](json& j) { j["segments"] = json::object(); },
       ManifestError::kWrongType},
      {"no segments", [](json& j) { j["segments"] = json::array(); }, ManifestError::kNoSegments},
      {"segment not object", [](json& j) { j["segments"][0] = 1; }, ManifestError::kNotObject},
      {"segment unknown member", [](json& j) { j["segments"][0]["x"] = true; },
       ManifestError::kUnknownField},
      {"segment missing tracks", [](json& j) { j["segments"][0].erase("tracks"); },
       ManifestError::kMissingField},
      {"segment missing complete", [](json& j) { j["segments"][1].erase("complete"); },
       ManifestError::kMissingField},
      {"segment numbered 1 first", [](json& j) { j["segments"][0]["segment"] = 1; },
       ManifestError::kSegmentNumber},
      {"segments swapped", [](json& j) { std::swap(j["segments"][0], j["segments"][1]); },
       ManifestError::kSegmentNumber},
      {"segment number above u32", [](json& j) { j["segments"][0]["segment"] = uint64_t{1} << 32; },
       ManifestError::kOutOfRange},
      {"first segment not at 0", [](json& j) { j["segments"][0]["first_block"] = 1; },
       ManifestError::kNotContiguous},
      {"gap", [](json& j) { j["segments"][1]["first_block"] = 4; }, ManifestError::kNotContiguous},
      {"overlap", [](json& j) { j["segments"][1]["first_block"] = 2; },
       ManifestError::kNotContiguous},
      {"zero blocks", [](json& j) { j["segments"][1]["blocks"] = 0; }, ManifestError::kZeroBlocks},
      {"blocks huge", [](json& j) { j["segments"][1]["blocks"] = uint64_t{1} << 23; },
       ManifestError::kTooManyBlocks},
      {"blocks above json int", [](json& j) { j["segments"][1]["blocks"] = uint64_t{1} << 60; },
       ManifestError::kTooManyBlocks},
      {"total blocks huge",
       [](json& j) {
         j["segments"][1]["blocks"] = (uint64_t{1} << 22) - 2;
         j["segments"][1].erase("object_digests");
       },
       ManifestError::kTooManyBlocks},
      {"hex uppercase",
       [](json& j) { j["segments"][0]["block_keys_sha256"] = std::string(64, 'A'); },
       ManifestError::kBadHex},
      {"hex short", [](json& j) { j["segments"][0]["block_keys_sha256"] = std::string(62, 'a'); },
       ManifestError::kBadHex},
      {"hex long", [](json& j) { j["segments"][0]["block_keys_sha256"] = std::string(66, 'a'); },
       ManifestError::kBadHex},
      {"hex non-hex", [](json& j) { j["segments"][0]["block_keys_sha256"] = std::string(64, 'g'); },
       ManifestError::kBadHex},
      {"hex as number", [](json& j) { j["segments"][0]["block_keys_sha256"] = 5; },
       ManifestError::kWrongType},
      {"tracks not array", [](json& j) { j["segments"][0]["tracks"] = "k.raw.s0"; },
       ManifestError::kWrongType},
      {"tracks empty",
       [](json& j) {
         j["segments"][1]["tracks"] = json::array();
         j["segments"][1].erase("object_digests");
       },
       ManifestError::kNoTracks},
      {"track not string", [](json& j) { j["segments"][0]["tracks"][0] = 1; },
       ManifestError::kWrongType},
      {"track bad name", [](json& j) { j["segments"][0]["tracks"][1] = "v.raw.s00"; },
       ManifestError::kBadTrackName},
      {"manifest as track", [](json& j) { j["segments"][0]["tracks"][1] = "manifest"; },
       ManifestError::kBadTrackName},
      {"track of other segment", [](json& j) { j["segments"][0]["tracks"][1] = "v.raw.s1"; },
       ManifestError::kTrackSegmentMismatch},
      {"duplicate track", [](json& j) { j["segments"][0]["tracks"][1] = "k.raw.s0"; },
       ManifestError::kDuplicateTrack},
      {"unregistered codec", [](json& j) { j["segments"][0]["tracks"][1] = "v.lz4.s0"; },
       ManifestError::kUnknownCodec},
      {"too many tracks",
       [](json& j) {
         json t = json::array();
         for (int i = 0; i < 17; ++i) t.push_back("k.raw.s0");
         j["segments"][0]["tracks"] = t;
       },
       ManifestError::kTooManyTracks},
      {"object_digests array", [](json& j) { j["segments"][0]["object_digests"] = json::array(); },
       ManifestError::kNotObject},
      {"digests for unlisted track",
       [](json& j) { j["segments"][1]["object_digests"]["k.raw.s1"] = json::array(); },
       ManifestError::kUnlistedTrack},
      {"digests for track of other segment",
       [](json& j) { j["segments"][1]["object_digests"]["k.raw.s0"] = json::array(); },
       ManifestError::kUnlistedTrack},
      {"more groups than layers",
       [](json& j) {
         auto& g = j["segments"][1]["object_digests"]["kv.zstd.s1"];
         g.push_back(g[0]);
         g.push_back(g[0]);
       },
       ManifestError::kTooManyGroups},
      {"complete segment missing a layer",
       [](json& j) { j["segments"][0]["object_digests"]["k.raw.s0"].erase(1); },
       ManifestError::kMissingGroups},
      {"group with too few digests",
       [](json& j) { j["segments"][0]["object_digests"]["k.raw.s0"][1].erase(2); },
       ManifestError::kWrongDigestCount},
      {"group with too many digests",
       [](json& j) { j["segments"][1]["object_digests"]["kv.zstd.s1"][0].push_back(H(0x22)); },
       ManifestError::kWrongDigestCount},
      {"group not array",
       [](json& j) { j["segments"][1]["object_digests"]["kv.zstd.s1"][0] = H(0x22); },
       ManifestError::kWrongType},
      {"digest bad hex",
       [](json& j) { j["segments"][1]["object_digests"]["kv.zstd.s1"][0][0] = "00"; },
       ManifestError::kBadHex},
      {"digests not array",
       [](json& j) { j["segments"][1]["object_digests"]["kv.zstd.s1"] = json::object(); },
       ManifestError::kWrongType},
  };
  for (const Case& c : cases) {
    json j = good;
    c.mutate(j);
    auto r = ParseManifest(j.dump());
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_FALSE(ParseManifestOnePass(j.dump()).has_value()) << c.what;
    EXPECT_TRUE(r.status().Is(c.want))
        << c.what << ": got " << r.status().ToString() << ", want " << ManifestErrorName(c.want);
  }
}

// The process's peak virtual size (Linux), in KiB.
uint64_t VmPeakKib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmPeak:", 0) == 0) return std::stoull(line.substr(7));
  }
  return 0;
}

// A hostile manifest claiming the most blocks, with the most (empty) groups and padding up to the
// size limit: the one-pass reader reserves digest room for what the whole text can hold, not that
// much again for each group (32 MiB for each of 65535 groups, 2 TiB of address space), and the
// manifest is refused by type.
TEST(Manifest, ClaimedBlocksInManyEmptyGroupsReserveOnlyWhatTheTextHolds) {
  Manifest m = Sample();
  m.segments.resize(1);
  auto valid = ManifestToJson(m);
  ASSERT_TRUE(valid.ok()) << valid.status().ToString();
  json j = json::parse(*valid);
  j["segments"][0]["blocks"] = kMaxManifestBlocks;
  j["segments"][0]["object_digests"]["k.raw.s0"] =
      json(std::vector<json>(kvsp::kMaxLayers, json::array()));
  std::string text = j.dump();  // members sorted: "blocks" before "object_digests"
  ASSERT_LT(text.size(), kMaxManifestBytes);
  text.resize(kMaxManifestBytes, ' ');
  const uint64_t before = VmPeakKib();
  auto parsed = ParseManifest(text);
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(parsed.status().Is(ManifestError::kTooManyGroups)) << parsed.status().ToString();
  EXPECT_LT(VmPeakKib(), before + (uint64_t{1} << 20));  // under 1 GiB more address space
}

TEST(Manifest, TextLevelErrors) {
  std::string g = Golden();
  struct Case {
    const char* what;
    std::string text;
    ManifestError want;
  };
  std::string dup_root = "{\"kvcs\":1," + g.substr(1);
  std::string dup_compat = g;
  dup_compat.replace(dup_compat.find("\"attn\""), 0, "\"attn\":\"mha\",");
  std::string dup_segment = g;
  dup_segment.replace(dup_segment.find("\"blocks\":3"), 0, "\"blocks\":3,");
  const Case cases[] = {
      {"empty", "", ManifestError::kSyntax},
      {"garbage", "not json", ManifestError::kSyntax},
      {"trailing garbage", g + "x", ManifestError::kSyntax},
      {"two documents", g + g, ManifestError::kSyntax},
      {"invalid utf-8", "{\"kvcs\":\"\xff\"}", ManifestError::kSyntax},
      {"duplicate root member", dup_root, ManifestError::kDuplicateKey},
      {"duplicate descriptor member", dup_compat, ManifestError::kDuplicateKey},
      {"duplicate segment member", dup_segment, ManifestError::kDuplicateKey},
      {"too deep", std::string(17, '[') + std::string(17, ']'), ManifestError::kTooDeep},
      {"deep and unterminated", std::string(100000, '['), ManifestError::kTooDeep},
      {"too large", std::string(kMaxManifestBytes + 1, ' '), ManifestError::kTooLarge},
  };
  for (const Case& c : cases) {
    auto r = ParseManifest(c.text);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_TRUE(r.status().Is(c.want)) << c.what << ": got " << r.status().ToString();
    EXPECT_FALSE(ParseManifestOnePass(c.text).has_value()) << c.what;
  }
  // Brackets inside strings do not count as nesting.
  std::string braces = g;
  braces.replace(braces.find("\"model\":\"m\""), 11, "\"model\":\"" + std::string(40, '[') + "\"");
  EXPECT_TRUE(ParseManifest(braces).ok());
}

// Valid JSON outside the one-pass subset is the reference's to decide: accepted the same.
TEST(Manifest, TheOnePassReaderLeavesEscapesNonAsciiAndNumberFormsToTheReference) {
  const std::string g = Golden();
  auto with = [&](std::string_view from, std::string_view to) {
    std::string t = g;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  const std::string accepted[] = {
      with("\"model\":\"m\"", "\"model\":\"\\u006d\""),    // an escape
      with("\"model\":\"m\"", "\"model\":\"m\xc3\xa9\""),  // non-ASCII (UTF-8)
      "\xef\xbb\xbf" + g,                                  // a byte order mark
  };
  for (const std::string& t : accepted) {
    EXPECT_FALSE(ParseManifestOnePass(t).has_value()) << t.substr(0, 80);
    auto ref = ParseManifestReference(t);
    auto m = ParseManifest(t);
    ASSERT_EQ(m.ok(), ref.ok()) << t.substr(0, 80);
    if (m.ok()) {
      EXPECT_EQ(*m, *ref);
    }
  }
  EXPECT_EQ(ParseManifest(accepted[0])->compat.model, "m");
  // Number forms and literals the reference refuses, each with its own typed error.
  const std::pair<std::string, ManifestError> refused[] = {
      {with("\"kvcs\":1", "\"kvcs\":1.0"), ManifestError::kWrongType},
      {with("\"kvcs\":1", "\"kvcs\":1e0"), ManifestError::kWrongType},
      {with("\"kvcs\":1", "\"kvcs\":-1"), ManifestError::kOutOfRange},
      {with("\"kvcs\":1", "\"kvcs\":01"), ManifestError::kSyntax},
      {with("\"kvcs\":1", "\"kvcs\":9007199254740992"), ManifestError::kUnsupportedVersion},
      {with("\"layers\":2,\"segments\"", "\"layers\":18446744073709551616,\"segments\""),
       ManifestError::kWrongType},
      {with("\"deterministic\":false", "\"deterministic\":falsey"), ManifestError::kSyntax},
      {with("\"deterministic\":false", "\"deterministic\":0"), ManifestError::kWrongType},
      {with(H(0xaa), std::string(64, 'A')), ManifestError::kBadHex},
  };
  for (const auto& [t, want] : refused) {
    EXPECT_FALSE(ParseManifestOnePass(t).has_value()) << t.substr(0, 120);
    auto m = ParseManifest(t);
    ASSERT_FALSE(m.ok()) << t.substr(0, 120);
    EXPECT_TRUE(m.status().Is(want)) << m.status().ToString();
  }
}

TEST(Manifest, ValidateRejectsBadStructsAndToJsonRefuses) {
  Manifest m = Sample();
  m.segments[0].tracks[0].codec = "Bad";
  EXPECT_TRUE(ValidateManifest(m).Is(ManifestError::kBadTrackName));
  EXPECT_FALSE(ManifestToJson(m).ok());
  m = Sample();
  m.compat.model = "";
  EXPECT_TRUE(ValidateManifest(m).Is(ManifestError::kBadCompat));
  m = Sample();
  m.segments[1].tracks.push_back(ManifestTrack(true));
  EXPECT_TRUE(ValidateManifest(m).Is(ManifestError::kBadTrackName));
  m = Sample();
  m.segments.clear();
  EXPECT_TRUE(ValidateManifest(m).Is(ManifestError::kNoSegments));
  m = Sample();
  m.segments[0].blocks = UINT64_MAX;
  EXPECT_TRUE(ValidateManifest(m).Is(ManifestError::kTooManyBlocks));
}

TEST(Manifest, BlockKeysSha256IsOverConcatenatedKeys) {
  EXPECT_EQ(BlockKeysSha256({}), Sha256::Hash(""));
  Digest a = Fill(1), b = Fill(2);
  Bytes cat(a.begin(), a.end());
  cat.insert(cat.end(), b.begin(), b.end());
  Digest keys[] = {a, b};
  EXPECT_EQ(BlockKeysSha256(keys), Sha256::Hash(cat));
  // KVSP §9 block keys K_1, K_2 of tokens 1000..1039.
  Digest k[] = {
      *FromHexFixed<32>("68e15e899f708e28651c88f9a2065c74cd2a5cd4bcea09d8a524f304680b74ed"),
      *FromHexFixed<32>("63957209fa7302e933b82c7bc91d228548b84f0c1145f70eace7d69191cd461b")};
  Bytes both(k[0].begin(), k[0].end());
  both.insert(both.end(), k[1].begin(), k[1].end());
  EXPECT_EQ(BlockKeysSha256(k), Sha256::Hash(both));
}

TEST(Manifest, ExpectationsDriveObjectDecoding) {
  Manifest m = Sample();
  TrackName kv1 = DataTrack(Component::kKV, "zstd", 1);
  auto e = ExpectationFor(m, kv1, 1, 0);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->group_id, 1u);
  EXPECT_EQ(e->object_id, 0u);
  EXPECT_EQ(e->component, Component::kKV);
  EXPECT_EQ(e->codec, 2);
  EXPECT_EQ(e->block_tokens, 16u);
  EXPECT_EQ(e->token_start, 48u);  // block 3 (segment 1 starts at block 3) * 16

  ObjectInfo info{Component::kKV, 1, 0, 48, 16, 2};
  Bytes data = {1, 2, 3};
  auto payload = EncodeObject(info, data);
  ASSERT_TRUE(payload.ok());
  EXPECT_TRUE(DecodeObject(*payload, *e).ok());
  // An object of the same layer and index claiming another position fails.
  info.token_start = 0;
  EXPECT_TRUE(
      DecodeObject(*EncodeObject(info, data), *e).status().Is(ObjectError::kTokenStartMismatch));

  TrackName k0 = DataTrack(Component::kK, "raw", 0);
  EXPECT_EQ(ListedDigest(m, k0, 1, 2), Fill(0x13));
  EXPECT_EQ(ListedDigest(m, k0, 0, 0), Fill(0x01));
  EXPECT_EQ(ListedDigest(m, k0, 2, 0), std::nullopt);
  EXPECT_EQ(ListedDigest(m, k0, 0, 3), std::nullopt);
  EXPECT_EQ(ListedDigest(m, DataTrack(Component::kV, "raw", 0), 0, 0), std::nullopt);
  EXPECT_EQ(ListedDigest(m, kv1, 1, 0), std::nullopt);  // layer 1 not completed yet

  EXPECT_TRUE(ExpectationFor(m, k0, 2, 0).status().Is(ManifestError::kNotInManifest));
  EXPECT_TRUE(ExpectationFor(m, k0, 0, 3).status().Is(ManifestError::kNotInManifest));
  EXPECT_TRUE(ExpectationFor(m, DataTrack(Component::kK, "raw", 1), 0, 0)
                  .status()
                  .Is(ManifestError::kNotInManifest));
  EXPECT_TRUE(ExpectationFor(m, DataTrack(Component::kK, "raw", 7), 0, 0)
                  .status()
                  .Is(ManifestError::kNotInManifest));
  EXPECT_TRUE(
      ExpectationFor(m, ManifestTrack(false), 0, 0).status().Is(ManifestError::kNotInManifest));
}

TEST(Manifest, VerifyObjectUsesListedDigests) {
  Manifest m = Sample();
  TrackName k0 = DataTrack(Component::kK, "raw", 0);
  Bytes data = {9, 9, 9};
  // Block 1 of layer 1 of segment 0: token start 16.
  Bytes payload = *EncodeObject({Component::kK, 1, 1, 16, 16, 1}, data);
  // The sample lists Fill(0x12) for it, which is not SHA-256(data).
  auto r = VerifyObject(m, k0, 1, 1, payload);
  EXPECT_TRUE(r.status().Is(ManifestError::kListedDigestMismatch));
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  (*m.segments[0].object_digests)["k.raw.s0"][1][1] = Sha256::Hash(data);
  r = VerifyObject(m, k0, 1, 1, payload);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->data.data(), payload.data() + kObjectHeaderSize);
  // v.raw.s0 has no listed digests: the object's own checks decide.
  Bytes v = *EncodeObject({Component::kV, 0, 2, 32, 16, 1}, data);
  EXPECT_TRUE(VerifyObject(m, DataTrack(Component::kV, "raw", 0), 0, 2, v).ok());
  // Object checks still apply (wrong group), and unknown locations are refused.
  EXPECT_TRUE(VerifyObject(m, DataTrack(Component::kV, "raw", 0), 1, 2, v)
                  .status()
                  .Is(ObjectError::kLayerMismatch));
  EXPECT_TRUE(VerifyObject(m, k0, 0, 3, payload).status().Is(ManifestError::kNotInManifest));
}

}  // namespace
}  // namespace kvcs::profile
