#include "index/test_tools/live_index.h"

#include <utility>

namespace kvcs::index::testing {

LiveIndex::LiveIndex(RecordStore& store, std::function<uint64_t()> now_ms) {
  IndexServiceOptions o;
  o.open = true;
  o.now_ms = std::move(now_ms);
  service_ = std::make_unique<IndexService>(store, std::move(o));
  http::ServerOptions ho;
  ho.listen_host = "127.0.0.1";
  ho.port = 0;
  ho.io_threads = 1;
  IndexService::ConfigureLimits(&ho.limits);
  server_ = std::make_unique<http::Server>(ho);
  service_->Mount(*server_);
  ok_ = server_->Start().ok();
  if (ok_) thread_ = std::thread([this] { server_->Run(false); });
}

LiveIndex::~LiveIndex() {
  if (ok_) {
    server_->Stop();
    thread_.join();
  }
}

IndexClient LiveIndex::Client(std::chrono::milliseconds timeout) const {
  return *IndexClient::Create({url(), "", timeout});
}

}  // namespace kvcs::index::testing
