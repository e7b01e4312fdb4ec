// WireJson: the strict JSON reader under the Index Service's messages (index_wire.h): one pass
// over the text into a flat tree (one vector of nodes in document order, decoded strings in one
// buffer), with the rules of ParseStrictJson (common/strict_json.h) — one document, nothing but
// whitespace after it, no member name twice in one object, at most `max_depth` nested arrays
// and objects, at most `max_bytes` of input — and nlohmann's lexical rules (RFC 8259; a leading
// UTF-8 BOM is skipped; strings must be valid UTF-8 and \u escapes valid UTF-16; integers that
// do not fit 64 bits, and any number with a fraction or an exponent, are floats). The first fault
// in document order is the error. It exists because a DOM of nlohmann objects (a std::map per
// object, a heap string per value) cost far more than the lookup it carried.
//
// Value type; the tree refers into nothing (strings are copied). Pure; thread-compatible.
#ifndef KVCS_INDEX_WIRE_JSON_H_
#define KVCS_INDEX_WIRE_JSON_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kvcs::index {

class WireJson {
 public:
  enum class Kind : uint8_t {
    kNull,
    kBool,
    kUnsigned,
    kNegative,
    kFloat,
    kString,
    kArray,
    kObject
  };
  using NodeId = uint32_t;

  // Errors: JsonError (common/strict_json.h) details: kTooLarge (Code::kResourceExhausted),
  // kSyntax, kDuplicateKey, kTooDeep (Code::kInvalidArgument).
  static Result<WireJson> Parse(std::string_view text, size_t max_bytes, int max_depth);

  NodeId root() const { return 0; }
  Kind kind(NodeId n) const { return nodes_[n].kind; }
  // Children of an array or object (members, in document order); strings: their length.
  uint32_t size(NodeId n) const { return nodes_[n].size; }
  uint64_t unsigned_value(NodeId n) const { return nodes_[n].number; }  // kUnsigned
  std::string_view string(NodeId n) const {                             // kString
    return std::string_view(text_).substr(nodes_[n].offset, nodes_[n].size);
  }
  // The member name of a node inside an object.
  std::string_view key(NodeId n) const {
    return std::string_view(text_).substr(nodes_[n].key_offset, nodes_[n].key_size);
  }
  // Children: for (NodeId c = first_child(n), i = 0; i < size(n); ++i, c = next(c)).
  NodeId first_child(NodeId n) const { return n + 1; }
  NodeId next(NodeId n) const { return nodes_[n].end; }
  // The member of an object named `name`, or npos.
  static constexpr NodeId npos = UINT32_MAX;
  NodeId member(NodeId object, std::string_view name) const;

 private:
  struct Node {
    Kind kind = Kind::kNull;
    uint32_t size = 0;
    uint32_t offset = 0;  // strings: into text_
    uint32_t key_offset = 0, key_size = 0;
    uint32_t end = 0;  // the node after this one's subtree
    uint64_t number = 0;
  };
  class Parser;

  std::vector<Node> nodes_;
  std::string text_;  // decoded strings and member names
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_WIRE_JSON_H_
