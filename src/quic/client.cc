// QuicClientSession::Connect: the client's UDP socket, its receive pump and its one Connection
// (which is the QuicClientSession and keeps this endpoint alive).
#include "quic/client.h"

#include <gnutls/crypto.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include "common/asio.h"
#include "quic/connection.h"
#include "quic/rx_pump.h"
#include "quic/tls.h"

namespace kvcs::quic {
namespace {

namespace asio = boost::asio;

// The client's ConnectionOwner: its socket and receive pump, for its one connection.
class ClientEndpoint : public ConnectionOwner {
 public:
  ClientEndpoint(asio::io_context& io, std::unique_ptr<UdpSocket> sock)
      : io_(io), sock_(std::move(sock)) {
    gnutls_rnd(GNUTLS_RND_RANDOM, secret_, sizeof(secret_));
  }
  ~ClientEndpoint() override {
    if (pump_) pump_->Stop();
  }
  void Start(Connection* conn, const LossShimConfig& shim) {
    conn_ = conn;
    pump_ = std::make_unique<RxPump>(
        io_, sock_.get(), shim,
        [this](const SockAddr& from, const uint8_t* d, size_t n) { conn_->OnDatagram(from, d, n); },
        [this] { conn_->AfterIo(); });
    pump_->Start();
  }
  UdpSocket& socket() override { return *sock_; }
  const uint8_t* static_secret() const override { return secret_; }
  void OnConnectionFinished(Connection*) override {
    if (pump_) pump_->Stop();
  }
  void WaitWritable() override {
    pump_->WaitWrite([this] {
      if (!sock_->FlushPending()) {
        WaitWritable();
        return;
      }
      conn_->Flush();
    });
  }

 private:
  asio::io_context& io_;
  std::unique_ptr<UdpSocket> sock_;
  std::unique_ptr<RxPump> pump_;
  Connection* conn_ = nullptr;
  uint8_t secret_[32];
};

}  // namespace

Result<std::unique_ptr<QuicClientSession>> QuicClientSession::Connect(
    asio::io_context& io, ClientConfig config, transport::SessionVisitor* visitor) {
  KVCS_ASSIGN_OR_RETURN(auto tls,
                        TlsClientContext::Create(config.ca_file, config.insecure, config.alpns));
  KVCS_ASSIGN_OR_RETURN(SockAddr remote, SockAddr::Resolve(config.host, config.port));
  SockAddr local;
  local.storage.ss_family = remote.storage.ss_family;
  local.len = remote.storage.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  KVCS_ASSIGN_OR_RETURN(auto sock, UdpSocket::Open(local, &remote));
  auto ep = std::make_unique<ClientEndpoint>(io, std::move(sock));
  auto conn = std::make_unique<Connection>(io, ep.get(), false, config.limits);
  std::string sni = config.server_name.empty() ? config.host : config.server_name;
  KVCS_RETURN_IF_ERROR(conn->InitClient(*tls, sni, remote));
  conn->SetVisitor(visitor);
  ep->Start(conn.get(), config.loss_shim);
  conn->set_owned_endpoint(std::move(ep));
  conn->set_owned_tls(std::move(tls));
  conn->Flush();  // first Initial
  return std::unique_ptr<QuicClientSession>(std::move(conn));
}

}  // namespace kvcs::quic
