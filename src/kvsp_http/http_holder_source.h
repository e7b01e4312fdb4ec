// HttpHolderSource: a KVSP HTTP holder as a recovery source of kvcs_stream (HolderSource,
// kvcs_stream/holder_source.h): each Fetch runs the blocking HolderClient on one worker thread,
// block after block under one deadline, and hands the results back through `post` (which must
// run them on the session's thread, e.g. asio::post to its io_context).
//
// THREADING: Fetch, Cancel and the destructor on the session's thread. The destructor waits for
// the worker (each request is bounded by the Fetch's deadline).
#ifndef KVCS_KVSP_HTTP_HTTP_HOLDER_SOURCE_H_
#define KVCS_KVSP_HTTP_HTTP_HOLDER_SOURCE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kvcs_stream/holder_source.h"
#include "kvsp_http/holder_client.h"

namespace kvcs::kvsp_http {

class HttpHolderSource : public stream::HolderSource {
 public:
  using Post = std::function<void(std::function<void()>)>;
  HttpHolderSource(std::unique_ptr<HolderClient> client, Post post);
  ~HttpHolderSource() override;

  std::string name() const override { return "http holder " + client_->url(); }
  void Fetch(const stream::CacheIdentity& identity, std::vector<stream::HolderFetch> blocks,
             uint64_t timeout_ms, Done done) override;
  void Cancel() override;

 private:
  void Join();

  std::unique_ptr<HolderClient> client_;
  Post post_;
  std::thread worker_;
  // The Fetch whose results are still wanted; a posted result of another one is dropped.
  std::shared_ptr<std::atomic<uint64_t>> current_ = std::make_shared<std::atomic<uint64_t>>(0);
  uint64_t generation_ = 0;
};

}  // namespace kvcs::kvsp_http

#endif  // KVCS_KVSP_HTTP_HTTP_HOLDER_SOURCE_H_
