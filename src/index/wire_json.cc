// The Index Service's strict JSON reader. See wire_json.h.
#include "index/wire_json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <unordered_set>

#include "common/strict_json.h"

namespace kvcs::index {

class WireJson::Parser {
 public:
  Parser(std::string_view in, int max_depth, WireJson* out)
      : p_(in.data()), end_(in.data() + in.size()), max_depth_(max_depth), out_(*out) {}

  Status Run() {
    // nlohmann skips a UTF-8 byte order mark (and refuses a partial one).
    if (end_ - p_ >= 1 && uint8_t(*p_) == 0xEF) {
      if (end_ - p_ < 3 || uint8_t(p_[1]) != 0xBB || uint8_t(p_[2]) != 0xBF) return Syntax();
      p_ += 3;
    }
    SkipSpace();
    KVCS_RETURN_IF_ERROR(Value(0, 0, 0));
    SkipSpace();
    if (p_ != end_) return Syntax();
    return Status::Ok();
  }

 private:
  static Status Syntax() {
    return InvalidArgument("not a JSON document", static_cast<int>(JsonError::kSyntax));
  }

  void SkipSpace() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  NodeId Push(Kind k, uint32_t key_offset, uint32_t key_size) {
    Node n;
    n.kind = k;
    n.key_offset = key_offset;
    n.key_size = key_size;
    out_.nodes_.push_back(n);
    return NodeId(out_.nodes_.size() - 1);
  }
  void Close(NodeId n) { out_.nodes_[n].end = NodeId(out_.nodes_.size()); }

  // One value; `open` containers enclose it; its member name (inside an object) is given.
  Status Value(int open, uint32_t key_offset, uint32_t key_size) {
    if (p_ == end_) return Syntax();
    switch (*p_) {
      case '{':
      case '[': {
        if (open >= max_depth_) {
          return InvalidArgument(
              "JSON nested deeper than " + std::to_string(max_depth_) + " levels",
              static_cast<int>(JsonError::kTooDeep));
        }
        return *p_ == '{' ? Object(open + 1, key_offset, key_size)
                          : Array(open + 1, key_offset, key_size);
      }
      case '"': {
        ++p_;
        uint32_t offset = 0, size = 0;
        KVCS_RETURN_IF_ERROR(String(&offset, &size));
        NodeId n = Push(Kind::kString, key_offset, key_size);
        out_.nodes_[n].offset = offset;
        out_.nodes_[n].size = size;
        Close(n);
        return Status::Ok();
      }
      case 't':
        return Literal("true", Kind::kBool, key_offset, key_size);
      case 'f':
        return Literal("false", Kind::kBool, key_offset, key_size);
      case 'n':
        return Literal("null", Kind::kNull, key_offset, key_size);
      default:
        return Number(key_offset, key_size);
    }
  }

  Status Literal(std::string_view word, Kind k, uint32_t key_offset, uint32_t key_size) {
    if (size_t(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return Syntax();
    }
    p_ += word.size();
    Close(Push(k, key_offset, key_size));
    return Status::Ok();
  }

  Status Object(int open, uint32_t key_offset, uint32_t key_size) {
    ++p_;  // '{'
    NodeId obj = Push(Kind::kObject, key_offset, key_size);
    uint32_t count = 0;
    // Member names seen, once an object is too large for a linear scan (only hostile input).
    std::unique_ptr<std::unordered_set<std::string>> big;
    constexpr uint32_t kLinear = 32;
    SkipSpace();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      Close(obj);
      return Status::Ok();
    }
    for (;;) {
      SkipSpace();
      if (p_ == end_ || *p_ != '"') return Syntax();
      ++p_;
      uint32_t ko = 0, ks = 0;
      KVCS_RETURN_IF_ERROR(String(&ko, &ks));
      std::string_view name = std::string_view(out_.text_).substr(ko, ks);
      bool dup = false;
      if (count < kLinear) {
        NodeId c = obj + 1;
        for (uint32_t i = 0; i < count && !dup; ++i, c = out_.nodes_[c].end) {
          dup = out_.key(c) == name;
        }
      } else {
        if (!big) {
          big = std::make_unique<std::unordered_set<std::string>>();
          NodeId c = obj + 1;
          for (uint32_t i = 0; i < count; ++i, c = out_.nodes_[c].end) {
            big->emplace(out_.key(c));
          }
        }
        dup = !big->emplace(name).second;
      }
      if (dup) {
        return InvalidArgument("duplicate member \"" + std::string(name) + "\"",
                               static_cast<int>(JsonError::kDuplicateKey));
      }
      SkipSpace();
      if (p_ == end_ || *p_ != ':') return Syntax();
      ++p_;
      SkipSpace();
      KVCS_RETURN_IF_ERROR(Value(open, ko, ks));
      ++count;
      KVCS_ASSIGN_OR_RETURN(bool more, NextOrClose('}'));
      if (!more) break;
    }
    out_.nodes_[obj].size = count;
    Close(obj);
    return Status::Ok();
  }

  // After a container's element: ',' (another follows: true) or `close` (it ends: false).
  Result<bool> NextOrClose(char close) {
    SkipSpace();
    if (p_ == end_) return Syntax();
    const char c = *p_++;
    if (c == ',') return true;
    if (c != close) return Syntax();
    return false;
  }

  Status Array(int open, uint32_t key_offset, uint32_t key_size) {
    ++p_;  // '['
    NodeId arr = Push(Kind::kArray, key_offset, key_size);
    uint32_t count = 0;
    SkipSpace();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      Close(arr);
      return Status::Ok();
    }
    for (;;) {
      SkipSpace();
      KVCS_RETURN_IF_ERROR(Value(open, 0, 0));
      ++count;
      KVCS_ASSIGN_OR_RETURN(bool more, NextOrClose(']'));
      if (!more) break;
    }
    out_.nodes_[arr].size = count;
    Close(arr);
    return Status::Ok();
  }

  static int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits after "\u"; -1 if not.
  int32_t Hex4() {
    if (end_ - p_ < 4) return -1;
    int32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      int d = HexDigit(p_[i]);
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    p_ += 4;
    return v;
  }

  void AppendUtf8(uint32_t cp) {
    std::string& t = out_.text_;
    if (cp < 0x80) {
      t += char(cp);
    } else if (cp < 0x800) {
      t += char(0xC0 | (cp >> 6));
      t += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      t += char(0xE0 | (cp >> 12));
      t += char(0x80 | ((cp >> 6) & 0x3F));
      t += char(0x80 | (cp & 0x3F));
    } else {
      t += char(0xF0 | (cp >> 18));
      t += char(0x80 | ((cp >> 12) & 0x3F));
      t += char(0x80 | ((cp >> 6) & 0x3F));
      t += char(0x80 | (cp & 0x3F));
    }
  }

  // After the opening quote: decodes into text_ up to the closing quote.
  Status String(uint32_t* offset, uint32_t* size) {
    std::string& t = out_.text_;
    *offset = uint32_t(t.size());
    for (;;) {
      const char* run = p_;
      while (p_ != end_) {
        uint8_t c = uint8_t(*p_);
        if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
        ++p_;
      }
      t.append(run, size_t(p_ - run));
      if (p_ == end_) return Syntax();
      uint8_t c = uint8_t(*p_);
      if (c == '"') {
        ++p_;
        *size = uint32_t(t.size() - *offset);
        return Status::Ok();
      }
      if (c < 0x20) return Syntax();
      if (c == '\\') {
        ++p_;
        if (p_ == end_) return Syntax();
        char e = *p_++;
        switch (e) {
          case '"':
          case '\\':
          case '/':
            t += e;
            break;
          case 'b':
            t += '\b';
            break;
          case 'f':
            t += '\f';
            break;
          case 'n':
            t += '\n';
            break;
          case 'r':
            t += '\r';
            break;
          case 't':
            t += '\t';
            break;
          case 'u': {
            int32_t u = Hex4();
            if (u < 0) return Syntax();
            uint32_t cp = uint32_t(u);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return Syntax();
              p_ += 2;
              int32_t lo = Hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) return Syntax();
              cp = 0x10000 + ((cp - 0xD800) << 10) + (uint32_t(lo) - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              return Syntax();
            }
            AppendUtf8(cp);
            break;
          }
          default:
            return Syntax();
        }
        continue;
      }
      // A multi-byte UTF-8 sequence, checked as RFC 3629 (and nlohmann) define it.
      uint8_t lo = 0x80, hi = 0xBF;
      int more = 0;
      if (c >= 0xC2 && c <= 0xDF) {
        more = 1;
      } else if (c == 0xE0) {
        more = 2, lo = 0xA0;
      } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
        more = 2;
      } else if (c == 0xED) {
        more = 2, hi = 0x9F;
      } else if (c == 0xF0) {
        more = 3, lo = 0x90;
      } else if (c >= 0xF1 && c <= 0xF3) {
        more = 3;
      } else if (c == 0xF4) {
        more = 3, hi = 0x8F;
      } else {
        return Syntax();
      }
      if (end_ - p_ <= more) return Syntax();
      for (int i = 1; i <= more; ++i) {
        uint8_t b = uint8_t(p_[i]);
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return Syntax();
      }
      t.append(p_, size_t(more + 1));
      p_ += more + 1;
    }
  }

  Status Number(uint32_t key_offset, uint32_t key_size) {
    const char* start = p_;
    bool negative = false, integer = true;
    if (*p_ == '-') {
      negative = true;
      ++p_;
    }
    auto digit = [&] { return p_ != end_ && *p_ >= '0' && *p_ <= '9'; };
    if (!digit()) return Syntax();
    if (*p_ == '0') {
      ++p_;
    } else {
      while (digit()) ++p_;
    }
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (!digit()) return Syntax();
      while (digit()) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digit()) return Syntax();
      while (digit()) ++p_;
    }
    NodeId n = Push(Kind::kFloat, key_offset, key_size);
    if (integer) {
      // Digits only: an integer that fits 64 bits (unsigned, or signed when negative).
      const char* d = start + (negative ? 1 : 0);
      uint64_t v = 0;
      bool fits = true;
      for (const char* q = d; q != p_; ++q) {
        uint64_t digit_value = uint64_t(*q - '0');
        if (v > (UINT64_MAX - digit_value) / 10) {
          fits = false;
          break;
        }
        v = v * 10 + digit_value;
      }
      if (fits && !negative) {
        out_.nodes_[n].kind = Kind::kUnsigned;
        out_.nodes_[n].number = v;
      } else if (fits && v <= uint64_t(INT64_MAX) + 1) {
        out_.nodes_[n].kind = Kind::kNegative;
      }
    }
    if (out_.nodes_[n].kind == Kind::kFloat) {
      // As nlohmann: a float (or an integer too large for 64 bits) that overflows a double is
      // a syntax error.
      std::string token(start, size_t(p_ - start));
      errno = 0;
      double x = std::strtod(token.c_str(), nullptr);
      if (!std::isfinite(x)) return Syntax();
    }
    Close(n);
    return Status::Ok();
  }

  const char* p_;
  const char* const end_;
  const int max_depth_;
  WireJson& out_;
};

Result<WireJson> WireJson::Parse(std::string_view text, size_t max_bytes, int max_depth) {
  if (text.size() > max_bytes) {
    return Status(Code::kResourceExhausted,
                  "JSON of " + std::to_string(text.size()) + " bytes is above the limit of " +
                      std::to_string(max_bytes),
                  static_cast<int>(JsonError::kTooLarge));
  }
  WireJson j;
  j.nodes_.reserve(16 + text.size() / 48);
  j.text_.reserve(text.size());
  KVCS_RETURN_IF_ERROR(Parser(text, max_depth, &j).Run());
  return j;
}

WireJson::NodeId WireJson::member(NodeId object, std::string_view name) const {
  NodeId c = first_child(object);
  for (uint32_t i = 0; i < size(object); ++i, c = next(c)) {
    if (key(c) == name) return c;
  }
  return npos;
}

}  // namespace kvcs::index
