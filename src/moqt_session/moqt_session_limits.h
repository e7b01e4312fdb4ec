// Named bounds of the MOQT session and the in-memory track store, each with its reason.
//
// Every per-session table and buffer that a peer can make grow is checked against one of these
// before it grows; exceeding a peer-driven bound closes the session (or refuses the request)
// instead of allocating. Track-store bounds are defaults for TrackOptions and can be lowered or
// raised per track by the application.
#ifndef KVCS_MOQT_SESSION_MOQT_SESSION_LIMITS_H_
#define KVCS_MOQT_SESSION_MOQT_SESSION_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace kvcs::moqt {

// Requests a peer may have open against us at once (subscriptions, fetches, namespace
// subscriptions, ...). QUIC bidi stream credit is the real limit (one stream per request); this
// caps our tables even if the transport grants more.
inline constexpr size_t kMaxIncomingRequests = 4096;
// Requests we may have open at once (our own calls). Same reasoning, our side.
inline constexpr size_t kMaxOutgoingRequests = 4096;
// Request IDs the peer used but left non-contiguous (out-of-order arrival on separate streams).
// Legitimate gaps are bounded by the peer's concurrent requests, except IDs that never arrive (a
// request stream reset before any byte reached us, a first message we could not parse): beyond
// this many, the lowest missing IDs are given up (treated as used) instead of closing.
inline constexpr size_t kMaxRequestIdGaps = 4096;
// Data streams whose Track Alias is not known yet (the data raced ahead of SUBSCRIBE_OK). They
// are held unread (flow control stops the peer) until the alias is known; beyond this many they
// are refused with STOP_SENDING.
inline constexpr size_t kMaxParkedDataStreams = 64;
// One object's payload reassembled for delivery to the application. KVCS objects are token
// blocks (tens of KiB to a few MiB); 64 MiB keeps a hostile peer from making us buffer more.
inline constexpr uint64_t kMaxObjectPayloadBytes = uint64_t{64} << 20;
// All payload bytes being reassembled in one session (sum over its data streams).
inline constexpr uint64_t kMaxReassemblyBytesPerSession = uint64_t{256} << 20;
// Namespaces one SUBSCRIBE_NAMESPACE reply lists, and namespaces a session keeps as published
// to it by the peer.
inline constexpr size_t kMaxNamespacesPerSession = 4096;
// Answers queued on one peer request stream because the peer does not read them (our send
// buffer is full). Beyond this we stop reading that request stream, so QUIC flow control stops a
// peer that floods REQUEST_UPDATEs without reading the REQUEST_OKs; reading resumes when the
// answers drain. 64 KiB holds one maximal control message (65 546 bytes) plus change.
inline constexpr size_t kMaxRequestStreamBacklogBytes = 64 << 10;
// NAMESPACE / NAMESPACE_DONE messages queued for a SUBSCRIBE_NAMESPACE subscriber that does not
// read them (they come from our TrackSource, not from the peer, so we cannot push back). Beyond
// this the request stream is reset with EXCESSIVE_LOAD (the draft allows resetting a namespace
// subscription that flow control blocks). 1 MiB: the initial listing of kMaxNamespacesPerSession
// typical namespaces fits.
inline constexpr size_t kMaxNamespaceBacklogBytes = 1 << 20;
// Aliases of ended subscriptions remembered so late data streams for them are refused at once
// (STOP_SENDING) instead of parked.
inline constexpr size_t kMaxRetiredAliases = 1024;

// Track store defaults (TrackOptions). A track keeps whole groups; the oldest are evicted first.
// KVCS: one group per layer (a few dozen), one object per token block.
inline constexpr size_t kDefaultMaxGroupsPerTrack = 4096;
inline constexpr uint64_t kDefaultMaxBytesPerTrack = uint64_t{1} << 30;
// Tracks one TrackStore holds (one track per component/codec/segment in KVCS).
inline constexpr size_t kMaxTracksPerStore = 65536;
// Namespaces announced into a TrackStore (PUBLISH_NAMESPACE from peers).
inline constexpr size_t kMaxAnnouncedNamespaces = 4096;

// Default time a subscriber keeps a subscription after PUBLISH_DONE while it waits for the
// announced number of data streams and for a fill it asked for (draft: at least the largest
// delivery timeout). 10 s matches the control-message timeout guidance seen in implementations.
inline constexpr uint64_t kDefaultDoneStreamWaitMs = 10'000;
// Default time the publisher of a PUBLISH holds its PUBLISH_DONE after PUBLISH_OK for the
// subscriber's fill request (a subscriber that wants no fill never sends one).
inline constexpr uint64_t kDefaultPublishDoneWaitMs = 10'000;

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_SESSION_LIMITS_H_
