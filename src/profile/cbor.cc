#include "profile/cbor.h"

#include <string>
#include <string_view>

#include "common/strings.h"

namespace kvcs::profile::cbor {
namespace {

constexpr uint8_t kMajorUint = 0, kMajorNeg = 1, kMajorBytes = 2, kMajorText = 3, kMajorArray = 4,
                  kMajorMap = 5, kMajorTag = 6;

Status Err(CborError e, std::string msg) {
  return InvalidArgument("cbor: " + msg, static_cast<int>(e));
}

class Decoder {
 public:
  Decoder(ByteSpan in, size_t max_depth) : in_(in), max_depth_(max_depth) {}

  Result<Value> Top() {
    KVCS_ASSIGN_OR_RETURN(Value v, Item(0));
    if (pos_ != in_.size()) {
      return Err(CborError::kTrailingBytes,
                 std::to_string(in_.size() - pos_) + " bytes after the item");
    }
    return v;
  }

 private:
  size_t remaining() const { return in_.size() - pos_; }

  // Reads an initial byte and its argument, enforcing definite, preferred encodings.
  Status Head(uint8_t* major, uint64_t* arg) {
    if (remaining() < 1) return Err(CborError::kTruncated, "input ends before an item");
    uint8_t ib = in_[pos_++];
    *major = ib >> 5;
    uint8_t info = ib & 31;
    if (info < 24) {
      *arg = info;
      return Status::Ok();
    }
    if (info == 31) return Err(CborError::kIndefiniteLength, "indefinite lengths are not allowed");
    if (info > 27) return Err(CborError::kReservedInfo, "reserved additional information");
    size_t n = size_t{1} << (info - 24);  // 1, 2, 4 or 8 bytes
    if (remaining() < n) return Err(CborError::kTruncated, "input ends inside an argument");
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = v << 8 | in_[pos_++];
    // Preferred serialization: the shortest form that holds the value.
    uint64_t min = n == 1 ? 24 : n == 2 ? 0x100 : n == 4 ? 0x10000 : 0x100000000ull;
    if (v < min) return Err(CborError::kNonMinimal, "argument not in its shortest form");
    *arg = v;
    return Status::Ok();
  }

  Result<Value> Item(size_t depth) {
    uint8_t major = 0;
    uint64_t arg = 0;
    KVCS_RETURN_IF_ERROR(Head(&major, &arg));
    Value v;
    switch (major) {
      case kMajorUint:
        v.type = Type::kUint;
        v.number = arg;
        return v;
      case kMajorNeg:
        v.type = Type::kNegInt;
        v.number = arg;
        return v;
      case kMajorBytes:
      case kMajorText:
        if (arg > remaining()) {
          return Err(CborError::kTruncated,
                     "string length " + std::to_string(arg) + " exceeds the remaining input");
        }
        v.type = major == kMajorBytes ? Type::kBytes : Type::kText;
        v.str = in_.subspan(pos_, size_t(arg));
        pos_ += size_t(arg);
        if (v.type == Type::kText &&
            !IsValidUtf8(
                std::string_view(reinterpret_cast<const char*>(v.str.data()), v.str.size()))) {
          return Err(CborError::kBadUtf8, "text string is not valid UTF-8");
        }
        return v;
      case kMajorArray:
      case kMajorMap: {
        if (depth + 1 > max_depth_) return Err(CborError::kTooDeep, "nesting too deep");
        // Every item takes at least one byte, so a count above the remaining bytes is a lie;
        // checking it first bounds the reservation below by the input size.
        if (major == kMajorMap && arg > kMaxMapEntries) {
          return Err(CborError::kTooManyEntries, "map with " + std::to_string(arg) + " entries");
        }
        uint64_t items = major == kMajorMap ? arg * 2 : arg;
        if (arg > remaining() || items > remaining()) {
          return Err(CborError::kTruncated, "count exceeds the remaining input");
        }
        if (major == kMajorArray) {
          v.type = Type::kArray;
          v.items.reserve(size_t(arg));
          for (uint64_t i = 0; i < arg; ++i) {
            KVCS_ASSIGN_OR_RETURN(Value item, Item(depth + 1));
            v.items.push_back(std::move(item));
          }
          return v;
        }
        v.type = Type::kMap;
        v.keys.reserve(size_t(arg));
        v.values.reserve(size_t(arg));
        for (uint64_t i = 0; i < arg; ++i) {
          KVCS_ASSIGN_OR_RETURN(Value key, Item(depth + 1));
          if (key.type != Type::kUint && key.type != Type::kNegInt && key.type != Type::kText) {
            return Err(CborError::kBadMapKey, "map keys must be integers or text");
          }
          for (const Value& k : v.keys) {
            if (k.type == key.type && k.number == key.number &&
                std::equal(k.str.begin(), k.str.end(), key.str.begin(), key.str.end())) {
              return Err(CborError::kDuplicateKey, "duplicate map key");
            }
          }
          KVCS_ASSIGN_OR_RETURN(Value val, Item(depth + 1));
          v.keys.push_back(std::move(key));
          v.values.push_back(std::move(val));
        }
        return v;
      }
      case kMajorTag:
        return Err(CborError::kUnsupportedType, "tags are not allowed here");
      default:
        return Err(CborError::kUnsupportedType, "floats and simple values are not allowed");
    }
  }

  ByteSpan in_;
  size_t max_depth_;
  size_t pos_ = 0;
};

void PutHead(Bytes* out, uint8_t major, uint64_t v) {
  uint8_t m = uint8_t(major << 5);
  if (v < 24) {
    out->push_back(uint8_t(m | v));
  } else if (v <= 0xff) {
    out->push_back(m | 24);
    out->push_back(uint8_t(v));
  } else if (v <= 0xffff) {
    out->push_back(m | 25);
    for (int s = 8; s >= 0; s -= 8) out->push_back(uint8_t(v >> s));
  } else if (v <= 0xffffffff) {
    out->push_back(m | 26);
    for (int s = 24; s >= 0; s -= 8) out->push_back(uint8_t(v >> s));
  } else {
    out->push_back(m | 27);
    for (int s = 56; s >= 0; s -= 8) out->push_back(uint8_t(v >> s));
  }
}

}  // namespace

std::string_view CborErrorName(CborError e) {
  switch (e) {
    case CborError::kNone:
      return "none";
    case CborError::kTruncated:
      return "truncated";
    case CborError::kTrailingBytes:
      return "trailing_bytes";
    case CborError::kUnsupportedType:
      return "unsupported_type";
    case CborError::kIndefiniteLength:
      return "indefinite_length";
    case CborError::kReservedInfo:
      return "reserved_info";
    case CborError::kNonMinimal:
      return "non_minimal";
    case CborError::kTooDeep:
      return "too_deep";
    case CborError::kBadUtf8:
      return "bad_utf8";
    case CborError::kBadMapKey:
      return "bad_map_key";
    case CborError::kDuplicateKey:
      return "duplicate_key";
    case CborError::kTooManyEntries:
      return "too_many_entries";
  }
  return "unknown";
}

std::optional<int64_t> Value::AsInt() const {
  if (type == Type::kUint && number <= uint64_t(INT64_MAX)) return int64_t(number);
  if (type == Type::kNegInt && number <= uint64_t(INT64_MAX)) return -1 - int64_t(number);
  return std::nullopt;
}

const Value* Value::Find(int64_t label) const {
  if (type != Type::kMap) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].AsInt() == label) return &values[i];
  }
  return nullptr;
}

Result<Value> Decode(ByteSpan in, size_t max_depth) { return Decoder(in, max_depth).Top(); }

void PutUint(Bytes* out, uint64_t v) { PutHead(out, kMajorUint, v); }
void PutInt(Bytes* out, int64_t v) {
  if (v >= 0) {
    PutHead(out, kMajorUint, uint64_t(v));
  } else {
    PutHead(out, kMajorNeg, uint64_t(-1 - v));
  }
}
void PutBytes(Bytes* out, ByteSpan b) {
  PutHead(out, kMajorBytes, b.size());
  out->insert(out->end(), b.begin(), b.end());
}
void PutText(Bytes* out, std::string_view s) {
  PutHead(out, kMajorText, s.size());
  out->insert(out->end(), s.begin(), s.end());
}
void PutArrayHeader(Bytes* out, uint64_t count) { PutHead(out, kMajorArray, count); }
void PutMapHeader(Bytes* out, uint64_t count) { PutHead(out, kMajorMap, count); }
void PutTag(Bytes* out, uint64_t tag) { PutHead(out, kMajorTag, tag); }

}  // namespace kvcs::profile::cbor
