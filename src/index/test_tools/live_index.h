// LiveIndex: a KVSP Index Service over HTTP on 127.0.0.1 in this process (IndexService on an
// http::Server with one I/O thread, authorization off), for tests and benches that talk to it
// through IndexClient. The store and the clock are the caller's. Test-only
// (kvcs_index_test_tools).
#ifndef KVCS_INDEX_TEST_TOOLS_LIVE_INDEX_H_
#define KVCS_INDEX_TEST_TOOLS_LIVE_INDEX_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "http/server.h"
#include "index/index_client.h"
#include "index/index_service.h"
#include "index/record_store.h"

namespace kvcs::index::testing {

class LiveIndex {
 public:
  // `now_ms` is the service's clock (empty: the system clock). ok() says whether it listens.
  explicit LiveIndex(RecordStore& store, std::function<uint64_t()> now_ms = {});
  ~LiveIndex();
  LiveIndex(const LiveIndex&) = delete;
  LiveIndex& operator=(const LiveIndex&) = delete;

  bool ok() const { return ok_; }
  uint16_t port() const { return server_->port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  // A client of this index (no token).
  IndexClient Client(std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;

 private:
  std::unique_ptr<IndexService> service_;
  std::unique_ptr<http::Server> server_;
  std::thread thread_;
  bool ok_ = false;
};

}  // namespace kvcs::index::testing

#endif  // KVCS_INDEX_TEST_TOOLS_LIVE_INDEX_H_
