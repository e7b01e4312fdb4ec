// MoqtLink: the engine client's MOQT side, the path through a relay
// (kvcs_client_config::relay_url). One thread runs an io_context with a MoqtClient session to the
// relay (connected on first use, reconnected when it ended) and a TrackStore holding this client's
// publications, which it announces to the relay (PUBLISH_NAMESPACE, again after a reconnect); the
// relay subscribes to them on demand. Loads, saves and lookups on any thread hand their MOQT work
// to it (Call, Post) and run the kvcs_stream Publisher, Discovery and Retrieval there, ticked every
// 10 ms. Publications made here or found by discovery are remembered by Anchor Key, so that a load
// after a lookup does not discover again.
//
// THREADING: Call, Post, EnsureSession, FindPublication and WaitAnnounced from any thread but the
// link's; the members documented "link thread" only from tasks run by Call or Post (or callbacks
// they set up). The destructor stops the thread: every load and save using the link must be gone.
#ifndef KVCS_ENGINE_MOQT_LINK_H_
#define KVCS_ENGINE_MOQT_LINK_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "kvcs_stream/cache_identity.h"
#include "kvcs_stream/publisher.h"
#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_track_store.h"
#include "profile/cose.h"
#include "profile/namespace.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace kvcs::moqt {
class MoqtClient;
}  // namespace kvcs::moqt

namespace kvcs::engine {

struct MoqtLinkOptions {
  std::string relay_url;  // moqt://HOST:PORT[/path]
  std::string ca_file;    // empty: the system trust store
  bool insecure = false;  // DEVELOPMENT: accept any relay certificate
  uint64_t connect_timeout_ms = 5000;
  // Set: manifests are signed with it and loads require signed manifests of its public key.
  std::optional<profile::SigningKey> producer_key;
};

// A publication a lookup or load may use: its namespace, how many leading blocks of the prompt
// it serves, and its segment 0's blocks (more than `blocks` when the prompt diverges from the
// publication's after them: known only for this link's own publications, whose every Block Key
// it computed).
struct LinkPublication {
  profile::Namespace ns;
  uint64_t blocks = 0;
  uint64_t anchor_blocks = 0;
  bool complete = false;  // known ended (this link's own, closed): fetched rather than subscribed
};

class MoqtLink {
 public:
  // Checks the URL and starts the thread (connecting happens on first use).
  static Result<std::unique_ptr<MoqtLink>> Start(MoqtLinkOptions options);
  ~MoqtLink();
  MoqtLink(const MoqtLink&) = delete;
  MoqtLink& operator=(const MoqtLink&) = delete;

  // Runs fn() on the link thread and returns its result.
  template <typename F>
  auto Call(F&& fn) -> decltype(fn()) {
    using R = decltype(fn());
    std::packaged_task<R()> task(std::forward<F>(fn));
    std::future<R> f = task.get_future();
    Post([&task] { task(); });
    return f.get();
  }
  void Post(std::function<void()> fn);

  // Waits until the session to the relay completed SETUP, (re)connecting when there is none.
  // kTransport detail when it cannot be set up within connect_timeout_ms.
  Status EnsureSession();
  // The publication of the longest prefix of identity's blocks (at least min_blocks) that this
  // link made or knows, else found by discovery at the relay (SUBSCRIBE_NAMESPACE, kvcs_stream
  // Discovery); nullopt when there is none.
  Result<std::optional<LinkPublication>> FindPublication(const stream::CacheIdentity& identity,
                                                         uint64_t min_blocks);
  // Waits (at most connect_timeout_ms) for the relay's answer to the announcement of `ns`.
  Status WaitAnnounced(const profile::Namespace& ns);

  // ---- link thread only.
  moqt::MoqtSession* session();  // null while not set up
  moqt::TrackStore& store() { return store_; }
  const profile::KeySet& keys() const { return keys_; }
  const std::optional<profile::SigningKey>& producer_key() const { return options_.producer_key; }
  // Keeps `pub` (its tracks stay in the store, served to the relay), remembers it under every
  // Block Key of its segment 0 (`block_keys`) and announces its namespace.
  void AddPublication(std::unique_ptr<stream::Publisher> pub, std::span<const Digest> block_keys);
  // A publication of `anchor_blocks` blocks found elsewhere (discovery): under its Anchor Key.
  void Remember(const profile::Namespace& ns, uint64_t anchor_blocks);
  void Forget(const profile::Namespace& ns);
  // This link's publication `ns` was closed (its manifest ended).
  void MarkComplete(const profile::Namespace& ns);
  // fn runs every tick until RemoveTicker(id).
  uint64_t AddTicker(std::function<void()> fn);
  void RemoveTicker(uint64_t id);

 private:
  struct Callbacks;
  struct Announced {
    std::unique_ptr<stream::Publisher> pub;
    std::optional<Status> answer;  // guarded by mu_
  };
  explicit MoqtLink(MoqtLinkOptions options);
  void Connect();  // link thread
  void OnSetupComplete();
  void OnSessionClosed(uint64_t gen);
  void Announce(Announced& a);  // link thread
  void Tick();

  MoqtLinkOptions options_;
  profile::KeySet keys_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::thread thread_;
  moqt::TrackStore store_;
  std::unique_ptr<Callbacks> callbacks_;
  std::unique_ptr<moqt::MoqtClient> client_;  // link thread
  std::map<uint64_t, std::function<void()>> tickers_;
  uint64_t next_ticker_ = 1;
  std::vector<std::unique_ptr<Announced>> own_;  // link thread (answers under mu_)
  // By a Block Key: the publication serving the prompt up to that block; link thread.
  std::map<Digest, LinkPublication> remembered_;
  struct TimerBox;
  std::unique_ptr<TimerBox> timer_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;        // guarded by mu_: SETUP complete on the current session
  uint64_t session_gen_ = 0;  // guarded by mu_: sessions started
  bool ended_ = false;        // guarded by mu_: the current session ended
  std::string end_reason_;    // guarded by mu_
};

}  // namespace kvcs::engine

#endif  // KVCS_ENGINE_MOQT_LINK_H_
