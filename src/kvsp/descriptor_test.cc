#include "kvsp/descriptor.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/hex.h"

namespace kvcs::kvsp {
namespace {

// Spec §9 test vector.
constexpr std::string_view kSpecDescriptor =
    R"({"kvsp":1,"model":"meta-llama/Llama-3.1-8B-Instruct","model_rev":"0e9e39f249a16976918f6564b8830bc894c89659","tokenizer_rev":"0e9e39f249a16976918f6564b8830bc894c89659","attn":"gqa","layers":32,"kv_heads":8,"head_dim":128,"kv_dtype":"bf16","block_tokens":16,"layout":"thd"})";
constexpr std::string_view kSpecCanonical =
    R"({"attn":"gqa","block_tokens":16,"head_dim":128,"kv_dtype":"bf16","kv_heads":8,"kvsp":1,"layers":32,"layout":"thd","model":"meta-llama/Llama-3.1-8B-Instruct","model_rev":"0e9e39f249a16976918f6564b8830bc894c89659","tokenizer_rev":"0e9e39f249a16976918f6564b8830bc894c89659"})";

TEST(Descriptor, SpecVector) {
  auto d = ParseDescriptor(kSpecDescriptor);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(d->layers, 32u);
  EXPECT_EQ(d->kv_heads, 8u);
  EXPECT_EQ(d->head_dim, 128u);
  EXPECT_EQ(d->block_tokens, 16u);
  EXPECT_FALSE(d->adapter.has_value());
  EXPECT_EQ(CanonicalJson(*d), kSpecCanonical);
  EXPECT_EQ(ToHex(CompatId(*d)),
            "851898196c814a8d0029a9e763f8ec354cf226a41ec7fabc5ae9c0c6d14c2fa5");
  EXPECT_EQ(KSectionBytes(*d), 32768u);
  EXPECT_EQ(VSectionBytes(*d), 32768u);
  // The canonical form parses back to the same descriptor, and ToJson agrees with it.
  auto again = ParseDescriptor(CanonicalJson(*d));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *d);
  EXPECT_EQ(ToJson(*d).dump(), kSpecCanonical);
  auto from_json = DescriptorFromJson(ToJson(*d));
  ASSERT_TRUE(from_json.ok());
  EXPECT_EQ(*from_json, *d);
}

TEST(Descriptor, CanonicalSortsAdapterAndEscapesOnlyWhatIsMandatory) {
  auto d = ParseDescriptor(kSpecDescriptor);
  ASSERT_TRUE(d.ok());
  d->adapter = "lora/x@1";
  d->model = std::string("a\"b\\c\x01\n\x7f/\xc3\xa9\xe2\x82\xac", 14);
  std::string c = CanonicalJson(*d);
  EXPECT_EQ(c.substr(0, 27), R"({"adapter":"lora/x@1","attn)");
  EXPECT_NE(c.find(R"("model":"a\"b\\c\u0001\n)"
                   "\x7f/\xc3\xa9\xe2\x82\xac\""),
            std::string::npos)
      << c;
  // Canonical keys are in byte-wise order.
  auto j = nlohmann::json::parse(c);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  std::vector<std::string> in_text;
  size_t pos = 0;
  for (const auto& k : keys) {
    size_t at = c.find("\"" + k + "\":", pos);
    ASSERT_NE(at, std::string::npos) << k;
    pos = at;
    in_text.push_back(k);
  }
  EXPECT_TRUE(std::is_sorted(in_text.begin(), in_text.end()));
  EXPECT_EQ(in_text.size(), 12u);
  auto back = ParseDescriptor(c);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *d);
  EXPECT_NE(CompatId(*back), CompatId(*ParseDescriptor(kSpecDescriptor)));
}

std::string Replace(std::string_view s, std::string_view from, std::string_view to) {
  std::string out(s);
  size_t at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) out.replace(at, from.size(), to);
  return out;
}

struct BadCase {
  std::string name;
  std::string json;
  DescriptorError want;
};

TEST(Descriptor, RejectsWithTypedErrors) {
  const std::string s(kSpecDescriptor);
  std::vector<BadCase> cases = {
      {"syntax", "{\"kvsp\":1,", DescriptorError::kSyntax},
      {"empty", "", DescriptorError::kSyntax},
      {"trailing", s + " x", DescriptorError::kSyntax},
      {"two_values", s + s, DescriptorError::kSyntax},
      {"array", "[1,2]", DescriptorError::kNotObject},
      {"number", "1", DescriptorError::kNotObject},
      {"string", "\"x\"", DescriptorError::kNotObject},
      {"duplicate", Replace(s, "\"layers\":32", "\"layers\":32,\"layers\":32"),
       DescriptorError::kDuplicateKey},
      {"duplicate_differs", Replace(s, "\"layers\":32", "\"layers\":31,\"layers\":32"),
       DescriptorError::kDuplicateKey},
      {"unknown", Replace(s, "\"layers\":32", "\"layers\":32,\"tp\":2"),
       DescriptorError::kUnknownField},
      {"missing", Replace(s, "\"layers\":32,", ""), DescriptorError::kMissingField},
      {"missing_layout", Replace(s, ",\"layout\":\"thd\"", ""), DescriptorError::kMissingField},
      {"float", Replace(s, "\"layers\":32", "\"layers\":32.0"), DescriptorError::kFloat},
      {"exponent", Replace(s, "\"layers\":32", "\"layers\":3e1"), DescriptorError::kFloat},
      {"null", Replace(s, "\"layers\":32", "\"layers\":null"), DescriptorError::kNull},
      {"null_adapter", Replace(s, "\"layers\":32", "\"layers\":32,\"adapter\":null"),
       DescriptorError::kNull},
      {"nested", Replace(s, "\"layers\":32", "\"layers\":{\"n\":32}"), DescriptorError::kNested},
      {"nested_array", Replace(s, "\"layers\":32", "\"layers\":[32]"), DescriptorError::kNested},
      {"bool", Replace(s, "\"layers\":32", "\"layers\":true"), DescriptorError::kWrongType},
      {"string_int", Replace(s, "\"layers\":32", "\"layers\":\"32\""), DescriptorError::kWrongType},
      {"int_string", Replace(s, "\"attn\":\"gqa\"", "\"attn\":1"), DescriptorError::kWrongType},
      {"negative", Replace(s, "\"layers\":32", "\"layers\":-1"), DescriptorError::kOutOfRange},
      {"over_2p53", Replace(s, "\"head_dim\":128", "\"head_dim\":9007199254740992"),
       DescriptorError::kOutOfRange},
      {"over_u32", Replace(s, "\"head_dim\":128", "\"head_dim\":4294967296"),
       DescriptorError::kOutOfRange},
      {"over_u64", Replace(s, "\"head_dim\":128", "\"head_dim\":18446744073709551616"),
       DescriptorError::kFloat},
      {"layers_over_u16", Replace(s, "\"layers\":32", "\"layers\":65536"),
       DescriptorError::kOutOfRange},
      {"zero_layers", Replace(s, "\"layers\":32", "\"layers\":0"), DescriptorError::kZero},
      {"zero_heads", Replace(s, "\"kv_heads\":8", "\"kv_heads\":0"), DescriptorError::kZero},
      {"zero_dim", Replace(s, "\"head_dim\":128", "\"head_dim\":0"), DescriptorError::kZero},
      {"zero_block", Replace(s, "\"block_tokens\":16", "\"block_tokens\":0"),
       DescriptorError::kZero},
      {"bad_attn", Replace(s, "\"gqa\"", "\"GQA\""), DescriptorError::kBadEnum},
      {"bad_dtype", Replace(s, "\"bf16\"", "\"int8\""), DescriptorError::kBadEnum},
      {"bad_layout", Replace(s, "\"thd\"", "\"htd\""), DescriptorError::kBadEnum},
      {"version2", Replace(s, "\"kvsp\":1", "\"kvsp\":2"), DescriptorError::kUnsupportedVersion},
      {"version0", Replace(s, "\"kvsp\":1", "\"kvsp\":0"), DescriptorError::kUnsupportedVersion},
      {"empty_model", Replace(s, "\"meta-llama/Llama-3.1-8B-Instruct\"", "\"\""),
       DescriptorError::kEmptyString},
      {"empty_adapter", Replace(s, "\"layers\":32", "\"layers\":32,\"adapter\":\"\""),
       DescriptorError::kEmptyString},
      {"long_model",
       Replace(s, "meta-llama/Llama-3.1-8B-Instruct",
               std::string(kMaxDescriptorStringBytes + 1, 'm')),
       DescriptorError::kTooLarge},
      {"too_large", s + std::string(kMaxDescriptorJsonBytes, ' '), DescriptorError::kTooLarge},
      {"bad_utf8", Replace(s, "meta-llama", "meta\xff"), DescriptorError::kSyntax},
      {"lone_surrogate", Replace(s, "meta-llama", "meta\\ud800"), DescriptorError::kSyntax},
      {"mqa_heads", Replace(s, "\"gqa\"", "\"mqa\""), DescriptorError::kInconsistent},
      {"mla_heads", Replace(s, "\"gqa\"", "\"mla\""), DescriptorError::kInconsistent},
      {"section_too_big",
       Replace(Replace(s, "\"head_dim\":128", "\"head_dim\":4294967295"), "\"kv_heads\":8",
               "\"kv_heads\":4294967295"),
       DescriptorError::kInconsistent},
  };
  for (const auto& c : cases) {
    auto r = ParseDescriptor(c.json);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << c.name;
    EXPECT_TRUE(r.status().Is(c.want))
        << c.name << ": got " << r.status().ToString() << " want " << DescriptorErrorName(c.want);
  }
}

TEST(Descriptor, MlaHasNoVSection) {
  std::string s =
      Replace(Replace(kSpecDescriptor, "\"gqa\"", "\"mla\""), "\"kv_heads\":8", "\"kv_heads\":1");
  s = Replace(s, "\"head_dim\":128", "\"head_dim\":576");
  auto d = ParseDescriptor(s);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(KSectionBytes(*d), 16u * 576 * 2);
  EXPECT_EQ(VSectionBytes(*d), 0u);
}

TEST(Descriptor, CanonicalEscapesEveryControlCharacter) {
  auto d = ParseDescriptor(kSpecDescriptor);
  ASSERT_TRUE(d.ok());
  d->tokenizer_rev = std::string("\x00\x08\x09\x0a\x0c\x0d\x1f ", 8);
  std::string c = CanonicalJson(*d);
  EXPECT_NE(c.find(R"("tokenizer_rev":"\u0000\b\t\n\f\r\u001f ")"), std::string::npos) << c;
  auto back = ParseDescriptor(c);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tokenizer_rev, d->tokenizer_rev);
}

TEST(Descriptor, DtypeBytes) {
  EXPECT_EQ(DtypeBytes("bf16"), 2u);
  EXPECT_EQ(DtypeBytes("fp16"), 2u);
  EXPECT_EQ(DtypeBytes("fp32"), 4u);
  EXPECT_EQ(DtypeBytes("fp8_e4m3"), 1u);
  EXPECT_EQ(DtypeBytes("fp8_e5m2"), 1u);
  EXPECT_EQ(DtypeBytes("int8"), 0u);
}

TEST(Descriptor, ValidateCatchesCodeBuiltErrors) {
  auto d = ParseDescriptor(kSpecDescriptor);
  ASSERT_TRUE(d.ok());
  Descriptor bad = *d;
  bad.model = "\xc0\xaf";  // overlong '/'
  EXPECT_TRUE(ValidateDescriptor(bad).Is(DescriptorError::kBadUtf8));
  bad = *d;
  bad.kvsp = 2;
  EXPECT_TRUE(ValidateDescriptor(bad).Is(DescriptorError::kUnsupportedVersion));
  EXPECT_TRUE(ValidateDescriptor(*d).ok());
}

}  // namespace
}  // namespace kvcs::kvsp
