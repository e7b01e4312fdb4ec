"""What test_binding.py and test_binding_moqt.py share: the test model's shape, checks, and
registering a holder at an index."""
import json
import urllib.request

from kvcs import KvcsError

L, H, D, B, NB = 3, 2, 8, 4, 6


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def raises(status, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except KvcsError as e:
        check(e.args[0] == status, "raised %s, want %s (%s)" % (e.args[0], status, e.args[1]))
        return e
    raise AssertionError("no KvcsError %s from %s" % (status, fn))


def descriptor(layers=L, dtype="fp32"):
    return dict(model="test/binding", model_rev="1", tokenizer_rev="1", attn="gqa",
                layers=layers, kv_heads=H, head_dim=D, kv_dtype=dtype, block_tokens=B)


def register(index_url, client, tokens, blocks, holder):
    """Registers `holder` for the first `blocks` blocks of `tokens` (kvsp-index.md §7)."""
    keys, scope, compat = [], None, None
    for i in range(blocks):
        key, name = client.block_key(tokens, i)  # name: kvsp/<scope>/<compat>/<key>.raw
        _, scope, compat, _ = name.split("/")
        keys.append(key.hex())
    body = json.dumps({"compat_id": compat, "scope_id": scope, "holder": holder, "tier": "disk",
                       "codecs": ["raw"], "layer_first": 0, "layer_count": L,
                       "block_keys": keys, "ttl_ms": 600000}).encode()
    req = urllib.request.Request(index_url + "/kvsp/v1/replicas", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        check(resp.status == 204, "index: register answered %d" % resp.status)
