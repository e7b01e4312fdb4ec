/* The engine C ABI (include/kvcs/kvcs.h) from a C program: every call and every error path,
 * against a real `kvcs store` process and a real `kvcs relay` that python/kvcs/dev_store.py
 * started (their addresses and keys in the KVCS_TEST_* environment). The store runs with a
 * bandwidth cap so that the cancelled load is cancelled midway (test_cancel). Exits 0 when every
 * check passed. */
#include <kvcs/kvcs.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, kvcs_last_error());                                                  \
      ++failures;                                                                         \
    }                                                                                     \
  } while (0)
#define CHECK_STATUS(expr, want)                                                              \
  do {                                                                                        \
    int got_ = (expr);                                                                        \
    if (got_ != (want)) {                                                                     \
      fprintf(stderr, "%s:%d: %s = %s, want %s (last error: %s)\n", __FILE__, __LINE__, #expr, \
              kvcs_status_name(got_), kvcs_status_name(want), kvcs_last_error());             \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

/* The small model of most checks: 3 layers, 2 kv heads of 8 fp32, blocks of 4 tokens. */
enum { kLayers = 3, kHeads = 2, kDim = 8, kB = 4, kEngineBlocks = 8 };
enum { kRow = kDim * 4, kTokenStride = kHeads * kRow, kBlockStride = kB * kTokenStride };
enum { kBufBytes = kEngineBlocks * kBlockStride };

static const char* env(const char* name) {
  const char* v = getenv(name);
  if (!v) {
    fprintf(stderr, "%s is not set: run me through python/kvcs/dev_store.py\n", name);
    exit(2);
  }
  return v;
}

static kvcs_client_config base_config(void) {
  kvcs_client_config c;
  memset(&c, 0, sizeof c);
  c.store_url = env("KVCS_TEST_STORE_URL");
  c.bucket = "engine-abi";
  c.access_key = env("KVCS_TEST_ACCESS_KEY");
  c.secret_key = env("KVCS_TEST_SECRET_KEY");
  c.create_bucket = 1;
  c.descriptor.model = "test/tiny-llama";
  c.descriptor.model_rev = "r1";
  c.descriptor.tokenizer_rev = "t1";
  c.descriptor.attn = "gqa";
  c.descriptor.layers = kLayers;
  c.descriptor.kv_heads = kHeads;
  c.descriptor.head_dim = kDim;
  c.descriptor.kv_dtype = "fp32";
  c.descriptor.block_tokens = kB;
  return c;
}

/* The value the engine computed for (layer, k/v, prompt block, token, head, d). */
static float value(int layer, int kv, int block, int t, int h, int d) {
  return (float)(layer * 100000 + kv * 50000 + block * 1000 + t * 100 + h * 10 + d);
}

/* Engine buffers of one layer in vLLM's layout [engine block][token][head][dim]. */
static void fill(float* k, float* v, int layer, const uint32_t* ids, int first, int n) {
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < kB; ++t)
      for (int h = 0; h < kHeads; ++h)
        for (int d = 0; d < kDim; ++d) {
          size_t at = (size_t)ids[i] * kB * kHeads * kDim + (size_t)(t * kHeads + h) * kDim + d;
          k[at] = value(layer, 0, first + i, t, h, d);
          v[at] = value(layer, 1, first + i, t, h, d);
        }
}

/* Points bufs[l] at layer l of the engine's K and V arrays (kBufBytes each). */
static void point_layers(kvcs_layer_buffers* bufs, float (*k)[kBufBytes / 4],
                         float (*v)[kBufBytes / 4]) {
  for (int l = 0; l < kLayers; ++l) {
    bufs[l].k = k[l];
    bufs[l].k_bytes = kBufBytes;
    bufs[l].v = v[l];
    bufs[l].v_bytes = kBufBytes;
  }
}

static void test_status_names(void) {
  CHECK(strcmp(kvcs_status_name(KVCS_OK), "KVCS_OK") == 0);
  CHECK(strcmp(kvcs_status_name(KVCS_ERR_NOT_YET), "KVCS_ERR_NOT_YET") == 0);
  CHECK(strcmp(kvcs_status_name(12345), "KVCS_UNKNOWN") == 0);
  CHECK(kvcs_last_error() != NULL);
}

static void test_create_errors(void) {
  int st = -1;
  CHECK(kvcs_client_create(NULL, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  kvcs_client_config c = base_config();
  c.store_url = NULL;
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  c = base_config();
  c.store_url = "ftp://127.0.0.1:1";
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  c = base_config();
  c.relay_url = "http://127.0.0.1:4443"; /* not moqt:// */
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(kvcs_last_error(), "relay") != NULL);
  c = base_config();
  c.index_url = "ftp://127.0.0.1:1";
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(kvcs_last_error(), "index_url") != NULL);
  c = base_config();
  c.descriptor.layers = 0;
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(kvcs_last_error(), "descriptor") != NULL);
  c = base_config();
  c.descriptor.model = NULL;
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  c = base_config();
  c.descriptor.kv_dtype = "fp8_e4m3";
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK(st != KVCS_OK);
  c = base_config();
  c.access_key = NULL;
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  c = base_config();
  c.producer_key_pem = "not a key";
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  /* Nothing listens on port 1: creating the bucket fails as a transport error. */
  c = base_config();
  c.store_url = "http://127.0.0.1:1";
  CHECK(kvcs_client_create(&c, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_TRANSPORT);
  kvcs_client_free(NULL);
  kvcs_load_free(NULL);
  kvcs_save_free(NULL);
}

static uint32_t tokens[14] = {11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34, 41, 42};

static void test_keys(kvcs_client* c) {
  size_t n = 0;
  CHECK_STATUS(kvcs_block_count(c, 14, &n), KVCS_OK);
  CHECK(n == 3);
  CHECK_STATUS(kvcs_block_count(NULL, 14, &n), KVCS_ERR_INVALID_ARGUMENT);
  uint8_t k1[32], k2[32];
  char name[256];
  CHECK_STATUS(kvcs_block_key(c, tokens, 14, 1, k1, name, sizeof name), KVCS_OK);
  CHECK(strncmp(name, "kvsp/", 5) == 0 && strstr(name, ".raw") != NULL);
  CHECK_STATUS(kvcs_block_key(c, tokens, 8, 1, k2, NULL, 0), KVCS_OK);
  CHECK(memcmp(k1, k2, 32) == 0); /* a block's key depends only on its prefix */
  CHECK_STATUS(kvcs_block_key(c, tokens, 14, 3, k1, NULL, 0), KVCS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(kvcs_block_key(c, tokens, 14, 0, k1, name, 10), KVCS_ERR_OUT_OF_BOUNDS);
  CHECK_STATUS(kvcs_block_key(c, NULL, 14, 0, k1, NULL, 0), KVCS_ERR_INVALID_ARGUMENT);
}

static void test_save(kvcs_client* c, float* k, float* v) {
  kvcs_paged_layout layout = {kBlockStride, kTokenStride, kRow};
  uint32_t ids[3] = {5, 2, 7};
  int st = -1;
  size_t n = 99;
  CHECK_STATUS(kvcs_lookup(c, tokens, 14, 0, &n), KVCS_OK);
  CHECK(n == 0);
  char where[256] = "x";
  CHECK_STATUS(kvcs_lookup_source(c, tokens, 14, 0, &n, where, sizeof where), KVCS_OK);
  CHECK(n == 0 && where[0] == 0);
  CHECK_STATUS(kvcs_lookup_source(c, tokens, 14, 0, &n, NULL, 8), KVCS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(kvcs_lookup(c, NULL, 14, 0, &n), KVCS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(kvcs_lookup(c, tokens, 14, 4, &n), KVCS_ERR_INVALID_ARGUMENT);

  CHECK(kvcs_save_begin(c, tokens, 14, 0, NULL, 3, &layout, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  CHECK(kvcs_save_begin(c, tokens, 14, 0, ids, 2, &layout, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  CHECK(kvcs_save_begin(c, tokens, 3, 0, ids, 0, &layout, &st) == NULL); /* no full block */
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  kvcs_paged_layout negative = {-kBlockStride, kTokenStride, kRow};
  CHECK(kvcs_save_begin(c, tokens, 14, 0, ids, 3, &negative, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_OUT_OF_BOUNDS);
  kvcs_paged_layout overlap = {kBlockStride, kRow, kRow}; /* token and head rows coincide */
  CHECK(kvcs_save_begin(c, tokens, 14, 0, ids, 3, &overlap, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_OUT_OF_BOUNDS);

  kvcs_save* s = kvcs_save_begin(c, tokens, 14, 0, ids, 3, &layout, &st);
  CHECK(s != NULL);
  CHECK_STATUS(st, KVCS_OK);
  if (!s) return;
  kvcs_layer_buffers b = {k, kBufBytes, v, kBufBytes};
  kvcs_layer_buffers small = {k, kBufBytes, v, 7 * kBlockStride}; /* engine block 7 is outside */
  kvcs_layer_buffers null_k = {NULL, kBufBytes, v, kBufBytes};
  CHECK_STATUS(kvcs_save_layer(s, kLayers, &b), KVCS_ERR_UNKNOWN_LAYER);
  CHECK_STATUS(kvcs_save_layer(s, 0, NULL), KVCS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(kvcs_save_layer(s, 0, &null_k), KVCS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(kvcs_save_layer(s, 0, &small), KVCS_ERR_OUT_OF_BOUNDS);
  CHECK_STATUS(kvcs_save_layer(NULL, 0, &b), KVCS_ERR_INVALID_ARGUMENT);
  for (int l = 0; l < kLayers; ++l) {
    fill(k, v, l, ids, 0, 3);
    CHECK_STATUS(kvcs_save_layer(s, (uint32_t)l, &b), KVCS_OK);
    if (l == 0) {
      CHECK_STATUS(kvcs_save_layer(s, 0, &b), KVCS_ERR_STATE); /* each layer once */
      size_t stored = 0;
      CHECK_STATUS(kvcs_save_finish(s, &stored), KVCS_ERR_STATE); /* layers 1, 2 missing */
    }
  }
  size_t stored = 0;
  CHECK_STATUS(kvcs_save_finish(s, &stored), KVCS_OK);
  CHECK(stored == 3);
  CHECK_STATUS(kvcs_save_finish(s, &stored), KVCS_ERR_FINISHED);
  CHECK_STATUS(kvcs_save_layer(s, 0, &b), KVCS_ERR_FINISHED);
  kvcs_save_free(s);

  CHECK_STATUS(kvcs_lookup(c, tokens, 14, 0, &n), KVCS_OK);
  CHECK(n == 12);
  CHECK_STATUS(kvcs_lookup_source(c, tokens, 14, 0, &n, where, sizeof where), KVCS_OK);
  CHECK(n == 12 && strncmp(where, "store http://127.0.0.1:", 23) == 0 &&
        strstr(where, " bucket engine-abi") != NULL);
  CHECK_STATUS(kvcs_lookup_source(c, tokens, 14, 0, &n, where, 6), KVCS_OK); /* truncated */
  CHECK(strcmp(where, "store") == 0);
  CHECK_STATUS(kvcs_lookup(c, tokens, 14, 2, &n), KVCS_OK);
  CHECK(n == 12);
  uint32_t other[14];
  memcpy(other, tokens, sizeof other);
  other[5] = 999; /* the second block differs: only the first is loadable */
  CHECK_STATUS(kvcs_lookup(c, other, 14, 0, &n), KVCS_OK);
  CHECK(n == 4);
}

/* Loads into a head-major layout [engine block][head][token][dim] at other block ids. */
static void test_load(kvcs_client* c) {
  enum { kHeadStride = kB * kRow };
  kvcs_paged_layout layout = {kBlockStride, kRow, kHeadStride};
  uint32_t ids[3] = {0, 3, 1};
  static float k[kLayers][kBufBytes / 4], v[kLayers][kBufBytes / 4];
  kvcs_layer_buffers bufs[kLayers];
  point_layers(bufs, k, v);
  int st = -1;
  CHECK(kvcs_load_start(c, tokens, 14, 0, ids, 3, NULL, kLayers, &layout, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  CHECK(kvcs_load_start(c, tokens, 14, 0, ids, 3, bufs, kLayers - 1, &layout, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  CHECK(kvcs_load_start(c, tokens, 14, 3, ids, 0, bufs, kLayers, &layout, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  uint32_t far_ids[3] = {0, 3, kEngineBlocks}; /* one block past the buffers */
  CHECK(kvcs_load_start(c, tokens, 14, 0, far_ids, 3, bufs, kLayers, &layout, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_OUT_OF_BOUNDS);
  kvcs_paged_layout huge = {INT64_MAX, kRow, kHeadStride}; /* offsets overflow */
  CHECK(kvcs_load_start(c, tokens, 14, 0, ids, 3, bufs, kLayers, &huge, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_OUT_OF_BOUNDS);
  kvcs_layer_buffers saved = bufs[1];
  bufs[1].v = NULL;
  CHECK(kvcs_load_start(c, tokens, 14, 0, ids, 3, bufs, kLayers, &layout, &st) == NULL);
  CHECK_STATUS(st, KVCS_ERR_INVALID_ARGUMENT);
  bufs[1] = saved;

  memset(k, 0xff, sizeof k);
  memset(v, 0xff, sizeof v);
  kvcs_load* ld = kvcs_load_start(c, tokens, 14, 0, ids, 3, bufs, kLayers, &layout, &st);
  CHECK(ld != NULL);
  CHECK_STATUS(st, KVCS_OK);
  if (!ld) return;
  uint32_t failed[4];
  size_t n_failed = 99;
  CHECK_STATUS(kvcs_load_wait_layer(ld, kLayers, failed, 4, &n_failed), KVCS_ERR_UNKNOWN_LAYER);
  CHECK_STATUS(kvcs_load_wait_layer(ld, 0, NULL, 4, &n_failed), KVCS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(kvcs_load_wait_layer(NULL, 0, failed, 4, &n_failed), KVCS_ERR_INVALID_ARGUMENT);
  for (int l = kLayers - 1; l >= 0; --l) { /* any order */
    CHECK_STATUS(kvcs_load_wait_layer(ld, (uint32_t)l, failed, 4, &n_failed), KVCS_OK);
    CHECK(n_failed == 0);
    int bad = 0;
    for (int i = 0; i < 3; ++i)
      for (int t = 0; t < kB; ++t)
        for (int h = 0; h < kHeads; ++h)
          for (int d = 0; d < kDim; ++d) {
            size_t at = (size_t)ids[i] * kB * kHeads * kDim + (size_t)(h * kB + t) * kDim + d;
            bad += k[l][at] != value(l, 0, i, t, h, d) || v[l][at] != value(l, 1, i, t, h, d);
          }
    CHECK(bad == 0);
    /* Engine blocks the load did not name are untouched. */
    const unsigned char* untouched = (const unsigned char*)k[l] + 2 * kBlockStride;
    CHECK(untouched[0] == 0xff && untouched[kBlockStride - 1] == 0xff);
  }
  CHECK_STATUS(kvcs_load_finish(ld), KVCS_OK);
  CHECK_STATUS(kvcs_load_finish(ld), KVCS_ERR_FINISHED);
  CHECK_STATUS(kvcs_load_wait_layer(ld, 0, failed, 4, &n_failed), KVCS_ERR_FINISHED);
  /* Where each block came from: answered after finish too. */
  uint8_t src[4] = {0, 0, 0, 0};
  size_t n_src = 99;
  CHECK_STATUS(kvcs_load_block_sources(ld, 1, src, 4, &n_src), KVCS_OK);
  CHECK(n_src == 3 && src[0] == KVCS_SOURCE_STORE && src[2] == KVCS_SOURCE_STORE);
  CHECK_STATUS(kvcs_load_block_sources(ld, 1, src, 1, &n_src), KVCS_OK); /* capped */
  CHECK(n_src == 3);
  CHECK_STATUS(kvcs_load_block_sources(ld, kLayers, src, 4, &n_src), KVCS_ERR_UNKNOWN_LAYER);
  CHECK_STATUS(kvcs_load_block_sources(ld, 0, NULL, 4, &n_src), KVCS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(kvcs_load_block_sources(NULL, 0, src, 4, &n_src), KVCS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(kvcs_load_cancel(ld), KVCS_OK);
  kvcs_load_free(ld);

  /* The third block of this prompt was never saved: it fails, per block, in every layer; the
   * first two arrive. A load may start past blocks the engine holds (first_block = 1). */
  uint32_t other[14];
  memcpy(other, tokens, sizeof other);
  other[9] = 777;
  memset(k, 0xff, sizeof k);
  ld = kvcs_load_start(c, other, 14, 1, ids, 2, bufs, kLayers, &layout, &st);
  CHECK(ld != NULL);
  if (!ld) return;
  for (int l = 0; l < kLayers; ++l) {
    CHECK_STATUS(kvcs_load_wait_layer(ld, (uint32_t)l, failed, 4, &n_failed),
                 KVCS_ERR_BLOCKS_FAILED);
    CHECK(n_failed == 1 && failed[0] == 1);
    CHECK(k[l][0] == value(l, 0, 1, 0, 0, 0)); /* prompt block 1 -> engine block ids[0] = 0 */
    uint8_t src[2] = {0, 0};
    size_t n_src = 0;
    CHECK_STATUS(kvcs_load_block_sources(ld, (uint32_t)l, src, 2, &n_src), KVCS_OK);
    CHECK(n_src == 2 && src[0] == KVCS_SOURCE_STORE && src[1] == KVCS_SOURCE_RECOMPUTE);
    CHECK(((const unsigned char*)k[l])[3 * kBlockStride] == 0xff); /* ids[1] = 3 not written */
  }
  CHECK_STATUS(kvcs_load_finish(ld), KVCS_ERR_BLOCKS_FAILED);
  kvcs_load_free(ld);
}

/* A load cancelled midway: 32 layers of 2 MiB (64 MiB) under the store's bandwidth cap. The
 * store paces per 16 MiB read window (docs/protocols/objectcache-aggregated.md), so at 32 MB/s
 * the last windows arrive a second or more after the first: they are cancelled. */
static void test_cancel(void) {
  enum { L = 32, H = 8, D = 128, B = 16, NB = 16 };
  enum { row = D * 4, ts = H * row, bs = B * ts, bytes = NB * bs };
  kvcs_client_config cfg = base_config();
  cfg.descriptor.layers = L;
  cfg.descriptor.kv_heads = H;
  cfg.descriptor.head_dim = D;
  cfg.descriptor.block_tokens = B;
  cfg.compute_us_per_layer = 2000; /* scheduling inputs travel with the load */
  cfg.stall_target_us = 500;
  int st = -1;
  kvcs_client* c = kvcs_client_create(&cfg, &st);
  CHECK(c != NULL);
  if (!c) return;
  uint32_t toks[NB * B];
  for (int i = 0; i < NB * B; ++i) toks[i] = (uint32_t)(1000 + i);
  uint32_t ids[NB];
  for (int i = 0; i < NB; ++i) ids[i] = (uint32_t)i;
  kvcs_paged_layout layout = {bs, ts, row};
  unsigned char* mem = malloc((size_t)L * 2 * bytes);
  CHECK(mem != NULL);
  if (!mem) return;
  for (size_t i = 0; i < (size_t)L * 2 * bytes; ++i) mem[i] = (unsigned char)(i * 7);
  kvcs_layer_buffers bufs[L];
  for (int l = 0; l < L; ++l) {
    bufs[l].k = mem + (size_t)l * 2 * bytes;
    bufs[l].k_bytes = bytes;
    bufs[l].v = mem + (size_t)l * 2 * bytes + bytes;
    bufs[l].v_bytes = bytes;
  }
  kvcs_save* s = kvcs_save_begin(c, toks, NB * B, 0, ids, NB, &layout, &st);
  CHECK(s != NULL);
  for (int l = 0; s && l < L; ++l) CHECK_STATUS(kvcs_save_layer(s, (uint32_t)l, &bufs[l]), KVCS_OK);
  size_t stored = 0;
  CHECK_STATUS(kvcs_save_finish(s, &stored), KVCS_OK);
  kvcs_save_free(s);

  memset(mem, 0xee, (size_t)L * 2 * bytes);
  kvcs_load* ld = kvcs_load_start(c, toks, NB * B, 0, ids, NB, bufs, L, &layout, &st);
  CHECK(ld != NULL);
  if (ld) {
    uint32_t failed[NB];
    size_t n_failed = 0;
    CHECK_STATUS(kvcs_load_wait_layer(ld, 0, failed, NB, &n_failed), KVCS_OK);
    CHECK(mem[0] == 0); /* layer 0 arrived: byte 0 of the pattern */
    CHECK_STATUS(kvcs_load_cancel(ld), KVCS_OK);
    int cancelled = 0;
    for (int l = 1; l < L; ++l) {
      int r = kvcs_load_wait_layer(ld, (uint32_t)l, failed, NB, &n_failed);
      CHECK(r == KVCS_OK || r == KVCS_ERR_CANCELLED);
      if (r == KVCS_ERR_CANCELLED) {
        ++cancelled;
        CHECK(n_failed == NB);
        /* A cancelled layer is untouched. */
        const unsigned char* p = mem + (size_t)l * 2 * bytes;
        CHECK(p[0] == 0xee && p[2 * bytes - 1] == 0xee);
      }
    }
    CHECK(cancelled >= 1);
    printf("cancelled midway: %d of %d later layers never written\n", cancelled, L - 1);
    CHECK_STATUS(kvcs_load_wait_layer(ld, L - 1, failed, NB, &n_failed), KVCS_ERR_CANCELLED);
    CHECK_STATUS(kvcs_load_finish(ld), KVCS_ERR_CANCELLED);
    kvcs_load_free(ld);
  }
  /* Freeing a load that is still streaming cancels it and waits for its thread. */
  ld = kvcs_load_start(c, toks, NB * B, 0, ids, NB, bufs, L, &layout, &st);
  CHECK(ld != NULL);
  kvcs_load_free(ld);
  free(mem);
  kvcs_client_free(c);
}

static void test_same_host(float* k, float* v) {
  kvcs_client_config cfg = base_config();
  cfg.shm_socket = env("KVCS_TEST_SHM_SOCKET");
  int st = -1;
  kvcs_client* c = kvcs_client_create(&cfg, &st);
  CHECK(c != NULL);
  if (!c) return;
  kvcs_paged_layout layout = {kBlockStride, kTokenStride, kRow};
  uint32_t ids[3] = {4, 6, 0};
  kvcs_layer_buffers bufs[kLayers];
  static float lk[kLayers][kBufBytes / 4], lv[kLayers][kBufBytes / 4];
  point_layers(bufs, lk, lv);
  kvcs_load* ld = kvcs_load_start(c, tokens, 14, 0, ids, 3, bufs, kLayers, &layout, &st);
  CHECK(ld != NULL);
  if (ld) {
    for (int l = 0; l < kLayers; ++l) {
      CHECK_STATUS(kvcs_load_wait_layer(ld, (uint32_t)l, NULL, 0, NULL), KVCS_OK);
      fill(k, v, l, ids, 0, 3); /* what the engine had computed, at these block ids */
      CHECK(memcmp(k + 4 * kBlockStride / 4, lk[l] + 4 * kBlockStride / 4, kBlockStride) == 0);
      CHECK(memcmp(v, lv[l], kBlockStride) == 0);
    }
    CHECK_STATUS(kvcs_load_finish(ld), KVCS_OK);
    kvcs_load_free(ld);
  }
  kvcs_client_free(c);
}

static kvcs_client* relay_client(const char* url) {
  kvcs_client_config cfg = base_config();
  cfg.store_url = NULL; /* the relay alone */
  cfg.relay_url = url;
  cfg.relay_insecure = 1; /* the relay's dev certificate */
  int st = -1;
  kvcs_client* c = kvcs_client_create(&cfg, &st);
  CHECK(c != NULL);
  CHECK_STATUS(st, KVCS_OK);
  return c;
}

/* The MOQT path: client P publishes through the relay as it saves; client Q (its own session)
 * finds the publication by discovery at the relay and loads it layer by layer; a client sharing
 * P's session finds it among the publications that session made. */
static void test_relay(float* k, float* v) {
  const char* url = env("KVCS_TEST_RELAY_URL");
  /* Clients naming the same relay URL share one session; Q names it without the final '/' to get
   * its own, so that it must discover what P published. */
  char q_url[256];
  snprintf(q_url, sizeof q_url, "%s", url);
  size_t len = strlen(q_url);
  if (len && q_url[len - 1] == '/') q_url[len - 1] = 0;
  kvcs_client* p = relay_client(url);
  kvcs_client* q = relay_client(q_url);
  if (!p || !q) return;
  static uint32_t rt[14] = {51, 52, 53, 54, 61, 62, 63, 64, 71, 72, 73, 74, 81, 82};
  size_t n = 99;
  CHECK_STATUS(kvcs_lookup(p, rt, 14, 0, &n), KVCS_OK); /* nothing published yet */
  CHECK(n == 0);
  kvcs_paged_layout layout = {kBlockStride, kTokenStride, kRow};
  uint32_t ids[3] = {5, 2, 7};
  int st = -1;
  kvcs_save* s = kvcs_save_begin(p, rt, 14, 0, ids, 3, &layout, &st);
  CHECK(s != NULL);
  if (!s) return;
  kvcs_layer_buffers b = {k, kBufBytes, v, kBufBytes};
  for (int l = kLayers - 1; l >= 0; --l) { /* any order: published in layer order */
    fill(k, v, l, ids, 0, 3);
    CHECK_STATUS(kvcs_save_layer(s, (uint32_t)l, &b), KVCS_OK);
  }
  size_t stored = 0;
  CHECK_STATUS(kvcs_save_finish(s, &stored), KVCS_OK);
  CHECK(stored == 3);
  kvcs_save_free(s);
  /* A save from block 1 is not published (a publication starts at token 0). */
  s = kvcs_save_begin(p, rt, 14, 1, ids, 2, &layout, &st);
  CHECK(s != NULL);
  if (s) {
    for (int l = 0; l < kLayers; ++l) CHECK_STATUS(kvcs_save_layer(s, (uint32_t)l, &b), KVCS_OK);
    CHECK_STATUS(kvcs_save_finish(s, &stored), KVCS_OK);
    CHECK(stored == 0);
    kvcs_save_free(s);
  }

  CHECK_STATUS(kvcs_lookup(q, rt, 14, 0, &n), KVCS_OK); /* discovery at the relay */
  CHECK(n == 12);
  char where[512];
  CHECK_STATUS(kvcs_lookup_source(q, rt, 14, 0, &n, where, sizeof where), KVCS_OK);
  CHECK(n == 12 && strncmp(where, "relay moqt://", 13) == 0 &&
        strstr(where, " publication kvcs-1/") != NULL);
  CHECK_STATUS(kvcs_lookup(q, rt, 14, 3, &n), KVCS_OK);
  CHECK(n == 12);
  uint32_t other[14];
  memcpy(other, rt, sizeof other);
  other[9] = 999; /* the third block differs */
  CHECK_STATUS(kvcs_lookup(p, other, 14, 0, &n), KVCS_OK); /* P knows every key it published */
  CHECK(n == 8);
  CHECK_STATUS(kvcs_lookup(q, other, 14, 0, &n), KVCS_OK); /* discovery: anchors only */
  CHECK(n == 0);

  enum { kHeadStride = kB * kRow };
  kvcs_paged_layout head_major = {kBlockStride, kRow, kHeadStride};
  uint32_t lids[3] = {0, 3, 1};
  static float lk[kLayers][kBufBytes / 4], lv[kLayers][kBufBytes / 4];
  kvcs_layer_buffers bufs[kLayers];
  point_layers(bufs, lk, lv);
  memset(lk, 0xff, sizeof lk);
  memset(lv, 0xff, sizeof lv);
  kvcs_load* ld = kvcs_load_start(q, rt, 14, 0, lids, 3, bufs, kLayers, &head_major, &st);
  CHECK(ld != NULL);
  CHECK_STATUS(st, KVCS_OK);
  uint32_t failed[4];
  size_t n_failed = 99;
  if (ld) {
    for (int l = 0; l < kLayers; ++l) {
      CHECK_STATUS(kvcs_load_wait_layer(ld, (uint32_t)l, failed, 4, &n_failed), KVCS_OK);
      CHECK(n_failed == 0);
      int bad = 0;
      for (int i = 0; i < 3; ++i)
        for (int t = 0; t < kB; ++t)
          for (int h = 0; h < kHeads; ++h)
            for (int d = 0; d < kDim; ++d) {
              size_t at = (size_t)lids[i] * kB * kHeads * kDim + (size_t)(h * kB + t) * kDim + d;
              bad += lk[l][at] != value(l, 0, i, t, h, d) || lv[l][at] != value(l, 1, i, t, h, d);
            }
      CHECK(bad == 0);
      CHECK(((const unsigned char*)lk[l])[2 * kBlockStride] == 0xff); /* block 2: not named */
      uint8_t src[3] = {0, 0, 0};
      size_t n_src = 0;
      CHECK_STATUS(kvcs_load_block_sources(ld, (uint32_t)l, src, 3, &n_src), KVCS_OK);
      CHECK(n_src == 3 && src[0] == KVCS_SOURCE_RELAY && src[1] == KVCS_SOURCE_RELAY &&
            src[2] == KVCS_SOURCE_RELAY);
    }
    CHECK_STATUS(kvcs_load_finish(ld), KVCS_OK);
    CHECK_STATUS(kvcs_load_finish(ld), KVCS_ERR_FINISHED);
    kvcs_load_free(ld);
  }
  /* From block 2 only, into engine block 3 (blocks 0-1 are the engine's). */
  memset(lk, 0xff, sizeof lk);
  ld = kvcs_load_start(q, rt, 14, 2, lids + 1, 1, bufs, kLayers, &head_major, &st);
  CHECK(ld != NULL);
  if (ld) {
    for (int l = 0; l < kLayers; ++l) {
      CHECK_STATUS(kvcs_load_wait_layer(ld, (uint32_t)l, failed, 4, &n_failed), KVCS_OK);
      CHECK(lk[l][3 * kBlockStride / 4] == value(l, 0, 2, 0, 0, 0));
      CHECK(((const unsigned char*)lk[l])[0] == 0xff);
    }
    CHECK_STATUS(kvcs_load_finish(ld), KVCS_OK);
    kvcs_load_free(ld);
  }
  /* No publication serves this prompt: every block of every layer fails. */
  ld = kvcs_load_start(q, other, 14, 0, lids, 3, bufs, kLayers, &head_major, &st);
  CHECK(ld != NULL);
  if (ld) {
    for (int l = 0; l < kLayers; ++l) {
      CHECK_STATUS(kvcs_load_wait_layer(ld, (uint32_t)l, failed, 4, &n_failed),
                   KVCS_ERR_BLOCKS_FAILED);
      CHECK(n_failed == 3);
    }
    CHECK_STATUS(kvcs_load_finish(ld), KVCS_ERR_BLOCKS_FAILED);
    kvcs_load_free(ld);
  }
  /* Cancelled at once, then freed without waiting: nothing is written after cancel returned. */
  ld = kvcs_load_start(q, rt, 14, 0, lids, 3, bufs, kLayers, &head_major, &st);
  CHECK(ld != NULL);
  if (ld) {
    CHECK_STATUS(kvcs_load_cancel(ld), KVCS_OK);
    memset(lk, 0xee, sizeof lk);
    for (int l = 0; l < kLayers; ++l) {
      int r = kvcs_load_wait_layer(ld, (uint32_t)l, failed, 4, &n_failed);
      CHECK(r == KVCS_OK || r == KVCS_ERR_CANCELLED);
    }
    CHECK(((const unsigned char*)lk[0])[0] == 0xee);
    kvcs_load_free(ld);
  }
  ld = kvcs_load_start(q, rt, 14, 0, lids, 3, bufs, kLayers, &head_major, &st);
  kvcs_load_free(ld); /* freed while loading */

  /* A client with the store beside the relay: a prompt no publication serves (test_save stored
   * it, nothing published it) is loaded from the store whole. */
  kvcs_client_config both = base_config();
  both.relay_url = q_url;
  both.relay_insecure = 1;
  kvcs_client* r = kvcs_client_create(&both, &st);
  CHECK(r != NULL);
  if (r) {
    memset(lk, 0xff, sizeof lk);
    ld = kvcs_load_start(r, tokens, 14, 0, lids, 3, bufs, kLayers, &head_major, &st);
    CHECK(ld != NULL);
    if (ld) {
      for (int l = 0; l < kLayers; ++l) {
        CHECK_STATUS(kvcs_load_wait_layer(ld, (uint32_t)l, failed, 4, &n_failed), KVCS_OK);
        CHECK(lk[l][3 * kBlockStride / 4] == value(l, 0, 1, 0, 0, 0)); /* block 1 -> id 3 */
        uint8_t src[3] = {0, 0, 0};
        size_t n_src = 0;
        CHECK_STATUS(kvcs_load_block_sources(ld, (uint32_t)l, src, 3, &n_src), KVCS_OK);
        CHECK(n_src == 3 && src[0] == KVCS_SOURCE_STORE && src[2] == KVCS_SOURCE_STORE);
      }
      CHECK_STATUS(kvcs_load_finish(ld), KVCS_OK);
      kvcs_load_free(ld);
    }
    kvcs_client_free(r);
  }
  kvcs_client_free(q);
  kvcs_client_free(p);
}

/* A MOQT load bounded by the engine's recompute cost: a save that publishes layer 0 and then
 * nothing, loaded with recompute_ns_per_token_layer = 1 (deadline: the 1 s floor). Past it the
 * layers that did not arrive fail every block, as recompute, and the message says "deadline". */
static void test_deadline(float* k, float* v) {
  kvcs_client_config cfg = base_config();
  cfg.store_url = NULL;
  cfg.relay_url = env("KVCS_TEST_RELAY_URL");
  cfg.relay_insecure = 1;
  cfg.recompute_ns_per_token_layer = 1;
  int st = -1;
  kvcs_client* c = kvcs_client_create(&cfg, &st);
  CHECK(c != NULL);
  if (!c) return;
  static uint32_t dt[13] = {91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103};
  kvcs_paged_layout layout = {kBlockStride, kTokenStride, kRow};
  uint32_t ids[3] = {1, 4, 6};
  kvcs_save* s = kvcs_save_begin(c, dt, 13, 0, ids, 3, &layout, &st);
  CHECK(s != NULL);
  if (!s) {
    kvcs_client_free(c);
    return;
  }
  kvcs_layer_buffers b = {k, kBufBytes, v, kBufBytes};
  fill(k, v, 0, ids, 0, 3);
  CHECK_STATUS(kvcs_save_layer(s, 0, &b), KVCS_OK); /* and no more layers */
  static float dk[kLayers][kBufBytes / 4], dv[kLayers][kBufBytes / 4];
  kvcs_layer_buffers bufs[kLayers];
  point_layers(bufs, dk, dv);
  kvcs_load* ld = kvcs_load_start(c, dt, 13, 0, ids, 3, bufs, kLayers, &layout, &st);
  CHECK(ld != NULL);
  if (ld) {
    uint32_t failed[4];
    size_t n_failed = 0;
    CHECK_STATUS(kvcs_load_wait_layer(ld, kLayers - 1, failed, 4, &n_failed),
                 KVCS_ERR_BLOCKS_FAILED);
    CHECK(n_failed == 3 && failed[0] == 0 && failed[2] == 2);
    CHECK(strstr(kvcs_last_error(), "deadline") != NULL);
    uint8_t src[4] = {0, 0, 0, 0};
    size_t n_src = 0;
    CHECK_STATUS(kvcs_load_block_sources(ld, kLayers - 1, src, 4, &n_src), KVCS_OK);
    CHECK(n_src == 3 && src[0] == KVCS_SOURCE_RECOMPUTE && src[1] == KVCS_SOURCE_RECOMPUTE &&
          src[2] == KVCS_SOURCE_RECOMPUTE);
    CHECK_STATUS(kvcs_load_finish(ld), KVCS_ERR_BLOCKS_FAILED);
    CHECK(strstr(kvcs_last_error(), "deadline") != NULL);
    kvcs_load_free(ld);
  }
  /* That load measured the relay path's rate (one layer in a second): the next load is predicted
   * slower than recomputing (3 blocks of 4 tokens over 3 layers at 1 ns) and not started; every
   * block of every layer is recompute at once, and the message gives both times. */
  ld = kvcs_load_start(c, dt, 13, 0, ids, 3, bufs, kLayers, &layout, &st);
  CHECK(ld != NULL);
  if (ld) {
    for (int l = 0; l < kLayers; ++l) {
      uint32_t failed[4];
      size_t n_failed = 0;
      CHECK_STATUS(kvcs_load_wait_layer(ld, (uint32_t)l, failed, 4, &n_failed),
                   KVCS_ERR_BLOCKS_FAILED);
      CHECK(n_failed == 3 && failed[0] == 0 && failed[1] == 1 && failed[2] == 2);
      CHECK(strstr(kvcs_last_error(), "predicted load ") != NULL);
      CHECK(strstr(kvcs_last_error(), " ms > recompute 0.0 ms") != NULL);
      uint8_t src[4] = {0, 0, 0, 0};
      size_t n_src = 0;
      CHECK_STATUS(kvcs_load_block_sources(ld, (uint32_t)l, src, 4, &n_src), KVCS_OK);
      CHECK(n_src == 3 && src[0] == KVCS_SOURCE_RECOMPUTE && src[1] == KVCS_SOURCE_RECOMPUTE &&
            src[2] == KVCS_SOURCE_RECOMPUTE);
    }
    CHECK_STATUS(kvcs_load_finish(ld), KVCS_ERR_BLOCKS_FAILED);
    CHECK(strstr(kvcs_last_error(), "predicted load ") != NULL);
    kvcs_load_free(ld);
  }
  kvcs_save_free(s);
  kvcs_client_free(c);
}

int main(void) {
  test_status_names();
  test_create_errors();
  kvcs_client_config cfg = base_config();
  int st = -1;
  kvcs_client* c = kvcs_client_create(&cfg, &st);
  CHECK(c != NULL);
  CHECK_STATUS(st, KVCS_OK);
  if (!c) return 1;
  static float k[kBufBytes / 4], v[kBufBytes / 4];
  test_keys(c);
  test_save(c, k, v);
  test_load(c);
  test_same_host(k, v);
  test_cancel();
  test_relay(k, v);
  test_deadline(k, v);
  kvcs_client_free(c);
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("engine ABI: all checks passed\n");
  return 0;
}
