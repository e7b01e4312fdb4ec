#!/usr/bin/env python3
"""The Python binding of the engine API over MOQT (test_binding.py is the store path): torch
tensors saved (published) through one relay client of a real `kvcs relay`, loaded into numpy
arrays through another; lookups answered by a real `kvcs index`; a load whose publisher stops
sending, bounded by the engine's recompute cost (recompute_ns_per_token_layer: past the deadline
the blocks not verified are recompute, and the message says "deadline"); and a block the relay
corrupts (kvcs_engine_tampering_relay) recovered from a KVSP HTTP holder the index lists (a
`kvcs store`'s /_kvsp).

usage: test_binding_moqt.py KVCS_BINARY TAMPERING_RELAY_BINARY"""
import sys

import numpy as np
import torch

import kvcs
from kvcs.dev_store import IndexProcess, RelayProcess, StoreProcess

from binding_util import B, D, H, L, NB, check, descriptor, register

SCOPE = bytes(range(32))


def index_path(kvcs_binary, relay_url):
    """Lookup on the MOQT path answered by the index: its longest registered prefix and holder;
    an unreachable index leaves the answer to the relay."""
    with IndexProcess(kvcs_binary) as ix:
        mk = lambda url: kvcs.Client(None, "", "", descriptor(), relay_url=relay_url,
                                     relay_insecure=True, scope_key=SCOPE,
                                     index_url=url)
        c = mk(ix.url)
        tokens = list(range(900, 900 + 3 * B + 1))  # published nowhere
        check(c.lookup_source(tokens) == (0, ""), "index: nothing registered yet")
        register(ix.url, c, tokens, 2, "http://127.0.0.1:9/_kvsp")
        n, where = c.lookup_source(tokens)
        check(n == 2 * B and where == "index %s holder http://127.0.0.1:9/_kvsp" % ix.url,
              "index: lookup_source %r" % ((n, where),))
        check(c.lookup(tokens, 2) == 2 * B, "index: from block 2")
    down = mk("http://127.0.0.1:1")  # refused at once: the relay answers
    check(down.lookup(tokens) == 0, "index down: relay answer")


def relay_path(kvcs_binary):
    with RelayProcess([kvcs_binary, "relay", "--open"]) as r:
        mk = lambda: kvcs.Client(None, "", "", descriptor(), relay_url=r.url, relay_insecure=True,
                                 scope_key=SCOPE)
        pub, sub = mk(), mk()
        tokens = list(range(300, 300 + 3 * B + 2))
        check(sub.lookup(tokens) == 0, "relay: nothing published yet")
        kv = [torch.randn(2, NB, B, H, D) for _ in range(L)]
        ids = [3, 0, 2]
        layout = kvcs.paged_layout(kv[0][0], B, H, D)
        save = pub.save(tokens, 0, ids, layout)
        for layer in range(L):
            save.save_layer(layer, kvcs.as_buffer(kv[layer][0]), kvcs.as_buffer(kv[layer][1]))
        check(save.finish() == 3, "relay: three blocks published")
        save.close()
        check(sub.lookup(tokens) == 3 * B, "relay: discovered")
        n, where = sub.lookup_source(tokens)
        check(n == 3 * B and where.startswith("relay " + r.url + " publication kvcs-1/"),
              "relay: lookup_source %r" % ((n, where),))
        dst = [(np.zeros((NB, B, H, D), np.float32), np.zeros((NB, B, H, D), np.float32))
               for _ in range(L)]
        load = sub.load(tokens, 0, [5, 1, 4], dst, kvcs.paged_layout(dst[0][0], B, H, D))
        for layer in range(L):
            check(load.wait_layer(layer) == [], "relay: layer %d failed" % layer)
            for src, to in zip(ids, [5, 1, 4]):
                for kv_i in range(2):
                    check(np.array_equal(kv[layer][kv_i][src].numpy(), dst[layer][kv_i][to]),
                          "relay: layer %d block %d mismatch" % (layer, src))
        check(load.finish() == ("KVCS_OK", ""), "relay: load status")
        check(load.block_sources(L - 1) == ["relay"] * 3, "relay: sources")
        load.close()
        # Another scope finds nothing.
        index_path(kvcs_binary, r.url)
        other = kvcs.Client(None, "", "", descriptor(), relay_url=r.url, relay_insecure=True)
        check(other.lookup(tokens) == 0, "relay: another scope found the publication")


def numpy_targets():
    return [(np.zeros((NB, B, H, D), np.float32), np.zeros((NB, B, H, D), np.float32))
            for _ in range(L)]


def deadline_path(kvcs_binary):
    """A publisher that sends layer 0 and then nothing: with a tiny recompute cost the load's
    deadline is the 1 s floor; past it the other layers' blocks are recompute."""
    with RelayProcess([kvcs_binary, "relay", "--open"]) as r:
        c = kvcs.Client(None, "", "", descriptor(), relay_url=r.url, relay_insecure=True,
                        scope_key=SCOPE, recompute_ns_per_token_layer=1)
        tokens = list(range(500, 500 + 3 * B + 1))
        kv = [torch.randn(2, NB, B, H, D) for _ in range(L)]
        save = c.save(tokens, 0, [3, 0, 2], kvcs.paged_layout(kv[0][0], B, H, D))
        save.save_layer(0, kvcs.as_buffer(kv[0][0]), kvcs.as_buffer(kv[0][1]))  # and no more
        check(c.lookup(tokens) == 3 * B, "deadline: the live publication is found")
        dst = numpy_targets()
        load = c.load(tokens, 0, [5, 1, 4], dst, kvcs.paged_layout(dst[0][0], B, H, D))
        failed, why = load.wait_layer_detail(L - 1)
        check(failed == [0, 1, 2], "deadline: layer %d failed %s" % (L - 1, failed))
        check("deadline" in why, "deadline: the message says why: %r" % why)
        check(load.block_sources(L - 1) == ["recompute"] * 3,
              "deadline: sources %s" % load.block_sources(L - 1))
        status, msg = load.finish()
        check(status == "KVCS_ERR_BLOCKS_FAILED" and "deadline" in msg,
              "deadline: finish %r" % ((status, msg),))
        check(np.count_nonzero(dst[L - 1][0]) == 0, "deadline: a failed layer was written")
        print("deadline: layer %d recompute: %s" % (L - 1, why))
        load.close()
        # That load measured the relay path (one layer in a second): the next is predicted slower
        # than recomputing and not started; every block of every layer is recompute at once.
        dst = numpy_targets()
        load = c.load(tokens, 0, [5, 1, 4], dst, kvcs.paged_layout(dst[0][0], B, H, D))
        for layer in range(L):
            failed, why = load.wait_layer_detail(layer)
            check(failed == [0, 1, 2], "skipped: layer %d failed %s" % (layer, failed))
            check("predicted load " in why and " ms > recompute " in why,
                  "skipped: the message gives both times: %r" % why)
            check(load.block_sources(layer) == ["recompute"] * 3,
                  "skipped: sources %s" % load.block_sources(layer))
        status, msg = load.finish()
        check(status == "KVCS_ERR_BLOCKS_FAILED" and "predicted load " in msg,
              "skipped: finish %r" % ((status, msg),))
        check(all(np.count_nonzero(k) == 0 for k, _ in dst), "skipped: a layer was written")
        print("skipped: %s" % msg)
        load.close()
        save.close()


def holder_path(kvcs_binary, tampering_relay):
    """The relay flips a bit of layer 1, block 1; the client has no store but an index, which
    lists a `kvcs store` (its KVSP endpoint /_kvsp) holding the blocks: the block comes from it."""
    tamper = [tampering_relay, "--track", "k.raw.s0", "--group", "1", "--object", "1"]
    with StoreProcess(kvcs_binary) as holder, IndexProcess(kvcs_binary) as ix, \
            RelayProcess(tamper) as bad:
        tokens = list(range(700, 700 + 3 * B + 1))
        kv = [torch.randn(2, NB, B, H, D) for _ in range(L)]
        ids = [3, 0, 2]
        layout = kvcs.paged_layout(kv[0][0], B, H, D)
        # Bucket "kvcache": the one the store's /_kvsp serves.
        stored = kvcs.Client(holder.url, holder.access_key, holder.secret_key, descriptor(),
                             create_bucket=True, scope_key=SCOPE)
        pub = kvcs.Client(None, "", "", descriptor(), relay_url=bad.url, relay_insecure=True,
                          scope_key=SCOPE)
        for client, want in ((stored, 3), (pub, 3)):
            save = client.save(tokens, 0, ids, layout)
            for layer in range(L):
                save.save_layer(layer, kvcs.as_buffer(kv[layer][0]), kvcs.as_buffer(kv[layer][1]))
            check(save.finish() == want, "holder: saved")
            save.close()
        register(ix.url, stored, tokens, 3, holder.url)
        to = [5, 1, 4]

        def load_through(client):
            dst = numpy_targets()
            load = client.load(tokens, 0, to, dst, kvcs.paged_layout(dst[0][0], B, H, D))
            failed = [load.wait_layer(layer) for layer in range(L)]
            sources = [load.block_sources(layer) for layer in range(L)]
            status = load.finish()
            load.close()
            return dst, failed, sources, status

        # The same session as pub's (clients naming the same relay URL share one): it knows the
        # publication. Without the index the flipped block would be recompute (test_connector_model).
        sub = kvcs.Client(None, "", "", descriptor(), relay_url=bad.url, relay_insecure=True,
                          scope_key=SCOPE, index_url=ix.url)
        dst, failed, sources, status = load_through(sub)
        check(failed == [[]] * L, "holder: failed %s" % failed)
        check(sources == [["relay"] * 3, ["relay", "holder", "relay"], ["relay"] * 3],
              "holder: sources %s" % sources)
        check(status == ("KVCS_OK", ""), "holder: status %r" % (status,))
        print("holder: layer 1 sources %s" % sources[1])
        for layer in range(L):
            for src, t in zip(ids, to):
                for kv_i in range(2):
                    check(np.array_equal(kv[layer][kv_i][src].numpy(), dst[layer][kv_i][t]),
                          "holder: layer %d block %d mismatch" % (layer, src))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    relay_path(sys.argv[1])
    deadline_path(sys.argv[1])
    holder_path(sys.argv[1], sys.argv[2])
    print("binding over MOQT: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
