#include "index/index_wire.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/hex.h"
#include "common/strict_json.h"
#include "index/wire_json.h"

namespace kvcs::index {
namespace {

const std::string kC = "851898196c814a8d0029a9e763f8ec354cf226a41ec7fabc5ae9c0c6d14c2fa5";
const std::string kS = "50888d23678bd64d5d97ce667dc69306b04ff6d45cd2067d1792ae533282f63c";
const std::string kK1 = "68e15e899f708e28651c88f9a2065c74cd2a5cd4bcea09d8a524f304680b74ed";
const std::string kK2 = "63957209fa7302e933b82c7bc91d228548b84f0c1145f70eace7d69191cd461b";

Digest D(const std::string& hex) { return *FromHexFixed<32>(hex); }

// The canonical byte-exact encodings of the §7 messages (spec test vector ids).
const std::string kLookupJson = R"({"compat_id":")" + kC + R"(","scope_id":")" + kS +
                                R"(","block_keys":[")" + kK1 + R"(",")" + kK2 +
                                R"("],"max_replicas":2})";
const std::string kRegisterJson =
    R"({"compat_id":")" + kC + R"(","scope_id":")" + kS +
    R"(","holder":"https://store.example:8443/kvsp","tier":"object-store","codecs":["raw","zstd"],"layer_first":0,"layer_count":32,"block_keys":[")" +
    kK1 + R"(",")" + kK2 + R"("],"anchor_key":")" + kK2 + R"(","ttl_ms":60000})";
const std::string kWithdrawJson = R"({"compat_id":")" + kC + R"(","scope_id":")" + kS +
                                  R"(","holder":"moqt://relay.example/kvcs-1","block_keys":[")" +
                                  kK1 + R"("]})";
const std::string kLookupResponseJson =
    R"({"matched":1,"entries":[{"block_key":")" + kK1 +
    R"(","replicas":[{"holder":"https://a.example","tier":"cpu","codecs":["raw"],"layer_first":0,"layer_count":32,"expires_ms":1700000000000}]}]})";

LookupRequest LookupValue() {
  LookupRequest r;
  r.compat_id = D(kC);
  r.scope_id = D(kS);
  r.block_keys = {D(kK1), D(kK2)};
  r.max_replicas = 2;
  return r;
}

RegisterRequest RegisterValue() {
  RegisterRequest r;
  r.compat_id = D(kC);
  r.scope_id = D(kS);
  r.replica.holder = "https://store.example:8443/kvsp";
  r.replica.tier = Tier::kObjectStore;
  r.replica.codecs = {kvsp::Codec::kRaw, kvsp::Codec::kZstd};
  r.replica.layer_first = 0;
  r.replica.layer_count = 32;
  r.block_keys = {D(kK1), D(kK2)};
  r.anchor_key = D(kK2);
  r.ttl_ms = 60000;
  return r;
}

TEST(IndexWire, EncodesTheCanonicalBytes) {
  EXPECT_EQ(ToJson(LookupValue()), kLookupJson);
  EXPECT_EQ(ToJson(RegisterValue()), kRegisterJson);
  WithdrawRequest w{D(kC), D(kS), "moqt://relay.example/kvcs-1", {D(kK1)}};
  EXPECT_EQ(ToJson(w), kWithdrawJson);
  LookupResponse resp;
  resp.matched = 1;
  resp.entries.push_back(
      {D(kK1),
       {{{"https://a.example", Tier::kCpu, {kvsp::Codec::kRaw}, 0, 32}, 1700000000000ull}}});
  EXPECT_EQ(ToJson(resp), kLookupResponseJson);
  LookupRequest dflt = LookupValue();
  dflt.max_replicas = kDefaultMaxReplicas;
  EXPECT_EQ(ToJson(dflt).find("max_replicas"), std::string::npos);
}

TEST(IndexWire, DecodesTheCanonicalBytes) {
  auto l = ParseLookupRequest(kLookupJson);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(*l, LookupValue());
  auto r = ParseRegisterRequest(kRegisterJson);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, RegisterValue());
  auto w = ParseWithdrawRequest(kWithdrawJson);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(ToJson(*w), kWithdrawJson);
  auto resp = ParseLookupResponse(kLookupResponseJson);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(ToJson(*resp), kLookupResponseJson);
  // Whitespace and member order do not matter; max_replicas defaults to 4.
  auto spaced = ParseLookupRequest("  {\"block_keys\" : [\"" + kK1 + "\"],\n \"scope_id\":\"" + kS +
                                   "\", \"compat_id\":\"" + kC + "\"}  ");
  ASSERT_TRUE(spaced.ok()) << spaced.status().ToString();
  EXPECT_EQ(spaced->max_replicas, kDefaultMaxReplicas);
  AnchorsResponse a;
  a.replicas.push_back({{"moqt://r.example/x", Tier::kRelay, {kvsp::Codec::kRaw}, 0, 16}, 5});
  auto a2 = ParseAnchorsResponse(ToJson(a));
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(*a2, a);
}

TEST(IndexWire, EveryTruncationFails) {
  for (const std::string* s : {&kLookupJson, &kRegisterJson, &kWithdrawJson}) {
    for (size_t n = 0; n < s->size(); ++n) {
      std::string_view t(s->data(), n);
      EXPECT_FALSE(ParseLookupRequest(t).ok()) << n;
      EXPECT_FALSE(ParseRegisterRequest(t).ok()) << n;
      EXPECT_FALSE(ParseWithdrawRequest(t).ok()) << n;
    }
  }
  for (size_t n = 0; n < kLookupResponseJson.size(); ++n) {
    EXPECT_FALSE(ParseLookupResponse(std::string_view(kLookupResponseJson.data(), n)).ok()) << n;
  }
}

// Replaces the first occurrence of `from` in `s`.
std::string Sub(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

struct Corrupt {
  const char* name;
  std::string json;
  IndexError error;
};

TEST(IndexWire, CorruptRegistrationsFailWithTheirError) {
  const std::string& r = kRegisterJson;
  std::string upper = kK1;
  upper[0] = 'A';
  std::vector<Corrupt> cases = {
      {"not json", "{", IndexError::kSyntax},
      {"trailing garbage", r + "x", IndexError::kSyntax},
      {"two documents", r + r, IndexError::kSyntax},
      {"array", "[]", IndexError::kNotObject},
      {"string", "\"x\"", IndexError::kNotObject},
      {"duplicate", Sub(r, "{", "{\"ttl_ms\":1,"), IndexError::kDuplicateKey},
      {"unknown", Sub(r, "{", "{\"extra\":1,"), IndexError::kUnknownField},
      {"missing holder", Sub(r, "\"holder\":\"https://store.example:8443/kvsp\",", ""),
       IndexError::kMissingField},
      {"missing ttl", Sub(r, ",\"ttl_ms\":60000", ""), IndexError::kMissingField},
      {"null", Sub(r, "60000", "null"), IndexError::kWrongType},
      {"float", Sub(r, "60000", "60000.5"), IndexError::kWrongType},
      {"exponent", Sub(r, "60000", "6e4"), IndexError::kWrongType},
      {"string ttl", Sub(r, "60000", "\"60000\""), IndexError::kWrongType},
      {"bool", Sub(r, "60000", "true"), IndexError::kWrongType},
      {"negative ttl", Sub(r, "60000", "-1"), IndexError::kOutOfRange},
      {"zero ttl", Sub(r, "60000", "0"), IndexError::kOutOfRange},
      {"ttl above a day", Sub(r, "60000", "86400001"), IndexError::kOutOfRange},
      {"huge integer", Sub(r, "60000", "184467440737095516160"), IndexError::kWrongType},
      {"uppercase hex", Sub(r, kK1, upper), IndexError::kBadHex},
      {"short key", Sub(r, kK1, kK1.substr(2)), IndexError::kBadHex},
      {"long key", Sub(r, kK1, kK1 + "00"), IndexError::kBadHex},
      {"non-hex", Sub(r, kK1, "g" + kK1.substr(1)), IndexError::kBadHex},
      {"short compat", Sub(r, kC, kC.substr(0, 62)), IndexError::kBadHex},
      {"key not a string", Sub(r, "\"" + kK1 + "\"", "1"), IndexError::kWrongType},
      {"keys not an array", Sub(r, "[\"" + kK1 + "\",\"" + kK2 + "\"]", "\"" + kK1 + "\""),
       IndexError::kWrongType},
      {"no keys", Sub(r, "[\"" + kK1 + "\",\"" + kK2 + "\"]", "[]"), IndexError::kEmpty},
      {"bad tier", Sub(r, "object-store", "tape"), IndexError::kBadTier},
      {"uppercase tier", Sub(r, "object-store", "GPU"), IndexError::kBadTier},
      {"bad codec", Sub(r, "\"zstd\"", "\"gzip\""), IndexError::kBadCodec},
      {"repeated codec", Sub(r, "\"zstd\"", "\"raw\""), IndexError::kBadCodec},
      {"no codecs", Sub(r, "[\"raw\",\"zstd\"]", "[]"), IndexError::kEmpty},
      {"too many codecs",
       Sub(r, "[\"raw\",\"zstd\"]",
           "[\"raw\",\"zstd\",\"int8\",\"int4\",\"fp8-e4m3\",\"fp4-e2m1\",\"cachegen\",\"raw\","
           "\"zstd\"]"),
       IndexError::kTooMany},
      {"zero layers", Sub(r, "\"layer_count\":32", "\"layer_count\":0"), IndexError::kOutOfRange},
      {"layers past 65535", Sub(r, "\"layer_first\":0", "\"layer_first\":65530"),
       IndexError::kOutOfRange},
      {"holder scheme", Sub(r, "https://store", "ftp://store"), IndexError::kBadHolder},
      {"holder bare scheme", Sub(r, "https://store.example:8443/kvsp", "https://"),
       IndexError::kBadHolder},
      {"holder space", Sub(r, "store.example", "store example"), IndexError::kBadHolder},
      {"holder control", Sub(r, "store.example", "store\\u0001example"), IndexError::kBadHolder},
      {"holder too long",
       Sub(r, "https://store.example:8443/kvsp", "https://" + std::string(kMaxHolderBytes, 'a')),
       IndexError::kTooLarge},
      {"nested too deep", Sub(r, "60000", "[[[[[[[[1]]]]]]]]"), IndexError::kSyntax},
      {"too large", r + std::string(kMaxRequestBytes, ' '), IndexError::kTooLarge},
  };
  for (const Corrupt& c : cases) {
    auto p = ParseRegisterRequest(c.json);
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_TRUE(p.status().Is(c.error))
        << c.name << ": got " << p.status().ToString() << ", want " << IndexErrorName(c.error);
    EXPECT_EQ(HttpStatusFor(p.status()), 400) << c.name;
  }
}

TEST(IndexWire, CorruptLookupsFailWithTheirError) {
  const std::string& l = kLookupJson;
  std::string many = "[";
  for (size_t i = 0; i <= kMaxKeysPerRequest; ++i) many += (i ? ",\"" : "\"") + kK1 + "\"";
  many += "]";
  std::vector<Corrupt> cases = {
      {"zero replicas", Sub(l, "\"max_replicas\":2", "\"max_replicas\":0"),
       IndexError::kOutOfRange},
      {"too many replicas", Sub(l, "\"max_replicas\":2", "\"max_replicas\":17"),
       IndexError::kOutOfRange},
      {"too many keys", Sub(l, "[\"" + kK1 + "\",\"" + kK2 + "\"]", many), IndexError::kTooMany},
      {"missing scope", Sub(l, "\"scope_id\":\"" + kS + "\",", ""), IndexError::kMissingField},
      {"holder in lookup", Sub(l, "{", "{\"holder\":\"https://x\","), IndexError::kUnknownField},
  };
  for (const Corrupt& c : cases) {
    auto p = ParseLookupRequest(c.json);
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_TRUE(p.status().Is(c.error)) << c.name << ": got " << p.status().ToString();
  }
  // The exact bound is accepted.
  std::string exact = "[";
  for (size_t i = 0; i < kMaxKeysPerRequest; ++i) exact += (i ? ",\"" : "\"") + kK1 + "\"";
  exact += "]";
  auto ok = ParseLookupRequest(Sub(l, "[\"" + kK1 + "\",\"" + kK2 + "\"]", exact));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->block_keys.size(), kMaxKeysPerRequest);
  EXPECT_LE(ToJson(*ok).size(), kMaxRequestBytes);
}

TEST(IndexWire, ResponsesAreCheckedToo) {
  // matched must equal the number of entries, and a matched key has a replica.
  EXPECT_TRUE(ParseLookupResponse(Sub(kLookupResponseJson, "\"matched\":1", "\"matched\":2"))
                  .status()
                  .Is(IndexError::kOutOfRange));
  EXPECT_TRUE(ParseLookupResponse(R"({"matched":1,"entries":[{"block_key":")" + kK1 +
                                  R"(","replicas":[]}]})")
                  .status()
                  .Is(IndexError::kEmpty));
  EXPECT_TRUE(ParseLookupResponse(R"({"matched":0,"entries":[]})").ok());
  auto e = ParseErrorBody(R"({"error":"bad_hex","message":"m"})");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->error, "bad_hex");
}

TEST(IndexWire, AnchorsRequestFromPathAndQuery) {
  auto a = ParseAnchorsRequest(kC, kK2, kS);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(AnchorsPath(*a), "/kvsp/v1/anchors/" + kC + "/" + kK2 + "?scope_id=" + kS);
  EXPECT_TRUE(ParseAnchorsRequest(kC.substr(1), kK2, kS).status().Is(IndexError::kBadHex));
  std::string up = kS;
  up[5] = 'D';
  EXPECT_TRUE(ParseAnchorsRequest(kC, kK2, up).status().Is(IndexError::kBadHex));
}

TEST(IndexWire, StatusMapsToHttp) {
  EXPECT_EQ(HttpStatusFor(Status::Ok()), 200);
  EXPECT_EQ(HttpStatusFor(IndexStatus(IndexError::kBadHex, "x")), 400);
  EXPECT_EQ(HttpStatusFor(IndexStatus(IndexError::kTooMany, "x")), 400);
  EXPECT_EQ(HttpStatusFor(IndexStatus(IndexError::kForbidden, "x")), 403);
  EXPECT_EQ(HttpStatusFor(IndexStatus(IndexError::kUnknownCompat, "x")), 404);
  EXPECT_EQ(HttpStatusFor(IndexStatus(IndexError::kStoreFailed, "x")), 503);
  EXPECT_EQ(ErrorJson(IndexStatus(IndexError::kForbidden, "no")),
            R"({"error":"forbidden","message":"no"})");
}

// Responses are written without a DOM; they must stay what nlohmann writes, escapes included,
// and a 4,096-key answer (above kMaxRequestBytes) must parse.
TEST(IndexWire, ResponsesWrittenDirectlyMatchTheDomAndParseAtFullSize) {
  Replica odd{
      {"https://h/\"q\\\x01\xc3\xa9", Tier::kCpu, {kvsp::Codec::kRaw, kvsp::Codec::kZstd}, 3, 4},
      99};
  nlohmann::ordered_json dom;
  dom["replicas"] = nlohmann::ordered_json::array();
  dom["replicas"].push_back({{"holder", odd.info.holder},
                             {"tier", "cpu"},
                             {"codecs", {"raw", "zstd"}},
                             {"layer_first", 3},
                             {"layer_count", 4},
                             {"expires_ms", 99}});
  EXPECT_EQ(ToJson(AnchorsResponse{{odd}}),
            dom.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
  LookupResponse big;
  big.matched = kMaxKeysPerRequest;
  for (size_t i = 0; i < kMaxKeysPerRequest; ++i) {
    LookupEntry e;
    e.block_key.fill(uint8_t(i));
    for (int r = 0; r < 4; ++r) {
      e.replicas.push_back({{"https://store-" + std::to_string(r) + ".example:9000/_kvsp",
                             Tier::kObjectStore,
                             {kvsp::Codec::kRaw},
                             0,
                             32},
                            1000});
    }
    big.entries.push_back(std::move(e));
  }
  std::string text = ToJson(big);
  EXPECT_GT(text.size(), kMaxRequestBytes);
  auto back = ParseLookupResponse(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, big);
}

// WireJson against ParseStrictJson (nlohmann, the reader it replaced): the same documents are
// accepted, with the same values, and the same fault is reported for the others.
nlohmann::json ToNlohmann(const WireJson& w, WireJson::NodeId n) {
  switch (w.kind(n)) {
    case WireJson::Kind::kNull:
      return nullptr;
    case WireJson::Kind::kBool:
      return "<bool>";  // (values of literals are not kept; the type is compared)
    case WireJson::Kind::kUnsigned:
      return w.unsigned_value(n);
    case WireJson::Kind::kNegative:
      return "<negative>";
    case WireJson::Kind::kFloat:
      return "<float>";
    case WireJson::Kind::kString:
      return std::string(w.string(n));
    case WireJson::Kind::kArray:
    case WireJson::Kind::kObject: {
      bool obj = w.kind(n) == WireJson::Kind::kObject;
      nlohmann::json out = obj ? nlohmann::json::object() : nlohmann::json::array();
      WireJson::NodeId c = w.first_child(n);
      for (uint32_t i = 0; i < w.size(n); ++i, c = w.next(c)) {
        if (obj) {
          out[std::string(w.key(c))] = ToNlohmann(w, c);
        } else {
          out.push_back(ToNlohmann(w, c));
        }
      }
      return out;
    }
  }
  return nullptr;
}

nlohmann::json Typed(const nlohmann::json& j) {
  if (j.is_boolean()) return "<bool>";
  if (j.is_number_unsigned()) return j;
  if (j.is_number_integer()) return "<negative>";
  if (j.is_number_float()) return "<float>";
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(Typed(v));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out[k] = Typed(v);
    return out;
  }
  return j;
}

void ExpectSameAsNlohmann(const std::string& text) {
  auto mine = WireJson::Parse(text, 1 << 20, kMaxJsonDepth);
  auto ref = ParseStrictJson(text, 1 << 20, kMaxJsonDepth);
  ASSERT_EQ(mine.ok(), ref.ok()) << text << "\n"
                                 << (mine.ok() ? ref.status() : mine.status()).ToString();
  if (mine.ok()) {
    EXPECT_EQ(ToNlohmann(*mine, mine->root()), Typed(*ref)) << text;
  } else {
    EXPECT_EQ(mine.status().detail(), ref.status().detail())
        << text << "\n"
        << mine.status().ToString() << " vs " << ref.status().ToString();
  }
}

TEST(WireJson, AcceptsAndRefusesAsNlohmann) {
  for (const char* t : {
           "{}",
           "[]",
           " \t\r\n{ } ",
           "\xEF\xBB\xBF{}",
           "\xEF\xBB{}",
           "\xEF{}",
           "",
           "  ",
           "{",
           "}",
           "[1,]",
           "[,1]",
           "{\"a\":1,}",
           "{\"a\" 1}",
           "{a:1}",
           "{'a':1}",
           "{\"a\":1}{",
           "[1] x",
           "0",
           "-0",
           "01",
           "-",
           "1.",
           ".5",
           "1.5",
           "1e5",
           "1E+5",
           "1e-5",
           "1e",
           "-1",
           "-9223372036854775808",
           "-9223372036854775809",
           "18446744073709551615",
           "18446744073709551616",
           "1e400",
           "-1e400",
           "123456789012345678901234567890",
           "true",
           "false",
           "null",
           "tru",
           "nul",
           "True",
           "\"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\"",
           "\"\\ud83d\"",
           "\"\\ude00\"",
           "\"\\ud83d\\u0041\"",
           "\"\\u12\"",
           "\"\\uZZZZ\"",
           "\"\\x\"",
           "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
           "\"\\u0000\"",
           "\"a\x01\"",
           "\"a\x7f\"",
           "\"\xc3\xa9\"",
           "\"\xc3\"",
           "\"\xc0\x80\"",
           "\"\xe0\x80\x80\"",
           "\"\xed\xa0\x80\"",
           "\"\xf4\x90\x80\x80\"",
           "\"\xf0\x9f\x98\x80\"",
           "\"\xff\"",
           "\"unterminated",
           "{\"a\":1,\"a\":2}",
           "{\"a\":1,\"\\u0061\":2}",
           "{\"a\":{\"b\":1,\"b\":1}}",
           "{\"a\":1,\"a\":2,",
           "{\"a\":[[[[[[[1]]]]]]]}",
           "[[[[[[[1]]]]]]]",
           "[[[[[[1]]]]]]",
           "{\"a\":[[[[[[[1]]]]]]],\"a\":1}",
           "{\"a\":1,\"a\":[[[[[[[1]]]]]]]}",
       }) {
    ExpectSameAsNlohmann(t);
  }
  // An object with many members (past the linear duplicate scan), then a duplicate in it.
  std::string big = "{";
  for (int i = 0; i < 100; ++i) big += "\"m" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  ExpectSameAsNlohmann(big + "\"z\":1}");
  ExpectSameAsNlohmann(big + "\"m7\":1}");
}

TEST(WireJson, MutatedMessagesMatchNlohmann) {
  // Every message of this file with single bytes replaced, inserted or deleted (deterministic).
  const std::string seeds[] = {kRegisterJson, kLookupResponseJson, ToJson(LookupValue()),
                               ToJson(RegisterValue())};
  const char kBytes[] = {'"', '\\', '{', '}', '[', ']',    ',',    ':',    '0',    '-',
                         '.', 'e',  'u', ' ', 'a', '\x00', '\x1f', '\x80', '\xc3', '\xff'};
  uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (const std::string& seed : seeds) {
    for (int i = 0; i < 1500; ++i) {
      std::string t = seed;
      for (int m = 0; m < 1 + int(next() % 3); ++m) {
        size_t at = next() % (t.size() + 1);
        char b = kBytes[next() % sizeof(kBytes)];
        switch (next() % 3) {
          case 0:
            if (at < t.size()) t[at] = b;
            break;
          case 1:
            t.insert(t.begin() + std::ptrdiff_t(at), b);
            break;
          default:
            if (at < t.size()) t.erase(at, 1);
        }
      }
      ExpectSameAsNlohmann(t);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace kvcs::index
