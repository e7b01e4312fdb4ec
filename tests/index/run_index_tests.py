#!/usr/bin/env python3
"""End-to-end checks of `kvcs index` (the KVSP Index Service, spec §7) and `kvcs lookup`: the real
binary on 127.0.0.1, the embedded SQLite store and a real redis-server shared by two nodes.
Waiting is always a poll with a bound, never a sleep used for synchronization."""
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time

KVCS = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
SCOPE = secrets.token_hex(32)
OTHER_SCOPE = secrets.token_hex(32)
COMPAT = secrets.token_hex(32)
DESCRIPTOR = {"kvsp": 1, "model": "test/tiny-llama", "model_rev": "r1", "tokenizer_rev": "t1",
              "attn": "gqa", "layers": 2, "kv_heads": 2, "head_dim": 8, "kv_dtype": "bf16",
              "block_tokens": 4, "layout": "thd"}


def run(*args, ok=True):
    return e2e_util.run(KVCS, *args, ok=ok)


def poll(pred, what, bound_s=10.0):
    return e2e_util.poll(pred, what, bound_s)


class Index:
    """One `kvcs index` process; its port is read from the line it prints."""

    def __init__(self, *args, ca=None):
        self.p = subprocess.Popen([KVCS, "index", "--listen", "127.0.0.1:0", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # With --tls-cert: https, the client trusting `ca`.
        self.tls = ssl.create_default_context(cafile=ca) if ca else None
        line = self.p.stdout.readline()
        m = re.search(r"listening on https?://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.p.kill()
            sys.exit(f"kvcs index did not start: {line!r} {self.p.stderr.read()}")
        self.port = int(m.group(1))

    def connect(self):
        if self.tls:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10,
                                               context=self.tls)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def request(self, method, path, body=None, token=None, headers=None, raw=None):
        c = self.connect()
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        if data is not None:
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        return r.status, (json.loads(text) if text and r.getheader("Content-Type", "").startswith(
            "application/json") else text)

    def oversize(self, path, length, token):
        """A POST declaring a body above the bound: answered 413 before the body is sent."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.putrequest("POST", path)
        c.putheader("Authorization", "Bearer " + token)
        c.putheader("Content-Type", "application/json")
        c.putheader("Content-Length", str(length))
        c.endheaders()
        r = c.getresponse()
        body = json.loads(r.read().decode())
        c.close()
        return r.status, body

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        assert self.p.returncode == 0, (self.p.returncode, self.p.stderr.read())


def keys(n):
    return [secrets.token_hex(32) for _ in range(n)]


def register(ix, token, holder, ks, tier="object-store", ttl_ms=600000, scope=SCOPE,
             compat=COMPAT, anchor=None):
    body = {"compat_id": compat, "scope_id": scope, "holder": holder, "tier": tier,
            "codecs": ["raw"], "layer_first": 0, "layer_count": 2, "block_keys": ks,
            "ttl_ms": ttl_ms}
    if anchor:
        body["anchor_key"] = anchor
    return ix.request("POST", "/kvsp/v1/replicas", body, token)


def lookup(ix, token, ks, scope=SCOPE, compat=COMPAT):
    return ix.request("POST", "/kvsp/v1/lookup",
                      {"compat_id": compat, "scope_id": scope, "block_keys": ks}, token)


def expect_error(resp, status, name):
    st, body = resp
    assert st == status, (st, body, status)
    assert isinstance(body, dict) and body.get("error") == name and body.get("message"), body


def test_basic_and_bad_input(ix, tok, tok_other, tok_lookup_only, d):
    k = keys(6)
    # Two holders: the store has K1..K4, a publisher K1..K6: the longest prefix is all six.
    assert register(ix, tok, "https://store.example/kv", k[:4])[0] == 204
    assert register(ix, tok, "moqt://relay.example/kvcs-1/x", k, tier="relay")[0] == 204
    st, body = lookup(ix, tok, k + keys(2))
    assert st == 200 and body["matched"] == 6, body
    holders = [[r["holder"] for r in e["replicas"]] for e in body["entries"]]
    assert holders[0] == ["moqt://relay.example/kvcs-1/x", "https://store.example/kv"], holders
    assert holders[5] == ["moqt://relay.example/kvcs-1/x"], holders
    # A gap: K1 unknown -> matched 0, 200.
    st, body = lookup(ix, tok, keys(1) + k)
    assert st == 200 and body == {"matched": 0, "entries": []}, body
    # Withdraw the publisher: the prefix shrinks to the store's four.
    st, _ = ix.request("POST", "/kvsp/v1/replicas/withdraw", {
        "compat_id": COMPAT, "scope_id": SCOPE, "holder": "moqt://relay.example/kvcs-1/x",
        "block_keys": k}, tok)
    assert st == 204
    st, body = lookup(ix, tok, k)
    assert st == 200 and body["matched"] == 4, body

    # kvcs lookup: Block Keys from descriptor + tokens + scope key, then the index.
    desc = os.path.join(d, "d.json")
    with open(desc, "w") as f:
        json.dump(DESCRIPTOR, f)
    toks = os.path.join(d, "t.json")
    with open(toks, "w") as f:
        json.dump(list(range(1000, 1014)), f)  # 3 blocks of 4 + 2 tail tokens
    kk = json.loads(run("keys", "--descriptor", desc, "--tokens", toks, "--public").stdout)
    pub_tok = mint(d, kk["scope_id"], "lookup,register")
    assert register(ix, pub_tok, "https://store.example/kv", kk["block_keys"][:2],
                    scope=kk["scope_id"], compat=kk["compat_id"])[0] == 204
    out = json.loads(run("lookup", "--index", f"http://127.0.0.1:{ix.port}", "--descriptor", desc,
                         "--tokens", toks, "--public", "--token", pub_tok).stdout)
    assert out["blocks"] == 3 and out["matched_blocks"] == 2 and out["matched_tokens"] == 8, out
    assert out["entries"][1]["replicas"][0]["holder"] == "https://store.example/kv", out
    p = run("lookup", "--index", f"http://127.0.0.1:{ix.port}", "--descriptor", desc, "--tokens",
            toks, "--public", "--token", tok, ok=False)
    assert "403" in p.stderr and "forbidden" in p.stderr, p.stderr

    # Anchors: unknown compat 404, a known one 200.
    anchor = k[3]
    path = f"/kvsp/v1/anchors/{COMPAT}/{anchor}?scope_id={SCOPE}"
    st, body = ix.request("GET", path, token=tok)
    assert st == 200 and body == {"replicas": []}, (st, body)
    assert register(ix, tok, "https://store.example/kv", k[:4], anchor=anchor)[0] == 204
    st, body = ix.request("GET", path, token=tok)
    assert st == 200 and [r["holder"] for r in body["replicas"]] == ["https://store.example/kv"]
    expect_error(ix.request("GET", path, token=tok_other), 403, "forbidden")
    expect_error(ix.request("GET", f"/kvsp/v1/anchors/{secrets.token_hex(32)}/{anchor}"
                            f"?scope_id={SCOPE}", token=tok), 404, "unknown_compat")

    # Bad input: each a clear JSON error.
    expect_error(ix.request("POST", "/kvsp/v1/lookup", raw="{not json", token=tok), 400, "syntax")
    expect_error(lookup(ix, tok, keys(4097)), 400, "too_many")
    expect_error(lookup(ix, tok, ["ZZ" * 32]), 400, "bad_hex")
    expect_error(lookup(ix, tok, ["ab" * 31]), 400, "bad_hex")
    expect_error(lookup(ix, tok, [k[0].upper()]), 400, "bad_hex")
    expect_error(lookup(ix, tok, k, compat=secrets.token_hex(32)), 404, "unknown_compat")
    expect_error(register(ix, tok, "ftp://x", k[:1]), 400, "bad_holder")
    expect_error(ix.oversize("/kvsp/v1/lookup", 600 * 1024, tok), 413, "too_large")
    expect_error(ix.request("GET", "/kvsp/v1/lookup", token=tok), 405, "method_not_allowed")
    expect_error(ix.request("GET", "/nope", token=tok), 404, "not_found")
    # Authorization: one 403 "forbidden" for every refusal, the same for an existing scope
    # (SCOPE has records) and one that has none: nobody learns which scopes exist.
    expect_error(lookup(ix, None, k), 403, "forbidden")
    expect_error(lookup(ix, "not.a.token", k), 403, "forbidden")
    st1, b1 = lookup(ix, tok_other, k)  # another scope's token, existing scope
    st2, b2 = lookup(ix, tok_other, k, scope=secrets.token_hex(32))  # no such scope
    expect_error((st1, b1), 403, "forbidden")
    assert (st1, b1) == (st2, b2), (b1, b2)
    expect_error(register(ix, tok_lookup_only, "https://x/kv", k[:1]), 403, "forbidden")
    expect_error(ix.request("POST", "/kvsp/v1/lookup", {"compat_id": COMPAT}, token=tok), 400,
                 "missing_field")
    # Still serving, and the metrics saw it all.
    st, body = lookup(ix, tok, k)
    assert st == 200 and body["matched"] == 4, body
    st, metrics = ix.request("GET", "/metrics")
    assert st == 200, st
    for needle in ['kvcs_index_requests_total{endpoint="lookup",status="200"}',
                   'kvcs_index_refusals_total{cause="forbidden"}',
                   'kvcs_index_refusals_total{cause="too_large"}',
                   "kvcs_index_lookups_total", "kvcs_index_registrations_total",
                   "kvcs_index_records "]:
        assert needle in metrics, (needle, metrics)


def test_expired_token(ix, d):
    short = mint(d, SCOPE, "lookup", ttl="1")
    k = keys(1)
    poll(lambda: lookup(ix, short, k)[0] == 403, "a 1-second token to expire", bound_s=5)
    st, body = lookup(ix, short, k)
    assert body["error"] == "forbidden" and "expired" in body["message"].lower(), body


def test_lease_expiry(ix, tok):
    k = keys(3)
    assert register(ix, tok, "https://short.example/kv", k, ttl_ms=300)[0] == 204
    assert register(ix, tok, "https://long.example/kv", k[:1])[0] == 204
    st, body = lookup(ix, tok, k)
    assert body["matched"] == 3, body
    poll(lambda: lookup(ix, tok, k)[1]["matched"] == 1, "the 300 ms lease to end")
    st, body = lookup(ix, tok, k)
    assert [r["holder"] for r in body["entries"][0]["replicas"]] == ["https://long.example/kv"]


def test_restart(d, key_arg, tok):
    db = os.path.join(d, "index.db")
    ix = Index("--db", db, "--keys", key_arg)
    k = keys(5)
    assert register(ix, tok, "https://store.example/kv", k)[0] == 204
    assert register(ix, tok, "https://gone.example/kv", k, ttl_ms=200)[0] == 204
    ix.stop()
    ix = Index("--db", db, "--keys", key_arg)
    try:
        poll(lambda: [len(e["replicas"]) for e in lookup(ix, tok, k)[1]["entries"]] == [1] * 5,
             "the short lease to end after the restart")
        st, body = lookup(ix, tok, k)
        assert st == 200 and body["matched"] == 5, body
        assert body["entries"][0]["replicas"][0]["holder"] == "https://store.example/kv"
    finally:
        ix.stop()


def test_two_nodes_on_redis(d, key_arg, tok):
    redis = shutil.which("redis-server")
    if not redis:
        sys.exit("redis-server is not installed (scripts/bootstrap.sh installs it)")
    rdir = tempfile.mkdtemp(prefix="kvcs-redis-")
    sock = os.path.join(rdir, "redis.sock")
    rp = subprocess.Popen([redis, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                           "--dir", rdir, "--save", "", "--appendonly", "no", "--logfile",
                           os.path.join(rdir, "redis.log")])
    try:
        poll(lambda: os.path.exists(sock), "redis-server's socket")
        a = Index("--redis", "unix:" + sock, "--keys", key_arg)
        b = Index("--redis", sock, "--keys", key_arg)
        try:
            k = keys(4)
            assert register(a, tok, "https://a.example/kv", k[:2])[0] == 204
            assert register(b, tok, "https://b.example/kv", k, tier="disk")[0] == 204
            for ix in (a, b):
                st, body = lookup(ix, tok, k)
                assert st == 200 and body["matched"] == 4, body
                assert [r["holder"] for r in body["entries"][0]["replicas"]] == [
                    "https://b.example/kv", "https://a.example/kv"], body
            assert a.request("POST", "/kvsp/v1/replicas/withdraw", {
                "compat_id": COMPAT, "scope_id": SCOPE, "holder": "https://b.example/kv",
                "block_keys": k}, tok)[0] == 204
            st, body = lookup(b, tok, k)
            assert body["matched"] == 2, body
            # A holder that stops renewing disappears from both nodes.
            k2 = keys(2)
            assert register(a, tok, "https://c.example/kv", k2, ttl_ms=300)[0] == 204
            assert lookup(b, tok, k2)[1]["matched"] == 2
            poll(lambda: lookup(b, tok, k2)[1]["matched"] == 0, "the lease to end in Redis")
            _, metrics = a.request("GET", "/metrics")
            assert 'kvcs_index_store_info{kind="redis"} 1' in metrics, metrics
        finally:
            a.stop()
            b.stop()
    finally:
        rp.terminate()
        rp.wait(timeout=10)
        shutil.rmtree(rdir, ignore_errors=True)


SIGNER = {}


def test_https(d, key_arg, tok):
    """An index serving TLS (--tls-cert/--tls-key) and kvcs lookup as an https client: the
    certificate checked against --ca-file (name or address), refused without it, and
    --insecure."""
    cert, key = os.path.join(d, "tls.pem"), os.path.join(d, "tls.key")
    run("cert", "--out-cert", cert, "--out-key", key)  # localhost, 127.0.0.1 and ::1
    ix = Index("--db", "", "--keys", key_arg, "--tls-cert", cert, "--tls-key", key, ca=cert)
    try:
        desc, toks = os.path.join(d, "d.json"), os.path.join(d, "t.json")
        kk = json.loads(run("keys", "--descriptor", desc, "--tokens", toks, "--public").stdout)
        pub_tok = mint(d, kk["scope_id"], "lookup,register")
        assert register(ix, pub_tok, "https://tls.example/kv", kk["block_keys"][:3],
                        scope=kk["scope_id"], compat=kk["compat_id"])[0] == 204
        base = ["lookup", "--descriptor", desc, "--tokens", toks, "--public", "--token", pub_tok]
        for host in ("127.0.0.1", "localhost"):
            out = json.loads(run(*base, "--index", f"https://{host}:{ix.port}", "--ca-file",
                                 cert).stdout)
            assert out["matched_blocks"] == 3, out
        p = run(*base, "--index", f"https://127.0.0.1:{ix.port}", ok=False)
        assert "certificate" in p.stderr, p.stderr
        out = json.loads(run(*base, "--index", f"https://127.0.0.1:{ix.port}",
                             "--insecure").stdout)
        assert out["matched_blocks"] == 3, out
        # Plain http to a TLS port is a clear error, not a hang.
        p = run(*base, "--index", f"http://127.0.0.1:{ix.port}", "--timeout", "5", ok=False)
        assert "index" in p.stderr, p.stderr
    finally:
        ix.stop()


def mint(d, scope, allow, ttl="600"):
    return run("token", "--key", SIGNER["key"], "--sub", "e2e", "--scope-id", scope, "--allow",
               allow, "--ttl", ttl).stdout.strip()


def main():
    with tempfile.TemporaryDirectory() as d:
        key, pub = os.path.join(d, "signer.pem"), os.path.join(d, "signer.pub.pem")
        run("keygen", "producer", "--alg", "es256", "--kid", "idx-1", "--out-key", key,
            "--out-pub", pub)
        SIGNER["key"] = key
        key_arg = "idx-1=" + pub
        tok = mint(d, SCOPE, "lookup,register")
        tok_other = mint(d, OTHER_SCOPE, "lookup,register")
        tok_lookup_only = mint(d, SCOPE, "lookup")

        # Usage errors.
        p = run("index", "--listen", "127.0.0.1:0", "--db", "", ok=False)
        assert "no token keys" in p.stderr, p.stderr
        p = run("index", "--listen", "nope", "--open", ok=False)
        assert "HOST:PORT" in p.stderr, p.stderr
        assert "Examples" in run("index", "--help").stdout

        # A key config file works like --keys kid=pem.
        cfg = os.path.join(d, "keys.json")
        with open(cfg, "w") as f:
            json.dump({"keys": {"idx-1": pub}}, f)
        ix = Index("--db", "", "--keys", cfg)
        try:
            test_basic_and_bad_input(ix, tok, tok_other, tok_lookup_only, d)
            test_lease_expiry(ix, tok)
            test_expired_token(ix, d)
        finally:
            ix.stop()

        # --open: no token needed.
        ix = Index("--db", "", "--open")
        try:
            assert register(ix, None, "https://o.example/kv", keys(1))[0] == 204
        finally:
            ix.stop()

        test_https(d, key_arg, tok)
        test_restart(d, key_arg, tok)
        test_two_nodes_on_redis(d, key_arg, tok)
    print("kvcs index e2e: all checks passed")


if __name__ == "__main__":
    main()
