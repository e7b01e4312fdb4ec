// Same-host registration listener and registry. See shm_server.h.
#include "objcache/shm_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <thread>

#include "common/crypto.h"
#include "common/log.h"

namespace kvcs::objcache {

namespace asio = boost::asio;
using local_stream = asio::local::stream_protocol;

asio::awaitable<bool> ShmRegistration::Claim(uint64_t nonce, asio::any_io_executor ex,
                                             Clock::time_point deadline) {
  // The claim is made under the lock that saw the buffer free: another request woken by the same
  // Unclaim (on another thread) then finds it taken and waits again.
  bool claimed = false;
  co_await waiters_.WaitUntil(mu_, ex, deadline, [&] {
    if (closed_) return true;
    if (active_ != 0) return false;
    active_ = nonce;
    released_ = 0;
    cancelled_ = false;
    claimed = true;
    return true;
  });
  co_return claimed;
}

asio::awaitable<bool> ShmRegistration::WaitReleased(uint64_t nonce, uint64_t layers,
                                                    asio::any_io_executor ex,
                                                    Clock::time_point deadline) {
  bool released = false;
  co_await waiters_.WaitUntil(mu_, ex, deadline, [&] {
    released = active_ == nonce && !cancelled_ && !closed_ && released_ >= layers;
    return released || active_ != nonce || cancelled_ || closed_;
  });
  co_return released;
}

bool ShmRegistration::Live(uint64_t nonce) {
  std::lock_guard<std::mutex> l(mu_);
  return active_ == nonce && !cancelled_ && !closed_;
}

void ShmRegistration::Unclaim(uint64_t nonce) {
  std::lock_guard<std::mutex> l(mu_);
  if (active_ != nonce) return;
  active_ = 0;
  waiters_.NotifyAllLocked();
}

void ShmRegistration::Release(uint64_t nonce, uint32_t released) {
  std::lock_guard<std::mutex> l(mu_);
  if (active_ != nonce || released <= released_) return;  // stale or out of order: ignored
  released_ = released;
  waiters_.NotifyAllLocked();
}

void ShmRegistration::Cancel(uint64_t nonce) {
  std::lock_guard<std::mutex> l(mu_);
  if (active_ != nonce) return;
  cancelled_ = true;
  waiters_.NotifyAllLocked();
}

void ShmRegistration::Close() {
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  waiters_.NotifyAllLocked();
}

struct ShmServer::Impl {
  ShmServerOptions options;
  asio::io_context ioc{1};
  local_stream::acceptor acceptor{ioc};
  std::thread thread;
  // Registrations map and populate buffers (up to 64 GiB: seconds) off the listener's thread,
  // which keeps handling every other connection's RELEASE and CANCEL meanwhile.
  asio::thread_pool register_pool{1};
  mutable std::mutex mu;
  std::map<ShmToken, std::weak_ptr<ShmRegistration>> registry;

  asio::awaitable<void> Accept();
  asio::awaitable<void> Serve(local_stream::socket sock);
  // Handles one REGISTER: the answer to send, and the registration made.
  ShmMessage Register(std::vector<int>* fds, std::shared_ptr<ShmRegistration>* reg);
  void Forget(const std::shared_ptr<ShmRegistration>& reg);
};

asio::awaitable<void> ShmServer::Impl::Accept() {
  for (;;) {
    boost::system::error_code ec;
    local_stream::socket sock(ioc);
    co_await acceptor.async_accept(sock, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // E.g. EMFILE: keep serving the connections we have; retrying at once would spin, so wait
      // a little for descriptors to be freed.
      asio::steady_timer pause(ioc, std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    asio::co_spawn(ioc, Serve(std::move(sock)), asio::detached);
  }
}

ShmMessage ShmServer::Impl::Register(std::vector<int>* fds, std::shared_ptr<ShmRegistration>* reg) {
  ShmMessage answer;
  answer.type = ShmMessageType::kRegistered;
  auto refuse = [&](ShmRegisterStatus s) {
    answer.status = s;
    return answer;
  };
  if (*reg) return refuse(ShmRegisterStatus::kAlreadyRegistered);
  if (fds->size() != 1) return refuse(ShmRegisterStatus::kNoDescriptor);
  int fd = fds->front();
  fds->clear();
  {
    std::lock_guard<std::mutex> l(mu);
    if (registry.size() >= options.max_registrations) {
      close(fd);
      return refuse(ShmRegisterStatus::kTooMany);
    }
  }
  ShmRegisterStatus why = ShmRegisterStatus::kOk;
  auto buffer = SharedBuffer::Adopt(fd, options.max_buffer_bytes, &why);
  if (!buffer.ok()) return refuse(why);
  ShmToken token;
  RandomBytes(token.data(), token.size());
  const uint64_t size = (*buffer)->size();
  auto made = std::make_shared<ShmRegistration>(std::move(*buffer), token);
  {
    std::lock_guard<std::mutex> l(mu);
    if (registry.size() >= options.max_registrations)
      return refuse(ShmRegisterStatus::kTooMany);  // `made` unmaps on return
    registry[token] = made;
  }
  *reg = std::move(made);
  answer.value = size;
  answer.token = token;
  KVCS_LOG_DEBUG("shm: registered a {} byte buffer", size);
  return answer;
}

void ShmServer::Impl::Forget(const std::shared_ptr<ShmRegistration>& reg) {
  reg->Close();
  std::lock_guard<std::mutex> l(mu);
  registry.erase(reg->token());
}

asio::awaitable<void> ShmServer::Impl::Serve(local_stream::socket sock) {
  boost::system::error_code ec;
  sock.non_blocking(true, ec);
  const int fd = sock.native_handle();
  std::shared_ptr<ShmRegistration> reg;
  struct Fds {  // descriptors received and not yet consumed by a REGISTER; closed on every exit
    std::vector<int> v;
    ~Fds() {
      for (int f : v) close(f);
    }
  } held;
  std::vector<int>& fds = held.v;
  Bytes in;  // at most one partial message plus one receive
  uint8_t chunk[kShmMessageBytes * 8];
  bool open = !ec;
  while (open) {
    co_await sock.async_wait(local_stream::socket::wait_read,
                             asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    auto n = RecvWithFds(fd, chunk, &fds);
    if (!n.ok() && (n.status().detail() == EAGAIN || n.status().detail() == EWOULDBLOCK)) continue;
    if (!n.ok() || *n == 0) break;
    in.insert(in.end(), chunk, chunk + *n);
    size_t used = 0;
    while (open && in.size() - used >= kShmMessageBytes) {
      auto m = DecodeShmMessage(ByteSpan(in).subspan(used, kShmMessageBytes));
      used += kShmMessageBytes;
      if (!m.ok()) {
        KVCS_LOG_DEBUG("shm: closing a connection: {}", m.status().message());
        open = false;
        break;
      }
      switch (m->type) {
        case ShmMessageType::kRegister: {
          ShmMessage answer = co_await asio::co_spawn(
              register_pool,
              [this, &fds, &reg]() -> asio::awaitable<ShmMessage> {
                co_return Register(&fds, &reg);
              },
              asio::use_awaitable);
          Bytes out;
          EncodeShmMessage(answer, &out);
          co_await asio::async_write(sock, asio::buffer(out),
                                     asio::redirect_error(asio::use_awaitable, ec));
          if (ec) open = false;
          break;
        }
        case ShmMessageType::kRelease:
          if (reg) reg->Release(m->value, m->released);
          break;
        case ShmMessageType::kCancel:
          if (reg) reg->Cancel(m->value);
          break;
        case ShmMessageType::kRegistered:
          open = false;  // only the store sends it
          break;
      }
    }
    in.erase(in.begin(), in.begin() + used);
    // A descriptor belongs to the REGISTER it arrived with: once no message is in progress,
    // whatever was not consumed is closed; more than the protocol ever sends ends the connection.
    if (in.empty() || fds.size() > 1) {
      for (int f : fds) close(f);
      fds.clear();
      if (!in.empty()) open = false;
    }
  }
  if (reg) Forget(reg);
}

ShmServer::ShmServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<ShmServer>> ShmServer::Start(ShmServerOptions options) {
  if (options.path.empty()) return InvalidArgument("shm socket: a path is required");
  if (options.path.size() >= sizeof(sockaddr_un{}.sun_path))
    return InvalidArgument("shm socket: path too long for a Unix socket: " + options.path);
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  const std::string& path = impl->options.path;
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return InvalidArgument("shm socket: " + path +
                             " exists and is not a socket; choose another path");
    // A socket someone still accepts on belongs to a running store; one nobody answers is stale.
    boost::system::error_code probe_ec;
    local_stream::socket probe(impl->ioc);
    probe.connect(local_stream::endpoint(path), probe_ec);
    if (!probe_ec)
      return Status(Code::kAlreadyExists, "shm socket: another store is listening on " + path +
                                              "; stop it or choose another --shm-socket");
    unlink(path.c_str());
  }
  boost::system::error_code ec;
  impl->acceptor.open(local_stream(), ec);
  if (!ec) impl->acceptor.bind(local_stream::endpoint(path), ec);
  // Only the store's user may register buffers: set before listen(), so that no one can connect
  // while the file still has the umask's permissions.
  if (!ec && chmod(path.c_str(), S_IRUSR | S_IWUSR) != 0)
    ec = boost::system::error_code(errno, boost::system::system_category());
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status(Code::kUnavailable, "shm socket: cannot listen on " + path + ": " + ec.message() +
                                          " (is the directory writable?)");
  asio::co_spawn(impl->ioc, impl->Accept(), asio::detached);
  impl->thread = std::thread([i = impl.get()] { i->ioc.run(); });
  return std::unique_ptr<ShmServer>(new ShmServer(std::move(impl)));
}

ShmServer::~ShmServer() {
  asio::post(impl_->ioc, [i = impl_.get()] {
    boost::system::error_code ec;
    i->acceptor.close(ec);
  });
  impl_->ioc.stop();
  impl_->thread.join();
  impl_->register_pool.join();
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    for (auto& [token, weak] : impl_->registry)
      if (auto r = weak.lock()) r->Close();
  }
  unlink(impl_->options.path.c_str());
}

std::shared_ptr<ShmRegistration> ShmServer::Find(const ShmToken& token) const {
  std::lock_guard<std::mutex> l(impl_->mu);
  auto it = impl_->registry.find(token);
  return it == impl_->registry.end() ? nullptr : it->second.lock();
}

const std::string& ShmServer::path() const { return impl_->options.path; }

}  // namespace kvcs::objcache
