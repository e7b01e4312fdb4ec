#!/usr/bin/env python3
"""bench/engine: concurrent engines against one real `kvcs store --bandwidth-cap`, added TTFT with
the stall-target scheduler against equal sharing, on real aggregated GETs through the engine ABI
(issue 15 item 6; docs/protocols/scheduler.md has the simulator's figures for the same workload).

Workload: bench/sched's, run for real. Llama-3.1-8B layer structure (32 layers, 16-token blocks),
2 requests of 64K context and 30 of 4K arriving uniformly at random over 2 s, a 200 Gbit/s cap,
stall target 200 µs, per-layer compute modeled for an H100 (bench/engine/ttft_bench.py's formula:
new = context/8 tokens, 0.66 ms/layer at 4K, 32.7 ms/layer at 64K). Each engine is a thread with
its own kvcs load (compute_us_per_layer and stall_target_us sent with it, as the connector does)
that "computes" each layer (sleeps to a deadline) once it arrived; added TTFT = end of the last
layer's compute - arrival - layers x compute.

Scaled to this machine, with the fluid dynamics unchanged: bytes / --byte-scale (KV heads and head
dim shrunk: default 1/64, 64 B per token-layer instead of 4 KiB), time x --time-scale (default 4:
compute, stall target and arrival window), so the cap becomes 200 Gbit/s / 64 / 4 = 98 MB/s. The
store's read window is one 4K layer (--read-window-bytes 256 KiB) so that pacing is per layer, as
in the simulator. Both policies run on the same arrivals, each against a fresh store.

The time scale keeps the fluid dynamics only while the real per-request costs (connection,
request, probing the containers, the first window's read and copy: tens of ms on a busy 2-core
VM) are small against the scaled transfers; a larger --time-scale (cap down, compute, stall
target and arrival window up) makes them so. Added TTFT counts from the engine's arrival (before
kvcs_load_start), so the start's own cost is in it. With --sim (build/release/bench/sched/
kvcs_sched_bench) the exact scaled workload (the arrivals, blocks, bytes per block-layer as the
store paces them, records included, compute and stall target of every request, the scaled cap) is
also run through the fluid simulator, and its ratio printed beside the real one. --json FILE writes every request's figures.

usage: PYTHONPATH=python:build/release/python /usr/bin/python3 bench/engine/sched_store_bench.py \\
           build/release/src/cli/kvcs [--short 30] [--long 2] [--byte-scale 64] [--time-scale 4]
           [--cap-gbps 200] [--window-ms 2000] [--stall-us 200] [--seed 1]
           [--read-window-bytes N] [--sim build/release/bench/sched/kvcs_sched_bench]
           [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import kvcs
from kvcs.dev_store import StoreProcess
from ttft_bench import B, LAYERS, h100_layer_seconds, pipelined

FULL_TOKEN_LAYER_BYTES = 2 * 8 * 128 * 2  # K+V, 8 KV heads x 128, bf16: 4 KiB
BLOCK_RECORD_BYTES = 52  # src/objcache/aggregate_wire.h kBlockRecordBytes
SHAPES = {64: (1, 16), 8: (1, 128), 1: (8, 128)}  # byte scale -> (kv heads, head dim)


def arrivals(n, window, seed):
    """splitmix64, as bench/sched: the same arrivals for every policy."""
    s, out = seed, []
    for _ in range(n):
        s = (s + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        z ^= z >> 31
        out.append((z >> 11) * 2.0**-53 * window)
    return out


def run_policy(a, policy, requests):
    heads, dim = SHAPES[a.byte_scale]
    args = ["--bandwidth-cap=%d" % scaled_cap(a), "--bandwidth-policy=" + policy,
            "--read-window-bytes=%d" % read_window(a)]
    with StoreProcess(a.kvcs, args) as store:
        d = dict(model="meta-llama/Llama-3.1-8B", model_rev="sched-bench", tokenizer_rev="bench",
                 attn="gqa", layers=LAYERS, kv_heads=heads, head_dim=dim, kv_dtype="bf16",
                 block_tokens=B)
        clients, prompts = {}, {}
        for ctx in sorted({r["context"] for r in requests}):
            c = requests[[r["context"] for r in requests].index(ctx)]["compute"]
            clients[ctx] = kvcs.Client(store.url, store.access_key, store.secret_key, d,
                                       bucket="sched", create_bucket=True,
                                       compute_us_per_layer=int(c * 1e6),
                                       stall_target_us=int(a.stall_us * a.time_scale))
            rng = np.random.default_rng(ctx)
            tokens = rng.integers(0, 128000, ctx).tolist()
            shape = (ctx // B, B, heads, dim)
            kv = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
            save = clients[ctx].save(tokens, 0, list(range(ctx // B)),
                                     kvcs.paged_layout(kv, B, heads, dim))
            for l in range(LAYERS):
                save.save_layer(l, kv, kv)
            save.finish()
            save.close()
            prompts[ctx] = tokens
        for r in requests:  # the engines' buffers, touched before the clock starts
            shape = (r["context"] // B, B, heads, dim)
            r["dst"] = [(np.ones(shape, np.uint16), np.ones(shape, np.uint16))
                        for _ in range(LAYERS)]
        layout = kvcs.paged_layout(requests[0]["dst"][0][0], B, heads, dim)
        start = time.perf_counter() + 0.2

        def engine(r):
            arrive = start + r["arrival"]
            time.sleep(max(0, arrive - time.perf_counter()))
            t0 = time.perf_counter()
            ld = clients[r["context"]].load(prompts[r["context"]], 0,
                                            list(range(r["context"] // B)), r["dst"], layout)
            t1 = time.perf_counter()

            def wait(l):
                if ld.wait_layer(l):
                    raise RuntimeError("blocks failed")

            ttft, first, last = pipelined(wait, LAYERS, r["compute"])
            ld.finish()
            ld.close()
            # From the arrival: the sleep's overshoot (t0 - arrive) and the start (t1 - t0) count.
            r["added"] = t1 + ttft - arrive - LAYERS * r["compute"]
            r["late"] = t0 - arrive
            r["start"] = t1 - t0
            r["first"] = t1 + first - arrive
            r["last"] = t1 + last - arrive

        threads = [threading.Thread(target=engine, args=(r,)) for r in requests]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in requests:
            del r["dst"]
        return {r["id"]: r for r in requests}


def scaled_cap(a):
    """The cap in bytes/s at the byte and time scale."""
    return a.cap_gbps * 1e9 / 8 / a.byte_scale / a.time_scale


def read_window(a):
    return a.read_window_bytes or (256 << 10) * 64 // a.byte_scale  # default: one 4K layer


def simulate(a, base):
    """The fluid simulator on the exact scaled workload: {policy: (all, 4K, 64K) mean, s}."""
    heads, dim = SHAPES[a.byte_scale]
    # What the store paces per block and layer: K+V (bf16) and the block's 52-byte record (5 % at
    # byte scale 64; the 8-byte layer frame head is left out).
    block_layer = B * heads * dim * 2 * 2 + BLOCK_RECORD_BYTES
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("# arrival_s blocks layers block_layer_bytes compute_s stall_s\n")
        for r in base:
            f.write("%.9f %d %d %d %.9f %.9f\n" % (r["arrival"], r["context"] // B, LAYERS,
                                                   block_layer, r["compute"],
                                                   a.stall_us * 1e-6 * a.time_scale))
        path = f.name
    try:
        out = subprocess.run([a.sim, "--workload", path, "--cap-bytes", "%.3f" % scaled_cap(a)],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    res = {}
    for line in out.splitlines():
        f = line.split()
        if f and f[0] in ("equal-share", "stall-target/least-slack-first"):
            res[f[0].split("/")[0]] = tuple(float(x) / 1e3 for x in f[1:4])
    return res


def load_average():
    return open("/proc/loadavg").read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kvcs", help="the kvcs binary (build/release/src/cli/kvcs)")
    ap.add_argument("--short", type=int, default=30, help="4K-context requests")
    ap.add_argument("--long", type=int, default=2, help="64K-context requests")
    ap.add_argument("--byte-scale", type=int, default=64, choices=sorted(SHAPES))
    ap.add_argument("--time-scale", type=float, default=4)
    ap.add_argument("--cap-gbps", type=float, default=200, help="full-scale cap, Gbit/s")
    ap.add_argument("--window-ms", type=float, default=2000, help="full-scale arrival window")
    ap.add_argument("--stall-us", type=float, default=200, help="full-scale stall target")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--read-window-bytes", type=int, default=0,
                    help="the store's read window (default: one 4K layer)")
    ap.add_argument("--sim", help="kvcs_sched_bench: also simulate the same scaled workload")
    ap.add_argument("--json", help="write every request's figures here")
    a = ap.parse_args()
    ctxs = [65536] * a.long + [4096] * a.short
    arr = arrivals(len(ctxs), a.window_ms / 1e3 * a.time_scale, a.seed)
    base = [dict(id=i, context=c, arrival=t, compute=h100_layer_seconds(c, c // 8) * a.time_scale)
            for i, (c, t) in enumerate(zip(ctxs, arr))]
    print("%d x 64K + %d x 4K requests over %.1f s; cap %.0f MB/s (= %.0f Gbit/s / %d bytes / "
          "%.0fx time); compute %.2f / %.1f ms per layer (4K / 64K, x%.0f); stall target %.0f us"
          % (a.long, a.short, a.window_ms / 1e3 * a.time_scale,
             a.cap_gbps * 1e9 / 8 / a.byte_scale / a.time_scale / 1e6, a.cap_gbps, a.byte_scale,
             a.time_scale, h100_layer_seconds(4096, 512) * a.time_scale * 1e3,
             h100_layer_seconds(65536, 8192) * a.time_scale * 1e3, a.time_scale,
             a.stall_us * a.time_scale))
    print("read window %d B; load average %s" % (read_window(a), load_average()))
    results = {}
    for policy in ("equal-share", "stall-target"):
        reqs = [dict(r) for r in base]
        t = time.perf_counter()
        results[policy] = run_policy(a, policy, reqs)
        print("  %s: ran in %.1f s, load average %s"
              % (policy, time.perf_counter() - t, load_average()))
    sim = simulate(a, base) if a.sim else {}

    def mean(xs):
        return statistics.mean(xs) if xs else 0.0

    print("%-14s %10s %10s %10s %10s %10s   (ms at the scaled time; / %g for full scale)"
          % ("policy", "mean", "4K mean", "64K mean", "4K start", "4K first", a.time_scale))
    means = {}
    for policy, reqs in results.items():
        short = [r for r in reqs.values() if r["context"] == 4096]
        long_ = [r for r in reqs.values() if r["context"] == 65536]
        means[policy] = mean([r["added"] for r in reqs.values()])
        print("%-14s %10.1f %10.1f %10.1f %10.1f %10.1f"
              % (policy, means[policy] * 1e3, mean([r["added"] for r in short]) * 1e3,
                 mean([r["added"] for r in long_]) * 1e3, mean([r["start"] for r in short]) * 1e3,
                 mean([r["first"] for r in short]) * 1e3))
        if policy in sim:
            print("%-14s %10.1f %10.1f %10.1f   (simulator, same workload)"
                  % ("", *(x * 1e3 for x in sim[policy])))
    print("ratio equal-share / stall-target: %.2fx"
          % (means["equal-share"] / max(means["stall-target"], 1e-9)), end="")
    if sim:
        print("; simulator on the same workload: %.2fx"
              % (sim["equal-share"][0] / max(sim["stall-target"][0], 1e-12)), end="")
    print()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(args=vars(a), sim=sim,
                           runs={p: list(r.values()) for p, r in results.items()}), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
