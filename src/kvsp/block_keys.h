// KVSP Block Keys and the Anchor Key (KVSP v1 as defined by the project, spec §3).
//
//   K_0 = 32 zero bytes
//   K_i = HMAC-SHA-256(chain_key, K_{i-1} || u32(B) || u32(tok[(i-1)B]) .. u32(tok[iB-1])
//                                 || u32(len(extra_i)) || extra_i)
// Integers are big-endian. len(extra_i) is the byte length of extra_i, which is, per multimodal
// item overlapping the block in order, u32(offset of the item within the block) || digest[32].
// Only full blocks are keyed; a shorter tail has no key. The Anchor Key of T tokens is K_n,
// n = floor(T/B) >= 1.
//
// BlockKeyChain is the hot path (one HMAC per block, no allocation): the HMAC pad states are
// absorbed once per chain and each block costs three SHA-256 compressions for B = 16.
// A BlockKeyChain is not thread-safe; distinct chains may be used from different threads. It
// holds a copy of the chain key material and must be treated as secret as the scope key.
#ifndef KVCS_KVSP_BLOCK_KEYS_H_
#define KVCS_KVSP_BLOCK_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::kvsp {

// One multimodal item overlapping a block: where it starts within the block, and its digest.
struct MmItem {
  uint32_t offset = 0;
  Digest digest{};
};

// A block of B tokens overlaps at most B items that start in it plus the items continuing into
// it; 4096 bounds the extra bytes per block (147 KiB) and is far above any real prompt.
inline constexpr size_t kMaxMmItemsPerBlock = 4096;

enum class BlockKeyError {
  kNone = 0,
  kWrongBlockSize,   // Next() got a token span whose length is not B
  kZeroBlockTokens,  // B = 0
  kTooManyItems,     // more than kMaxMmItemsPerBlock extras
  kItemOffsetRange,  // an item offset >= B
  kItemOrder,        // item offsets decrease
  kNoFullBlock,      // Anchor() of fewer than B tokens
  kExtrasMismatch,   // more per-block extras than full blocks
};

class BlockKeyChain {
 public:
  // REQUIRES: block_tokens >= 1 (a chain with B = 0 keys nothing; Next fails).
  BlockKeyChain(const Digest& chain_key, uint32_t block_tokens);
  ~BlockKeyChain();
  BlockKeyChain(BlockKeyChain&&) noexcept;
  BlockKeyChain& operator=(BlockKeyChain&&) noexcept;
  BlockKeyChain(const BlockKeyChain&) = delete;

  uint32_t block_tokens() const { return block_tokens_; }
  // i of the last key computed (0 before any block: last() is K_0).
  uint64_t index() const { return index_; }
  const Digest& last() const { return last_; }

  // Extends the chain by one block; checks the block size and the extras.
  Result<Digest> Next(std::span<const uint32_t> tokens, std::span<const MmItem> extras = {});
  // The hot path. REQUIRES: tokens.size() == block_tokens() >= 1 (no extras).
  const Digest& NextText(std::span<const uint32_t> tokens);
  // Appends the keys of every full block of `tokens` (text only) to *out; returns the number of
  // tail tokens left unkeyed. A tail is not remembered: the next call starts a new block.
  size_t Extend(std::span<const uint32_t> tokens, std::vector<Digest>* out);

  // Restarts the chain at (k, index), e.g. to continue from a known Anchor Key.
  void Reset(const Digest& k = Digest{}, uint64_t index = 0);

 private:
  struct Pads;
  std::unique_ptr<Pads> pads_;
  uint32_t block_tokens_;
  uint64_t index_ = 0;
  Digest last_{};
};

// The keys of every full block of `tokens`; *tail_tokens (if given) gets the unkeyed tail length.
std::vector<Digest> BlockKeys(const Digest& chain_key, uint32_t block_tokens,
                              std::span<const uint32_t> tokens, size_t* tail_tokens = nullptr);
// As above with multimodal extras: extras_per_block[i] belongs to block i+1 (may be shorter than
// the number of blocks; missing entries are empty).
Result<std::vector<Digest>> BlockKeys(const Digest& chain_key, uint32_t block_tokens,
                                      std::span<const uint32_t> tokens,
                                      std::span<const std::vector<MmItem>> extras_per_block,
                                      size_t* tail_tokens = nullptr);
// The Anchor Key K_n of a text prefix; fails with kNoFullBlock when T < B.
Result<Digest> Anchor(const Digest& chain_key, uint32_t block_tokens,
                      std::span<const uint32_t> tokens);

}  // namespace kvcs::kvsp

#endif  // KVCS_KVSP_BLOCK_KEYS_H_
