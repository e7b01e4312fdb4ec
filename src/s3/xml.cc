#include "s3/xml.h"

#include "common/strings.h"
#include "s3/s3_error.h"

namespace kvcs::s3 {
namespace {

Status Malformed(std::string why) {
  return S3Status(S3Error::kMalformedXML,
                  "The XML you provided was not well-formed or did not validate: " + why);
}

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Result<XmlElement> Document() {
    if (s_.size() > kMaxXmlBytes) return Malformed("document too large");
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 BOM
    KVCS_RETURN_IF_ERROR(Misc());
    if (!Peek('<')) return Malformed("expected the root element");
    XmlElement root;
    KVCS_RETURN_IF_ERROR(Element(&root, 1));
    KVCS_RETURN_IF_ERROR(Misc());
    if (pos_ != s_.size()) return Malformed("content after the root element");
    return root;
  }

 private:
  bool Peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  bool StartsWith(std::string_view p) const { return s_.substr(pos_, p.size()) == p; }
  void SkipSpace() {
    while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
  }

  // Whitespace, comments and processing instructions (including the XML declaration).
  Status Misc() {
    for (;;) {
      SkipSpace();
      if (StartsWith("<!--")) {
        KVCS_RETURN_IF_ERROR(SkipPast("-->", 4));
      } else if (StartsWith("<?")) {
        KVCS_RETURN_IF_ERROR(SkipPast("?>", 2));
      } else if (StartsWith("<!")) {
        return Malformed("DOCTYPE and declarations are not accepted");
      } else {
        return Status::Ok();
      }
    }
  }

  Status SkipPast(std::string_view end, size_t skip_first) {
    size_t p = s_.find(end, pos_ + skip_first);
    if (p == std::string_view::npos) return Malformed("unterminated comment or instruction");
    pos_ = p + end.size();
    return Status::Ok();
  }

  Result<std::string> Name() {
    if (pos_ >= s_.size() || !IsNameStart(s_[pos_])) return Malformed("expected a name");
    size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  static std::string LocalName(const std::string& qname) {
    size_t colon = qname.rfind(':');
    return colon == std::string::npos ? qname : qname.substr(colon + 1);
  }

  // Decodes character data up to (not including) `stop`, appending to *out.
  Status Text(std::string* out, bool attribute, char quote) {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (attribute ? c == quote : c == '<') return Status::Ok();
      if (attribute && c == '<') return Malformed("'<' in attribute value");
      if (c != '&') {
        out->push_back(c);
        ++pos_;
        continue;
      }
      size_t semi = s_.find(';', pos_);
      if (semi == std::string_view::npos || semi - pos_ > 12) return Malformed("bad entity");
      std::string_view ent = s_.substr(pos_ + 1, semi - pos_ - 1);
      pos_ = semi + 1;
      if (ent == "lt")
        out->push_back('<');
      else if (ent == "gt")
        out->push_back('>');
      else if (ent == "amp")
        out->push_back('&');
      else if (ent == "quot")
        out->push_back('"');
      else if (ent == "apos")
        out->push_back('\'');
      else if (ent.size() >= 2 && ent[0] == '#') {
        bool hex = ent[1] == 'x';
        std::string_view digits = ent.substr(hex ? 2 : 1);
        if (digits.empty() || digits.size() > 8) return Malformed("bad character reference");
        uint32_t cp = 0;
        for (char d : digits) {
          int v = -1;
          if (d >= '0' && d <= '9')
            v = d - '0';
          else if (hex && d >= 'a' && d <= 'f')
            v = d - 'a' + 10;
          else if (hex && d >= 'A' && d <= 'F')
            v = d - 'A' + 10;
          if (v < 0) return Malformed("bad character reference");
          cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
        }
        if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return Malformed("character reference out of range");
        }
        AppendUtf8(cp, out);
      } else {
        return Malformed("unknown entity");
      }
    }
    return Malformed("unexpected end of document");
  }

  Status Element(XmlElement* e, int depth) {
    if (depth > kMaxXmlDepth) return Malformed("nesting too deep");
    if (++elements_ > kMaxXmlElements) return Malformed("too many elements");
    ++pos_;  // '<'
    KVCS_ASSIGN_OR_RETURN(std::string qname, Name());
    e->name = LocalName(qname);
    for (;;) {  // attributes
      size_t before = pos_;
      SkipSpace();
      if (StartsWith("/>")) {
        pos_ += 2;
        return Status::Ok();
      }
      if (Peek('>')) {
        ++pos_;
        break;
      }
      if (pos_ == before) return Malformed("expected whitespace before an attribute");
      KVCS_ASSIGN_OR_RETURN(std::string attr, Name());
      (void)attr;
      SkipSpace();
      if (!Peek('=')) return Malformed("expected '=' after attribute name");
      ++pos_;
      SkipSpace();
      if (!Peek('"') && !Peek('\'')) return Malformed("attribute value must be quoted");
      char q = s_[pos_++];
      std::string ignored;
      KVCS_RETURN_IF_ERROR(Text(&ignored, true, q));
      ++pos_;  // closing quote
    }
    for (;;) {  // content
      if (pos_ >= s_.size()) return Malformed("unterminated element <" + qname + ">");
      if (StartsWith("</")) {
        pos_ += 2;
        KVCS_ASSIGN_OR_RETURN(std::string close, Name());
        SkipSpace();
        if (close != qname || !Peek('>')) return Malformed("mismatched </" + close + ">");
        ++pos_;
        return Status::Ok();
      }
      if (StartsWith("<!--")) {
        KVCS_RETURN_IF_ERROR(SkipPast("-->", 4));
      } else if (StartsWith("<![CDATA[")) {
        size_t end = s_.find("]]>", pos_ + 9);
        if (end == std::string_view::npos) return Malformed("unterminated CDATA");
        e->text.append(s_.substr(pos_ + 9, end - pos_ - 9));
        pos_ = end + 3;
      } else if (StartsWith("<?")) {
        KVCS_RETURN_IF_ERROR(SkipPast("?>", 2));
      } else if (StartsWith("<!")) {
        return Malformed("declarations are not accepted");
      } else if (Peek('<')) {
        e->children.emplace_back();
        KVCS_RETURN_IF_ERROR(Element(&e->children.back(), depth + 1));
      } else {
        KVCS_RETURN_IF_ERROR(Text(&e->text, false, 0));
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  size_t elements_ = 0;
};

std::string_view TrimSpace(std::string_view s) { return Trim(s, kXmlWhitespace); }

}  // namespace

const XmlElement* XmlElement::Child(std::string_view child_name) const {
  for (const XmlElement& c : children) {
    if (c.name == child_name) return &c;
  }
  return nullptr;
}

Result<XmlElement> ParseXml(std::string_view document) { return Parser(document).Document(); }

Result<DeleteRequest> ParseDeleteRequest(std::string_view document) {
  KVCS_ASSIGN_OR_RETURN(XmlElement root, ParseXml(document));
  if (root.name != "Delete") return Malformed("root element must be <Delete>");
  DeleteRequest out;
  for (const XmlElement& c : root.children) {
    if (c.name == "Quiet") {
      std::string_view v = TrimSpace(c.text);
      if (v != "true" && v != "false") return Malformed("<Quiet> must be true or false");
      out.quiet = v == "true";
    } else if (c.name == "Object") {
      const XmlElement* key = c.Child("Key");
      if (!key) return Malformed("<Object> without <Key>");
      if (out.keys.size() >= static_cast<size_t>(store::kMaxDeleteKeys)) {
        return Malformed("more than 1000 objects");
      }
      out.keys.push_back(key->text);
    }
  }
  if (out.keys.empty()) return Malformed("no <Object> elements");
  return out;
}

Result<std::vector<store::CompletePart>> ParseCompleteMultipartUpload(std::string_view document) {
  KVCS_ASSIGN_OR_RETURN(XmlElement root, ParseXml(document));
  if (root.name != "CompleteMultipartUpload") {
    return Malformed("root element must be <CompleteMultipartUpload>");
  }
  std::vector<store::CompletePart> out;
  for (const XmlElement& c : root.children) {
    if (c.name != "Part") continue;
    const XmlElement* num = c.Child("PartNumber");
    const XmlElement* etag = c.Child("ETag");
    if (!num || !etag) return Malformed("<Part> needs <PartNumber> and <ETag>");
    std::string_view n = TrimSpace(num->text);
    if (n.empty() || n.size() > 5) return Malformed("bad <PartNumber>");
    int v = 0;
    for (char d : n) {
      if (d < '0' || d > '9') return Malformed("bad <PartNumber>");
      v = v * 10 + (d - '0');
    }
    if (out.size() >= static_cast<size_t>(store::kMaxPartNumber)) {
      return Malformed("more than 10000 parts");
    }
    out.push_back({v, std::string(TrimSpace(etag->text))});
  }
  if (out.empty()) return Malformed("no <Part> elements");
  return out;
}

}  // namespace kvcs::s3
