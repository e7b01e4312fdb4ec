// Big-endian byte packing: the only place kvcs protocol integers are written or read.
//
// ByteWriter appends to a std::string-like buffer (std::vector<uint8_t>). ByteReader reads from a
// span and never reads past its end: every Read* returns false when too few bytes remain and then
// leaves the position unchanged. Not thread-safe.
#ifndef KVCS_COMMON_BYTES_H_
#define KVCS_COMMON_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace kvcs {

using Bytes = std::vector<uint8_t>;
using ByteSpan = std::span<const uint8_t>;

inline ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline std::string_view AsStringView(ByteSpan b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

inline void StoreBe16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
inline void StoreBe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (24 - 8 * i));
}
inline void StoreBe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (56 - 8 * i));
}
inline uint16_t LoadBe16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline uint32_t LoadBe32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
inline uint64_t LoadBe64(const uint8_t* p) { return uint64_t(LoadBe32(p)) << 32 | LoadBe32(p + 4); }

class ByteWriter {
 public:
  explicit ByteWriter(Bytes* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(v); }
  void U16(uint16_t v) {
    Grow(2, [&](uint8_t* p) { StoreBe16(p, v); });
  }
  void U32(uint32_t v) {
    Grow(4, [&](uint8_t* p) { StoreBe32(p, v); });
  }
  void U64(uint64_t v) {
    Grow(8, [&](uint8_t* p) { StoreBe64(p, v); });
  }
  void Append(ByteSpan b) { out_->insert(out_->end(), b.begin(), b.end()); }
  void Append(std::string_view s) { Append(AsBytes(s)); }
  void Zeros(size_t n) { out_->resize(out_->size() + n, 0); }
  size_t size() const { return out_->size(); }

 private:
  template <typename F>
  void Grow(size_t n, F f) {
    size_t at = out_->size();
    out_->resize(at + n);
    f(out_->data() + at);
  }
  Bytes* out_;
};

class ByteReader {
 public:
  explicit ByteReader(ByteSpan data) : data_(data) {}
  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool empty() const { return remaining() == 0; }
  ByteSpan rest() const { return data_.subspan(pos_); }

  bool U8(uint8_t* v) {
    return Fixed(1, [&](const uint8_t* p) { *v = *p; });
  }
  bool U16(uint16_t* v) {
    return Fixed(2, [&](const uint8_t* p) { *v = LoadBe16(p); });
  }
  bool U32(uint32_t* v) {
    return Fixed(4, [&](const uint8_t* p) { *v = LoadBe32(p); });
  }
  bool U64(uint64_t* v) {
    return Fixed(8, [&](const uint8_t* p) { *v = LoadBe64(p); });
  }
  // Points *out at the next n bytes (no copy).
  bool Span(size_t n, ByteSpan* out) {
    if (remaining() < n) return false;
    *out = data_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  bool Copy(uint8_t* dst, size_t n) {
    return Fixed(n, [&](const uint8_t* p) { std::memcpy(dst, p, n); });
  }
  bool Skip(size_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }

 private:
  template <typename F>
  bool Fixed(size_t n, F f) {
    if (remaining() < n) return false;
    f(data_.data() + pos_);
    pos_ += n;
    return true;
  }
  ByteSpan data_;
  size_t pos_ = 0;
};

}  // namespace kvcs

#endif  // KVCS_COMMON_BYTES_H_
