// A KVSP HTTP holder as a kvcs_stream recovery source. See http_holder_source.h.
#include "kvsp_http/http_holder_source.h"

#include <chrono>
#include <utility>

namespace kvcs::kvsp_http {

HttpHolderSource::HttpHolderSource(std::unique_ptr<HolderClient> client, Post post)
    : client_(std::move(client)), post_(std::move(post)) {}

HttpHolderSource::~HttpHolderSource() {
  Cancel();
  Join();
}

void HttpHolderSource::Join() {
  if (worker_.joinable()) worker_.join();
}

void HttpHolderSource::Cancel() { current_->store(0); }

void HttpHolderSource::Fetch(const stream::CacheIdentity& identity,
                             std::vector<stream::HolderFetch> blocks, uint64_t timeout_ms,
                             Done done) {
  Join();  // the previous Fetch's worker (cancelled or finished)
  const uint64_t gen = ++generation_;
  current_->store(gen);
  const auto deadline = HolderClient::Clock::now() + std::chrono::milliseconds(timeout_ms);
  worker_ = std::thread([client = client_.get(), post = post_, current = current_, gen, deadline,
                         identity, blocks = std::move(blocks), done = std::move(done)]() mutable {
    std::vector<stream::HolderBlock> out;
    for (const stream::HolderFetch& f : blocks) {
      stream::HolderBlock hb;
      hb.block = f.block;
      if (current->load() != gen) break;
      if (f.block >= identity.block_keys.size()) {
        hb.status = InvalidArgument("block beyond the prompt");
      } else {
        HolderBlockRequest req;
        req.compat_id = identity.compat_id;
        req.scope_id = identity.scope_id;
        req.block_key = identity.block_keys[f.block];
        req.block_index = static_cast<uint32_t>(f.block + 1);
        req.layer_first = f.first_layer;
        req.layer_last = f.last_layer;
        auto c = client->FetchBlock(identity.descriptor, req, deadline);
        if (c.ok()) {
          hb.container = std::move(c->bytes);
        } else {
          hb.status = c.status();
        }
      }
      out.push_back(std::move(hb));
    }
    if (current->load() != gen) return;
    post([current, gen, out = std::move(out), done = std::move(done)]() mutable {
      if (current->load() == gen) done(std::move(out));
    });
  });
}

}  // namespace kvcs::kvsp_http
