// KVSP v1 as defined by the project: the Block Key chain.
//
// OpenSSL's EVP layer costs several hundred nanoseconds per HMAC in context copies and dispatch,
// more than the three SHA-256 compressions a 16-token block needs. We therefore use the low-level
// SHA256_CTX API (deprecated in OpenSSL 3 but present, and backed by the same SHA-NI assembly):
// the pad states are plain structs copied by value per block. For text blocks of up to
// kMaxPrepadTokens tokens the inner message is kept fully padded in a per-chain buffer (only
// K_{i-1} and the token ids change per block) and fed to the compression function directly,
// which skips the buffering and padding logic of SHA256_Update/Final.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "kvsp/block_keys.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstring>
#include <string>

namespace kvcs::kvsp {
namespace {

Status Err(BlockKeyError e, std::string msg) {
  return InvalidArgument("block keys: " + std::move(msg), static_cast<int>(e));
}

// Feeds bytes into a SHA256_CTX through a stack buffer, so that one block is usually one Update.
class Feeder {
 public:
  explicit Feeder(SHA256_CTX* c) : c_(c) {}
  void U32(uint32_t v) {
    if (n_ + 4 > sizeof buf_) Flush();
    v = __builtin_bswap32(v);
    std::memcpy(buf_ + n_, &v, 4);
    n_ += 4;
  }
  void Raw(const uint8_t* p, size_t len) {
    if (n_ + len > sizeof buf_) Flush();
    if (len > sizeof buf_) {
      SHA256_Update(c_, p, len);
      return;
    }
    std::memcpy(buf_ + n_, p, len);
    n_ += len;
  }
  void Tokens(const uint32_t* t, size_t count) {
    while (count > 0) {
      if (n_ + 4 > sizeof buf_) Flush();
      size_t room = (sizeof buf_ - n_) / 4;
      size_t k = count < room ? count : room;
      uint8_t* o = buf_ + n_;
      for (size_t i = 0; i < k; ++i) {
        uint32_t v = __builtin_bswap32(t[i]);
        std::memcpy(o + 4 * i, &v, 4);
      }
      n_ += 4 * k;
      t += k;
      count -= k;
    }
  }
  void Flush() {
    if (n_) SHA256_Update(c_, buf_, n_);
    n_ = 0;
  }

 private:
  SHA256_CTX* c_;
  size_t n_ = 0;
  // 1 KiB holds a whole B = 16..240 block message; larger blocks are fed in pieces.
  alignas(16) uint8_t buf_[1024];
};

}  // namespace

// The pre-padded inner message (K_{i-1} || u32(B) || tokens || u32(0) || SHA-256 padding) fits
// 1 KiB for B <= 240; larger blocks take the general path.
constexpr uint32_t kMaxPrepadTokens = 240;
constexpr size_t kPrepadBytes = 1024;

struct BlockKeyChain::Pads {
  SHA256_CTX inner;         // state after absorbing K' ^ ipad
  SHA256_CTX outer;         // state after absorbing K' ^ opad
  size_t inner_blocks = 0;  // 64-byte blocks of the padded inner message (0: general path)
  alignas(64) uint8_t msg[kPrepadBytes];  // padded inner message
  alignas(64) uint8_t outer_msg[64];      // inner digest || padding for 64 + 32 bytes
  ~Pads() { OPENSSL_cleanse(this, sizeof *this); }
};

namespace {

void StoreBe32Raw(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}

// The SHA-256 padding of a message of `len` bytes that follows one absorbed 64-byte pad block.
void Pad(uint8_t* msg, size_t len, size_t padded) {
  std::memset(msg + len, 0, padded - len);
  msg[len] = 0x80;
  uint64_t bits = (64 + uint64_t{len}) * 8;
  for (int i = 0; i < 8; ++i) msg[padded - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
}

// Writes the chaining state of `c` as the big-endian digest.
void StateDigest(const SHA256_CTX& c, uint8_t* out) {
  for (int i = 0; i < 8; ++i) StoreBe32Raw(out + 4 * i, c.h[i]);
}

}  // namespace

BlockKeyChain::BlockKeyChain(const Digest& chain_key, uint32_t block_tokens)
    : pads_(std::make_unique<Pads>()), block_tokens_(block_tokens) {
  constexpr size_t kBlock = 64;  // SHA-256 block size; the 32-byte key is zero-padded to it
  uint8_t ipad[kBlock], opad[kBlock];
  for (size_t i = 0; i < kBlock; ++i) {
    uint8_t k = i < chain_key.size() ? chain_key[i] : 0;
    ipad[i] = k ^ 0x36;
    opad[i] = k ^ 0x5c;
  }
  SHA256_Init(&pads_->inner);
  SHA256_Update(&pads_->inner, ipad, kBlock);
  SHA256_Init(&pads_->outer);
  SHA256_Update(&pads_->outer, opad, kBlock);
  if (block_tokens >= 1 && block_tokens <= kMaxPrepadTokens) {
    Pads& p = *pads_;
    const size_t len = 32 + 4 + 4 * size_t{block_tokens} + 4;
    const size_t padded = (len + 9 + 63) / 64 * 64;
    p.inner_blocks = padded / 64;
    StoreBe32Raw(p.msg + 32, block_tokens);
    StoreBe32Raw(p.msg + 36 + 4 * size_t{block_tokens}, 0);  // no extras
    Pad(p.msg, len, padded);
    Pad(p.outer_msg, 32, 64);
  }
  OPENSSL_cleanse(ipad, sizeof ipad);
  OPENSSL_cleanse(opad, sizeof opad);
}
BlockKeyChain::~BlockKeyChain() = default;
BlockKeyChain::BlockKeyChain(BlockKeyChain&&) noexcept = default;
BlockKeyChain& BlockKeyChain::operator=(BlockKeyChain&&) noexcept = default;

namespace {

// HMAC's outer hash: out = SHA-256(outer pad || SHA-256(inner pad || message)), `inner` holding
// the inner hash fed with the whole message (the slow path of both Next variants).
void FinishHmac(SHA256_CTX* inner, const SHA256_CTX& outer_pad, uint8_t out[32]) {
  uint8_t inner_digest[32];
  SHA256_Final(inner_digest, inner);
  SHA256_CTX c = outer_pad;
  SHA256_Update(&c, inner_digest, sizeof inner_digest);
  SHA256_Final(out, &c);
}

}  // namespace

void BlockKeyChain::Reset(const Digest& k, uint64_t index) {
  last_ = k;
  index_ = index;
}

const Digest& BlockKeyChain::NextText(std::span<const uint32_t> tokens) {
  Pads& p = *pads_;
  if (p.inner_blocks != 0) {
    std::memcpy(p.msg, last_.data(), 32);
    uint8_t* o = p.msg + 36;
    for (size_t i = 0; i < tokens.size(); ++i) StoreBe32Raw(o + 4 * i, tokens[i]);
    SHA256_CTX c = p.inner;
    for (size_t b = 0; b < p.inner_blocks; ++b) SHA256_Transform(&c, p.msg + 64 * b);
    StateDigest(c, p.outer_msg);
    c = p.outer;
    SHA256_Transform(&c, p.outer_msg);
    StateDigest(c, last_.data());
    ++index_;
    return last_;
  }
  SHA256_CTX c = pads_->inner;
  {
    Feeder f(&c);
    f.Raw(last_.data(), last_.size());
    f.U32(block_tokens_);
    f.Tokens(tokens.data(), tokens.size());
    f.U32(0);
    f.Flush();
  }
  FinishHmac(&c, pads_->outer, last_.data());
  ++index_;
  return last_;
}

Result<Digest> BlockKeyChain::Next(std::span<const uint32_t> tokens,
                                   std::span<const MmItem> extras) {
  if (block_tokens_ == 0) return Err(BlockKeyError::kZeroBlockTokens, "block_tokens is 0");
  if (tokens.size() != block_tokens_) {
    return Err(BlockKeyError::kWrongBlockSize, "block of " + std::to_string(tokens.size()) +
                                                   " tokens, expected " +
                                                   std::to_string(block_tokens_));
  }
  if (extras.empty()) return NextText(tokens);
  if (extras.size() > kMaxMmItemsPerBlock) {
    return Err(BlockKeyError::kTooManyItems, std::to_string(extras.size()) +
                                                 " multimodal items in one block, at most " +
                                                 std::to_string(kMaxMmItemsPerBlock));
  }
  for (size_t i = 0; i < extras.size(); ++i) {
    if (extras[i].offset >= block_tokens_) {
      return Err(BlockKeyError::kItemOffsetRange,
                 "item offset " + std::to_string(extras[i].offset) + " outside the block");
    }
    if (i > 0 && extras[i].offset < extras[i - 1].offset) {
      return Err(BlockKeyError::kItemOrder, "multimodal items not in offset order");
    }
  }
  SHA256_CTX c = pads_->inner;
  {
    Feeder f(&c);
    f.Raw(last_.data(), last_.size());
    f.U32(block_tokens_);
    f.Tokens(tokens.data(), tokens.size());
    f.U32(static_cast<uint32_t>(extras.size() * (4 + kDigestSize)));
    for (const MmItem& it : extras) {
      f.U32(it.offset);
      f.Raw(it.digest.data(), it.digest.size());
    }
    f.Flush();
  }
  FinishHmac(&c, pads_->outer, last_.data());
  ++index_;
  return last_;
}

size_t BlockKeyChain::Extend(std::span<const uint32_t> tokens, std::vector<Digest>* out) {
  if (block_tokens_ == 0) return tokens.size();
  size_t n = tokens.size() / block_tokens_;
  out->reserve(out->size() + n);
  for (size_t i = 0; i < n; ++i) {
    out->push_back(NextText(tokens.subspan(i * block_tokens_, block_tokens_)));
  }
  return tokens.size() - n * block_tokens_;
}

std::vector<Digest> BlockKeys(const Digest& chain_key, uint32_t block_tokens,
                              std::span<const uint32_t> tokens, size_t* tail_tokens) {
  std::vector<Digest> keys;
  BlockKeyChain chain(chain_key, block_tokens);
  size_t tail = chain.Extend(tokens, &keys);
  if (tail_tokens) *tail_tokens = tail;
  return keys;
}

Result<std::vector<Digest>> BlockKeys(const Digest& chain_key, uint32_t block_tokens,
                                      std::span<const uint32_t> tokens,
                                      std::span<const std::vector<MmItem>> extras_per_block,
                                      size_t* tail_tokens) {
  if (block_tokens == 0) return Err(BlockKeyError::kZeroBlockTokens, "block_tokens is 0");
  size_t n = tokens.size() / block_tokens;
  if (extras_per_block.size() > n) {
    return Err(BlockKeyError::kExtrasMismatch, std::to_string(extras_per_block.size()) +
                                                   " extras for " + std::to_string(n) +
                                                   " full blocks");
  }
  BlockKeyChain chain(chain_key, block_tokens);
  std::vector<Digest> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto block = tokens.subspan(i * block_tokens, block_tokens);
    if (i < extras_per_block.size() && !extras_per_block[i].empty()) {
      KVCS_ASSIGN_OR_RETURN(Digest k, chain.Next(block, extras_per_block[i]));
      keys.push_back(k);
    } else {
      keys.push_back(chain.NextText(block));
    }
  }
  if (tail_tokens) *tail_tokens = tokens.size() - n * block_tokens;
  return keys;
}

Result<Digest> Anchor(const Digest& chain_key, uint32_t block_tokens,
                      std::span<const uint32_t> tokens) {
  if (block_tokens == 0) return Err(BlockKeyError::kZeroBlockTokens, "block_tokens is 0");
  if (tokens.size() < block_tokens) {
    return Err(BlockKeyError::kNoFullBlock, "anchor needs at least one full block of " +
                                                std::to_string(block_tokens) + " tokens");
  }
  BlockKeyChain chain(chain_key, block_tokens);
  size_t n = tokens.size() / block_tokens;
  for (size_t i = 0; i < n; ++i) chain.NextText(tokens.subspan(i * block_tokens, block_tokens));
  return chain.last();
}

}  // namespace kvcs::kvsp
