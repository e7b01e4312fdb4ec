#include "common/strings.h"

namespace kvcs {
namespace {

constexpr char LowerChar(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

}  // namespace

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = LowerChar(c);
  return out;
}

bool AsciiIEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerChar(a[i]) != LowerChar(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s, std::string_view chars) {
  size_t first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  size_t last = s.find_last_not_of(chars);
  return s.substr(first, last - first + 1);
}

}  // namespace kvcs
