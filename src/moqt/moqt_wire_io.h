// WireWriter and WireReader: the primitive field I/O every MOQT encoder/decoder is built from.
//
// WireWriter appends vi64 (optionally non-minimal, for tests), bytes and fixed-width fields to a
// Bytes buffer it does not own (the buffer must outlive it). WireReader reads from a span it does
// not own and never past its end; every Read returns false when too few bytes remain ("need
// more"), leaving the position unchanged. Neither is thread-safe.
#ifndef KVCS_MOQT_MOQT_WIRE_IO_H_
#define KVCS_MOQT_MOQT_WIRE_IO_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_varint.h"

namespace kvcs::moqt {

class WireWriter {
 public:
  // varint_extra_bytes > 0 writes each vi64 that many bytes longer than minimal (capped at 9).
  explicit WireWriter(Bytes* out, size_t varint_extra_bytes = 0)
      : out_(out), extra_(varint_extra_bytes) {}

  void Varint(uint64_t v) { AppendVarint(out_, v, extra_ ? VarintLength(v) + extra_ : 0); }
  void U8(uint8_t v) { out_->push_back(v); }
  void U16(uint16_t v) {
    out_->push_back(static_cast<uint8_t>(v >> 8));
    out_->push_back(static_cast<uint8_t>(v));
  }
  void Raw(ByteSpan b) { out_->insert(out_->end(), b.begin(), b.end()); }
  void Raw(std::string_view s) { Raw(AsBytes(s)); }
  // Length (vi64) + bytes.
  void LengthPrefixed(std::string_view s) {
    Varint(s.size());
    Raw(s);
  }
  void LengthPrefixed(ByteSpan b) {
    Varint(b.size());
    Raw(b);
  }
  size_t size() const { return out_->size(); }
  size_t varint_extra_bytes() const { return extra_; }
  Bytes* buffer() { return out_; }

 private:
  Bytes* out_;
  size_t extra_;
};

class WireReader {
 public:
  explicit WireReader(ByteSpan data) : data_(data) {}

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool empty() const { return pos_ == data_.size(); }
  ByteSpan rest() const { return data_.subspan(pos_); }

  bool Varint(uint64_t* v) {
    size_t n = DecodeVarint(rest(), v);
    pos_ += n;
    return n != 0;
  }
  bool U8(uint8_t* v) {
    if (remaining() < 1) return false;
    *v = data_[pos_++];
    return true;
  }
  bool U16(uint16_t* v) {
    if (remaining() < 2) return false;
    *v = static_cast<uint16_t>(data_[pos_] << 8 | data_[pos_ + 1]);
    pos_ += 2;
    return true;
  }
  bool Span(size_t n, ByteSpan* out) {
    if (remaining() < n) return false;
    *out = data_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  bool String(size_t n, std::string* out) {
    ByteSpan s;
    if (!Span(n, &s)) return false;
    out->assign(reinterpret_cast<const char*>(s.data()), s.size());
    return true;
  }
  bool Skip(size_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }

 private:
  ByteSpan data_;
  size_t pos_ = 0;
};

// The "need more bytes" Status every decoder returns when its input is a truncated prefix.
inline Status Truncated() { return NeedMoreData("moqt: need more bytes"); }

}  // namespace kvcs::moqt

// Returns Truncated() from the enclosing function when a WireReader read fails.
#define MOQT_READ(expr)                            \
  do {                                             \
    if (!(expr)) return ::kvcs::moqt::Truncated(); \
  } while (0)

#endif  // KVCS_MOQT_MOQT_WIRE_IO_H_
