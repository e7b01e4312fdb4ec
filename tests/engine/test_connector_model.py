#!/usr/bin/env python3
"""The tiny Llama model (python/kvcs/tiny_llama.py) driven through KVCSConnector as vLLM drives a
connector, against a real `kvcs store`: request A prefills and saves its KV layer by layer;
request B shares A's first blocks, loads them through kvcs and computes only its suffix; B's
next-token logits equal a full recompute (fp32: max |diff| <= 1e-4; bf16 KV and weights: the
same top-1 token and max |diff| <= 0.1: logits are ~3 in magnitude, where bf16 values are 1/64
apart). Then one of A's blocks is corrupted in the store's files: B's load reports it (get_block_ids_with_load_errors), the engine
recomputes from it, and the logits are still right. Both paths: the store over HTTP and the same
host (shared buffer); bf16 over HTTP.

MOQT through a relay (a real `kvcs relay`): A's save is published live through the relay, B
loads A's prefix from it (the client knows every Block Key it published), another engine with its
own session finds A's publication by discovery at the relay for a prompt that extends A's; then,
through a relay that flips one bit of layer 1's object of block 1 (tampering_relay.cc), the load
reports exactly that block (the rest of layer 1 is loaded), the engine recomputes from it, and
the logits are still right; with the store configured beside the relay, that block is recovered
from the store (its KVSP endpoints) instead: nothing is reported or recomputed, and the
per-block sources say relay for every block and store for block 1. Lookup over MOQT answers the
published prefix's token count.

usage: test_connector_model.py KVCS_BINARY TAMPERING_RELAY_BINARY"""
import sys

import torch

from kvcs.connector import KVCSConfig, KVCSConnector, KVConnectorRole
from kvcs.mini_engine import MiniEngine
from kvcs.tiny_llama import TinyLlama, TinyLlamaConfig
from kvcs.dev_store import RelayProcess, StoreProcess, object_path

B = 16
P = 3  # blocks of the shared prefix
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 0.1}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def engine_for(model, cfg):
    sched = KVCSConnector(cfg, KVConnectorRole.SCHEDULER)
    worker = KVCSConnector(cfg, KVConnectorRole.WORKER)
    return MiniEngine(model, sched, worker, num_blocks=64, block_tokens=B)


def corrupt_block(store, bucket, connector, tokens, block, layer, model_cfg):
    """Flips one byte of `layer`'s K section of block `block` in the store's object file."""
    _, key = connector.client.block_key(tokens, block)
    path = object_path(store.root, bucket, key)
    layers = model_cfg.layers
    section = B * model_cfg.kv_heads * model_cfg.head_dim * torch.finfo(model_cfg.dtype).bits // 8
    # KVSP container: 92-byte header, 52-byte layer entries, then K0 V0 K1 V1 ...
    offset = 92 + 52 * layers + layer * 2 * section + 5
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x40]))


def check_logits(got, want, dtype, what):
    diff = (got.float() - want.float()).abs().max().item()
    check(diff <= TOLERANCE[dtype], "%s: logits differ from recompute by %g" % (what, diff))
    if dtype != torch.float32:
        check(got.argmax().item() == want.argmax().item(), "%s: top-1 token differs" % what)
    return diff


def check_failures(rep, request_id, says, what):
    """get_load_failures() names the request's failed blocks (those of
    get_block_ids_with_load_errors) with a reason that says `says`."""
    f = rep.load_failures
    check(list(f) == [request_id] and set(f[request_id]) == rep.load_errors,
          "%s: load failures %r, errors %s" % (what, f, rep.load_errors))
    check(all(says in why for why in f[request_id].values()),
          "%s: reasons %r do not say %r" % (what, f[request_id], says))


def run_path(store, shm, dtype=torch.float32):
    name = ("same host" if shm else "HTTP") + ("" if dtype == torch.float32 else " bf16")
    model_cfg = TinyLlamaConfig(dtype=dtype)
    model = TinyLlama(model_cfg)
    bucket = "engine-model-" + ("shm" if shm else "http") + "-" + str(dtype).split(".")[1]
    cfg = KVCSConfig(store_url=store.url, access_key=store.access_key,
                     secret_key=store.secret_key, descriptor=model.descriptor(B),
                     bucket=bucket, shm_socket=store.shm_socket if shm else None)
    g = torch.Generator().manual_seed(7)
    prefix = torch.randint(0, model_cfg.vocab, (P * B,), generator=g).tolist()
    tokens_a = prefix + torch.randint(0, model_cfg.vocab, (B + 3,), generator=g).tolist()
    tokens_b = prefix + torch.randint(0, model_cfg.vocab, (2 * B + 7,), generator=g).tolist()

    # The reference: a full recompute with no connector at all.
    plain = MiniEngine(model, None, None, num_blocks=64, block_tokens=B)
    want_b, _ = plain.prefill("ref-b", tokens_b)

    eng = engine_for(model, cfg)
    _, rep_a = eng.prefill("A", tokens_a)
    check(rep_a.external_tokens == 0, "%s: A found KV before it was saved" % name)
    check(eng.scheduler.client.lookup(tokens_a) == (P + 1) * B, "%s: A's blocks not stored" % name)

    got_b, rep_b = eng.prefill("B", tokens_b)
    check(rep_b.external_tokens == P * B,
          "%s: B loaded %d tokens, want %d" % (name, rep_b.external_tokens, P * B))
    check(not rep_b.load_errors, "%s: unexpected load errors %s" % (name, rep_b.load_errors))
    check(rep_b.load_failures == {}, "%s: load failures %r" % (name, rep_b.load_failures))
    diff = check_logits(got_b, want_b, dtype, name + ": B")
    print("%s: B reused %d of %d tokens, max |logit diff| %.3g (max |logit| %.3g)" %
          (name, rep_b.external_tokens, len(tokens_b), diff, want_b.abs().max().item()))
    # B saved its own blocks beyond the shared prefix.
    check(eng.scheduler.client.lookup(tokens_b) == (len(tokens_b) // B) * B,
          "%s: B's suffix not saved" % name)

    # Corrupt block 1 of the shared prefix in layer 1: a new request C with that prefix gets
    # it reported, recomputes from block 1, and its logits are still right.
    corrupt_block(store, bucket, eng.scheduler, tokens_a, 1, 1, model_cfg)
    tokens_c = prefix + torch.randint(0, model_cfg.vocab, (B + 1,), generator=g).tolist()
    want_c, _ = plain.prefill("ref-c", tokens_c)
    got_c, rep_c = eng.prefill("C", tokens_c)
    check(rep_c.external_tokens == P * B, "%s: C loaded %d tokens" % (name, rep_c.external_tokens))
    check(len(rep_c.load_errors) == 1, "%s: load errors %s, want one block" %
          (name, rep_c.load_errors))
    check(rep_c.recomputed_from == B, "%s: recomputed from %s, want %d" %
          (name, rep_c.recomputed_from, B))
    check_failures(rep_c, "C", "corrupt", name)
    diff_c = check_logits(got_c, want_c, dtype, name + ": C after recompute")
    # C's suffix was computed after a failed load: it must not have been stored.
    check(eng.scheduler.client.lookup(tokens_c) == P * B,
          "%s: C saved KV computed over a failed prefix" % name)
    print("%s: corrupt block reported (engine block %s), recomputed from token %d, "
          "max |logit diff| %.3g" % (name, sorted(rep_c.load_errors), rep_c.recomputed_from,
                                      diff_c))


def run_skipped(store):
    """A client that says recomputing costs 1 ns per token and layer: B's load over HTTP measures
    the path (the store path has no deadline: everything arrives); C's load of the same prefix is
    then predicted slower than recomputing and not started: every prefix block is reported by
    get_block_ids_with_load_errors at once ("predicted load"), C recomputes from token 0, and its
    logits are a full recompute's."""
    name = "skipped (HTTP)"
    model_cfg = TinyLlamaConfig()
    model = TinyLlama(model_cfg)
    cfg = KVCSConfig(store_url=store.url, access_key=store.access_key,
                     secret_key=store.secret_key, descriptor=model.descriptor(B),
                     bucket="engine-model-skip", recompute_ns_per_token_layer=1)
    g = torch.Generator().manual_seed(11)
    prefix = torch.randint(0, model_cfg.vocab, (P * B,), generator=g).tolist()
    tokens = [prefix + torch.randint(0, model_cfg.vocab, (B + 1 + i,), generator=g).tolist()
              for i in range(3)]
    plain = MiniEngine(model, None, None, num_blocks=64, block_tokens=B)
    want_c, _ = plain.prefill("ref-c", tokens[2])
    eng = engine_for(model, cfg)
    eng.prefill("A", tokens[0])
    _, rep_b = eng.prefill("B", tokens[1])
    check(rep_b.external_tokens == P * B and not rep_b.load_errors,
          "%s: B loaded %d tokens, errors %s" % (name, rep_b.external_tokens, rep_b.load_errors))
    got_c, rep_c = eng.prefill("C", tokens[2])
    check(rep_c.external_tokens == P * B, "%s: C matched %d tokens" % (name, rep_c.external_tokens))
    check(len(rep_c.load_errors) == P, "%s: load errors %s, want all %d prefix blocks" %
          (name, rep_c.load_errors, P))
    check(rep_c.recomputed_from == 0, "%s: recomputed from %s" % (name, rep_c.recomputed_from))
    check_failures(rep_c, "C", "predicted load", name)
    diff = check_logits(got_c, want_c, torch.float32, name + ": C")
    print("%s: C's load not started (%s), recomputed from token 0, max |logit diff| %.3g" %
          (name, next(iter(rep_c.load_failures["C"].values())), diff))


def relay_config(model, url):
    return KVCSConfig(store_url=None, access_key="", secret_key="", descriptor=model.descriptor(B),
                      relay_url=url, relay_insecure=True)


def run_relay_path(kvcs, tampering_relay, store):
    name = "MOQT relay"
    model_cfg = TinyLlamaConfig()
    model = TinyLlama(model_cfg)
    g = torch.Generator().manual_seed(11)
    prefix = torch.randint(0, model_cfg.vocab, (P * B,), generator=g).tolist()
    tokens_a = prefix + torch.randint(0, model_cfg.vocab, (B + 3,), generator=g).tolist()
    tokens_b = prefix + torch.randint(0, model_cfg.vocab, (2 * B + 7,), generator=g).tolist()
    tokens_c = tokens_a[:(P + 1) * B] + torch.randint(0, model_cfg.vocab, (B + 5,),
                                                      generator=g).tolist()
    plain = MiniEngine(model, None, None, num_blocks=64, block_tokens=B)
    want_b, _ = plain.prefill("ref-b", tokens_b)
    want_c, _ = plain.prefill("ref-c", tokens_c)
    with RelayProcess([kvcs, "relay", "--open"]) as relay:
        eng = engine_for(model, relay_config(model, relay.url))
        _, rep_a = eng.prefill("A", tokens_a)
        check(rep_a.external_tokens == 0, "%s: A found KV before it was saved" % name)
        check(eng.scheduler.client.lookup(tokens_a) == (P + 1) * B,
              "%s: A's blocks not published" % name)
        got_b, rep_b = eng.prefill("B", tokens_b)
        check(rep_b.external_tokens == P * B,
              "%s: B loaded %d tokens, want %d" % (name, rep_b.external_tokens, P * B))
        check(not rep_b.load_errors, "%s: unexpected load errors %s" % (name, rep_b.load_errors))
        diff = check_logits(got_b, want_b, torch.float32, name + ": B")
        print("%s: B reused %d of %d tokens, max |logit diff| %.3g" %
              (name, rep_b.external_tokens, len(tokens_b), diff))
        # A second engine with its own session (clients naming the same relay URL share one;
        # this one names it without the final '/'): discovery at the relay finds A's
        # publication.
        other = engine_for(model, relay_config(model, relay.url.rstrip("/")))
        got_c, rep_c = other.prefill("C", tokens_c)
        check(rep_c.external_tokens == (P + 1) * B,
              "%s: C loaded %d tokens, want %d" % (name, rep_c.external_tokens, (P + 1) * B))
        check(not rep_c.load_errors, "%s: unexpected load errors %s" % (name, rep_c.load_errors))
        diff = check_logits(got_c, want_c, torch.float32, name + ": C (discovery)")
        print("%s: another engine discovered A's publication, reused %d tokens, max |logit diff| "
              "%.3g" % (name, rep_c.external_tokens, diff))
    tamper = [tampering_relay, "--track", "k.raw.s0", "--group", "1", "--object", "1"]
    with RelayProcess(tamper) as bad:
        eng = engine_for(model, relay_config(model, bad.url))
        eng.prefill("A", tokens_a)
        n, where = eng.scheduler.client.lookup_source(tokens_b)
        check(n == P * B, "%s: lookup over MOQT answered %d tokens, want %d" % (name, n, P * B))
        check(where.startswith("relay " + bad.url) and " publication kvcs-1/" in where,
              "%s: lookup says %r" % (name, where))
        got_b, rep_b = eng.prefill("B", tokens_b)
        check(rep_b.external_tokens == P * B, "%s: B loaded %d tokens through the tampering relay"
              % (name, rep_b.external_tokens))
        bad_block = rep_b.block_ids[1]
        check(len(rep_b.load_errors) == 1, "%s: load errors %s, want block 1 only" %
              (name, rep_b.load_errors))
        check(rep_b.recomputed_from == B, "%s: recomputed from %s, want %d" %
              (name, rep_b.recomputed_from, B))
        check_failures(rep_b, "B", "blocks failed over MOQT", name)
        check(rep_b.load_sources.get(bad_block) == {"relay", "recompute"},
              "%s: sources %s" % (name, rep_b.load_sources))
        diff = check_logits(got_b, want_b, torch.float32, name + ": B after recompute")
        print("%s: a flipped bit in layer 1, block 1 was refused; blocks %s reported, recomputed "
              "from token %d, max |logit diff| %.3g" % (name, sorted(rep_b.load_errors),
                                                       rep_b.recomputed_from, diff))
    # The same relay with the store beside it: the block comes from the store.
    with RelayProcess(tamper) as bad:
        cfg = KVCSConfig(store_url=store.url, access_key=store.access_key,
                         secret_key=store.secret_key, descriptor=model.descriptor(B),
                         relay_url=bad.url, relay_insecure=True)  # bucket "kvcache": /_kvsp's
        eng = engine_for(model, cfg)
        eng.prefill("A", tokens_a)
        got_b, rep_b = eng.prefill("B", tokens_b)
        check(rep_b.external_tokens == P * B, "%s+store: B loaded %d tokens" %
              (name, rep_b.external_tokens))
        check(not rep_b.load_errors, "%s+store: load errors %s" % (name, rep_b.load_errors))
        check(rep_b.recomputed_from is None, "%s+store: recomputed" % name)
        ids = rep_b.block_ids
        check(len(rep_b.load_sources) == P, "%s+store: sources %s" % (name, rep_b.load_sources))
        check(rep_b.load_sources[ids[1]] == {"relay", "store"},
              "%s+store: block 1 sources %s" % (name, rep_b.load_sources[ids[1]]))
        check(rep_b.load_sources[ids[0]] == {"relay"} and rep_b.load_sources[ids[2]] == {"relay"},
              "%s+store: sources %s" % (name, rep_b.load_sources))
        diff = check_logits(got_b, want_b, torch.float32, name + "+store: B")
        print("%s with a store: the flipped block was recovered from the store (sources %s), "
              "nothing recomputed, max |logit diff| %.3g" %
              (name, {k: sorted(v) for k, v in rep_b.load_sources.items()}, diff))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    torch.set_num_threads(1)  # ctest runs two tests at once on 2 cores
    with StoreProcess(sys.argv[1]) as store:
        run_path(store, shm=False)
        run_path(store, shm=True)
        run_path(store, shm=False, dtype=torch.bfloat16)
        run_skipped(store)
        run_relay_path(sys.argv[1], sys.argv[2], store)
    print("connector + model: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
