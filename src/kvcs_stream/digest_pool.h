// DigestPool: worker threads that compute the SHA-256 of received objects' Data, so that §5.4
// verification's one hash per object runs off the session's (receive) thread. A Retrieval with
// RetrievalOptions::verify_threads > 0 owns one; the result goes back to the session's thread
// through the caller's `post`, where the LayerVerifier does the rest without hashing.
//
// THREADING: Submit from any thread; `done` runs on a worker thread. LIFETIME: the destructor
// drops what is still queued (its `done` never runs) and joins the workers, waiting for the jobs
// that are running.
#ifndef KVCS_KVCS_STREAM_DIGEST_POOL_H_
#define KVCS_KVCS_STREAM_DIGEST_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"

namespace kvcs::stream {

class DigestPool {
 public:
  // Hands back the payload and the SHA-256 of payload[skip..].
  using Done = std::function<void(Bytes payload, const Digest& sha256)>;

  explicit DigestPool(uint32_t threads);
  ~DigestPool();
  DigestPool(const DigestPool&) = delete;
  DigestPool& operator=(const DigestPool&) = delete;

  // Hashes payload[skip..] (all of it when skip >= size: the digest of nothing).
  void Submit(Bytes payload, size_t skip, Done done);

 private:
  struct Job {
    Bytes payload;
    size_t skip = 0;
    Done done;
  };
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_DIGEST_POOL_H_
