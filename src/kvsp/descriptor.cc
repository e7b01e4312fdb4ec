// KVSP v1 as defined by the project: Compatibility Descriptor parsing and canonical form.
#include "kvsp/descriptor.h"

#include <array>
#include <set>
#include <string>

#include "common/strings.h"

namespace kvcs::kvsp {
namespace {

constexpr std::array<std::string_view, 4> kAttn = {"mha", "gqa", "mqa", "mla"};
constexpr std::array<std::string_view, 1> kLayouts = {"thd"};

template <size_t N>
bool OneOf(const std::array<std::string_view, N>& set, std::string_view v) {
  for (auto s : set) {
    if (s == v) return true;
  }
  return false;
}

Status Err(DescriptorError e, std::string msg) {
  return InvalidArgument("descriptor: " + std::move(msg), static_cast<int>(e));
}

// The descriptor's members, by name, in canonical (byte-wise sorted) order.
enum class Field {
  kAdapter,
  kAttn,
  kBlockTokens,
  kHeadDim,
  kKvDtype,
  kKvHeads,
  kKvsp,
  kLayers,
  kLayout,
  kModel,
  kModelRev,
  kTokenizerRev,
};
struct FieldInfo {
  std::string_view name;
  Field field;
  bool is_int;
  bool required;
};
constexpr std::array<FieldInfo, 12> kFields = {{
    {"adapter", Field::kAdapter, false, false},
    {"attn", Field::kAttn, false, true},
    {"block_tokens", Field::kBlockTokens, true, true},
    {"head_dim", Field::kHeadDim, true, true},
    {"kv_dtype", Field::kKvDtype, false, true},
    {"kv_heads", Field::kKvHeads, true, true},
    {"kvsp", Field::kKvsp, true, true},
    {"layers", Field::kLayers, true, true},
    {"layout", Field::kLayout, false, true},
    {"model", Field::kModel, false, true},
    {"model_rev", Field::kModelRev, false, true},
    {"tokenizer_rev", Field::kTokenizerRev, false, true},
}};

const FieldInfo* FindField(std::string_view name) {
  for (const auto& f : kFields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Status CheckString(std::string_view name, std::string_view v) {
  if (v.empty()) return Err(DescriptorError::kEmptyString, std::string(name) + " is empty");
  if (v.size() > kMaxDescriptorStringBytes) {
    return Err(
        DescriptorError::kTooLarge,
        std::string(name) + " longer than " + std::to_string(kMaxDescriptorStringBytes) + " bytes");
  }
  if (!IsValidUtf8(v)) return Err(DescriptorError::kBadUtf8, std::string(name) + " is not UTF-8");
  return Status::Ok();
}

Status CheckU32(std::string_view name, uint64_t v, uint64_t max) {
  if (v == 0) return Err(DescriptorError::kZero, std::string(name) + " must be at least 1");
  if (v > max) {
    return Err(DescriptorError::kOutOfRange,
               std::string(name) + " = " + std::to_string(v) + " exceeds " + std::to_string(max));
  }
  return Status::Ok();
}

// SAX handler for ParseDescriptor: accepts exactly one flat object of scalars, rejects duplicate
// keys, floats, nulls and nesting early, and collects the members into a json object.
class StrictSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  using json = nlohmann::json;
  json object = json::object();
  Status error;

  bool null() override { return Value(DescriptorError::kNull, "null value", nullptr); }
  bool boolean(bool v) override { return Value(DescriptorError::kWrongType, "boolean value", v); }
  bool number_integer(number_integer_t v) override { return Value(DescriptorError::kNone, "", v); }
  bool number_unsigned(number_unsigned_t v) override {
    return Value(DescriptorError::kNone, "", v);
  }
  bool number_float(number_float_t, const string_t& s) override {
    return Value(DescriptorError::kFloat, "non-integer number " + s, nullptr);
  }
  bool string(string_t& v) override { return Value(DescriptorError::kNone, "", v); }
  bool binary(binary_t&) override { return Fail(DescriptorError::kWrongType, "binary value"); }
  bool start_object(std::size_t) override {
    if (depth_ == 0 && !started_) {
      depth_ = 1;
      started_ = true;
      return true;
    }
    return Fail(depth_ == 0 ? DescriptorError::kSyntax : DescriptorError::kNested,
                "nested object in member " + key_);
  }
  bool end_object() override {
    depth_ = 0;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return Fail(DescriptorError::kNotObject, "top-level value is an array");
    return Fail(DescriptorError::kNested, "array in member " + key_);
  }
  bool end_array() override { return true; }
  bool key(string_t& k) override {
    if (seen_.count(k)) return Fail(DescriptorError::kDuplicateKey, "duplicate member " + k);
    seen_.insert(k);
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    return Fail(DescriptorError::kSyntax,
                "not JSON at byte " + std::to_string(pos) + ": " + ex.what());
  }

 private:
  template <typename V>
  bool Value(DescriptorError e, const std::string& what, V&& v) {
    if (depth_ == 0) return Fail(DescriptorError::kNotObject, "top-level value is not an object");
    if (e != DescriptorError::kNone) return Fail(e, what + " in member " + key_);
    object[key_] = std::forward<V>(v);
    return true;
  }
  bool Fail(DescriptorError e, std::string msg) {
    if (error.ok()) error = Err(e, std::move(msg));
    return false;
  }
  int depth_ = 0;
  bool started_ = false;
  std::string key_;
  std::set<std::string, std::less<>> seen_;
};

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char ch : s) {
    auto c = static_cast<uint8_t>(ch);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(ch);  // everything else, UTF-8 included, is written as is
        }
    }
  }
  out->push_back('"');
}

}  // namespace

std::string_view DescriptorErrorName(DescriptorError e) {
  switch (e) {
    case DescriptorError::kNone:
      return "none";
    case DescriptorError::kSyntax:
      return "syntax";
    case DescriptorError::kNotObject:
      return "not_object";
    case DescriptorError::kTooLarge:
      return "too_large";
    case DescriptorError::kDuplicateKey:
      return "duplicate_key";
    case DescriptorError::kUnknownField:
      return "unknown_field";
    case DescriptorError::kMissingField:
      return "missing_field";
    case DescriptorError::kFloat:
      return "float";
    case DescriptorError::kNull:
      return "null";
    case DescriptorError::kNested:
      return "nested";
    case DescriptorError::kWrongType:
      return "wrong_type";
    case DescriptorError::kOutOfRange:
      return "out_of_range";
    case DescriptorError::kZero:
      return "zero";
    case DescriptorError::kBadEnum:
      return "bad_enum";
    case DescriptorError::kUnsupportedVersion:
      return "unsupported_version";
    case DescriptorError::kEmptyString:
      return "empty_string";
    case DescriptorError::kBadUtf8:
      return "bad_utf8";
    case DescriptorError::kInconsistent:
      return "inconsistent";
  }
  return "unknown";
}

size_t DtypeBytes(std::string_view t) {
  if (t == "bf16" || t == "fp16") return 2;
  if (t == "fp32") return 4;
  if (t == "fp8_e4m3" || t == "fp8_e5m2") return 1;
  return 0;
}

uint64_t SectionElements(const Descriptor& d) {
  return uint64_t{d.block_tokens} * d.kv_heads * d.head_dim;
}
uint64_t KSectionBytes(const Descriptor& d) { return SectionElements(d) * DtypeBytes(d.kv_dtype); }
uint64_t VSectionBytes(const Descriptor& d) { return d.attn == "mla" ? 0 : KSectionBytes(d); }

Status ValidateDescriptor(const Descriptor& d) {
  if (d.kvsp != kDescriptorVersion) {
    return Err(DescriptorError::kUnsupportedVersion,
               "kvsp = " + std::to_string(d.kvsp) + ", this implementation reads version 1");
  }
  KVCS_RETURN_IF_ERROR(CheckString("model", d.model));
  KVCS_RETURN_IF_ERROR(CheckString("model_rev", d.model_rev));
  KVCS_RETURN_IF_ERROR(CheckString("tokenizer_rev", d.tokenizer_rev));
  if (d.adapter) KVCS_RETURN_IF_ERROR(CheckString("adapter", *d.adapter));
  if (!OneOf(kAttn, d.attn)) {
    return Err(DescriptorError::kBadEnum, "attn '" + d.attn + "' is not mha, gqa, mqa or mla");
  }
  if (DtypeBytes(d.kv_dtype) == 0) {
    return Err(DescriptorError::kBadEnum,
               "kv_dtype '" + d.kv_dtype + "' is not bf16, fp16, fp32, fp8_e4m3 or fp8_e5m2");
  }
  if (!OneOf(kLayouts, d.layout)) {
    return Err(DescriptorError::kBadEnum, "layout '" + d.layout + "' is not thd");
  }
  KVCS_RETURN_IF_ERROR(CheckU32("layers", d.layers, kMaxLayers));
  KVCS_RETURN_IF_ERROR(CheckU32("kv_heads", d.kv_heads, UINT32_MAX));
  KVCS_RETURN_IF_ERROR(CheckU32("head_dim", d.head_dim, UINT32_MAX));
  KVCS_RETURN_IF_ERROR(CheckU32("block_tokens", d.block_tokens, UINT32_MAX));
  if ((d.attn == "mqa" || d.attn == "mla") && d.kv_heads != 1) {
    return Err(
        DescriptorError::kInconsistent,
        "attn " + d.attn + " has exactly one KV head, kv_heads = " + std::to_string(d.kv_heads));
  }
  // Each factor is < 2^32, so check the product stepwise against the bound.
  uint64_t bytes = uint64_t{d.block_tokens} * d.kv_heads;
  if (bytes > kMaxSectionBytes || bytes * d.head_dim > kMaxSectionBytes ||
      bytes * d.head_dim * DtypeBytes(d.kv_dtype) > kMaxSectionBytes) {
    return Err(DescriptorError::kInconsistent,
               "block_tokens x kv_heads x head_dim x dtype exceeds the section bound of " +
                   std::to_string(kMaxSectionBytes) + " bytes");
  }
  return Status::Ok();
}

Result<Descriptor> DescriptorFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Err(DescriptorError::kNotObject, "top-level value is not an object");
  Descriptor d;
  bool seen[kFields.size()] = {};
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    const FieldInfo* f = FindField(name);
    if (!f) return Err(DescriptorError::kUnknownField, "unknown member '" + name + "'");
    seen[static_cast<size_t>(f->field)] = true;
    if (v.is_null()) return Err(DescriptorError::kNull, name + " is null");
    if (v.is_number_float()) return Err(DescriptorError::kFloat, name + " is not an integer");
    if (v.is_structured()) return Err(DescriptorError::kNested, name + " is an object or array");
    if (f->is_int) {
      if (!v.is_number_integer()) {
        return Err(DescriptorError::kWrongType, name + " must be an integer");
      }
      if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0) {
        return Err(DescriptorError::kOutOfRange, name + " is negative");
      }
      uint64_t u = v.get<uint64_t>();
      if (u > kMaxJsonInteger) {
        return Err(DescriptorError::kOutOfRange, name + " exceeds 2^53-1");
      }
      if (u > UINT32_MAX) {
        return Err(DescriptorError::kOutOfRange,
                   name + " = " + std::to_string(u) + " does not fit in 32 bits");
      }
      auto u32 = static_cast<uint32_t>(u);
      switch (f->field) {
        case Field::kKvsp:
          if (u != kDescriptorVersion) {
            return Err(DescriptorError::kUnsupportedVersion,
                       "kvsp = " + std::to_string(u) + ", this implementation reads version 1");
          }
          d.kvsp = static_cast<int>(u);
          break;
        case Field::kLayers:
          d.layers = u32;
          break;
        case Field::kKvHeads:
          d.kv_heads = u32;
          break;
        case Field::kHeadDim:
          d.head_dim = u32;
          break;
        case Field::kBlockTokens:
          d.block_tokens = u32;
          break;
        default:
          break;
      }
    } else {
      if (!v.is_string()) return Err(DescriptorError::kWrongType, name + " must be a string");
      const auto& s = v.get_ref<const std::string&>();
      switch (f->field) {
        case Field::kModel:
          d.model = s;
          break;
        case Field::kModelRev:
          d.model_rev = s;
          break;
        case Field::kTokenizerRev:
          d.tokenizer_rev = s;
          break;
        case Field::kAdapter:
          d.adapter = s;
          break;
        case Field::kAttn:
          d.attn = s;
          break;
        case Field::kKvDtype:
          d.kv_dtype = s;
          break;
        case Field::kLayout:
          d.layout = s;
          break;
        default:
          break;
      }
    }
  }
  for (const auto& f : kFields) {
    if (f.required && !seen[static_cast<size_t>(f.field)]) {
      return Err(DescriptorError::kMissingField, "missing member '" + std::string(f.name) + "'");
    }
  }
  KVCS_RETURN_IF_ERROR(ValidateDescriptor(d));
  return d;
}

Result<Descriptor> ParseDescriptor(std::string_view json) {
  if (json.size() > kMaxDescriptorJsonBytes) {
    return Err(DescriptorError::kTooLarge,
               "descriptor JSON longer than " + std::to_string(kMaxDescriptorJsonBytes) + " bytes");
  }
  StrictSax sax;
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(json.begin(), json.end(), &sax,
                                   nlohmann::json::input_format_t::json, /*strict=*/true);
  } catch (const std::exception& e) {
    return Err(DescriptorError::kSyntax, std::string("not JSON: ") + e.what());
  }
  if (!ok) {
    if (!sax.error.ok()) return sax.error;
    return Err(DescriptorError::kSyntax, "not JSON");
  }
  return DescriptorFromJson(sax.object);
}

nlohmann::json ToJson(const Descriptor& d) {
  nlohmann::json j = {
      {"kvsp", d.kvsp},           {"model", d.model},
      {"model_rev", d.model_rev}, {"tokenizer_rev", d.tokenizer_rev},
      {"attn", d.attn},           {"layers", d.layers},
      {"kv_heads", d.kv_heads},   {"head_dim", d.head_dim},
      {"kv_dtype", d.kv_dtype},   {"block_tokens", d.block_tokens},
      {"layout", d.layout},
  };
  if (d.adapter) j["adapter"] = *d.adapter;
  return j;
}

std::string CanonicalJson(const Descriptor& d) {
  std::string out;
  out.reserve(256);
  out.push_back('{');
  bool first = true;
  auto key = [&](std::string_view k) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(&out, k);
    out.push_back(':');
  };
  // kFields is in byte-wise key order (a unit test checks it), so walking it sorts the output.
  for (const auto& f : kFields) {
    switch (f.field) {
      case Field::kAdapter:
        if (d.adapter) {
          key(f.name);
          AppendJsonString(&out, *d.adapter);
        }
        break;
      case Field::kAttn:
        key(f.name), AppendJsonString(&out, d.attn);
        break;
      case Field::kBlockTokens:
        key(f.name), out += std::to_string(d.block_tokens);
        break;
      case Field::kHeadDim:
        key(f.name), out += std::to_string(d.head_dim);
        break;
      case Field::kKvDtype:
        key(f.name), AppendJsonString(&out, d.kv_dtype);
        break;
      case Field::kKvHeads:
        key(f.name), out += std::to_string(d.kv_heads);
        break;
      case Field::kKvsp:
        key(f.name), out += std::to_string(d.kvsp);
        break;
      case Field::kLayers:
        key(f.name), out += std::to_string(d.layers);
        break;
      case Field::kLayout:
        key(f.name), AppendJsonString(&out, d.layout);
        break;
      case Field::kModel:
        key(f.name), AppendJsonString(&out, d.model);
        break;
      case Field::kModelRev:
        key(f.name), AppendJsonString(&out, d.model_rev);
        break;
      case Field::kTokenizerRev:
        key(f.name), AppendJsonString(&out, d.tokenizer_rev);
        break;
    }
  }
  out.push_back('}');
  return out;
}

Digest CompatId(const Descriptor& d) {
  Sha256 h;
  static constexpr uint8_t kZero = 0;
  h.Update("kvsp-compat-v1").Update(ByteSpan(&kZero, 1)).Update(CanonicalJson(d));
  return h.Finish();
}

}  // namespace kvcs::kvsp
