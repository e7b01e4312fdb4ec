#!/usr/bin/env python3
"""bench/engine: the TTFT that reusing a cached prefix through kvcs adds over reading the same KV
from local memory, measured in one run against one `kvcs store` this program starts on 127.0.0.1
(issue 15 item 5; docs/protocols/engine-api.md, "The TTFT it saves").

Two legs, each printing every path beside the local-memory baseline of the same run:

1. Modeled compute, Llama-3.1-8B layout (32 layers, 8 KV heads, head dim 128, bf16, 16-token
   blocks: K+V 4 KiB per token and layer, 64 KiB per block and layer). A prompt of CONTEXT cached tokens plus CONTEXT/8 new ones: the KV of
   the context streams in layer by layer (kvcs_load, all layers in flight) while the engine
   "computes" layer l for the time an H100 would (a sleep to a deadline; the engine starts layer l
   once it arrived and layer l-1 is done, so layer l's compute overlaps layer l+1's arrival).
   Per-layer compute, from FLOPs:
       c = new * (2 * W + 4 * d_model * (context + new/2)) / (PEAK * UTILIZATION)
   W = 218.1 M weights per layer (q 4096x4096, k and v 4096x1024, o 4096x4096, MLP 3 x 4096 x
   14336: 2W = 0.436 GFLOP per token); 4 * d_model = 16,384 FLOP per query-key pair (QK^T and
   AV over 32 heads x 128); PEAK = 989 TFLOP/s (H100 SXM5 dense BF16 tensor core, NVIDIA H100
   datasheet); UTILIZATION = 0.40 (a typical prefill MFU; ~ the 400 TFLOP/s of
   src/sched/simulator.h's ComputeModel). 4K: c = 0.66 ms/layer, 64K: c = 32.7 ms/layer.
   Baseline "local": a thread copies each layer from a host array into the engine's buffers
   (the same KV in local DRAM, pipelined the same way). Paths (--paths): store over HTTP (http),
   same host, the store's shared buffer (shm), and MOQT through a `kvcs relay` this program
   starts: "MOQT relay" (moqt) is a client with its own session that discovers the publication
   at the relay and subscribes (live), bounded by the engine's recompute cost
   (recompute_ns_per_token_layer: recomputing the prefix on the modeled H100, per token and
   layer; the load's deadline is max(1 s, N*B*L*c), past it blocks fail and are recomputed, that
   recompute modeled and added to the TTFT, the "recomp" column); "MOQT unpriced"
   (moqt-unpriced) is the same load without a cost (deadline 2 s + its bytes at 10 MB/s: every
   block delivered and verified; --unpriced-repeats runs it fewer times); "MOQT relay, fetch"
   (moqt-fetch) is the producer's own
   client, whose link knows the publication ended and FETCHes it after the first manifest.
   Added TTFT = TTFT(path) - TTFT(local); the lookups are printed apart. Columns: layer0 / last
   = when wait_layer(0) / wait_layer(last) returned (the last layer's arrival, or the end of
   layer last-1's compute if it came before), load = when the load's finish returned.
   Publishing through the relay (publish_primed): the relay pulls only on demand and the
   engine's publisher keeps at most 1 GiB per track, so a primer (the live client) subscribes as
   soon as the namespace is announced and the producer hands layer l over only once the relay
   received layers < l-4 (the relay's --metrics objects_in_total). The relay then holds the whole
   publication (--cache-mib sized for the largest context) and every MOQT load is served from its
   cache. Memory: over 2 GiB of KV (64K with --full: 8 GiB) the bench never holds the saved KV
   (each layer is made from a seed when saved and again when checked), the local baseline copies
   one layer-sized source buffer into every layer (the same bytes moved), the store paths are
   left out (their save holds the KV twice: the layers for the PUT and the containers), and
   without moqt-fetch the producer leaves before the loads; so the machine holds the relay's
   cache (the publication) plus the engine's destination buffers, ~17 GiB at 64K. The live row
   runs only while the load fits the consumer's 1 GiB buffer of unverified objects (a manifest
   arriving after the data, issue 13, would make it refuse the rest), unless
   --moqt-live-any-size.
2. The real CPU model (python/kvcs/tiny_llama.py, 8 layers, hidden 256): request B shares A's
   prefix; its prefill through KVCSConnector (vLLM's call order, python/kvcs/mini_engine.py),
   the prefix loaded layer by layer, against the same prefill reading A's KV from local memory
   (copied into the engine's cache in wait_for_layer_load) and a full recompute. Paths: store
   over HTTP, same host, and MOQT relay (a producer engine publishes A's prefix through the relay
   as it prefills it; the consumer engine, with its own session, discovers it there).

The default run is short: 4K at all 32 layers, 64K with --layers-64k 4 (1 GiB of KV instead of
8 GiB: the per-layer figures and the added TTFT per layer are what matter; the percentage is over
those layers' compute). The 64K MOQT row at all 32 layers (8 GiB at the relay), alone:
    ... ttft_bench.py KVCS --contexts 65536 --full --paths local,moqt --moqt-live-any-size \
        --skip-tiny --repeats 2
--json FILE also writes every row.

usage: PYTHONPATH=python:build/release/python /usr/bin/python3 bench/engine/ttft_bench.py \\
           build/release/src/cli/kvcs [--contexts 4096,65536] [--layers-64k N] [--full]
           [--repeats R] [--tiny-prompt T] [--skip-tiny] [--skip-modeled]
           [--paths local,http,shm,moqt,moqt-unpriced,moqt-fetch] [--unpriced-repeats N]
           [--moqt-live-any-size] [--json FILE]
"""
import argparse
import ctypes
import gc
import json
import socket
import statistics
import sys
import threading
import time
import urllib.request

import numpy as np

import kvcs
from kvcs.dev_store import RelayProcess, StoreProcess

# Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json).
LAYERS, KV_HEADS, HEAD_DIM, D_MODEL, B = 32, 8, 128, 4096, 16
WEIGHTS_PER_LAYER = 4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336  # 218.1 M
H100_PEAK_FLOPS = 989e12  # dense BF16, H100 SXM5 datasheet
UTILIZATION = 0.40
BF16 = 2


def h100_layer_seconds(context, new):
    flops = new * (2 * WEIGHTS_PER_LAYER + 4 * D_MODEL * (context + new / 2))
    return flops / (H100_PEAK_FLOPS * UTILIZATION)


def h100_recompute_ns_per_token_layer(context):
    """What recomputing a context-token prefix costs per token and layer on the modeled H100 (the
    prefix's prefill: new = context, attending over itself): the MOQT loads' recompute cost."""
    return h100_layer_seconds(0, context) / context * 1e9


def descriptor(layers, model="meta-llama/Llama-3.1-8B"):
    return dict(model=model, model_rev="bench", tokenizer_rev="bench", attn="gqa", layers=layers,
                kv_heads=KV_HEADS, head_dim=HEAD_DIM, kv_dtype="bf16", block_tokens=B)


def pipelined(wait_layer, layers, c):
    """Engine timeline: layer l computes from max(its arrival, layer l-1's end) for c seconds.
    Returns (ttft, layer 0 ready, last layer ready): deadlines, not wake-ups, so sleep overshoot
    never adds. "Ready" is when wait_layer returned; for the last layer that is its arrival when
    it came after layer l-1's compute, else at most that compute's end."""
    t0 = time.perf_counter()
    end = t0
    first = last = None
    for l in range(layers):
        wait_layer(l)
        now = time.perf_counter()
        if first is None:
            first = now - t0
        last = now - t0
        end = max(now, end) + c
        rest = end - time.perf_counter()
        if rest > 0:
            time.sleep(rest)
    return end - t0, first, last


def local_leg(src, dst, layers, c):
    """The same KV from local memory: a copier thread runs ahead of the engine. src(l) gives
    layer l's (k, v) in local memory."""
    ready = [threading.Event() for _ in range(layers)]

    def copier():
        for l in range(layers):
            k, v = src(l)
            np.copyto(dst[l][0], k)
            np.copyto(dst[l][1], v)
            ready[l].set()

    t = threading.Thread(target=copier)
    t0 = time.perf_counter()
    t.start()
    ttft, first, last = pipelined(lambda l: ready[l].wait(), layers, c)
    t.join()
    return ttft, first, last, time.perf_counter() - t0, 0


def kvcs_leg(client, tokens, ids, dst, layout, layers, c, recompute_ns=0):
    """One load. recompute_ns > 0 (the client's recompute_ns_per_token_layer): the load is bounded
    by that cost and blocks may fail; the engine then recomputes the prompt from the first failed
    block, modeled as those tokens through every layer at recompute_ns, added to the TTFT.
    Returns (ttft, layer 0, last layer, load, blocks recomputed)."""
    t0 = time.perf_counter()
    ld = client.load(tokens, 0, ids, dst, layout)

    ready = []
    first_failed = [len(ids)]

    def wait(l):
        failed = ld.wait_layer(l)
        if failed and not recompute_ns:
            raise RuntimeError("layer %d: %d blocks failed at %.1f s (layer 0 ready at %s)"
                               % (l, len(failed), time.perf_counter() - t0,
                                  "%.1f ms" % (ready[0] * 1e3) if ready else "-"))
        if failed:
            first_failed[0] = min(first_failed[0], failed[0])
        ready.append(time.perf_counter() - t0)

    try:
        ttft, first, last = pipelined(wait, layers, c)
    finally:
        status, why = ld.finish()
        ld.close()
    if status != "KVCS_OK" and not (recompute_ns and status == "KVCS_ERR_BLOCKS_FAILED"):
        raise RuntimeError("load: %s: %s" % (status, why))
    recomputed = len(ids) - first_failed[0]
    ttft += recomputed * B * layers * recompute_ns / 1e9
    return ttft, first, last, time.perf_counter() - t0, recomputed


def save_all(client, tokens, ids, layout, layer_kv, layers, before_layer=None):
    """Saves every layer (layer_kv(l) -> (k, v)) from block 0; the blocks stored.
    before_layer(l), when given, runs before layer l is handed over (pacing)."""
    save = client.save(tokens, 0, ids, layout)
    for l in range(layers):
        if before_layer:
            before_layer(l)
        k, v = layer_kv(l)
        save.save_layer(l, k, v)
    n = save.finish()
    save.close()
    return n


class RelayMetrics:
    """The relay's GET /metrics (kvcs relay --metrics): objects received from publishers."""

    def __init__(self, hostport):
        self.url = "http://%s/metrics" % hostport

    def get(self, name):
        with urllib.request.urlopen(self.url, timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("kvcs_relay_" + name + " "):
                    return int(line.split()[1])
        raise RuntimeError("relay metrics: no kvcs_relay_" + name)

    def wait_objects_in(self, n, timeout_s=300):
        deadline = time.monotonic() + timeout_s
        while self.get("objects_in_total") < n:
            if time.monotonic() > deadline:
                raise RuntimeError("the relay did not receive %d objects in %d s" % (n, timeout_s))
            time.sleep(0.05)


def publish_primed(pub, sub, metrics, tokens, ids, layout, layer_kv, layers, blocks, layer_bytes):
    """Publishes through the relay so that the relay ends up holding the whole publication while
    the producer never holds much more than its tracks' bound.

    The relay pulls a publication only when somebody asks for it, and the engine's publisher keeps
    at most moqt::kDefaultMaxBytesPerTrack (1 GiB) per track (older layers are evicted: at 64K
    each of the k and v tracks is 4 GiB). So a primer (`sub`, its own session) starts a live load
    as soon as the namespace is announced, into one engine block per layer (every block id 0): the
    relay subscribes upstream before the first layer exists and receives every object live. The
    producer hands layer l over only once the relay received layers < l - lag (relay metrics
    objects_in_total), so no layer is evicted before the relay has it. The primer's own result is
    ignored (beyond its consumer buffer it refuses objects while the manifest is late)."""
    track_layer = layer_bytes // 2  # one layer of the k (or v) track
    lag = max(1, min(4, (1 << 30) // track_layer - 2))
    base = metrics.get("objects_in_total")
    one = [(np.zeros((1, B, KV_HEADS, HEAD_DIM), np.uint16),
            np.zeros((1, B, KV_HEADS, HEAD_DIM), np.uint16)) for _ in range(layers)]
    primer = {}

    def before(l):
        if l == 0:
            # Announced at save(); discovery may need a few tries while it reaches the relay.
            t = time.perf_counter()
            while sub.lookup(tokens) != len(tokens):
                if time.perf_counter() - t > 30:
                    raise RuntimeError("MOQT: the primer does not discover the publication")
                time.sleep(0.05)
            primer["discover_s"] = time.perf_counter() - t
            primer["load"] = sub.load(tokens, 0, [0] * blocks, one,
                                      kvcs.paged_layout(one[0][0], B, KV_HEADS, HEAD_DIM))
        if l > lag:
            metrics.wait_objects_in(base + 2 * blocks * (l - lag))

    t = time.perf_counter()
    published = save_all(pub, tokens, ids, layout, layer_kv, layers, before)
    pub_s = time.perf_counter() - t
    metrics.wait_objects_in(base + 2 * blocks * layers)
    primed_s = time.perf_counter() - t
    primer["load"].finish()  # whatever it verified: the relay holds every object now
    primer["load"].close()
    # A primer that missed objects forgot the publication; the loads start after a lookup.
    t = time.perf_counter()
    found = sub.lookup(tokens)
    if found != len(tokens):
        raise RuntimeError("MOQT: lookup after publishing found %d tokens" % found)
    return published, pub_s, primed_s, time.perf_counter() - t


def release_freed_memory():
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc


# The consumer's bound on unverified bytes (kvcs_stream::kDefaultMaxBufferedBytes). While the
# manifest reaches a live subscriber after the data (the open pipelining problem of issue 13), a
# live load of more than this is refused objects and fails.
VERIFIER_BOUND = 1 << 30
# Above this much KV the store paths are left out (their save holds the KV twice in the engine:
# the layers for the aggregated PUT and the containers) and the baseline reads one layer buffer.
LEAN_BYTES = 2 << 30


def modeled(store, relay, metrics, context, layers, repeats, want, force_live, unpriced_repeats):
    new = context // 8
    c = h100_layer_seconds(context, new)
    recompute_ns = h100_recompute_ns_per_token_layer(context)
    blocks = context // B
    layer_bytes = 2 * blocks * B * KV_HEADS * HEAD_DIM * BF16  # K + V of one layer
    total = layers * layer_bytes
    lean = total > LEAN_BYTES
    shape = (blocks, B, KV_HEADS, HEAD_DIM)

    def layer_kv(l):  # layer l's saved K and V, the same bytes every time they are made
        raw = np.random.default_rng((context, l)).bytes(layer_bytes)
        kv = np.frombuffer(raw, np.uint16).reshape((2,) + shape)
        return kv[0], kv[1]

    held = None if lean else [layer_kv(l) for l in range(layers)]
    src = (lambda l: held[l]) if held else layer_kv
    rng = np.random.default_rng(context)
    ids = list(range(blocks))
    tokens = rng.integers(0, 128000, context).tolist()
    d = descriptor(layers)
    notes = []
    paths = []
    # The layout only reads the strides: a one-block array of the destination's shape gives it.
    layout = kvcs.paged_layout(np.ones((1,) + shape[1:], np.uint16), B, KV_HEADS, HEAD_DIM)
    dst = []
    run_kvcs = lambda cl, ns=0: (lambda: kvcs_leg(cl, tokens, ids, dst, layout, layers, c, ns))
    clients = []
    if (want & {"http", "shm"}) and lean:
        notes.append("store paths left out: over %d GiB of KV their save holds it twice"
                     % (LEAN_BYTES >> 30))
    elif want & {"http", "shm"}:
        mk = lambda **kw: kvcs.Client(store.url, store.access_key, store.secret_key, d,
                                      bucket="ttft", create_bucket=True, **kw)
        http = mk()
        shm = mk(shm_socket=store.shm_socket, shm_buffer_bytes=2 * layer_bytes + (1 << 20))
        clients += [http, shm]
        t = time.perf_counter()
        stored = save_all(http, tokens, ids, layout, src, layers)
        put_s = time.perf_counter() - t
        t = time.perf_counter()
        found = http.lookup(tokens)
        lookup_s = time.perf_counter() - t
        if stored != blocks or found != context:
            raise RuntimeError("stored %d of %d blocks, lookup %d" % (stored, blocks, found))
        notes.append("stored in %.2f s (one aggregated PUT); lookup %.1f ms (%d blocks)"
                     % (put_s, lookup_s * 1e3, blocks))
        if "http" in want:
            paths.append(("store over HTTP", run_kvcs(http)))
        if "shm" in want:
            paths.append(("same host (shm)", run_kvcs(shm)))
    if relay and (want & {"moqt", "moqt-unpriced", "moqt-fetch"}):
        # The producer; and a consumer with its own session (clients naming the same URL share
        # one): it discovers the publication at the relay and subscribes (live).
        pub = kvcs.Client(None, "", "", d, relay_url=relay.url, relay_insecure=True)
        sub = kvcs.Client(None, "", "", d, relay_url=relay.url.rstrip("/"), relay_insecure=True)
        clients += [pub, sub]
        published, pub_s, primed_s, discover_s = publish_primed(
            pub, sub, metrics, tokens, ids, layout, src, layers, blocks, layer_bytes)
        if published != blocks:
            raise RuntimeError("MOQT: published %d of %d blocks" % (published, blocks))
        notes.append("MOQT: published in %.2f s, the relay held it all at %.2f s (primed live; "
                     "every MOQT load below is served from the relay's cache); lookup %.1f ms"
                     % (pub_s, primed_s, discover_s * 1e3))
        live_bytes = total + layers * 2 * blocks * 68  # payloads with their object headers
        live = want & {"moqt", "moqt-unpriced"}
        if live and (live_bytes < VERIFIER_BOUND or force_live):
            if "moqt" in want:
                # Bounded by the engine's recompute cost (the same session as sub's: the URL).
                bounded = kvcs.Client(None, "", "", d, relay_url=relay.url.rstrip("/"),
                                      relay_insecure=True,
                                      recompute_ns_per_token_layer=int(recompute_ns))
                clients.append(bounded)
                paths.append(("MOQT relay", run_kvcs(bounded, recompute_ns)))
                notes.append("MOQT relay: recompute cost %.0f ns per token and layer, deadline "
                             "%.0f ms (max(1 s, N*B*L*c)); failed blocks recomputed (modeled)"
                             % (recompute_ns,
                                max(1000, context * layers * recompute_ns / 1e6)))
            if "moqt-unpriced" in want:
                paths.append(("MOQT unpriced", run_kvcs(sub)))
                notes.append("MOQT unpriced: no recompute cost (deadline 2 s + %.0f MB at 10 MB/s):"
                             " everything delivered and verified" % (total / 1e6))
        elif live:
            notes.append("MOQT relay (live) left out: %.1f GiB exceeds the consumer's %d GiB "
                         "buffer while the manifest arrives after the data (--moqt-live-any-size "
                         "runs it)" % (live_bytes / 2**30, VERIFIER_BOUND >> 30))
        if "moqt-fetch" in want:
            # The producer's own client: its link knows the publication ended, so the load
            # FETCHes it, after the first manifest (profile §5.3 completed mode).
            paths.append(("MOQT relay, fetch", run_kvcs(pub)))
        else:
            # The producer leaves (its tracks, up to 1 GiB each, with it): the relay's cache
            # holds the publication and still lists it (relay.md).
            clients.remove(pub)
            del pub
            notes.append("MOQT: the producer left before the loads")
    # What the producer and the primer held was freed, but glibc keeps small freed blocks (the
    # 32 KiB objects) in its heap: hand them back before the destination buffers are made.
    release_freed_memory()
    # The engine's destination buffers, allocated (and touched) once the publication is out.
    dst[:] = [(np.ones(shape, np.uint16), np.ones(shape, np.uint16)) for _ in range(layers)]
    if "local" in want or not paths:
        one = src(0)
        local_src = src if held else (lambda l: one)  # the same bytes moved per layer
        if not held:
            notes.append("local memory: one layer-sized source buffer copied into every layer")
        paths.insert(0, ("local memory", lambda: local_leg(local_src, dst, layers, c)))
    runs = {name: [] for name, _ in paths}
    failed = {}
    last = None  # (path, blocks it recomputed) of the last kvcs load
    for r in range(repeats):  # interleaved, so that drift hits every path alike
        for name, fn in paths:
            # The unpriced row runs in the last rounds: the last load then delivered everything
            # and its contents are checked below.
            if name in failed or (name == "MOQT unpriced" and r < repeats - unpriced_repeats):
                continue
            try:
                runs[name].append(fn())
                if name != "local memory":
                    last = (name, runs[name][-1][4])
            except RuntimeError as e:
                failed[name] = str(e)
    if last and last[1]:
        notes.append("contents not checked: the last load (%s) recomputed blocks" % last[0])
    elif last:  # dst holds the last kvcs load's layers
        for l in range(layers):
            k, v = src(l)
            if not (np.array_equal(dst[l][0], k) and np.array_equal(dst[l][1], v)):
                raise RuntimeError(last[0] + ": layer %d differs from what was saved" % l)
    compute = layers * c
    print("\n[modeled H100] context %d (+%d new), %d layers, %.1f MiB KV per layer (%.2f GiB), "
          "compute %.2f ms/layer (%.1f ms in all); hiding a layer needs %.1f GB/s"
          % (context, new, layers, layer_bytes / 2**20, total / 2**30, c * 1e3, compute * 1e3,
             layer_bytes / c / 1e9))
    for n in notes:
        print("  " + n)
    print("  %-18s %10s %10s %10s %10s %10s %9s %9s %7s" % (
        "path", "TTFT ms", "layer0 ms", "last ms", "load ms", "added ms", "vs local", "GB/s",
        "recomp"))
    base = statistics.median(r[0] for r in runs["local memory"]) if runs.get("local memory") \
        else None
    rows = []
    for name, _ in paths:
        if name in failed:
            print("  %-18s FAILED: %s" % (name, failed[name]))
            rows.append(dict(context=context, layers=layers, path=name, failed=failed[name]))
            continue
        med = lambda i: statistics.median(r[i] for r in runs[name])
        ttft, first, last_l, load, recomp = med(0), med(1), med(2), med(3), med(4)
        added = ttft - base if base else float("nan")
        print("  %-18s %10.1f %10.1f %10.1f %10.1f %10.1f %8.1f%% %9.2f %7d"
              % (name, ttft * 1e3, first * 1e3, last_l * 1e3, load * 1e3, added * 1e3,
                 100 * added / base if base else float("nan"), total / load / 1e9, recomp))
        rows.append(dict(context=context, layers=layers, path=name, ttft_ms=ttft * 1e3,
                         layer0_ms=first * 1e3, last_layer_ms=last_l * 1e3, load_ms=load * 1e3,
                         added_ms=added * 1e3, blocks_recomputed=recomp, runs=len(runs[name]),
                         added_ms_per_run=[(r[0] - base) * 1e3 if base else None
                                           for r in runs[name]]))
        if base and name == "MOQT relay":
            # In order: a load predicted slower than recomputing is not started (load_predictor.h),
            # so the first run (nothing measured yet) can differ from the next.
            print("  %-18s %s" % ("  added per run", " ".join(
                "%.1f" % ((r[0] - base) * 1e3) for r in runs[name])))
    if base:
        print("  (added over pure compute, local memory: %.1f ms)" % ((base - compute) * 1e3))
    return rows


class LocalPrefix:
    """A worker-side connector stand-in: A's KV kept in local memory, copied into the engine's
    cache as each layer is needed (the local-DRAM baseline of the tiny-model leg)."""

    def __init__(self, ref, caches, prefix_blocks):
        self.ref, self.caches, self.n = ref, caches, prefix_blocks

    def wait_for_layer_load(self, name):
        self.caches[name][:, :self.n].copy_(self.ref[name][:, :self.n])

    def save_kv_layer(self, name, kv_layer, attn_metadata):
        pass


def tiny(store, relay, prompt, repeats):
    import torch
    from kvcs.connector import KVCSConfig, KVCSConnector, KVConnectorRole
    from kvcs.mini_engine import MiniEngine
    from kvcs.tiny_llama import TinyLlama, TinyLlamaConfig
    torch.set_num_threads(1)  # the machine's other core serves the store and the loader
    cfg = TinyLlamaConfig(vocab=1024, hidden=256, layers=8, heads=8, kv_heads=2, head_dim=32,
                          intermediate=768)
    model = TinyLlama(cfg)
    suffix = prompt // 8
    blocks = -(-(prompt + suffix) // B) + 1
    g = torch.Generator().manual_seed(7)
    prefix = torch.randint(0, cfg.vocab, (prompt,), generator=g).tolist()
    table = list(range(blocks))
    ref = model.new_kv_caches(blocks, B)
    model.forward(prefix, 0, table, ref)  # A's KV, kept in local memory
    paths = {}
    for name, shm in (("store over HTTP", None), ("same host (shm)", store.shm_socket)):
        kc = KVCSConfig(store_url=store.url, access_key=store.access_key,
                        secret_key=store.secret_key, descriptor=model.descriptor(B),
                        bucket="ttft-tiny", shm_socket=shm)
        paths[name] = MiniEngine(model, KVCSConnector(kc, KVConnectorRole.SCHEDULER),
                                 KVCSConnector(kc, KVConnectorRole.WORKER), 2 * blocks, B)
    paths["store over HTTP"].prefill("A", prefix)  # computes and saves A's prefix
    if relay:
        # A producer engine publishes A's prefix live through the relay as it prefills it; the
        # consumer engine, with its own session (the URL without the final '/'), discovers the
        # publication at the relay and subscribes to it.
        rc = lambda url: KVCSConfig(store_url=None, access_key="", secret_key="",
                                    descriptor=model.descriptor(B), relay_url=url,
                                    relay_insecure=True)
        producer = MiniEngine(model, KVCSConnector(rc(relay.url), KVConnectorRole.SCHEDULER),
                              KVCSConnector(rc(relay.url), KVConnectorRole.WORKER), 2 * blocks, B)
        producer.prefill("A", prefix)
        kc = rc(relay.url.rstrip("/"))
        paths["MOQT relay"] = MiniEngine(model, KVCSConnector(kc, KVConnectorRole.SCHEDULER),
                                         KVCSConnector(kc, KVConnectorRole.WORKER), 2 * blocks, B)
        # Discovery settles 50 ms after the relay's last answer: on a loaded host it can miss,
        # so look until it finds A's publication (the link remembers it for B's lookups).
        t = time.perf_counter()
        while paths["MOQT relay"].scheduler.client.lookup(prefix) != prompt:
            if time.perf_counter() - t > 30:
                raise RuntimeError("MOQT relay: A's publication is not discovered")
            time.sleep(0.05)
    results = {k: [] for k in ("recompute", "local memory", *paths)}
    per_layer = {k: [] for k in results}
    diffs = []
    fresh = lambda: prefix + torch.randint(0, cfg.vocab, (suffix,), generator=g).tolist()
    for r in range(repeats + 1):  # the first round warms up and is dropped
        # Every prefill gets its own suffix: a kvcs path stores B's new full blocks, which the
        # next lookup must not find.
        second = fresh()
        tl = []
        t = time.perf_counter()
        model.forward(second, 0, table, model.new_kv_caches(blocks, B), timeline=tl)
        round_ = {"recompute": (time.perf_counter() - t, tl)}
        caches = model.new_kv_caches(blocks, B)
        tl = []
        t = time.perf_counter()
        model.forward(second, prompt, table, caches, LocalPrefix(ref, caches, prompt // B),
                      timeline=tl)
        round_["local memory"] = (time.perf_counter() - t, tl)
        for name, eng in paths.items():
            second = fresh()
            t = time.perf_counter()
            logits, rep = eng.prefill("B", second)
            if rep.external_tokens != prompt or rep.load_errors:
                raise RuntimeError("%s: loaded %d tokens, errors %s"
                                   % (name, rep.external_tokens, rep.load_errors))
            round_[name] = (rep.timeline[-1][3] - t, rep.timeline)
            want = model.forward(second, 0, table, model.new_kv_caches(blocks, B))
            diffs.append((logits - want).abs().max().item())
        if r == 0:
            continue
        for k, v in round_.items():
            results[k].append(v[0])
            per_layer[k].append(sum(ce - we for _, _, we, ce in v[1]) / cfg.layers)
    print("\n[real CPU model] tiny Llama (%d layers, hidden %d, %d KV heads x %d, fp32), prefix %d"
          " tokens reused + %d new; median of %d; max |logit diff| vs recompute %.2g"
          % (cfg.layers, cfg.hidden, cfg.kv_heads, cfg.head_dim, prompt, suffix, repeats,
             max(diffs)))
    print("  %-17s %10s %14s %12s %12s" % ("path", "TTFT ms", "compute/layer", "added ms",
                                          "vs local %"))
    base = statistics.median(results["local memory"])
    for k in results:
        ttft = statistics.median(results[k])
        cl = statistics.median(per_layer[k])
        added = "" if k == "recompute" else "%12.1f %12.1f" % ((ttft - base) * 1e3,
                                                              100 * (ttft - base) / base)
        print("  %-17s %10.1f %12.2f ms %s" % (k, ttft * 1e3, cl * 1e3, added))
    print("  (kvcs paths: lookup + load + forward pass, the save after it excluded; local: the "
          "forward pass with the per-layer copy)")
    return [dict(context=prompt, path=k, ttft_ms=statistics.median(results[k]) * 1e3,
                 compute_per_layer_ms=statistics.median(per_layer[k]) * 1e3,
                 added_ms=None if k == "recompute" else (statistics.median(results[k]) - base) * 1e3)
            for k in results]


def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kvcs", help="the kvcs binary (build/release/src/cli/kvcs)")
    ap.add_argument("--contexts", default="4096,65536", help="cached context lengths")
    ap.add_argument("--layers-64k", type=int, default=4,
                    help="layers of contexts above 16K (default 4; --full: 32)")
    ap.add_argument("--full", action="store_true", help="every context at all 32 layers")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tiny-prompt", type=int, default=256, help="tiny model: reused prefix")
    ap.add_argument("--skip-tiny", action="store_true")
    ap.add_argument("--skip-modeled", action="store_true")
    ap.add_argument("--paths", default="local,http,shm,moqt,moqt-unpriced,moqt-fetch",
                    help="modeled leg's paths: local, http, shm, moqt (live, discovered, bounded "
                         "by the recompute cost), moqt-unpriced (the same, no recompute cost: "
                         "everything delivered), moqt-fetch (the producer's own client)")
    ap.add_argument("--unpriced-repeats", type=int, default=None,
                    help="runs of the moqt-unpriced row (default: --repeats; it is the long one)")
    ap.add_argument("--relay-max-context", type=int, default=1 << 20,
                    help="the MOQT relay paths for contexts up to this (0: never)")
    ap.add_argument("--moqt-live-any-size", action="store_true",
                    help="run the live MOQT row even beyond the consumer's buffer bound")
    ap.add_argument("--json", help="also write the rows to this file")
    a = ap.parse_args()
    want = set(a.paths.split(","))
    unknown = want - {"local", "http", "shm", "moqt", "moqt-unpriced", "moqt-fetch"}
    if unknown:
        ap.error("unknown paths: " + ",".join(sorted(unknown)))
    contexts = [int(x) for x in a.contexts.split(",")]
    plan = [(ctx, LAYERS if a.full or ctx <= 16384 else a.layers_64k) for ctx in contexts]
    # The relay's cache holds the largest publication whole (payload + per-object overhead), and
    # the tiny model's beside it; older publications are evicted least recently used first.
    largest = max([2 * ctx * KV_HEADS * HEAD_DIM * BF16 * n for ctx, n in plan] + [0])
    cache_mib = max(1024, int(largest * 1.03) // 2**20 + 256)
    print("H100 model: %.0f TFLOP/s peak dense BF16 x %.0f%% utilization; per layer %.3f GFLOP "
          "per new token + %d FLOP per query-key pair"
          % (H100_PEAK_FLOPS / 1e12, UTILIZATION * 100, 2 * WEIGHTS_PER_LAYER / 1e9, 4 * D_MODEL))
    metrics_at = "127.0.0.1:%d" % free_port()
    rows = []
    with StoreProcess(a.kvcs) as store, RelayProcess(
            [a.kvcs, "relay", "--open", "--cache-mib", str(cache_mib),
             "--metrics", metrics_at]) as relay:
        metrics = RelayMetrics(metrics_at)
        if not a.skip_modeled:
            for ctx, layers in plan:
                rows += modeled(store, relay if ctx <= a.relay_max_context else None, metrics,
                                ctx, layers, a.repeats, want, a.moqt_live_any_size,
                                a.repeats if a.unpriced_repeats is None else a.unpriced_repeats)
        if not a.skip_tiny:
            rows += tiny(store, relay if a.relay_max_context else None, a.tiny_prompt,
                         a.repeats)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(h100_peak_flops=H100_PEAK_FLOPS, utilization=UTILIZATION, rows=rows),
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
