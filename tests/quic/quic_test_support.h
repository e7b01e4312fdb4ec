// Shared fixtures for the QUIC end-to-end tests: certificates, a scripted server application
// running on its own thread/io_context, client-side visitors, deterministic payloads, and a
// bounded event loop (every wait has a deadline, so a broken test fails instead of hanging).
#ifndef KVCS_TESTS_QUIC_QUIC_TEST_SUPPORT_H_
#define KVCS_TESTS_QUIC_QUIC_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "common/asio.h"
#include "common/crypto.h"
#include "quic/client.h"
#include "quic/server.h"
#include "quic/tls.h"

namespace kvcs::quic::test {

namespace asio = boost::asio;
using transport::CloseInfo;
using transport::ErrorCode;
using transport::Session;
using transport::SessionVisitor;
using transport::Stream;
using transport::StreamVisitor;

inline constexpr char kAlpn[] = "kvcs-test";

struct CertFiles {
  std::string cert, key;
};

// Writes a fresh self-signed certificate for `name` into a temp dir (once per name per process).
// Two calls with different names give unrelated certificates (neither trusts the other).
inline const CertFiles& TestCert(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, CertFiles> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto pem = GenerateSelfSignedCert(name);
  EXPECT_TRUE(pem.ok()) << pem.status().ToString();
  auto dir = std::filesystem::temp_directory_path() /
             ("kvcs_quic_test_" + std::to_string(getpid()) + "_" + std::to_string(cache.size()));
  std::filesystem::create_directories(dir);
  CertFiles f{(dir / "cert.pem").string(), (dir / "key.pem").string()};
  std::ofstream(f.cert) << pem->cert_pem;
  std::ofstream(f.key) << pem->key_pem;
  return cache[name] = f;
}

// Deterministic payload: a xorshift stream keyed by `seed`, generated in 8-byte words.
class PayloadGen {
 public:
  explicit PayloadGen(uint64_t seed) : x_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  void Fill(uint8_t* p, size_t n) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      x_ ^= x_ << 13;
      x_ ^= x_ >> 7;
      x_ ^= x_ << 17;
      memcpy(p + i, &x_, 8);
    }
    for (size_t i = n & ~size_t{7}; i < n; ++i) p[i] = static_cast<uint8_t>(x_ >> (i & 7));
  }

 private:
  uint64_t x_;
};

// ---------------------------------------------------------------------------------------------
// The scripted server application. Each client-opened stream starts with one command byte:
//   'D' digest: read to FIN, reply u64 count + SHA-256, FIN (on a uni stream: reply on a new
//       server uni stream: u64 client stream id, u64 count, digest).
//   'P' like 'D' but stop reading until a 'G' stream arrives (flow-control stall); announces
//       the pause on a new server uni stream carrying "paused".
//   'G' resume every paused stream; reply FIN.
//   'R' + u64 code: reset our write side with `code` (RESET_STREAM).
//   'S' + u64 code: send STOP_SENDING(code), then FIN our write side.
//   'E' echo every byte back, FIN at FIN.
//   'U' + u64 n: open a server uni stream carrying n payload bytes (seed 7), FIN.
//   'B': open a server bidi stream, write "ping" + FIN, expect "pong" + FIN, then reply "ok".
// Datagrams are echoed. Peer resets are reported on a new server uni stream: "reset <id> <code>".
struct ServerEvents {
  std::function<void(const CloseInfo&)> on_session_closed;
  std::function<void(const CloseInfo&)> on_connection_error;
  std::function<void()> on_session;
};

class ServerApp;

class ServerStream : public StreamVisitor {
 public:
  ServerStream(ServerApp* app, Session* session, Stream* s) : app_(app), session_(session), s_(s) {}
  void OnCanRead() override;
  void OnCanWrite() override { Pump(); }
  void OnResetStreamReceived(ErrorCode code) override;
  void OnStopSendingReceived(ErrorCode) override {}
  void Resume() {
    paused_ = false;
    OnCanRead();
  }
  void Pump();  // pushes pending output

  ServerApp* app_;
  Session* session_;
  Stream* s_;
  char cmd_ = 0;
  bool paused_ = false;
  Sha256 sha_;
  uint64_t count_ = 0;
  std::vector<uint8_t> header_;
  std::vector<uint8_t> out_;  // pending output
  bool out_fin_ = false;
  bool done_ = false;
  // For server-opened streams.
  uint64_t gen_left_ = 0;
  std::unique_ptr<PayloadGen> gen_;
  Stream* reply_to_ = nullptr;  // 'B': the command stream awaiting "ok"
  transport::StreamId reply_to_id_ = 0;
  bool is_ping_ = false;
};

class ServerSessionVisitor : public SessionVisitor {
 public:
  ServerSessionVisitor(ServerApp* app, Session* s) : app_(app), s_(s) {}
  void OnSessionReady() override {}
  void OnSessionClosed(const CloseInfo& info) override;
  void OnIncomingBidirectionalStreamAvailable() override {
    while (Stream* st = s_->AcceptIncomingBidirectionalStream()) Attach(st);
  }
  void OnIncomingUnidirectionalStreamAvailable() override {
    while (Stream* st = s_->AcceptIncomingUnidirectionalStream()) Attach(st);
  }
  void OnDatagramReceived(ByteSpan d) override { (void)s_->SendOrQueueDatagram(d); }
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}
  ServerStream* Attach(Stream* st) {
    auto v = std::make_unique<ServerStream>(app_, s_, st);
    ServerStream* p = v.get();
    st->SetVisitor(std::move(v));
    p->OnCanRead();
    return p;
  }
  ServerApp* app_;
  Session* s_;
  std::vector<transport::StreamId> paused_;
};

class ServerApp {
 public:
  // Starts a server on its own thread. `mutate` adjusts the config before creation.
  explicit ServerApp(std::function<void(ServerConfig&)> mutate = nullptr) {
    ServerConfig cfg;
    cfg.alpns = {kAlpn};
    const CertFiles& cert = TestCert("localhost");
    cfg.cert_file = cert.cert;
    cfg.key_file = cert.key;
    cfg.on_session = [this](Session& s) {
      auto v = std::make_unique<ServerSessionVisitor>(this, &s);
      s.SetVisitor(v.get());
      visitors_.push_back(std::move(v));
      if (events.on_session) events.on_session();
    };
    cfg.on_connection_error = [this](const SockAddr&, const CloseInfo& info) {
      if (events.on_connection_error) events.on_connection_error(info);
    };
    if (mutate) mutate(cfg);
    auto server = QuicServer::Create(io_, cfg);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return;
    server_ = std::move(*server);
    port_ = server_->port();
    work_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ServerApp() {
    asio::post(io_, [this] {
      server_.reset();
      visitors_.clear();
      work_.reset();
    });
    if (thread_.joinable()) thread_.join();
  }
  // Runs fn on the server thread.
  void Post(std::function<void()> fn) { asio::post(io_, std::move(fn)); }
  uint16_t port() const { return port_; }
  QuicServer* server() { return server_.get(); }
  // Ids of the 'D' streams in the order their FIN was read (any thread).
  std::vector<transport::StreamId> DigestOrder() {
    std::lock_guard<std::mutex> lock(order_mu_);
    return digest_order_;
  }

  ServerEvents events;  // set before clients connect; invoked on the server thread

 private:
  friend class ServerSessionVisitor;
  friend class ServerStream;
  asio::io_context io_;
  std::unique_ptr<QuicServer> server_;
  std::vector<std::unique_ptr<ServerSessionVisitor>> visitors_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  uint16_t port_ = 0;
  std::mutex order_mu_;
  std::vector<transport::StreamId> digest_order_;
};

inline void ServerSessionVisitor::OnSessionClosed(const CloseInfo& info) {
  if (app_->events.on_session_closed) app_->events.on_session_closed(info);
}

inline void PutU64(std::vector<uint8_t>* v, uint64_t x) {
  for (int i = 7; i >= 0; --i) v->push_back(static_cast<uint8_t>(x >> (8 * i)));
}
inline uint64_t GetU64(const uint8_t* p) {
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i) x = x << 8 | p[i];
  return x;
}

inline void ServerStream::Pump() {
  while (s_->CanWrite() && (!out_.empty() || out_fin_ || gen_left_ > 0)) {
    if (gen_left_ > 0) {
      std::vector<uint8_t> chunk(std::min<uint64_t>(gen_left_, 64 << 10));
      gen_->Fill(chunk.data(), chunk.size());
      gen_left_ -= chunk.size();
      (void)s_->Write(chunk, gen_left_ == 0 && out_fin_);
      if (gen_left_ == 0) out_fin_ = false;
      continue;
    }
    (void)s_->Write(out_, out_fin_);
    out_.clear();
    out_fin_ = false;
  }
}

inline void ServerStream::OnResetStreamReceived(ErrorCode code) {
  Stream* u = session_->OpenOutgoingUnidirectionalStream();
  if (!u) return;
  std::string msg = "reset " + std::to_string(s_->GetStreamId()) + " " + std::to_string(code);
  (void)u->Write(AsBytes(msg), true);
}

inline void ServerStream::OnCanRead() {
  auto* sv = static_cast<ServerSessionVisitor*>(nullptr);
  (void)sv;
  if (paused_ || done_) return;
  uint8_t buf[64 << 10];
  for (;;) {
    if (cmd_ == 0 || ((cmd_ == 'R' || cmd_ == 'S') && header_.size() < 8) ||
        (cmd_ == 'U' && header_.size() < 8)) {
      if (cmd_ == 0) {
        auto r = s_->Read({buf, 1});
        if (r.bytes_read == 0) return;
        cmd_ = static_cast<char>(buf[0]);
        if (cmd_ == 'P') {
          paused_ = true;
          // Registered with the session visitor so a 'G' stream can resume us.
          for (auto& v : app_->visitors_) {
            if (v->s_ == session_) v->paused_.push_back(s_->GetStreamId());
          }
          // Tell the client (reliably) that this stream is now stalled on purpose.
          if (Stream* u = session_->OpenOutgoingUnidirectionalStream()) {
            (void)u->Write(AsBytes(std::string("paused")), true);
          }
          return;
        }
        continue;
      }
      auto r = s_->Read({buf, 8 - header_.size()});
      header_.insert(header_.end(), buf, buf + r.bytes_read);
      if (r.bytes_read == 0) return;
      continue;
    }
    if (is_ping_) {  // server-opened bidi: expect "pong"
      auto r = s_->Read({buf, sizeof(buf)});
      header_.insert(header_.end(), buf, buf + r.bytes_read);
      if (!r.fin) return;
      done_ = true;
      std::string got(header_.begin(), header_.end());
      if (reply_to_ && session_->GetStreamById(reply_to_id_) == reply_to_) {
        (void)reply_to_->Write(AsBytes(got == "pong" ? std::string("ok") : "bad:" + got), true);
      }
      return;
    }
    switch (cmd_) {
      case 'D':
      case 'P': {
        auto r = s_->Read({buf, sizeof(buf)});
        sha_.Update(ByteSpan(buf, r.bytes_read));
        count_ += r.bytes_read;
        if (!r.fin) {
          if (r.bytes_read == 0) return;
          continue;
        }
        done_ = true;
        {
          std::lock_guard<std::mutex> lock(app_->order_mu_);
          app_->digest_order_.push_back(s_->GetStreamId());
        }
        Digest d = sha_.Finish();
        std::vector<uint8_t> reply;
        if (s_->IsBidirectional()) {
          PutU64(&reply, count_);
          reply.insert(reply.end(), d.begin(), d.end());
          out_ = reply;
          out_fin_ = true;
          Pump();
        } else {
          PutU64(&reply, s_->GetStreamId());
          PutU64(&reply, count_);
          reply.insert(reply.end(), d.begin(), d.end());
          if (Stream* u = session_->OpenOutgoingUnidirectionalStream()) (void)u->Write(reply, true);
        }
        return;
      }
      case 'G': {
        auto r = s_->Read({buf, sizeof(buf)});
        if (!r.fin) return;
        done_ = true;
        (void)s_->Write({}, true);
        for (auto& v : app_->visitors_) {
          if (v->s_ != session_) continue;
          auto ids = std::move(v->paused_);
          v->paused_.clear();
          for (auto id : ids) {
            if (Stream* p = session_->GetStreamById(id)) {
              static_cast<ServerStream*>(p->visitor())->Resume();
            }
          }
        }
        return;
      }
      case 'R': {
        uint64_t code = GetU64(header_.data());
        done_ = true;
        s_->ResetWithCode(code);
        return;
      }
      case 'S': {
        uint64_t code = GetU64(header_.data());
        done_ = true;
        s_->SendStopSending(code);
        (void)s_->Write({}, true);
        return;
      }
      case 'E': {
        auto r = s_->Read({buf, sizeof(buf)});
        out_.insert(out_.end(), buf, buf + r.bytes_read);
        if (r.fin) {
          out_fin_ = true;
          done_ = true;
        }
        Pump();
        if (r.fin || r.bytes_read == 0) return;
        continue;
      }
      case 'U': {
        uint64_t n = GetU64(header_.data());
        done_ = true;
        Stream* u = session_->OpenOutgoingUnidirectionalStream();
        if (!u) return;
        auto v = std::make_unique<ServerStream>(app_, session_, u);
        v->done_ = true;
        v->gen_ = std::make_unique<PayloadGen>(7);
        v->gen_left_ = n;
        v->out_fin_ = true;
        ServerStream* p = v.get();
        u->SetVisitor(std::move(v));
        p->Pump();
        (void)s_->Write({}, true);
        return;
      }
      case 'B': {
        done_ = true;
        Stream* b = session_->OpenOutgoingBidirectionalStream();
        if (!b) return;
        auto v = std::make_unique<ServerStream>(app_, session_, b);
        v->is_ping_ = true;
        v->cmd_ = 'x';
        v->header_.assign(8, 0);
        v->header_.clear();
        v->reply_to_ = s_;
        v->reply_to_id_ = s_->GetStreamId();
        ServerStream* p = v.get();
        b->SetVisitor(std::move(v));
        (void)b->Write(AsBytes(std::string("ping")), true);
        (void)p;
        return;
      }
      default:
        done_ = true;
        s_->ResetAndStop(0xbad);
        return;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Client side: a bounded event loop plus simple visitors.
class ClientLoop {
 public:
  explicit ClientLoop(std::chrono::seconds budget = std::chrono::seconds(60))
      : deadline_(std::chrono::steady_clock::now() + budget) {}
  asio::io_context io;
  // Runs the client io_context until pred() holds; fails the test at the deadline.
  bool RunUntil(const std::function<bool()>& pred, const char* what = "condition") {
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline_) {
        ADD_FAILURE() << "deadline exceeded waiting for " << what;
        return false;
      }
      io.run_one_for(std::chrono::milliseconds(50));
      if (io.stopped()) io.restart();
    }
    return true;
  }
  // Posts fn to the client loop (used by the server thread to report events).
  void Post(std::function<void()> fn) { asio::post(io, std::move(fn)); }

 private:
  std::chrono::steady_clock::time_point deadline_;
};

class ClientVisitor : public SessionVisitor {
 public:
  void OnSessionReady() override { ready = true; }
  void OnSessionClosed(const CloseInfo& i) override {
    closed = true;
    info = i;
  }
  void OnIncomingBidirectionalStreamAvailable() override {
    if (on_bidi) on_bidi();
  }
  void OnIncomingUnidirectionalStreamAvailable() override {
    if (on_uni) on_uni();
  }
  void OnDatagramReceived(ByteSpan d) override { datagrams.emplace_back(d.begin(), d.end()); }
  void OnCanCreateNewOutgoingBidirectionalStream() override {
    if (on_can_open_bidi) on_can_open_bidi();
  }
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}
  bool ready = false, closed = false;
  CloseInfo info;
  std::vector<std::vector<uint8_t>> datagrams;
  std::function<void()> on_bidi, on_uni, on_can_open_bidi;
};

// Forwards visitor calls to a shared state object, so tests can keep the state after the
// transport destroys the stream (and its visitor) once the stream is finished.
template <typename T>
class SharedVisitor : public StreamVisitor {
 public:
  explicit SharedVisitor(std::shared_ptr<T> t) : t_(std::move(t)) {}
  void OnCanRead() override { t_->OnCanRead(); }
  void OnCanWrite() override { t_->OnCanWrite(); }
  void OnResetStreamReceived(ErrorCode c) override { t_->OnResetStreamReceived(c); }
  void OnStopSendingReceived(ErrorCode c) override { t_->OnStopSendingReceived(c); }
  void OnWriteSideInDataRecvdState() override { t_->OnWriteSideInDataRecvdState(); }
  void OnStreamClosed() override {
    t_->OnStreamClosed();
    t_->s_ = nullptr;
  }

 private:
  std::shared_ptr<T> t_;
};

template <typename T>
std::shared_ptr<T> Attach(Stream* st, std::shared_ptr<T> t) {
  st->SetVisitor(std::make_unique<SharedVisitor<T>>(t));
  return t;
}

// Sends `cmd` + `size` payload bytes (seed) + FIN; collects the reply; records the digest sent.
class SendStream : public StreamVisitor {
 public:
  SendStream(Stream* s, char cmd, uint64_t size, uint64_t seed) : s_(s), left_(size), gen_(seed) {
    head_.push_back(static_cast<uint8_t>(cmd));
  }
  void Start() { OnCanWrite(); }
  void OnCanWrite() override {
    if (!s_) return;
    if (!head_.empty()) {
      (void)s_->Write(head_, left_ == 0);
      head_.clear();
      if (left_ == 0) return;
    }
    while (left_ > 0) {
      if (!s_->CanWrite()) {
        ++blocked_count;
        return;
      }
      size_t n = std::min<uint64_t>(left_, chunk_.size());
      gen_.Fill(chunk_.data(), n);
      sha_.Update(ByteSpan(chunk_.data(), n));
      left_ -= n;
      sent += n;
      (void)s_->Write(ByteSpan(chunk_.data(), n), left_ == 0);
    }
    if (left_ == 0 && !digest_done_) {
      digest_done_ = true;
      sent_digest = sha_.Finish();
    }
  }
  void OnCanRead() override {
    if (!s_) return;
    uint8_t buf[64 << 10];
    for (;;) {
      auto r = s_->Read({buf, sizeof(buf)});
      reply.insert(reply.end(), buf, buf + r.bytes_read);
      if (r.fin) {
        reply_fin = true;
        return;
      }
      if (r.bytes_read == 0) return;
    }
  }
  void OnResetStreamReceived(ErrorCode c) override { reset_code = c; }
  void OnStopSendingReceived(ErrorCode c) override { stop_code = c; }
  void OnStreamClosed() override { closed = true; }

  Stream* s_;
  std::vector<uint8_t> head_;
  uint64_t left_;
  PayloadGen gen_;
  std::vector<uint8_t> chunk_ = std::vector<uint8_t>(64 << 10);
  Sha256 sha_;
  bool digest_done_ = false;
  Digest sent_digest{};
  uint64_t sent = 0;
  int blocked_count = 0;
  std::vector<uint8_t> reply;
  bool reply_fin = false, closed = false;
  std::optional<ErrorCode> reset_code, stop_code;
};

// Reads a whole incoming stream.
class SinkStream : public StreamVisitor {
 public:
  explicit SinkStream(Stream* s) : s_(s) {}
  void OnCanRead() override {
    if (!s_) return;
    uint8_t buf[64 << 10];
    for (;;) {
      auto r = s_->Read({buf, sizeof(buf)});
      if (keep) data.insert(data.end(), buf, buf + r.bytes_read);
      sha.Update(ByteSpan(buf, r.bytes_read));
      count += r.bytes_read;
      if (r.fin) {
        fin = true;
        digest = sha.Finish();
        if (on_fin) on_fin(this);
        return;
      }
      if (r.bytes_read == 0) return;
    }
  }
  void OnCanWrite() override {}
  void OnResetStreamReceived(ErrorCode c) override { reset_code = c; }
  void OnStopSendingReceived(ErrorCode) override {}
  void OnStreamClosed() override { closed = true; }
  Stream* s_;
  bool closed = false;
  bool keep = true;
  std::vector<uint8_t> data;
  Sha256 sha;
  Digest digest{};
  uint64_t count = 0;
  bool fin = false;
  std::optional<ErrorCode> reset_code;
  std::function<void(SinkStream*)> on_fin;
};

inline ClientConfig MakeClientConfig(uint16_t port) {
  ClientConfig c;
  c.host = "127.0.0.1";
  c.server_name = "localhost";
  c.port = port;
  c.alpns = {kAlpn};
  c.ca_file = TestCert("localhost").cert;
  return c;
}

// Expected digest of `size` bytes from PayloadGen(seed).
inline Digest ExpectedDigest(uint64_t size, uint64_t seed) {
  PayloadGen g(seed);
  Sha256 sha;
  std::vector<uint8_t> buf(64 << 10);
  while (size > 0) {
    size_t n = std::min<uint64_t>(size, buf.size());
    g.Fill(buf.data(), n);
    sha.Update(ByteSpan(buf.data(), n));
    size -= n;
  }
  return sha.Finish();
}

}  // namespace kvcs::quic::test

#endif  // KVCS_TESTS_QUIC_QUIC_TEST_SUPPORT_H_
