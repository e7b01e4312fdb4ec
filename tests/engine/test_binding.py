#!/usr/bin/env python3
"""The Python binding of the engine API (_kvcs_native, python/kvcs) against a real `kvcs store`:
save and load through numpy arrays and torch tensors without copies, the errors bad input gets
(wrong shapes, dtypes, strides, non-contiguous or read-only buffers, unknown layers, handles used
after finish), a load's outcome (finish's status and message), and the GIL released while a load
is waited for. The MOQT path is test_binding_moqt.py.

usage: test_binding.py KVCS_BINARY [TAMPERING_RELAY_BINARY (unused)]"""
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np
import torch

import kvcs
from kvcs import KvcsError
from kvcs.dev_store import StoreProcess

from binding_util import B, D, H, L, NB, check, descriptor, raises

def main():
    with StoreProcess(sys.argv[1], ["--bandwidth-cap=32000000"]) as s:
        mk = lambda **kw: kvcs.Client(s.url, s.access_key, s.secret_key, kw.pop("d", descriptor()),
                                      bucket="binding", create_bucket=True, **kw)
        raises("KVCS_ERR_INVALID_ARGUMENT", mk, index_url="ftp://127.0.0.1:1")
        raises("KVCS_ERR_INVALID_ARGUMENT", mk, relay_url="http://127.0.0.1:1")
        raises("KVCS_ERR_INVALID_ARGUMENT", mk, scope_key=b"short")
        raises("KVCS_ERR_INVALID_ARGUMENT", mk, d=dict(descriptor(), layers=0))
        c = mk(scope_key=bytes(range(32)))
        check((c.layers, c.block_tokens, c.kv_dtype) == (L, B, "fp32"), "client properties")
        tokens = list(range(100, 100 + 3 * B + 1))
        key, name = c.block_key(tokens, 0)
        check(len(key) == 32 and name.endswith(".raw"), "block_key")
        check(c.lookup(tokens) == 0, "empty store")
        raises("KVCS_ERR_INVALID_ARGUMENT", c.lookup, [-1] * 8)

        # vLLM layout, torch: [2][NB][B][H][D] per layer; blocks 4, 1, 5 of the engine.
        kv = [torch.randn(2, NB, B, H, D) for _ in range(L)]
        ids = [4, 1, 5]
        layout = kvcs.paged_layout(kv[0][0], B, H, D)
        save = c.save(tokens, 0, ids, layout)
        raises("KVCS_ERR_UNKNOWN_LAYER", save.save_layer, L, kvcs.as_buffer(kv[0][0]),
               kvcs.as_buffer(kv[0][1]))
        raises("KVCS_ERR_INVALID_ARGUMENT", save.save_layer, 0, kv[0][0].double().numpy(),
               kvcs.as_buffer(kv[0][1]))  # wrong dtype
        raises("KVCS_ERR_INVALID_ARGUMENT", save.save_layer, 0, kv[0][0].numpy()[:, :, :, ::2],
               kvcs.as_buffer(kv[0][1]))  # not contiguous
        raises("KVCS_ERR_INVALID_ARGUMENT", save.save_layer, 0, b"not floats", b"x")
        for args in ((0, None, kvcs.as_buffer(kv[0][1])), (0, kvcs.as_buffer(kv[0][0]), None)):
            try:  # no buffer at all: refused before the C ABI is called
                save.save_layer(*args)
                raise AssertionError("a None buffer was accepted by save_layer")
            except (KvcsError, TypeError, ValueError, BufferError):
                pass
        raises("KVCS_ERR_OUT_OF_BOUNDS", save.save_layer, 0, kvcs.as_buffer(kv[0][0])[:5],
               kvcs.as_buffer(kv[0][1]))  # block 5 is outside a 5-block buffer
        for layer in range(L):
            save.save_layer(layer, kvcs.as_buffer(kv[layer][0]), kvcs.as_buffer(kv[layer][1]))
        check(save.finish() == 3, "three blocks stored")
        raises("KVCS_ERR_FINISHED", save.finish)
        save.close()
        raises("KVCS_ERR_FINISHED", save.finish)  # closed
        check(c.lookup(tokens) == 3 * B, "lookup after save")
        n, where = c.lookup_source(tokens)
        check(n == 3 * B and where.startswith("store " + s.url), "lookup_source %r" % where)

        # Load into numpy arrays (head-major layout) at other engine blocks.
        dst = [(np.zeros((NB, H, B, D), np.float32), np.zeros((NB, H, B, D), np.float32))
               for _ in range(L)]
        es = 4
        head_major = (H * B * D * es, D * es, B * D * es)  # (block, token, head) strides
        bad_shape = [(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32))] * L
        raises("KVCS_ERR_OUT_OF_BOUNDS", c.load, tokens, 0, [0, 2, 3], bad_shape, head_major)
        raises("KVCS_ERR_INVALID_ARGUMENT", c.load, tokens, 0, [0, 2, 3], dst[:2], head_major)
        raises("KVCS_ERR_OUT_OF_BOUNDS", c.load, tokens, 0, [0, 2, 3], dst, (-1, 0, 0))
        try:
            c.load(tokens, 0, [0, 2, 3], [(None, None)] * L, head_major)
            raise AssertionError("None load targets were accepted")
        except (KvcsError, TypeError, ValueError, BufferError):
            pass
        ro = np.zeros((NB, H, B, D), np.float32)
        ro.flags.writeable = False
        try:
            c.load(tokens, 0, [0, 2, 3], [(ro, ro)] * L, head_major)
            raise AssertionError("a read-only buffer was accepted as a load target")
        except (KvcsError, BufferError, ValueError):
            pass
        load = c.load(tokens, 0, [0, 2, 3], dst, head_major)
        raises("KVCS_ERR_UNKNOWN_LAYER", load.wait_layer, L)
        # The load runs ahead of the engine: the last layer arrives before the engine has asked
        # for (or computed with) any earlier one, so every layer is in flight at once.
        check(load.wait_layer(L - 1) == [], "the last layer, waited for first")
        for layer in range(L):
            check(load.wait_layer(layer) == [], "layer %d failed" % layer)
            for i, (src, to) in enumerate(zip(ids, [0, 2, 3])):
                for kv_i in range(2):
                    want = kv[layer][kv_i][src].numpy()            # [B][H][D]
                    got = dst[layer][kv_i][to].transpose(1, 0, 2)  # [H][B][D] -> [B][H][D]
                    check(np.array_equal(want, got), "layer %d block %d mismatch" % (layer, i))
        check(load.finish() == ("KVCS_OK", ""), "load status")
        raises("KVCS_ERR_FINISHED", load.wait_layer, 0)
        load.close()
        raises("KVCS_ERR_FINISHED", load.wait_layer, 0)

        # Per-block failures: the third block of another prompt was never saved.
        other = tokens[:2 * B] + [7] * (B + 1)
        load = c.load(other, 0, [0, 2, 3], dst, head_major)
        check(load.wait_layer(0) == [2], "the unsaved block is reported")
        check(load.block_sources(0) == ["store", "store", "recompute"], "per-block sources")
        raises("KVCS_ERR_UNKNOWN_LAYER", load.block_sources, L)
        failed, why = load.wait_layer_detail(1)
        check(failed == [2] and "1 of 3 blocks failed" in why, "layer 1: %r" % ((failed, why),))
        status, why = load.finish()
        check(status == "KVCS_ERR_BLOCKS_FAILED" and "blocks failed" in why,
              "overall status %r" % ((status, why),))
        load.close()

        # The GIL is released while waiting: a Python thread runs during a slow load (64 MiB
        # under the store's 32 MB/s cap, paced per 16 MiB read window), which is then cancelled.
        nl, nb = 32, 16
        big = mk(d=dict(descriptor(layers=nl), kv_heads=8, head_dim=128, block_tokens=16),
                 compute_us_per_layer=2000, stall_target_us=500)
        t2 = list(range(nb * 16))
        bufs = [(np.ones((nb, 16, 8, 128), np.float32), np.ones((nb, 16, 8, 128), np.float32))
                for _ in range(nl)]
        lay = kvcs.paged_layout(bufs[0][0], 16, 8, 128)
        sv = big.save(t2, 0, list(range(nb)), lay)
        for layer in range(nl):
            sv.save_layer(layer, *bufs[layer])
        check(sv.finish() == nb, "big save")
        sv.close()
        ticks = [0]
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                ticks[0] += 1

        th = threading.Thread(target=spin)
        ld = big.load(t2, 0, list(range(nb)), bufs, lay)
        ld.wait_layer(0)
        th.start()
        ld.wait_layer(12)  # in the second window: ~0.5 s after the first
        during = ticks[0]
        ld.cancel()
        raises("KVCS_ERR_CANCELLED", ld.wait_layer, nl - 1)
        stop.set()
        th.join()
        ld.close()
        check(during > 1000, "the GIL was held while waiting (%d ticks)" % during)
    many_blocks_under_a_small_open_file_limit(sys.argv[1])
    https_store(sys.argv[1])
    print("binding: all checks passed")
    return 0


def many_blocks_under_a_small_open_file_limit(kvcs_binary):
    """A store started with the soft open-file limit of a fresh shell (1,024) serves a load of
    more blocks than that: it holds one descriptor per block of a request, so it raises its soft
    limit to the hard one at start (common/open_file_limit.h). Before, the blocks past the limit
    were read errors and the lookup stopped short."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    nb = 1500
    if hard != resource.RLIM_INFINITY and hard < nb + 512:
        print("binding: many blocks skipped (hard open-file limit %d)" % hard)
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        store = StoreProcess(kvcs_binary)
        store.__enter__()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))  # the store inherited 1,024
    try:
        c = kvcs.Client(store.url, store.access_key, store.secret_key, descriptor(),
                        bucket="many-blocks", create_bucket=True)
        tokens = [(i * 7919) % 32000 for i in range(nb * B)]
        kv = [np.random.default_rng(l).standard_normal((2, nb, B, H, D)).astype(np.float32)
              for l in range(L)]
        layout = kvcs.paged_layout(kv[0][0], B, H, D)
        save = c.save(tokens, 0, list(range(nb)), layout)
        for layer in range(L):
            save.save_layer(layer, kv[layer][0], kv[layer][1])
        check(save.finish() == nb, "%d blocks stored" % nb)
        save.close()
        check(c.lookup(tokens) == nb * B, "lookup of %d blocks" % nb)
        dst = [(np.zeros_like(kv[0][0]), np.zeros_like(kv[0][1])) for _ in range(L)]
        load = c.load(tokens, 0, list(range(nb)), dst, layout)
        for layer in range(L):
            check(load.wait_layer(layer) == [], "layer %d: blocks failed" % layer)
            check(np.array_equal(dst[layer][0], kv[layer][0]) and
                  np.array_equal(dst[layer][1], kv[layer][1]), "layer %d mismatch" % layer)
        check(load.finish() == ("KVCS_OK", ""), "load status")
        load.close()
    finally:
        store.__exit__(None, None, None)


def https_store(kvcs_binary):
    """A store serving https (kvcs store --tls-cert): save, lookup and a layer-wise load over TLS
    with the store's certificate as the CA; a client trusting another certificate is refused
    with a clear error before anything is sent; insecure (development) connects too."""
    d = tempfile.mkdtemp(prefix="kvcs-tls-")
    try:
        certs = {}
        for name in ("store", "other"):
            certs[name] = (os.path.join(d, name + ".pem"), os.path.join(d, name + ".key"))
            subprocess.run([kvcs_binary, "cert", "--out-cert", certs[name][0], "--out-key",
                            certs[name][1]], check=True, capture_output=True)
        with StoreProcess(kvcs_binary, ["--tls-cert", certs["store"][0], "--tls-key",
                                        certs["store"][1]]) as s:
            check(s.url.startswith("https://127.0.0.1:"), "store url %s" % s.url)
            mk = lambda **kw: kvcs.Client(s.url, s.access_key, s.secret_key, descriptor(),
                                          bucket="tls", create_bucket=True, **kw)
            e = raises("KVCS_ERR_TRANSPORT", mk, store_ca_file=certs["other"][0])
            check("certificate verification failed" in e.args[1], "wrong CA: %r" % (e.args,))
            c = mk(store_ca_file=certs["store"][0])
            tokens = list(range(500, 500 + 2 * B))
            kv = [np.random.default_rng(l).standard_normal((2, NB, B, H, D)).astype(np.float32)
                  for l in range(L)]
            layout = kvcs.paged_layout(kv[0][0], B, H, D)
            save = c.save(tokens, 0, [3, 1], layout)
            for layer in range(L):
                save.save_layer(layer, kv[layer][0], kv[layer][1])
            check(save.finish() == 2, "two blocks stored over https")
            save.close()
            check(c.lookup(tokens) == 2 * B, "lookup over https")
            dst = [(np.zeros_like(kv[0][0]), np.zeros_like(kv[0][1])) for _ in range(L)]
            load = c.load(tokens, 0, [0, 2], dst, layout)
            for layer in range(L):
                check(load.wait_layer(layer) == [], "https layer %d: blocks failed" % layer)
                for src, to in ((3, 0), (1, 2)):
                    check(np.array_equal(dst[layer][0][to], kv[layer][0][src]) and
                          np.array_equal(dst[layer][1][to], kv[layer][1][src]),
                          "https layer %d block %d mismatch" % (layer, to))
            check(load.finish() == ("KVCS_OK", ""), "https load status")
            load.close()
            check(mk(store_insecure=True).lookup(tokens) == 2 * B, "insecure lookup over https")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
