#include "transport/test_tools/in_memory_session.h"

#include <algorithm>
#include <cstdint>

namespace kvcs::transport::test {
namespace {
Status Err(TransportError e, std::string msg, Code c = Code::kFailedPrecondition) {
  return {c, std::move(msg), static_cast<int>(e)};
}
}  // namespace

// ------------------------------------------------------------------------------ InMemoryStream
InMemoryStream::InMemoryStream(InMemorySession* s, StreamId id) : s_(s), id_(id) {}

bool InMemoryStream::IsLocallyInitiated() const { return ((id_ & 1) == 0) == s_->is_client_; }

Stream::ReadResult InMemoryStream::Read(std::span<uint8_t> out) {
  size_t n = std::min(out.size(), recv_.size());
  std::copy_n(recv_.begin(), n, out.begin());
  bool fin = Consume(n);
  return {n, fin};
}

Stream::PeekResult InMemoryStream::PeekReadable() const {
  // deque storage is not contiguous; expose the first contiguous run via a scratch copy.
  static thread_local std::vector<uint8_t> scratch;
  scratch.assign(recv_.begin(), recv_.end());
  return {ByteSpan(scratch.data(), scratch.size()), fin_received_};
}

bool InMemoryStream::Consume(size_t n) {
  n = std::min(n, recv_.size());
  recv_.erase(recv_.begin(), recv_.begin() + static_cast<std::ptrdiff_t>(n));
  consumed_ += n;
  if (fin_received_ && recv_.empty()) {
    read_finished_ = true;
    return true;
  }
  return false;
}

bool InMemoryStream::CanWrite() const {
  return HasWriteSide() && !fin_queued_ && !write_reset_ && s_->open_ &&
         unsent_.size() < s_->opts_.stream_send_buffer;
}

Status InMemoryStream::Write(ByteSpan data, bool fin) {
  if (!HasWriteSide()) return Err(TransportError::kNotWritable, "stream is receive-only");
  if (!s_->open_) return Err(TransportError::kSessionClosed, "session is not open");
  if (fin_queued_ || write_reset_) return Err(TransportError::kWriteClosed, "write side closed");
  if (unsent_.size() >= s_->opts_.stream_send_buffer) {
    want_can_write_ = true;
    return Err(TransportError::kWriteBlocked, "send buffer full", Code::kResourceExhausted);
  }
  unsent_.insert(unsent_.end(), data.begin(), data.end());
  if (fin) fin_queued_ = true;
  if (unsent_.size() >= s_->opts_.stream_send_buffer) want_can_write_ = true;
  return Status::Ok();
}

void InMemoryStream::ResetWithCode(ErrorCode code) {
  if (!HasWriteSide() || write_reset_ || fin_delivered_) return;
  write_reset_ = true;
  unsent_.clear();
  InMemorySession* peer = s_->peer();
  StreamId id = id_;
  s_->Post([peer, id, code] {
    InMemoryStream* p = peer->PeerStream(id);
    if (!p || p->read_finished_) return;
    p->read_finished_ = true;
    p->recv_.clear();
    if (p->visitor_) p->visitor_->OnResetStreamReceived(code);
  });
}

void InMemoryStream::SendStopSending(ErrorCode code) {
  if (!HasReadSide() || read_finished_) return;
  read_finished_ = true;
  recv_.clear();
  InMemorySession* peer = s_->peer();
  StreamId id = id_;
  s_->Post([peer, id, code] {
    auto it = peer->streams_.find(id);
    if (it == peer->streams_.end()) return;
    InMemoryStream* p = it->second.get();
    if (p->write_reset_ || p->fin_delivered_) return;
    p->write_reset_ = true;  // QUIC answers STOP_SENDING with RESET_STREAM(code)
    p->unsent_.clear();
    if (p->visitor_) p->visitor_->OnStopSendingReceived(code);
  });
}

// ----------------------------------------------------------------------------- InMemorySession
InMemorySession::InMemorySession(InMemorySessionPair* pair, bool is_client,
                                 const InMemoryOptions& opts)
    : pair_(pair), is_client_(is_client), opts_(opts) {}

InMemorySession::~InMemorySession() = default;

InMemorySession* InMemorySession::peer() {
  return is_client_ ? pair_->server_.get() : pair_->client_.get();
}

void InMemorySession::Post(std::function<void()> fn) { pair_->events_.push_back(std::move(fn)); }

Stream* InMemorySession::AcceptIncomingBidirectionalStream() {
  while (!incoming_bidi_.empty()) {
    StreamId id = incoming_bidi_.front();
    incoming_bidi_.pop_front();
    if (auto it = streams_.find(id); it != streams_.end()) return it->second.get();
  }
  return nullptr;
}

Stream* InMemorySession::AcceptIncomingUnidirectionalStream() {
  while (!incoming_uni_.empty()) {
    StreamId id = incoming_uni_.front();
    incoming_uni_.pop_front();
    if (auto it = streams_.find(id); it != streams_.end()) return it->second.get();
  }
  return nullptr;
}

bool InMemorySession::CanOpenNextOutgoingBidirectionalStream() {
  return open_ && next_bidi_ < peer_max_bidi_;
}
bool InMemorySession::CanOpenNextOutgoingUnidirectionalStream() {
  return open_ && next_uni_ < peer_max_uni_;
}

InMemoryStream* InMemorySession::Open(bool bidi) {
  if (!open_) return nullptr;
  uint64_t& next = bidi ? next_bidi_ : next_uni_;
  if (next >= (bidi ? peer_max_bidi_ : peer_max_uni_)) return nullptr;
  StreamId id = (next++ << 2) | (bidi ? 0 : 2) | (is_client_ ? 0 : 1);
  auto s = std::make_unique<InMemoryStream>(this, id);
  InMemoryStream* p = s.get();
  streams_[id] = std::move(s);
  return p;
}

Stream* InMemorySession::OpenOutgoingBidirectionalStream() { return Open(true); }
Stream* InMemorySession::OpenOutgoingUnidirectionalStream() { return Open(false); }

Stream* InMemorySession::GetStreamById(StreamId id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

InMemoryStream* InMemorySession::PeerStream(StreamId id) {
  if (!open_) return nullptr;
  if (auto it = streams_.find(id); it != streams_.end()) return it->second.get();
  // Peer-opened streams appear on first use; ids below the highest seen were finished already.
  bool bidi = (id & 2) == 0;
  uint64_t& seen = bidi ? next_bidi_ : next_uni_;  // reused as "peer streams seen" counter
  (void)seen;
  auto s = std::make_unique<InMemoryStream>(this, id);
  InMemoryStream* p = s.get();
  streams_[id] = std::move(s);
  if (bidi) {
    incoming_bidi_.push_back(id);
    Post([this] {
      if (visitor_ && open_) visitor_->OnIncomingBidirectionalStreamAvailable();
    });
  } else {
    incoming_uni_.push_back(id);
    Post([this] {
      if (visitor_ && open_) visitor_->OnIncomingUnidirectionalStreamAvailable();
    });
  }
  return p;
}

Status InMemorySession::SendOrQueueDatagram(ByteSpan datagram) {
  if (!open_) return Err(TransportError::kSessionClosed, "session is not open");
  size_t max = GetMaxDatagramSize();
  if (max == 0) return Err(TransportError::kDatagramsDisabled, "datagrams disabled");
  if (datagram.size() > max) {
    return Err(TransportError::kDatagramTooLarge, "datagram too large", Code::kInvalidArgument);
  }
  if (opts_.drop_datagrams) return Status::Ok();
  InMemorySession* p = peer();
  std::vector<uint8_t> copy(datagram.begin(), datagram.end());
  Post([p, copy = std::move(copy)] {
    if (p->visitor_ && p->open_)
      p->visitor_->OnDatagramReceived(ByteSpan(copy.data(), copy.size()));
  });
  return Status::Ok();
}

size_t InMemorySession::GetMaxDatagramSize() const {
  if (!open_) return 0;
  const InMemorySession* p = is_client_ ? pair_->server_.get() : pair_->client_.get();
  return std::min(opts_.max_datagram_size, p->opts_.max_datagram_size);
}

void InMemorySession::CloseSession(ErrorCode code, std::string_view reason) {
  if (!open_) return;
  InMemorySession* p = peer();
  std::string r(reason);
  for (InMemorySession* s : {this, p}) {
    s->open_ = false;
    bool by_peer = s != this;
    CloseInfo info{CloseInfo::Kind::kApplication, by_peer, code, r};
    s->Post([s, info] {
      auto streams = std::move(s->streams_);
      s->streams_.clear();
      for (auto& [id, st] : streams) {
        if (st->visitor_) st->visitor_->OnStreamClosed();
      }
      if (s->visitor_) s->visitor_->OnSessionClosed(info);
    });
  }
}

// ------------------------------------------------------------------------- InMemorySessionPair
InMemorySessionPair::InMemorySessionPair(const InMemoryOptions& client_opts,
                                         const InMemoryOptions& server_opts) {
  client_ = std::make_unique<InMemorySession>(this, true, client_opts);
  server_ = std::make_unique<InMemorySession>(this, false, server_opts);
  client_->peer_max_bidi_ = server_opts.max_incoming_bidi;
  client_->peer_max_uni_ = server_opts.max_incoming_uni;
  server_->peer_max_bidi_ = client_opts.max_incoming_bidi;
  server_->peer_max_uni_ = client_opts.max_incoming_uni;
}

InMemorySessionPair::~InMemorySessionPair() = default;

void InMemorySessionPair::Connect() {
  for (InMemorySession* s : {client_.get(), server_.get()}) {
    s->open_ = true;
    events_.push_back([s] {
      if (s->visitor_) s->visitor_->OnSessionReady();
    });
  }
}

size_t InMemorySessionPair::MoveStream(InMemorySession* s, InMemoryStream* w, size_t max,
                                       bool* progress) {
  InMemorySession* peer = s->peer();
  if (w->write_reset_ || w->fin_delivered_ || !w->HasWriteSide()) return 0;
  if (w->unsent_.empty() && !w->fin_queued_) return 0;
  if (s->opts_.hold && s->opts_.hold(w->id_)) return 0;
  InMemoryStream* r = peer->PeerStream(w->id_);
  if (!r) return 0;
  if (r->read_finished_) {  // peer stopped reading; bytes vanish (STOP_SENDING is coming)
    w->unsent_.clear();
    return 0;
  }
  size_t credit = r->consumed_ + peer->opts_.stream_window - r->received_;
  size_t n = std::min({credit, w->unsent_.size(), max});
  if (n > 0) {
    r->recv_.insert(r->recv_.end(), w->unsent_.begin(),
                    w->unsent_.begin() + static_cast<std::ptrdiff_t>(n));
    w->unsent_.erase(w->unsent_.begin(), w->unsent_.begin() + static_cast<std::ptrdiff_t>(n));
    r->received_ += n;
    *progress = true;
  }
  bool fin_now = w->unsent_.empty() && w->fin_queued_;
  if (fin_now) {
    r->fin_received_ = true;
    w->fin_delivered_ = true;
    *progress = true;
    StreamId id = w->id_;
    s->Post([s, id] {
      if (auto it = s->streams_.find(id); it != s->streams_.end() && it->second->visitor_) {
        it->second->visitor_->OnWriteSideInDataRecvdState();
      }
    });
  }
  if (n > 0 || fin_now) {
    StreamId id = w->id_;
    peer->Post([peer, id] {
      if (auto it = peer->streams_.find(id); it != peer->streams_.end() && it->second->visitor_) {
        it->second->visitor_->OnCanRead();
      }
    });
  }
  if (n > 0 && w->want_can_write_ && w->CanWrite()) {
    w->want_can_write_ = false;
    StreamId id = w->id_;
    s->Post([s, id] {
      if (auto it = s->streams_.find(id); it != s->streams_.end() && it->second->visitor_) {
        it->second->visitor_->OnCanWrite();
      }
    });
  }
  return n;
}

bool InMemorySessionPair::Pump() {
  bool moved = false;
  for (InMemorySession* s : {client_.get(), server_.get()}) {
    if (!s->open_) continue;
    std::vector<InMemoryStream*> writers;
    for (auto& [id, st] : s->streams_) writers.push_back(st.get());
    const size_t capacity = s->opts_.send_capacity_per_pump;
    if (capacity == 0) {
      for (InMemoryStream* w : writers) MoveStream(s, w, SIZE_MAX, &moved);
      continue;
    }
    // Lower send order first; equal orders share the budget in kSendQuantum slices.
    std::stable_sort(writers.begin(), writers.end(), [](InMemoryStream* a, InMemoryStream* b) {
      return a->send_order_ < b->send_order_;
    });
    size_t budget = capacity;
    for (size_t i = 0; i < writers.size() && budget > 0;) {
      size_t j = i;
      while (j < writers.size() && writers[j]->send_order_ == writers[i]->send_order_) ++j;
      for (;;) {
        bool round = false;
        for (size_t k = i; k < j && budget > 0; ++k) {
          bool progress = false;
          budget -= MoveStream(s, writers[k], std::min(budget, kSendQuantum), &progress);
          round |= progress;
        }
        moved |= round;
        if (!round || budget == 0) break;
      }
      i = j;
    }
  }
  return moved;
}

void InMemorySessionPair::Sweep() {
  for (InMemorySession* s : {client_.get(), server_.get()}) {
    InMemorySession* peer = s->peer();
    for (auto it = s->streams_.begin(); it != s->streams_.end();) {
      InMemoryStream* st = it->second.get();
      if (!st->WriteDone() || !st->ReadDone()) {
        ++it;
        continue;
      }
      if (st->visitor_) st->visitor_->OnStreamClosed();
      bool remote = !st->IsLocallyInitiated();
      bool bidi = st->IsBidirectional();
      it = s->streams_.erase(it);
      if (remote && s->open_) {  // return stream-count credit to the opener
        if (bidi) {
          ++peer->peer_max_bidi_;
          peer->Post([peer] {
            if (peer->visitor_ && peer->open_)
              peer->visitor_->OnCanCreateNewOutgoingBidirectionalStream();
          });
        } else {
          ++peer->peer_max_uni_;
          peer->Post([peer] {
            if (peer->visitor_ && peer->open_)
              peer->visitor_->OnCanCreateNewOutgoingUnidirectionalStream();
          });
        }
      }
    }
  }
}

size_t InMemorySessionPair::RunUntilIdle() {
  size_t delivered = 0;
  // Bound the loop: a visitor that writes forever on every event would otherwise never idle.
  constexpr size_t kMaxEvents = 10'000'000;
  for (;;) {
    const size_t round = RunRound(kMaxEvents - delivered);
    delivered += round & ~kRoundMoved;
    if (round == 0) break;
    if (delivered >= kMaxEvents) break;
  }
  return delivered;
}

size_t InMemorySessionPair::RunRound(size_t max_events) {
  const bool moved = Pump();
  size_t delivered = 0;
  while (!events_.empty() && delivered < max_events) {
    auto fn = std::move(events_.front());
    events_.pop_front();
    fn();
    ++delivered;
  }
  Sweep();
  return delivered | (moved ? kRoundMoved : 0);
}

size_t InMemorySessionPair::RunOneRound() { return RunRound(SIZE_MAX) != 0 ? 1 : 0; }

}  // namespace kvcs::transport::test
