// ServedStore: `kvcs store` in-process, for the demo, tests and benches: an s3::Server (the
// development keys, 127.0.0.1, port 0) with the ObjectCache extensions (objcache::Service) over
// any ObjectStore, optionally the same-host socket, run by its own thread until destruction.
// PutBlocks loads it with KVSP containers by one aggregated PUT, as a producer would.
//
// THREADING: Start, the accessors and the destructor on one thread; the server runs on its own.
// The ObjectStore must outlive the ServedStore.
#ifndef KVCS_OBJCACHE_SERVED_STORE_H_
#define KVCS_OBJCACHE_SERVED_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "objcache/client.h"
#include "objcache/service.h"
#include "s3/server.h"
#include "store/object_store.h"

namespace kvcs::objcache {

class ServedStore {
 public:
  // `shm_socket` not empty: same-host delivery listens there. `io_threads`: the server's.
  static Result<std::unique_ptr<ServedStore>> Start(store::ObjectStore& store,
                                                    const std::string& shm_socket = "",
                                                    int io_threads = 4);
  ~ServedStore();
  ServedStore(const ServedStore&) = delete;
  ServedStore& operator=(const ServedStore&) = delete;

  uint16_t port() const { return server_.port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  // Client options for this store (inline delivery; set shm_socket for same-host).
  ClientOptions client_options() const;
  const std::string& shm_socket() const { return shm_socket_; }

  // Creates `bucket` (if new) and stores `containers` (KVSP containers of scope `scope_id`) by
  // one aggregated PUT; fails unless every one was stored.
  Status PutBlocks(const std::string& bucket, const Digest& scope_id,
                   const std::vector<Bytes>& containers) const;

 private:
  ServedStore(store::ObjectStore& store, s3::ServerConfig cfg);
  Service service_;
  s3::Server server_;
  std::thread runner_;
  std::string shm_socket_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SERVED_STORE_H_
