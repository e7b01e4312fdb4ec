// The raw QUIC stream baseline (raw_quic_stream.h).
#include "bench/support/raw_quic_stream.h"

#include <cstdio>
#include <memory>
#include <vector>

#include "common/bytes.h"
#include "quic/client.h"
#include "quic/server.h"

namespace kvcs::bench {
namespace {

using transport::CloseInfo;
using transport::ErrorCode;
using transport::Stream;
using transport::StreamVisitor;

// Server: a bidi stream carries a u64 byte count; the server answers with that many bytes + FIN.
class RawSendStream : public StreamVisitor {
 public:
  // Shared buffers cycled through (a relay's cached objects are distinct buffers too).
  static constexpr size_t kSharedBuffers = 64;

  RawSendStream(Stream* s, size_t shared_chunk) : s_(s), buf_(256 << 10, 0x5a) {
    if (shared_chunk == 0) return;
    for (size_t i = 0; i < kSharedBuffers; ++i) {
      shared_.push_back(std::make_shared<const Bytes>(shared_chunk, static_cast<uint8_t>(i)));
    }
  }
  void OnCanRead() override {
    uint8_t b[8];
    while (got_ < 8) {
      auto r = s_->Read({b, 8 - got_});
      if (r.bytes_read == 0) return;
      for (size_t i = 0; i < r.bytes_read; ++i) left_ = left_ << 8 | b[i];
      got_ += r.bytes_read;
    }
    OnCanWrite();
  }
  void OnCanWrite() override {
    while (got_ == 8 && left_ > 0 && s_->CanWrite()) {
      if (!shared_.empty() && left_ >= shared_[0]->size()) {
        left_ -= shared_[0]->size();
        (void)s_->WriteShared(shared_[next_++ % shared_.size()], left_ == 0);
        continue;
      }
      size_t n = std::min<uint64_t>(left_, buf_.size());
      left_ -= n;
      (void)s_->Write(ByteSpan(buf_.data(), n), left_ == 0);
    }
  }
  void OnResetStreamReceived(ErrorCode) override {}
  void OnStopSendingReceived(ErrorCode) override {}

 private:
  Stream* s_;
  std::vector<uint8_t> buf_;
  std::vector<std::shared_ptr<const Bytes>> shared_;
  size_t next_ = 0;
  size_t got_ = 0;
  uint64_t left_ = 0;
};

class RawServerSession : public transport::SessionVisitor {
 public:
  RawServerSession(transport::Session* s, size_t shared_chunk)
      : s_(s), shared_chunk_(shared_chunk) {}
  void OnSessionReady() override {}
  void OnSessionClosed(const CloseInfo&) override {}
  void OnIncomingBidirectionalStreamAvailable() override {
    while (Stream* st = s_->AcceptIncomingBidirectionalStream()) {
      st->SetVisitor(std::make_unique<RawSendStream>(st, shared_chunk_));
      st->visitor()->OnCanRead();
    }
  }
  void OnIncomingUnidirectionalStreamAvailable() override {}
  void OnDatagramReceived(ByteSpan) override {}
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}

 private:
  transport::Session* s_;
  size_t shared_chunk_;
};

class RawClient : public transport::SessionVisitor, public StreamVisitor {
 public:
  void OnSessionReady() override { ready = true; }
  void OnSessionClosed(const CloseInfo& i) override {
    closed = true;
    if (!done) fprintf(stderr, "raw session closed: %s\n", i.ToString().c_str());
  }
  void OnIncomingBidirectionalStreamAvailable() override {}
  void OnIncomingUnidirectionalStreamAvailable() override {}
  void OnDatagramReceived(ByteSpan) override {}
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}
  void OnCanRead() override {
    for (;;) {
      auto p = s->PeekReadable();
      if (p.data.empty() && !p.fin) return;
      bytes += p.data.size();
      if (s->Consume(p.data.size())) {
        done = true;
        return;
      }
    }
  }
  void OnCanWrite() override {}
  void OnResetStreamReceived(ErrorCode) override { done = true; }
  void OnStopSendingReceived(ErrorCode) override {}
  Stream* s = nullptr;
  bool ready = false, closed = false, done = false;
  uint64_t bytes = 0;
};

class Forward : public StreamVisitor {
 public:
  explicit Forward(RawClient* c) : c_(c) {}
  void OnCanRead() override { c_->OnCanRead(); }
  void OnCanWrite() override {}
  void OnResetStreamReceived(ErrorCode e) override { c_->OnResetStreamReceived(e); }
  void OnStopSendingReceived(ErrorCode) override {}
  void OnStreamClosed() override { c_->s = nullptr; }

 private:
  RawClient* c_;
};

}  // namespace

RawStreamRun RunRawQuicStream(BenchThread& srv, const std::string& cert_file,
                              const std::string& key_file, uint64_t total, size_t shared_chunk) {
  RawStreamRun res;
  std::unique_ptr<quic::QuicServer> server;
  std::vector<std::unique_ptr<transport::SessionVisitor>> visitors;
  srv.Call([&] {
    quic::ServerConfig cfg;
    cfg.alpns = {"kvcs-bench"};
    cfg.cert_file = cert_file;
    cfg.key_file = key_file;
    cfg.on_session = [&visitors, shared_chunk](transport::Session& s) {
      auto v = std::make_unique<RawServerSession>(&s, shared_chunk);
      s.SetVisitor(v.get());
      visitors.push_back(std::move(v));
    };
    auto s = quic::QuicServer::Create(srv.io, cfg);
    if (s.ok()) server = std::move(*s);
  });
  if (!server) return res;
  {
    boost::asio::io_context io;
    RawClient c;
    quic::ClientConfig cc;
    cc.port = server->port();
    cc.alpns = {"kvcs-bench"};
    cc.insecure = true;
    auto cs = quic::QuicClientSession::Connect(io, cc, &c);
    if (cs.ok() &&
        RunUntil(
            io, [&] { return c.ready || c.closed; }, 10) &&
        c.ready) {
      double cpu0 = ThreadCpu(), scpu0 = srv.cpu(), t0 = Now();
      c.s = (*cs)->OpenOutgoingBidirectionalStream();
      c.s->SetVisitor(std::make_unique<Forward>(&c));
      uint8_t req[8];
      StoreBe64(req, total);
      (void)c.s->Write(ByteSpan(req, 8), true);
      res.ok = RunUntil(
                   io, [&] { return c.done || c.closed; }, 120) &&
               c.done;
      res.secs = Now() - t0;
      res.client_cpu = ThreadCpu() - cpu0;
      res.server_cpu = srv.cpu() - scpu0;
      res.bytes = c.bytes;
      res.ok = res.ok && c.bytes == total;
    }
    if (cs.ok()) cs->reset();
  }
  srv.Call([&] {
    server.reset();
    visitors.clear();
  });
  return res;
}

}  // namespace kvcs::bench
