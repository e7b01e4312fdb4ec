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
   (the same KV in local DRAM, pipelined the same way). Paths: store over HTTP, same host (the
   store's shared buffer), MOQT through a relay (a `kvcs relay` this program starts: one client
   publishes the context through it as it saves, another, with its own session, discovers and
   loads it; --relay-max-context bounds the contexts it runs for, as the relay's cache and both
   clients hold the whole KV in memory). Added TTFT = TTFT(path) - TTFT(local); the lookups are
   printed apart.
2. The real CPU model (python/kvcs/tiny_llama.py, 8 layers, hidden 256): request B shares A's
   prefix; its prefill through KVCSConnector (vLLM's call order, python/kvcs/mini_engine.py),
   the prefix loaded layer by layer, against the same prefill reading A's KV from local memory
   (copied into the engine's cache in wait_for_layer_load) and a full recompute.

The default run is short: 4K at all 32 layers, 64K with --layers-64k 4 (1 GiB of KV instead of
8 GiB: the per-layer figures and the added TTFT per layer are what matter; the percentage is over
those layers' compute). --full runs 64K at 32 layers (8 GiB in the store, ~20 GiB of memory).

usage: PYTHONPATH=python:build/release/python /usr/bin/python3 bench/engine/ttft_bench.py \\
           build/release/src/cli/kvcs [--contexts 4096,65536] [--layers-64k N] [--full]
           [--repeats R] [--tiny-prompt T] [--skip-tiny]
"""
import argparse
import statistics
import sys
import threading
import time

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


def descriptor(layers, model="meta-llama/Llama-3.1-8B"):
    return dict(model=model, model_rev="bench", tokenizer_rev="bench", attn="gqa", layers=layers,
                kv_heads=KV_HEADS, head_dim=HEAD_DIM, kv_dtype="bf16", block_tokens=B)


def pipelined(wait_layer, layers, c):
    """Engine timeline: layer l computes from max(its arrival, layer l-1's end) for c seconds.
    Returns (ttft, first-layer wait): deadlines, not wake-ups, so sleep overshoot never adds."""
    t0 = time.perf_counter()
    end = t0
    first = None
    for l in range(layers):
        wait_layer(l)
        now = time.perf_counter()
        if first is None:
            first = now - t0
        end = max(now, end) + c
        rest = end - time.perf_counter()
        if rest > 0:
            time.sleep(rest)
    return end - t0, first


def local_leg(src, dst, layers, c):
    """The same KV from local memory: a copier thread runs ahead of the engine."""
    ready = [threading.Event() for _ in range(layers)]

    def copier():
        for l in range(layers):
            np.copyto(dst[l][0], src[l][0])
            np.copyto(dst[l][1], src[l][1])
            ready[l].set()

    t = threading.Thread(target=copier)
    t0 = time.perf_counter()
    t.start()
    ttft, first = pipelined(lambda l: ready[l].wait(), layers, c)
    t.join()
    return ttft, first, time.perf_counter() - t0


def kvcs_leg(client, tokens, ids, dst, layout, layers, c):
    t0 = time.perf_counter()
    ld = client.load(tokens, 0, ids, dst, layout)

    def wait(l):
        failed = ld.wait_layer(l)
        if failed:
            raise RuntimeError("layer %d: %d blocks failed" % (l, len(failed)))

    ttft, first = pipelined(wait, layers, c)
    status = ld.finish()
    ld.close()
    if status != "KVCS_OK":
        raise RuntimeError("load: " + status)
    return ttft, first, time.perf_counter() - t0


def save_all(client, tokens, ids, layout, src):
    """Saves every layer of src ([(k, v)] per layer) from block 0; the blocks stored."""
    save = client.save(tokens, 0, ids, layout)
    for l, (k, v) in enumerate(src):
        save.save_layer(l, k, v)
    n = save.finish()
    save.close()
    return n


def modeled(store, relay, context, layers, repeats):
    new = context // 8
    c = h100_layer_seconds(context, new)
    blocks = context // B
    layer_bytes = 2 * blocks * B * KV_HEADS * HEAD_DIM * BF16  # K + V of one layer
    rng = np.random.default_rng(context)
    shape = (blocks, B, KV_HEADS, HEAD_DIM)
    src = [(rng.integers(0, 1 << 16, shape, dtype=np.uint16),
            rng.integers(0, 1 << 16, shape, dtype=np.uint16)) for _ in range(layers)]
    dst = [(np.ones(shape, np.uint16), np.ones(shape, np.uint16)) for _ in range(layers)]  # touched
    layout = kvcs.paged_layout(dst[0][0], B, KV_HEADS, HEAD_DIM)
    ids = list(range(blocks))
    tokens = rng.integers(0, 128000, context).tolist()
    d = descriptor(layers)
    mk = lambda **kw: kvcs.Client(store.url, store.access_key, store.secret_key, d,
                                  bucket="ttft", create_bucket=True, **kw)
    http = mk()
    shm = mk(shm_socket=store.shm_socket, shm_buffer_bytes=2 * layer_bytes + (1 << 20))
    t = time.perf_counter()
    stored = save_all(http, tokens, ids, layout, src)
    put_s = time.perf_counter() - t
    t = time.perf_counter()
    found = http.lookup(tokens)
    lookup_s = time.perf_counter() - t
    if stored != blocks or found != context:
        raise RuntimeError("stored %d of %d blocks, lookup %d" % (stored, blocks, found))
    paths = [("local memory", lambda: local_leg(src, dst, layers, c)),
             ("store over HTTP", lambda: kvcs_leg(http, tokens, ids, dst, layout, layers, c)),
             ("same host (shm)", lambda: kvcs_leg(shm, tokens, ids, dst, layout, layers, c))]
    relay_note = ""
    if relay:
        pub = kvcs.Client(None, "", "", d, relay_url=relay.url, relay_insecure=True)
        # Its own session (clients naming the same URL share one): it discovers the publication.
        sub = kvcs.Client(None, "", "", d, relay_url=relay.url.rstrip("/"), relay_insecure=True)
        t = time.perf_counter()
        published = save_all(pub, tokens, ids, layout, src)
        pub_s = time.perf_counter() - t
        t = time.perf_counter()
        found = sub.lookup(tokens)
        discover_s = time.perf_counter() - t
        if published != blocks or found != context:
            raise RuntimeError("MOQT: published %d of %d blocks, lookup %d"
                               % (published, blocks, found))
        relay_note = ("; MOQT: published in %.2f s, discovery at the relay %.1f ms"
                      % (pub_s, discover_s * 1e3))
        paths.append(("MOQT relay", lambda: kvcs_leg(sub, tokens, ids, dst, layout, layers, c)))
    runs = {name: [] for name, _ in paths}
    for _ in range(repeats):  # interleaved, so that drift hits every path alike
        for name, fn in paths:
            runs[name].append(fn())
    for name, _ in paths[1:]:
        for l in range(layers):
            if not (np.array_equal(dst[l][0], src[l][0]) and np.array_equal(dst[l][1], src[l][1])):
                raise RuntimeError(name + ": layer %d differs from what was saved" % l)
    compute = layers * c
    print("\n[modeled H100] context %d (+%d new), %d layers, %.1f MiB KV per layer, "
          "compute %.2f ms/layer (%.1f ms in all); hiding a layer needs %.1f GB/s"
          % (context, new, layers, layer_bytes / 2**20, c * 1e3, compute * 1e3,
             layer_bytes / c / 1e9))
    print("  stored in %.2f s (one aggregated PUT); lookup %.1f ms (%d blocks)%s"
          % (put_s, lookup_s * 1e3, blocks, relay_note))
    print("  %-17s %10s %10s %12s %12s %10s" % ("path", "TTFT ms", "layer0 ms", "added ms",
                                              "vs local %", "load GB/s"))
    base = statistics.median(r[0] for r in runs["local memory"])
    for name, _ in paths:
        ttft = statistics.median(r[0] for r in runs[name])
        first = statistics.median(r[1] for r in runs[name])
        gbps = layers * layer_bytes / statistics.median(r[2] for r in runs[name]) / 1e9
        added = ttft - base
        print("  %-17s %10.1f %10.2f %12.1f %12.1f %10.2f"
              % (name, ttft * 1e3, first * 1e3, added * 1e3, 100 * added / base, gbps))
    print("  (added over pure compute, local memory: %.1f ms)" % ((base - compute) * 1e3))


class LocalPrefix:
    """A worker-side connector stand-in: A's KV kept in local memory, copied into the engine's
    cache as each layer is needed (the local-DRAM baseline of the tiny-model leg)."""

    def __init__(self, ref, caches, prefix_blocks):
        self.ref, self.caches, self.n = ref, caches, prefix_blocks

    def wait_for_layer_load(self, name):
        self.caches[name][:, :self.n].copy_(self.ref[name][:, :self.n])

    def save_kv_layer(self, name, kv_layer, attn_metadata):
        pass


def tiny(store, prompt, repeats):
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
    ap.add_argument("--relay-max-context", type=int, default=4096,
                    help="the MOQT relay path for contexts up to this (0: never)")
    a = ap.parse_args()
    print("H100 model: %.0f TFLOP/s peak dense BF16 x %.0f%% utilization; per layer %.3f GFLOP "
          "per new token + %d FLOP per query-key pair"
          % (H100_PEAK_FLOPS / 1e12, UTILIZATION * 100, 2 * WEIGHTS_PER_LAYER / 1e9, 4 * D_MODEL))
    with StoreProcess(a.kvcs) as store, RelayProcess([a.kvcs, "relay", "--open",
                                                      "--cache-mib", "4096"]) as relay:
        if not a.skip_modeled:
            for ctx in (int(x) for x in a.contexts.split(",")):
                layers = LAYERS if a.full or ctx <= 16384 else a.layers_64k
                modeled(store, relay if ctx <= a.relay_max_context else None, ctx, layers,
                        a.repeats)
        if not a.skip_tiny:
            tiny(store, a.tiny_prompt, a.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
