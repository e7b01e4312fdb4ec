#include "s3client/connection_pool.h"

#include "s3client/errors.h"

namespace kvcs::s3client {

Result<std::unique_ptr<ConnectionPool>> ConnectionPool::Create(PoolOptions options) {
  std::unique_ptr<ConnectionPool> pool(new ConnectionPool());
  if (options.tls) {
    KVCS_ASSIGN_OR_RETURN(pool->tls_, MakeTlsClientContext(options.ca_file, options.insecure));
  }
  {
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::resolver resolver(ioc);
    boost::system::error_code ec;
    pool->endpoints_ = resolver.resolve(options.host, std::to_string(options.port), ec);
    if (ec) {
      return ClientStatus(ClientError::kConnect,
                          "cannot resolve S3 endpoint " + options.host + ": " + ec.message());
    }
  }
  pool->options_ = std::move(options);
  return pool;
}

Result<std::unique_ptr<HttpConnection>> ConnectionPool::Acquire(Clock::time_point deadline) {
  {
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, deadline,
                        [&] { return !idle_.empty() || open_ < options_.max_connections; })) {
      return ClientStatus(ClientError::kTimeout, "no free connection before the deadline");
    }
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
    ++open_;
  }
  auto c = std::make_unique<HttpConnection>(tls_.get());
  Status s = c->Connect(endpoints_, options_.host, !options_.insecure, !options_.ca_file.empty(),
                        deadline);
  if (!s.ok()) {
    Discard(nullptr);
    return s;
  }
  opened_.fetch_add(1, std::memory_order_relaxed);
  return c;
}

void ConnectionPool::Release(std::unique_ptr<HttpConnection> connection) {
  {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(connection));
  }
  cv_.notify_one();
}

void ConnectionPool::Discard(std::unique_ptr<HttpConnection> broken) {
  std::vector<std::unique_ptr<HttpConnection>> dropped;
  {
    std::lock_guard lock(mu_);
    open_ -= static_cast<int>(idle_.size()) + 1;
    dropped.swap(idle_);
  }
  broken.reset();
  dropped.clear();
  cv_.notify_all();
}

}  // namespace kvcs::s3client
