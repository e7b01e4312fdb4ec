/* kvcs.h: the C ABI of kvcs for serving engines (libkvcs.so; docs/protocols/engine-api.md).
 *
 * An engine about to prefill a prompt asks kvcs how many leading tokens it can load
 * (kvcs_lookup), loads their KV layer by layer straight into its own paged KV buffers
 * (kvcs_load_*), and saves the KV it computes layer by layer (kvcs_save_*), stored with one
 * aggregated PUT when the request finishes.
 *
 * Model of the cache. A client is configured with a KVSP Compatibility Descriptor (model,
 * revisions, layers, kv heads, head dim, dtype, tokens per block) and a 32-byte scope key (the
 * tenant; NULL = the public scope). Tokens are cut into blocks of `block_tokens`; only full blocks
 * are cached. Block i of a prompt is named by the KVSP Block Key chain over tokens[0, (i+1)B), so a
 * block is reusable only after the same prefix, in the same scope, for the same descriptor.
 *
 * Engine buffers (kvcs_paged_layout). Per layer the engine has one K and one V buffer (pointer +
 * size in bytes). Token t (0 <= t < B) of kv head h of engine block `b` starts at byte
 *     b * block_stride + t * token_stride + h * head_stride
 * of the buffer and holds head_dim contiguous elements of the descriptor's dtype. This covers
 * vLLM's [num_blocks][block_size][kv_heads][head_dim] layout, a head-major
 * [num_blocks][kv_heads][block_size][head_dim] one, or one contiguous [T][kv_heads][head_dim]
 * tensor (block_stride = B * token_stride, block ids 0, 1, ...). Every call checks that every
 * byte it will touch lies inside the buffer it was given (strides >= 0; the last element of the
 * highest block id fits in the size), before touching anything: kvcs never writes outside the
 * caller's buffers.
 *
 * Errors. Every function returns a kvcs_status (KVCS_OK = 0) or, for constructors, NULL on
 * failure; kvcs_last_error() then describes the failure. No C++ exception crosses this ABI.
 *
 * Threads. A kvcs_client is thread-safe: any thread may call kvcs_lookup, kvcs_load_start and
 * kvcs_save_begin at once (the client keeps a pool of store connections). A kvcs_load is
 * thread-safe except kvcs_load_free: a loader thread writes into the destination buffers in the
 * background, and layer l's bytes may be read only after kvcs_load_wait_layer(l) returned.
 * A kvcs_save is used by one thread at a time. Free a handle once, after every other call on it
 * returned; free loads and saves before their client. kvcs_last_error() is per thread.
 *
 * Transports. The store over HTTP (store_url), and on the same host through a shared buffer
 * (shm_socket: the store's Unix socket, its `kvcs store --shm-socket`); MOQT through a relay
 * (relay_url: a `kvcs relay`, docs/protocols/kvcs-stream.md). With a relay_url, lookups and loads
 * go through the relay: a lookup finds the publication of the longest prefix of the prompt
 * (publications this client made, else discovery at the relay), a load retrieves it (live while
 * it is produced, or completed), verifies every manifest and object and writes each layer as it
 * is verified; a save of a prompt from block 0 is published live, layer by layer as
 * kvcs_save_layer is called, to the relay, and with a store_url too it is also stored with one
 * aggregated PUT at the end. The clients of a process that name the same relay_url (with the same
 * TLS settings and producer key) share one MOQT session and what it knows, so a lookup on one
 * finds what a save on another published; it keeps their publications in memory while one of
 * them lives (the relay takes them from it on demand). With an index_url, a lookup asks the
 * index service first (the longest prefix of the prompt's Block Keys any holder registered;
 * kvcs_lookup_source names the holder), and the relay or the store only when the index cannot
 * answer (unreachable, refused: within 2 s).
 */
#ifndef KVCS_KVCS_H_
#define KVCS_KVCS_H_

#include <stddef.h>
#include <stdint.h>

#if defined(KVCS_BUILDING_LIBRARY)
#define KVCS_API __attribute__((visibility("default")))
#else
#define KVCS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kvcs_status {
  KVCS_OK = 0,
  KVCS_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, bad descriptor, bad URL, wrong length */
  KVCS_ERR_OUT_OF_BOUNDS = 2,    /* a layout or block id that would touch bytes outside a buffer */
  KVCS_ERR_UNKNOWN_LAYER = 3,    /* a layer number >= the descriptor's layers */
  KVCS_ERR_FINISHED = 4,         /* the handle was already finished */
  KVCS_ERR_CANCELLED = 5,        /* the load was cancelled before this layer arrived */
  KVCS_ERR_TRANSPORT = 6,        /* the store or relay could not be reached or answered an error */
  KVCS_ERR_BLOCKS_FAILED = 7,    /* some blocks of a layer failed (listed); the rest are in place */
  KVCS_ERR_STATE = 8,    /* a call out of order (e.g. finishing a save with layers missing) */
  KVCS_ERR_NOT_YET = 9,  /* a transport not implemented yet (none today; kept for the ABI) */
  KVCS_ERR_INTERNAL = 10 /* out of memory or a bug; the handle should be freed */
} kvcs_status;

/* Stable name of a status ("KVCS_ERR_OUT_OF_BOUNDS"); "KVCS_UNKNOWN" for other values. */
KVCS_API const char* kvcs_status_name(int status);
/* What the last failing call on this thread said; "" if none. Valid until the next kvcs call on
 * this thread. */
KVCS_API const char* kvcs_last_error(void);

/* The KVSP Compatibility Descriptor (shared/specs/kvsp.md §1). Strings are copied. */
typedef struct kvcs_descriptor {
  const char* model;         /* e.g. "meta-llama/Llama-3.1-8B" */
  const char* model_rev;     /* weights revision */
  const char* tokenizer_rev; /* tokenizer revision */
  const char* adapter;       /* NULL: none */
  const char* attn;          /* "mha" | "gqa" | "mqa" */
  uint32_t layers, kv_heads, head_dim;
  const char* kv_dtype; /* "fp32" | "fp16" | "bf16" (stored raw) */
  uint32_t block_tokens;
} kvcs_descriptor;

typedef struct kvcs_client_config {
  const char* store_url;  /* "http[s]://HOST:PORT"; NULL: no store (relay_url required) */
  const char* bucket;     /* NULL: "kvcache" */
  const char* access_key; /* SigV4 credentials of the store */
  const char* secret_key;
  const char* region;        /* NULL: "us-east-1" */
  int create_bucket;         /* nonzero: create the bucket (an existing one is fine) */
  const char* shm_socket;    /* NULL: HTTP bodies; else same-host delivery through this socket */
  uint64_t shm_buffer_bytes; /* 0: 64 MiB; must hold two layers of one load */
  const char* relay_url;     /* "moqt://HOST:PORT[/path]": the MOQT path; NULL: none */
  const char* index_url; /* KVSP Index Service "http[s]://HOST:PORT" (docs/protocols/kvsp-index.md);
                            NULL: none. Lookups ask it first (see kvcs_lookup) */
  const uint8_t* scope_key;     /* 32 bytes, or NULL for the public scope */
  const char* producer_key_pem; /* NULL, or a P-256/Ed25519 private key (PEM): MOQT manifests
                                   are signed with it and loads require manifests signed by it;
                                   NULL: unsigned manifests, accepted */
  kvcs_descriptor descriptor;
  /* Scheduling inputs sent with every load (docs/protocols/objectcache-aggregated.md §3): the
   * engine's compute time per layer and the stall per layer it tolerates, in microseconds; a store
   * under --bandwidth-cap shares its bandwidth by them. 0: not given. */
  uint64_t compute_us_per_layer;
  uint64_t stall_target_us;
  /* TLS of the relay: a PEM CA bundle (NULL: the system trust store), or relay_insecure nonzero
   * to accept any certificate (DEVELOPMENT ONLY: a `kvcs relay` with its dev certificate). */
  const char* relay_ca_file;
  int relay_insecure;
  /* The index service's bearer token (`kvcs token`, allowing lookup); NULL: none sent. Added
   * after the fields above: zero-initialize the whole struct. */
  const char* index_token;
  /* What recomputing costs the engine: nanoseconds to compute one token through one layer (its
   * prefill's per-layer time over its tokens). It bounds a MOQT load (relay_url): a load of N
   * blocks of B tokens over L layers ends by max(1 s, N * B * L * recompute_ns_per_token_layer)
   * after its retrieval starts (once kvcs_load_start found the publication and asked the index
   * for holders), the time recomputing the loaded prefix would take; the blocks not
   * verified by then are reported per block as KVCS_SOURCE_RECOMPUTE, and kvcs_load_wait_layer
   * returns KVCS_ERR_BLOCKS_FAILED for their layers with a message that says "deadline".
   * 0: not given; the load then ends by 2 s + its bytes at 10 MB/s (everything is expected to be
   * delivered). Loads from the store alone have no deadline. Given, it also decides whether a
   * load (any path) is started at all: the client measures each path's delivery rate (store
   * over HTTP, same host, MOQT relay: the verified bytes recent loads delivered per second, an
   * exponentially weighted average; unknown until a load over the path ended), and
   * kvcs_load_start of a load whose bytes at that rate would take longer than recomputing its
   * blocks (N * B * L * recompute_ns_per_token_layer, no floor) starts nothing and returns a
   * load on which every block of every layer is failed (kvcs_load_wait_layer and
   * kvcs_load_finish: KVCS_ERR_BLOCKS_FAILED, "predicted load X ms > recompute Y ms ...";
   * kvcs_load_block_sources: KVCS_SOURCE_RECOMPUTE). Every 16th such load in a row, or one 60 s
   * after the path's last tried load, is tried anyway, so the rate recovers. Added after
   * index_token: callers zero-initialize the whole struct. */
  uint64_t recompute_ns_per_token_layer;
  /* TLS of an https store_url ("https://HOST:PORT", `kvcs store --tls-cert`): a PEM CA bundle or
   * the store's self-signed certificate (NULL: the system trust store), or store_insecure nonzero
   * to accept any certificate (DEVELOPMENT ONLY). The certificate must name the URL's host. Used
   * for the store's loads, saves and lookups and for a MOQT load's recovery from the store. Added
   * after recompute_ns_per_token_layer: callers zero-initialize the whole struct. */
  const char* store_ca_file;
  int store_insecure;
} kvcs_client_config;

typedef struct kvcs_client kvcs_client;

/* Creates a client; NULL on failure (kvcs_last_error; *status gets the code when non-NULL).
 * Contacts the store only if create_bucket is set. */
KVCS_API kvcs_client* kvcs_client_create(const kvcs_client_config* config, int* status);
/* NULL is ignored. */
KVCS_API void kvcs_client_free(kvcs_client* client);

/* Number of full blocks of n_tokens tokens (n_tokens / block_tokens). */
KVCS_API kvcs_status kvcs_block_count(const kvcs_client* client, size_t n_tokens, size_t* out);
/* The 32-byte Block Key of block `index` (0-based) of tokens, and the store object key of that
 * block ("kvsp/<scope>/<compat>/<key>.raw", NUL-terminated: 204 bytes) when key_out is
 * non-NULL. */
KVCS_API kvcs_status kvcs_block_key(const kvcs_client* client, const uint32_t* tokens,
                                    size_t n_tokens, size_t index, uint8_t key[32], char* key_out,
                                    size_t key_out_len);

/* How many leading tokens are loadable: asks the store which of the prompt's blocks it holds,
 * block by block from the first, and stops at the first it does not (with a relay_url: the blocks
 * of the longest prefix a publication serves, see Transports; with an index_url: the index's
 * longest registered prefix, whichever holder has it). *loadable_tokens is a multiple of
 * block_tokens. Blocks before `first_block` are assumed held (the engine has them). */
KVCS_API kvcs_status kvcs_lookup(kvcs_client* client, const uint32_t* tokens, size_t n_tokens,
                                 size_t first_block, size_t* loadable_tokens);

/* kvcs_lookup, also saying where the loadable tokens are: `where` (where_len bytes, NUL-terminated,
 * truncated to fit; may be NULL when where_len is 0) gets "relay URL publication
 * kvcs-1/<scope>/<compat>/<anchor>/<pub>" (the MOQT publication a load would retrieve), "index
 * URL holder HOLDER" (the index's first holder of the last block of the prefix),
 * "store URL bucket BUCKET", or "" when nothing beyond first_block is loadable. */
KVCS_API kvcs_status kvcs_lookup_source(kvcs_client* client, const uint32_t* tokens,
                                        size_t n_tokens, size_t first_block,
                                        size_t* loadable_tokens, char* where, size_t where_len);

/* Where a layer's K and V live in the engine (see the file comment). Strides are in bytes. */
typedef struct kvcs_paged_layout {
  int64_t block_stride, token_stride, head_stride;
} kvcs_paged_layout;
typedef struct kvcs_layer_buffers {
  void* k;
  size_t k_bytes;
  void* v;
  size_t v_bytes;
} kvcs_layer_buffers;

typedef struct kvcs_load kvcs_load;

/* Starts loading blocks [first_block, n_tokens / B) of the prompt `tokens` into the engine's
 * buffers: layers[l] (descriptor.layers entries) for every layer, block first_block + i into
 * engine block block_ids[i] (n_block_ids = n_tokens / B - first_block, >= 1). Every argument is
 * checked first; then a loader thread streams the layers from the store and writes each block of
 * each layer as it arrives (after its digest verified; over MOQT a layer is written once every
 * block of it verified, and when the publication ends the verified blocks of layers that did not
 * complete, so a corrupt or missing object fails only its block; with a store_url too, those
 * blocks are then recovered from the store's KVSP endpoints (kvcs store's /_kvsp, which serves
 * the "kvcache" bucket), and a prompt no publication at the relay serves is loaded from the store
 * whole; with an index_url, after the store, from the KVSP HTTP holders the index lists for the
 * load's blocks (asked once, when the load starts: one index round trip, at most 2 s); all of it
 * within the load's deadline, see recompute_ns_per_token_layer; see kvcs_load_block_sources).
 * The buffers must stay valid until kvcs_load_free returns. NULL on failure. */
KVCS_API kvcs_load* kvcs_load_start(kvcs_client* client, const uint32_t* tokens, size_t n_tokens,
                                    size_t first_block, const uint32_t* block_ids,
                                    size_t n_block_ids, const kvcs_layer_buffers* layers,
                                    size_t n_layers, const kvcs_paged_layout* layout, int* status);
/* Blocks until layer `layer` is in place or failed. KVCS_OK: every block of the layer is in its
 * engine block. KVCS_ERR_BLOCKS_FAILED: the blocks listed in failed[0, *n_failed) (indices into
 * block_ids, ascending; at most failed_cap written, *n_failed is the full count) were not loaded
 * (missing, corrupt, the transfer broke, over MOQT not verified by the load's deadline, or not
 * started because predicted slower than recomputing, see recompute_ns_per_token_layer:
 * kvcs_last_error says why, "deadline" and "predicted load" for the last two); the others are
 * in place.
 * KVCS_ERR_CANCELLED: cancelled before this layer (every block is listed as failed).
 * KVCS_ERR_UNKNOWN_LAYER, KVCS_ERR_FINISHED. failed may be NULL when failed_cap is 0. */
KVCS_API kvcs_status kvcs_load_wait_layer(kvcs_load* load, uint32_t layer, uint32_t* failed,
                                          size_t failed_cap, size_t* n_failed);
/* Where each block of a layer came from (kvcs_block_source values, one byte per block: indices
 * into block_ids; at most sources_cap written, *n_sources gets the full count). Blocks until
 * the layer is in place or failed, like kvcs_load_wait_layer, and also answers after
 * kvcs_load_finish. KVCS_SOURCE_STORE: the store (HTTP or same host; with a relay_url and a
 * store_url, a block the relay did not deliver, recovered from the store); KVCS_SOURCE_RELAY:
 * the MOQT publication through the relay; KVCS_SOURCE_HOLDER: a block the relay did not deliver,
 * recovered from a KVSP HTTP holder the index lists for the load's blocks (with an index_url);
 * KVCS_SOURCE_RECOMPUTE: no source had it in time (the block is among the layer's failed blocks;
 * see recompute_ns_per_token_layer for a MOQT load's deadline). Errors: KVCS_ERR_INVALID_ARGUMENT
 * (NULL load, or NULL sources with sources_cap > 0), KVCS_ERR_UNKNOWN_LAYER. */
typedef enum kvcs_block_source {
  KVCS_SOURCE_PENDING = 0, /* not decided (never returned) */
  KVCS_SOURCE_STORE = 1,
  KVCS_SOURCE_RELAY = 2,
  KVCS_SOURCE_RECOMPUTE = 3,
  KVCS_SOURCE_HOLDER = 4 /* a KVSP HTTP holder the index listed (MOQT loads with an index_url) */
} kvcs_block_source;
KVCS_API kvcs_status kvcs_load_block_sources(kvcs_load* load, uint32_t layer, uint8_t* sources,
                                             size_t sources_cap, size_t* n_sources);
/* Stops the loader: once it returns, nothing more is written into the buffers; layers not yet
 * written stay untouched and report KVCS_ERR_CANCELLED (a layer being written when it is called
 * completes first, so this may wait for one layer's copy). */
KVCS_API kvcs_status kvcs_load_cancel(kvcs_load* load);
/* Waits for the loader thread to end (nothing is written into the buffers after it returns).
 * KVCS_OK when every layer of every block arrived, else the first failure's status. Later calls
 * on the handle (but free) give KVCS_ERR_FINISHED. */
KVCS_API kvcs_status kvcs_load_finish(kvcs_load* load);
/* Cancels, waits for the loader, frees. NULL is ignored. */
KVCS_API void kvcs_load_free(kvcs_load* load);

typedef struct kvcs_save kvcs_save;

/* Begins saving blocks [first_block, n_tokens / B) of the prompt `tokens` (block first_block + i
 * taken from engine block block_ids[i]). NULL on failure. */
KVCS_API kvcs_save* kvcs_save_begin(kvcs_client* client, const uint32_t* tokens, size_t n_tokens,
                                    size_t first_block, const uint32_t* block_ids,
                                    size_t n_block_ids, const kvcs_paged_layout* layout,
                                    int* status);
/* Copies layer `layer` of every saved block out of the engine's buffers (bounds-checked); the
 * engine may reuse them when it returns. Each layer once. */
KVCS_API kvcs_status kvcs_save_layer(kvcs_save* save, uint32_t layer,
                                     const kvcs_layer_buffers* buffers);
/* Once every layer was saved: builds one KVSP container per block and stores them all with one
 * aggregated PUT (with the prefix record when first_block is 0). *stored (may be NULL) gets the
 * blocks the store accepted. With a relay_url: ends the publication (its manifest's End of Track)
 * and waits for the relay to have accepted its namespace; *stored then counts the published
 * blocks when there is no store (0 for a save from first_block > 0, which is not published).
 * KVCS_ERR_STATE when layers are missing; KVCS_ERR_FINISHED after the first call. */
KVCS_API kvcs_status kvcs_save_finish(kvcs_save* save, size_t* stored);
/* NULL is ignored; an unfinished save is dropped (nothing stored). */
KVCS_API void kvcs_save_free(kvcs_save* save);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KVCS_KVCS_H_ */
