// SHA-256 and HMAC-SHA-256 over OpenSSL 3 (EVP). The only place kvcs hashes bytes.
//
// Sha256 is incremental; HmacSha256Key precomputes the inner and outer pad states once so that
// each MAC costs only the compressions of its message (the Block Key chain's hot path).
// Objects are not thread-safe; distinct objects may be used from different threads.
#ifndef KVCS_COMMON_CRYPTO_H_
#define KVCS_COMMON_CRYPTO_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "common/bytes.h"

namespace kvcs {

inline constexpr size_t kDigestSize = 32;
using Digest = std::array<uint8_t, kDigestSize>;

inline ByteSpan AsBytes(const Digest& d) { return {d.data(), d.size()}; }

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;

  Sha256& Update(ByteSpan data);
  Sha256& Update(std::string_view s) { return Update(AsBytes(s)); }
  // Returns the digest and resets the object for reuse.
  Digest Finish();

  static Digest Hash(ByteSpan data);
  static Digest Hash(std::string_view s) { return Hash(AsBytes(s)); }

 private:
  friend class HmacSha256Key;
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// A keyed HMAC-SHA-256 with the pad states absorbed once.
class HmacSha256Key {
 public:
  explicit HmacSha256Key(ByteSpan key);
  ~HmacSha256Key();
  HmacSha256Key(HmacSha256Key&&) noexcept;
  HmacSha256Key(const HmacSha256Key&) = delete;

  // One MAC over the concatenation of `parts`.
  Digest Mac(std::initializer_list<ByteSpan> parts) const;
  Digest Mac(ByteSpan data) const { return Mac({data}); }

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Digest HmacSha256(ByteSpan key, ByteSpan data);

// Constant-time equality for secrets and MACs.
bool ConstantTimeEqual(ByteSpan a, ByteSpan b);

// Cryptographically secure random bytes (OpenSSL RAND_bytes); aborts only if the OS RNG fails.
void RandomBytes(uint8_t* out, size_t n);

}  // namespace kvcs

#endif  // KVCS_COMMON_CRYPTO_H_
