// ASCII string helpers that protocols need byte-exact (HTTP, SigV4, S3 XML, config files):
// lowercasing, case-insensitive comparison, trimming, strict decimal parsing. Locale-independent
// (std::tolower and std::isspace depend on the C locale; wire formats must not). Pure; thread-safe.
#ifndef KVCS_COMMON_STRINGS_H_
#define KVCS_COMMON_STRINGS_H_

#include <charconv>
#include <concepts>
#include <optional>
#include <string>
#include <string_view>

namespace kvcs {

// A-Z become a-z; every other byte (UTF-8 included) is kept.
std::string AsciiLower(std::string_view s);
// Case-insensitive ASCII equality.
bool AsciiIEquals(std::string_view a, std::string_view b);
// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view s);

// Characters Trim removes: HTTP's optional whitespace (SP, HTAB) by default; config files also
// drop a CR left by CRLF line ends.
inline constexpr std::string_view kHttpWhitespace = " \t";
inline constexpr std::string_view kLineWhitespace = " \t\r";
inline constexpr std::string_view kXmlWhitespace = " \t\r\n";
// Removes leading and trailing characters of `chars`.
std::string_view Trim(std::string_view s, std::string_view chars = kHttpWhitespace);

// Strict unsigned decimal: one or more digits 0-9 and nothing else (no sign, no spaces, no
// "0x", no trailing bytes), within T's range. nullopt otherwise. Leading zeros are accepted.
template <std::unsigned_integral T>
std::optional<T> ParseDecimal(std::string_view s) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace kvcs

#endif  // KVCS_COMMON_STRINGS_H_
