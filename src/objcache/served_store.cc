#include "objcache/served_store.h"

#include "s3/config.h"

namespace kvcs::objcache {

ServedStore::ServedStore(store::ObjectStore& store, s3::ServerConfig cfg)
    : service_(ServiceOptions{}), server_(std::move(cfg), store) {}

Result<std::unique_ptr<ServedStore>> ServedStore::Start(store::ObjectStore& store,
                                                        const std::string& shm_socket,
                                                        int io_threads) {
  s3::ServerConfig cfg;
  cfg.listen_host = "127.0.0.1";
  cfg.port = 0;
  cfg.secrets[s3::kDevAccessKey] = s3::kDevSecretKey;
  cfg.io_threads = io_threads;
  std::unique_ptr<ServedStore> s(new ServedStore(store, std::move(cfg)));
  for (auto& e : s->service_.Extensions()) s->server_.AddExtension(std::move(e));
  if (!shm_socket.empty()) {
    KVCS_RETURN_IF_ERROR(s->service_.ListenShm(shm_socket));
    s->shm_socket_ = shm_socket;
  }
  KVCS_RETURN_IF_ERROR(s->server_.Start());
  s->runner_ = std::thread([p = s.get()] { p->server_.Run(false); });
  return s;
}

ServedStore::~ServedStore() {
  if (runner_.joinable()) {
    server_.Stop();
    runner_.join();
  }
}

ClientOptions ServedStore::client_options() const {
  ClientOptions co;
  co.port = server_.port();
  co.access_key = s3::kDevAccessKey;
  co.secret_key = s3::kDevSecretKey;
  return co;
}

Status ServedStore::PutBlocks(const std::string& bucket, const Digest& scope_id,
                              const std::vector<Bytes>& containers) const {
  Client client(client_options());
  KVCS_RETURN_IF_ERROR(client.CreateBucket(bucket));
  std::vector<ByteSpan> spans(containers.begin(), containers.end());
  KVCS_ASSIGN_OR_RETURN(auto put, client.AggregatePut(bucket, scope_id, spans, true));
  if (put.stored != containers.size()) {
    return Internal("served store: " + std::to_string(put.stored) + " of " +
                    std::to_string(containers.size()) + " blocks stored");
  }
  return Status::Ok();
}

}  // namespace kvcs::objcache
