#!/usr/bin/env python3
"""Recompute vs reuse on a real (tiny) model: per layer, how long the engine waited for its KV
and how long its compute ran, and an SVG timeline of both.

A Llama-architecture decoder (python/kvcs/tiny_llama.py, seeded weights) prefills a prompt and
saves its KV through KVCSConnector into a `kvcs store` this program starts on 127.0.0.1; then a
second request with the same prefix and a short suffix runs twice: once recomputing everything
(no connector) and once loading the prefix layer by layer through kvcs (store over HTTP, the
same host with --same-host, or MOQT through a `kvcs relay` it starts with --relay: the first
request then publishes its KV layer by layer to the relay, the second discovers and subscribes).
The logits of both agree (exit status 1 otherwise); the table and the picture show where the
time went. ctest runs it small on the HTTP and relay paths (tests/engine/CMakeLists.txt).

usage (from the build tree's environment):
  PYTHONPATH=python:build/release/python /usr/bin/python3 examples/engine_reuse/reuse_timeline.py \
      build/release/src/cli/kvcs [--same-host | --relay] [--prompt 512] [--suffix 32] \
      [--svg timeline.svg]
"""
import argparse
import sys

import torch

from kvcs.connector import KVCSConfig, KVCSConnector, KVConnectorRole
from kvcs.dev_store import RelayProcess, StoreProcess
from kvcs.mini_engine import MiniEngine
from kvcs.tiny_llama import TinyLlama, TinyLlamaConfig

B = 16


def svg_timeline(rows, path):
    """rows: [(label, timeline)], timeline = [(layer, wait_start, wait_end, compute_end)]."""
    # Each row from its own start: the two requests ran one after the other.
    rows = [(label, [(l, ws - tl[0][1], we - tl[0][1], ce - tl[0][1]) for l, ws, we, ce in tl])
            for label, tl in rows]
    t0 = 0.0
    span = max(tl[-1][3] for _, tl in rows)
    width, left, bar, gap = 900, 110, 14, 4
    layers = len(rows[0][1])
    height = 40 + len(rows) * (layers * (bar + gap) + 30) + 30
    x = lambda t: left + (t - t0) / span * (width - left - 20)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (width, height),
           '<text x="10" y="18" font-size="13">per layer: waiting for KV (orange) and compute '
           '(blue); time from the request start, %.1f ms in all</text>' % (span * 1e3)]
    y = 40
    for label, tl in rows:
        out.append('<text x="10" y="%d" font-weight="bold">%s</text>' % (y + 10, label))
        y += 18
        for layer, ws, we, ce in tl:
            out.append('<text x="10" y="%d">layer %d</text>' % (y + bar - 3, layer))
            if we > ws:
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f0a030"/>'
                           % (x(ws), y, max(0.5, x(we) - x(ws)), bar))
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#3070c0"/>'
                       % (x(we), y, max(0.5, x(ce) - x(we)), bar))
            y += bar + gap
        y += 12
    out.append('<text x="%d" y="%d">0 ms</text>' % (left, y + 10))
    out.append('<text x="%d" y="%d" text-anchor="end">%.1f ms</text>'
               % (width - 20, y + 10, span * 1e3))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kvcs", help="the kvcs binary (build/release/src/cli/kvcs)")
    ap.add_argument("--same-host", action="store_true", help="deliver through the shared buffer")
    ap.add_argument("--relay", action="store_true",
                    help="publish and load over MOQT through a kvcs relay (no store)")
    ap.add_argument("--prompt", type=int, default=512, help="prompt tokens")
    ap.add_argument("--suffix", type=int, default=32, help="tokens of the second request that "
                    "follow the shared prefix")
    ap.add_argument("--svg", default="reuse-timeline.svg")
    a = ap.parse_args()
    torch.set_num_threads(2)
    cfg = TinyLlamaConfig(vocab=1024, hidden=256, layers=8, heads=8, kv_heads=2, head_dim=32,
                          intermediate=768)
    model = TinyLlama(cfg)
    blocks = -(-(a.prompt + a.suffix) // B) + 1
    server = (RelayProcess([a.kvcs, "relay", "--open"]) if a.relay else StoreProcess(a.kvcs))
    with server:
        if a.relay:
            kc = KVCSConfig(store_url=None, access_key="", secret_key="",
                            descriptor=model.descriptor(B), relay_url=server.url,
                            relay_insecure=True)
        else:
            kc = KVCSConfig(store_url=server.url, access_key=server.access_key,
                            secret_key=server.secret_key, descriptor=model.descriptor(B),
                            bucket="example",
                            shm_socket=server.shm_socket if a.same_host else None)
        eng = MiniEngine(model, KVCSConnector(kc, KVConnectorRole.SCHEDULER),
                         KVCSConnector(kc, KVConnectorRole.WORKER), 2 * blocks, B)
        plain = MiniEngine(model, None, None, blocks, B)
        g = torch.Generator().manual_seed(3)
        prefix = torch.randint(0, cfg.vocab, (a.prompt,), generator=g).tolist()
        second = prefix + torch.randint(0, cfg.vocab, (a.suffix,), generator=g).tolist()
        eng.prefill("first", prefix)                      # computes and saves the prefix
        plain.prefill("warm-up", second[:64])
        want, rec = plain.prefill("recompute", second)    # everything computed
        got, reu = eng.prefill("reuse", second)           # prefix loaded layer by layer
    diff = (got - want).abs().max().item()
    path = ("MOQT through a relay" if a.relay else
            "same host (shared buffer)" if a.same_host else "store over HTTP")
    print("prompt %d tokens, reused %d through kvcs (%s); max |logit diff| %.3g"
          % (len(second), reu.external_tokens, path, diff))
    print("%-6s %14s %18s %14s" % ("layer", "recompute ms", "reuse: wait ms", "compute ms"))
    for (l, rs, rw, rc), (_, us, uw, uc) in zip(rec.timeline, reu.timeline):
        print("%-6d %14.2f %18.2f %14.2f" % (l, (rc - rw) * 1e3, (uw - us) * 1e3,
                                             (uc - uw) * 1e3))
    print("total: recompute %.1f ms, reuse %.1f ms (prefill only, forward pass)"
          % ((rec.timeline[-1][3] - rec.timeline[0][1]) * 1e3,
             (reu.timeline[-1][3] - reu.timeline[0][1]) * 1e3))
    svg_timeline([("recompute", rec.timeline), ("reuse via kvcs", reu.timeline)], a.svg)
    print("timeline written to", a.svg)
    if reu.external_tokens == 0:
        print("nothing was reused")
        return 1
    return 0 if diff <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
