#!/usr/bin/env python3
"""End-to-end checks of holders registering themselves with `kvcs index` (KVSP spec §7): a real
`kvcs store` (aggregated PUT, S3 DELETE) and a real `kvcs publish` (a moqt:// namespace, a short
renewed lease) on 127.0.0.1, then `kvcs lookup` and `kvcs get --index` as consumers.
Waiting is always a poll with a bound, never a sleep used for synchronization."""
import http.client
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

KVCS = sys.argv[1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_util  # noqa: E402
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "s3"))
import harness  # noqa: E402  (SigV4 signer and the store's test keys)

MAKE_KV = os.path.join(HERE, "..", "cli", "make_kv_safetensors.py")
PROCS = []


def run(*args, ok=True):
    return e2e_util.run(KVCS, *args, ok=ok)


def poll(pred, what, bound_s=15.0):
    return e2e_util.poll(pred, what, bound_s)


def start(args, ready, env=None):
    """Starts a kvcs process and reads stdout until a line matches `ready`; returns (p, match)."""
    p = subprocess.Popen([KVCS, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    PROCS.append(p)
    seen = []
    for line in p.stdout:
        seen.append(line)
        m = re.search(ready, line)
        if m:
            return p, m, seen
    sys.exit(f"kvcs {args[0]} did not start: {''.join(seen)} {p.stderr.read()}")


def stop(p, sig=signal.SIGTERM):
    p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit("a kvcs process ignored its stop signal")
    return out + err


class Index:
    def __init__(self, port, token):
        self.port, self.token = port, token

    def lookup(self, compat, scope, keys):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("POST", "/kvsp/v1/lookup",
                  body=json.dumps({"compat_id": compat, "scope_id": scope, "block_keys": keys,
                                   "max_replicas": 8}),
                  headers={"Authorization": "Bearer " + self.token,
                           "Content-Type": "application/json"})
        r = c.getresponse()
        body = json.loads(r.read())
        c.close()
        if r.status == 404:
            return {"matched": 0, "entries": []}
        assert r.status == 200, (r.status, body)
        return body

    def anchors(self, compat, scope, anchor):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", f"/kvsp/v1/anchors/{compat}/{anchor}?scope_id={scope}",
                  headers={"Authorization": "Bearer " + self.token})
        r = c.getresponse()
        body = json.loads(r.read())
        c.close()
        if r.status == 404:
            return []
        assert r.status == 200, (r.status, body)
        return [x["holder"] for x in body["replicas"]]


def holders(resp, i):
    return [r["holder"] for r in resp["entries"][i]["replicas"]] if i < resp["matched"] else []


def s3(store_port, method, path, query="", body=b"", headers=None, unsigned=False):
    host = f"127.0.0.1:{store_port}"
    payload = "UNSIGNED-PAYLOAD" if unsigned else harness.sha(body)
    h, *_ = harness.sign_request(method, path, host, headers or {}, payload,
                                 canonical_query=query)
    c = http.client.HTTPConnection("127.0.0.1", store_port, timeout=30)
    c.request(method, path + ("?" + query if query else ""), body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def aggregated_put(store_port, scope_id, containers, prefix=False):
    body = b"KVAP" + bytes([1, 1 if prefix else 0, 0, 0]) + bytes.fromhex(scope_id) + struct.pack(">I",
                                                                                 len(containers))
    for c in containers:
        body += struct.pack(">Q", len(c)) + c
    st, data = s3(store_port, "POST", "/kvcache", "kvcs-aggregate-put=", body, unsigned=True)
    assert st == 200, (st, data)
    return json.loads(data)


def main():
    d = tempfile.mkdtemp(prefix="kvcs-holders-e2e-")
    try:
        # A 4-block prompt (B = 16), its first 2 blocks as the publisher's cache.
        subprocess.run([sys.executable, MAKE_KV, f"{d}/long.safetensors", "--tokens", "64"],
                       check=True)
        subprocess.run([sys.executable, MAKE_KV, f"{d}/short.safetensors", "--tokens", "32"],
                       check=True)
        run("keygen", "scope", "--out", f"{d}/s.key")
        run("pack", f"{d}/long.safetensors", "--scope-key-file", f"{d}/s.key", "--out",
            f"{d}/pack")
        pack = json.load(open(f"{d}/pack/index.json"))
        scope, compat = pack["scope_id"], pack["compat_id"]
        keys = [b["block_key"] for b in pack["blocks"]]
        assert len(keys) == 4, pack
        with open(f"{d}/prompt.txt", "w") as f:
            f.write(" ".join(map(str, pack["token_ids"])))
        with open(f"{d}/d.json", "w") as f:
            json.dump(pack["descriptor"], f)

        # The index, with tokens: holders may register, consumers look up.
        run("keygen", "producer", "--alg", "es256", "--kid", "idx-1", "--out-key",
            f"{d}/signer.pem", "--out-pub", f"{d}/signer.pub")
        for name, allow in (("reg", "register,lookup"), ("look", "lookup")):
            t = run("token", "--key", f"{d}/signer.pem", "--sub", name, "--scope-id", scope,
                    "--allow", allow, "--ttl", "600").stdout.strip()
            with open(f"{d}/{name}.jwt", "w") as f:
                f.write(t + "\n")
        look = open(f"{d}/look.jwt").read().strip()
        ixp, m, _ = start(["index", "--listen", "127.0.0.1:0", "--db", f"{d}/index.db", "--keys",
                           f"idx-1={d}/signer.pub"], r"listening on http://127\.0\.0\.1:(\d+)")
        ix = Index(int(m.group(1)), look)
        index_url = f"http://127.0.0.1:{ix.port}"

        # The store: blocks 2..4 by one aggregated PUT.
        cfg = f"{d}/s3.conf"
        with open(cfg, "w") as f:
            f.write(f"region = us-east-1\n[key {harness.ACCESS_KEY}]\nsecret = {harness.SECRET_KEY}\n")
        sp, m, banner = start(["store", "--root", f"{d}/root", "--listen", "127.0.0.1:0",
                               "--config", cfg, "--index", index_url, "--index-token-file",
                               f"{d}/reg.jwt", "--shm-socket", "none"],
                              r"listening on http://127\.0\.0\.1:(\d+)")
        store_port = int(m.group(1))
        store_holder = f"http://127.0.0.1:{store_port}/_kvsp"
        assert any(store_holder in ln for ln in banner), banner
        st, data = s3(store_port, "PUT", "/kvcache")
        assert st == 200, (st, data)
        conts = [open(f"{d}/pack/{b['file']}", "rb").read() for b in pack["blocks"]]
        put = aggregated_put(store_port, scope, conts[1:])
        assert put["stored"] == 3, put
        r = poll(lambda: (lambda x: x if x["matched"] == 0 and
                          ix.lookup(compat, scope, keys[1:])["matched"] == 3 else None)(
                              ix.lookup(compat, scope, keys)),
                 "the store's registration of blocks 2..4")
        rest = ix.lookup(compat, scope, keys[1:])
        assert holders(rest, 0) == [store_holder], rest
        rep = rest["entries"][0]["replicas"][0]
        assert rep["tier"] == "object-store" and rep["codecs"] == ["raw"], rep
        assert rep["layer_first"] == 0 and rep["layer_count"] == 2, rep

        # The publisher: blocks 1..2, a 1-second lease renewed while it serves.
        pp, m, seen = start(["publish", f"{d}/short.safetensors", "--listen", "127.0.0.1:0",
                             "--scope-key-file", f"{d}/s.key", "--index", index_url,
                             "--index-token-file", f"{d}/reg.jwt", "--index-ttl", "1"],
                            r"^registering (moqt://\S+)")
        pub_holder = m.group(1)
        ns = [ln.split()[1] for ln in seen if ln.startswith("namespace ")][0]
        assert pub_holder.endswith("/?ns=" + ns), (pub_holder, ns)
        assert ns.split("/")[3] == keys[1], (ns, keys)  # anchored at K_2

        # The longest prefix across both: 1 from the publisher, 2 from both, 3-4 from the store.
        r = poll(lambda: (lambda x: x if x["matched"] == 4 else None)(
            ix.lookup(compat, scope, keys)), "a lookup matching all 4 blocks")
        assert holders(r, 0) == [pub_holder], r
        assert holders(r, 1) == [pub_holder, store_holder], r  # cpu before object-store
        assert holders(r, 2) == [store_holder] and holders(r, 3) == [store_holder], r
        assert r["entries"][0]["replicas"][0]["tier"] == "cpu", r
        out = json.loads(run("lookup", "--index", index_url, "--descriptor", f"{d}/d.json",
                             "--tokens-file", f"{d}/prompt.txt", "--scope-key-file",
                             f"{d}/s.key", "--token-file", f"{d}/look.jwt").stdout)
        assert out["matched_blocks"] == 4 and out["matched_tokens"] == 64, out

        # The lease is renewed (a later expiry), not just held.
        first = r["entries"][0]["replicas"][0]["expires_ms"]
        poll(lambda: (lambda x: x["matched"] >= 1 and
                      x["entries"][0]["replicas"][0]["expires_ms"] > first + 200)(
                          ix.lookup(compat, scope, keys)), "a renewal of the publisher's lease")

        # A consumer: kvcs get --index finds the publication (no URL given) and the store; the
        # publication's 2 blocks come over MOQT (blocks 3-4 are the store's, over HTTP).
        g = run("get", "--index", index_url, "--index-token-file", f"{d}/look.jwt", "--insecure",
                "--tokens", f"{d}/prompt.txt", "--descriptor", f"{d}/d.json", "--scope-key-file",
                f"{d}/s.key", "--completed", "--blocks", "2")
        assert "index: 4 of 4 blocks held (64 tokens)" in g.stdout, g.stdout + g.stderr
        assert f"holder {store_holder} (object-store, layers 0-1, raw): 3 block(s)" in g.stdout, \
            g.stdout
        assert f"index: retrieving {ns} (2 blocks)" in g.stdout, g.stdout + g.stderr
        assert "block 0: moqt" in g.stdout and "block 1: moqt" in g.stdout, g.stdout + g.stderr

        # A holder that stops renewing disappears: kill -9 (no withdrawal), the lease runs out.
        pp.send_signal(signal.SIGKILL)
        pp.wait()
        poll(lambda: ix.lookup(compat, scope, keys)["matched"] == 0,
             "the killed publisher's lease to end", bound_s=10)
        assert holders(ix.lookup(compat, scope, keys[1:]), 0) == [store_holder]

        # A publisher that exits withdraws at once (a lease of 10 min could not end meanwhile).
        pp, m, _ = start(["publish", f"{d}/short.safetensors", "--listen", "127.0.0.1:0",
                          "--scope-key-file", f"{d}/s.key", "--index", index_url,
                          "--index-token-file", f"{d}/reg.jwt", "--index-ttl", "600"],
                         r"^registering (moqt://\S+)")
        poll(lambda: ix.lookup(compat, scope, keys)["matched"] == 4, "the second publisher")
        out = stop(pp, signal.SIGINT)
        assert "withdrawn from the index" in out, out
        assert ix.lookup(compat, scope, keys)["matched"] == 0

        # Withdraw on delete: an S3 DELETE of block 3's object removes the store's record.
        st, data = s3(store_port, "DELETE", f"/kvcache/kvsp/{scope}/{compat}/{keys[2]}.raw")
        assert st == 204, (st, data)
        poll(lambda: ix.lookup(compat, scope, keys[1:])["matched"] == 1,
             "the deleted block to be withdrawn")
        assert ix.lookup(compat, scope, keys[3:])["matched"] == 1  # block 4 still held

        out = stop(sp)
        m = re.search(r"index: (\d+) sent, (\d+) failed, (\d+) dropped", out)
        assert m and m.group(1) == "2" and m.group(2) == "0" and m.group(3) == "0", out

        # A store keeps what it holds registered: a short lease (1 s) renewed while it runs, every
        # block and the prefix record of one aggregated PUT with the prefix flag.
        store_args = ["store", "--root", f"{d}/root3", "--listen", "127.0.0.1:0", "--config", cfg,
                      "--index", index_url, "--index-token-file", f"{d}/reg.jwt",
                      "--shm-socket", "none"]
        sp, m, _ = start(store_args + ["--index-ttl", "1"],
                         r"listening on http://127\.0\.0\.1:(\d+)")
        holder3 = f"http://127.0.0.1:{m.group(1)}/_kvsp"
        assert s3(int(m.group(1)), "PUT", "/kvcache")[0] == 200
        assert aggregated_put(int(m.group(1)), scope, conts, prefix=True)["stored"] == 4
        def held_by(holder):
            """The lookup of all 4 keys when `holder` holds every one of them, else None."""
            x = ix.lookup(compat, scope, keys)
            return x if x["matched"] == 4 and all(holder in holders(x, i)
                                                   for i in range(4)) else None

        def replica_of(x, i, holder):
            return [p for p in x["entries"][i]["replicas"] if p["holder"] == holder][0]

        # (The first store, stopped without withdrawing, still holds blocks 2 and 4 until its
        # 1-day lease ends; only holder3 is looked at here.)
        r = poll(lambda: held_by(holder3), "the short-lease store's registration")
        assert ix.anchors(compat, scope, keys[3]) == [holder3]
        first = replica_of(r, 0, holder3)["expires_ms"]
        poll(lambda: (lambda x: x and replica_of(x, 0, holder3)["expires_ms"] > first + 200)(
            held_by(holder3)), "a renewal of the store's leases")
        # A store that stops renewing (killed: no withdrawal) disappears after its lease.
        sp.send_signal(signal.SIGKILL)
        sp.wait()

        def gone(holder):
            x = ix.lookup(compat, scope, keys)
            return all(holder not in holders(x, i) for i in range(x["matched"])) and \
                ix.anchors(compat, scope, keys[3]) == []
        poll(lambda: gone(holder3), "the killed store's leases to end", bound_s=10)
        # Restarted on the same directory (the index still up), it registers what it holds on
        # disk again, the prefix included, without any new PUT.
        sp, m, _ = start(store_args + ["--index-ttl", "600"],
                         r"listening on http://127\.0\.0\.1:(\d+)")
        holder4 = f"http://127.0.0.1:{m.group(1)}/_kvsp"
        r = poll(lambda: held_by(holder4), "the restarted store's registration")
        assert replica_of(r, 3, holder4)["layer_count"] == 2, r
        assert ix.anchors(compat, scope, keys[3]) == [holder4]
        out = stop(sp)
        assert "1 passes over the bucket (last: 4 blocks, 1 prefixes, 0 skipped), 0 failed" in out, \
            out

        # An unreachable index never fails or slows a PUT: it is counted and logged.
        sp, m, _ = start(["--log", "warn", "store", "--root", f"{d}/root2", "--listen",
                          "127.0.0.1:0", "--config", cfg, "--index", "http://127.0.0.1:1",
                          "--shm-socket", "none"], r"listening on http://127\.0\.0\.1:(\d+)")
        port2 = int(m.group(1))
        assert s3(port2, "PUT", "/kvcache")[0] == 200
        t0 = time.monotonic()
        put = aggregated_put(port2, scope, conts[:1])
        assert put["stored"] == 1 and time.monotonic() - t0 < 5, put
        out = stop(sp)
        m = re.search(r"index: (\d+) sent, (\d+) failed", out)
        assert m and m.group(1) == "0" and m.group(2) == "1", out
        assert "registration not sent" in out, out

        stop(ixp)
        h = run("store", "--help").stdout
        assert "--index" in h and "--public-url" in h, h
        print("holders e2e: all checks passed")
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
