// IndexLookup: the engine client's question to the KVSP Index Service (docs/protocols/kvsp-index.md
// §7): the longest prefix of a prompt's Block Keys that any holder registered, and the first
// holder of its last block. A thin wrapper over index::IndexClient::LookupPrefix that keeps the
// index headers (and their compile flags) out of the rest of src/engine. Thread-safe.
#ifndef KVCS_ENGINE_INDEX_LOOKUP_H_
#define KVCS_ENGINE_INDEX_LOOKUP_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::engine {

// Holders IndexLookup::Holders returns at most: a MOQT load asks each in turn for a share of
// what is left of its deadline, so more would leave each too little to answer.
inline constexpr size_t kMaxIndexHolders = 4;

struct IndexAnswer {
  uint64_t matched = 0;  // leading blocks registered
  std::string holder;    // a holder of block matched-1 ("" when matched is 0)
};

class IndexLookup {
 public:
  // No I/O. Errors: kInvalidArgument for a URL that is not http[s]://HOST:PORT[/base].
  static Result<std::unique_ptr<IndexLookup>> Create(const std::string& url,
                                                     const std::string& bearer,
                                                     uint64_t timeout_ms);
  ~IndexLookup();

  // Errors: the index's (unreachable, timeout, refused, unknown compat...).
  Result<IndexAnswer> LongestPrefix(const Digest& compat_id, const Digest& scope_id,
                                    std::span<const Digest> keys) const;
  // The KVSP HTTP holders (http:// or https://, serving the raw codec) the index lists for the
  // blocks [from_block, matched) of the prefix `keys`, fastest tier first, each once, at most
  // kMaxIndexHolders. Errors: the index's.
  Result<std::vector<std::string>> Holders(const Digest& compat_id, const Digest& scope_id,
                                           std::span<const Digest> keys, size_t from_block) const;
  const std::string& url() const { return url_; }

 private:
  struct Impl;
  IndexLookup(std::unique_ptr<Impl> impl, std::string url);
  std::unique_ptr<Impl> impl_;
  std::string url_;
};

}  // namespace kvcs::engine

#endif  // KVCS_ENGINE_INDEX_LOOKUP_H_
