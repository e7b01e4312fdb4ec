#!/usr/bin/env python3
"""End-to-end tests of `kvcs relay` with real processes over QUIC on 127.0.0.1.

usage: run_relay_tests.py /path/to/kvcs [test-name-substring ...]

The relay, its publishers (kvcs moq-pub --relay) and subscribers (kvcs moq-sub) are separate
processes. Every wait is bounded (a subscriber's --timeout, a process deadline); nothing sleeps
to synchronize: each step waits for a line the previous process printed.
"""
import concurrent.futures
import queue
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import run_cli_tests as cli  # noqa: E402  (the shared run/check helpers; KVCS from argv[1])

KVCS = cli.KVCS
check = cli.check
Failure = cli.Failure
NS = "kvcs-demo/synthetic"


def start(args, want_prefix, deadline_s=30):
    """Starts `kvcs args` and waits (bounded) for a stdout line starting with want_prefix;
    returns (process, that line, lines seen). Reader threads keep draining both pipes, so a
    chatty process never blocks on a full pipe; p.rest collects everything after."""
    p = subprocess.Popen([KVCS, *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    p.rest = []
    p.rest_cond = threading.Condition()

    def add_rest(line):
        with p.rest_cond:
            p.rest.append(line)
            p.rest_cond.notify_all()

    def pump(f, into_queue):
        for line in iter(f.readline, ""):
            (lines.put if into_queue else add_rest)(line)
        if into_queue:
            lines.put(None)

    p.threads = []  # this process's readers: stop() waits for these alone
    for f, q in ((p.stdout, True), (p.stderr, False)):
        p.threads.append(threading.Thread(target=pump, args=(f, q), daemon=True))
        p.threads[-1].start()
    seen = []
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            break
        seen.append(line)
        if line.startswith(want_prefix):
            p.threads.append(threading.Thread(target=lambda: [add_rest(ln) for ln in
                                                              iter(lambda: lines.get() or "", "")],
                                              daemon=True))
            p.threads[-1].start()
            return p, line, seen
    p.kill()
    p.wait()
    raise Failure(f"kvcs {' '.join(map(str, args))} did not print '{want_prefix}':\n" +
                  "".join(seen) + "".join(p.rest))


def start_relay(*extra):
    p, line, _ = start(["relay", "--listen", "127.0.0.1:0", *extra], "relay ")
    url = line.split(" listening on ")[1].split()[0].rstrip(",")
    p.metrics_port = None
    if "metrics http://" in line:
        p.metrics_port = int(line.split("metrics http://")[1].split("/")[0].rsplit(":", 1)[1])
    return p, url


def stop(p, sig=signal.SIGTERM):
    if p.poll() is None:
        p.send_signal(sig)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Failure("process did not exit after SIGTERM")
    for t in getattr(p, "threads", []):
        t.join(timeout=5)
    return p.returncode, "".join(getattr(p, "rest", [])), ""


def wait_for_output(p, text, deadline_s=30):
    """Waits (bounded; woken by each line p prints after start()) until `text` appears."""
    with p.rest_cond:
        if not p.rest_cond.wait_for(lambda: any(text in ln for ln in p.rest), deadline_s):
            raise Failure(f"no '{text}' within {deadline_s} s:\n" + "".join(p.rest))


def sub(url, *args, ok=True):
    return cli.run("moq-sub", url, "--insecure", "--namespace", NS, *args, ok=ok)


def publisher(relay_url, *args):
    """moq-pub announcing to the relay; returns once the relay accepted the namespace."""
    p, _, _ = start(["moq-pub", "--relay", relay_url, "--insecure", "--namespace", NS, *args],
                    "namespace accepted")
    return p


def complete_line(groups, objects, size):
    return f"complete: {groups * objects} objects in {groups} groups, {groups * objects * size} bytes"


def test_relay_help():
    p = cli.run("relay", "--help")
    check("Example" in p.stdout and "--upstream" in p.stdout and "--keys" in p.stdout, p.stdout)
    r = cli.run("relay", "--listen", "127.0.0.1:0", ok=False)
    check("--open" in r.stderr and "hint:" in r.stderr, r.stderr)  # no keys, not open: refused


def test_fan_out_to_32_subscribers_joining_before_during_and_after():
    relay, url = start_relay("--open", "--metrics", "127.0.0.1:0")
    G, O, S = 8, 16, 4096
    try:
        pub = publisher(url, "--groups", G, "--objects", O, "--size", S, "--rate", 400,
                        "--start-on-subscribe")
        want = complete_line(G, O, S)

        def one(_):
            s = sub(url, "--fill", "--verify", "--print", "none", "--timeout", 60)
            return s.stdout

        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
            early = [ex.submit(one, i) for i in range(16)]   # before and during production
            late = [ex.submit(one, i) for i in range(16)]
            outs = [f.result() for f in early + late]
        for o in outs:
            check(want in o and "payload errors 0" in o and "DUPLICATES" not in o, o)
            check("track ended" in o, o)
        rc, _, _ = stop(pub)
        # After the publisher left: served whole from the relay's cache.
        after = sub(url, "--fill", "--verify", "--print", "none", "--timeout", 60)
        check(want in after.stdout and "payload errors 0" in after.stdout, after.stdout)
        f = cli.run("moq-sub", url, "--insecure", "--namespace", NS, "--fetch", "--start", 2,
                    "--end", 3, "--verify", "--timeout", 30)
        check(f"complete: {2 * O} objects" in f.stdout, f.stdout)
        m = relay_metrics(relay)
        check(m.get("kvcs_relay_upstream_requests_total") == 1, f"one upstream request: {m}")
        check(m.get("kvcs_relay_cached_publications") == 1, m)
    finally:
        stop(relay)


def relay_metrics(relay_proc):
    port = relay_proc.metrics_port
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for ln in body.splitlines():
        if ln and not ln.startswith("#"):
            k, v = ln.rsplit(" ", 1)
            out[k] = int(v)
    return out


def test_three_relay_chain_with_discovery():
    root, root_url = start_relay("--open", "--id", "root")
    a, a_url = start_relay("--open", "--id", "a", "--upstream", root_url, "--upstream-insecure")
    b, b_url = start_relay("--open", "--id", "b", "--upstream", root_url, "--upstream-insecure")
    try:
        pub = publisher(a_url, "--groups", 4, "--objects", 8, "--size", 1000, "--rate", 200,
                        "--start-on-subscribe")
        n = cli.run("moq-sub", b_url, "--insecure", "--discover", "kvcs-demo", "--count", 1,
                    "--timeout", 30)
        check("namespace kvcs-demo/synthetic" in n.stdout, n.stdout)
        s = sub(b_url, "--fill", "--verify", "--print", "none", "--timeout", 60)
        check(complete_line(4, 8, 1000) in s.stdout and "payload errors 0" in s.stdout, s.stdout)
        stop(pub)
    finally:
        for p in (b, a, root):
            stop(p)


def test_tokens_grant_by_prefix_and_bad_ones_are_refused():
    d = os.environ.get("TMPDIR", "/tmp")
    key, pubkey = f"{d}/relay-signer-{os.getpid()}.pem", f"{d}/relay-signer-{os.getpid()}.pub"
    cli.run("keygen", "producer", "--alg", "es256", "--kid", "r1", "--out-key", key,
            "--out-pub", pubkey)
    relay, url = start_relay("--keys", f"r1={pubkey}")
    files = []

    def token(name, grant, ttl=600):
        t = cli.run("token", "--key", key, "--sub", name, "--grant", grant, "--ttl", ttl)
        path = f"{d}/relay-token-{name}-{os.getpid()}"
        with open(path, "w") as f:
            f.write(t.stdout.strip())
        files.append(path)
        return path

    try:
        pt = token("pub", "publish@kvcs-demo")
        st = token("sub", "subscribe@kvcs-demo/synthetic")
        other = token("other", "subscribe@kvcs-demo/elsewhere")
        pub = publisher(url, "--auth-token", pt, "--groups", 2, "--objects", 4, "--size", 100,
                        "--rate", 0)
        ok = sub(url, "--auth-token", st, "--fill", "--verify", "--print", "none", "--timeout", 30)
        check(complete_line(2, 4, 100) in ok.stdout, ok.stdout)
        r = sub(url, "--auth-token", other, "--fill", "--timeout", 30, ok=False)
        check("UNAUTHORIZED" in r.stderr, r.stderr)
        r = sub(url, "--fill", "--timeout", 30, ok=False)  # no token at all
        check("UNAUTHORIZED" in r.stderr or "unauthorized" in r.stderr.lower(), r.stderr)
        forged = f"{d}/relay-token-forged-{os.getpid()}"
        with open(st) as f, open(forged, "w") as g:
            t = f.read()
            g.write(t[:-2] + ("AA" if not t.endswith("AA") else "BB"))
        files.append(forged)
        r = sub(url, "--auth-token", forged, "--fill", "--timeout", 30, ok=False)
        check("complete:" not in r.stdout, r.stdout)
        # A subscriber's token may not publish.
        p2 = subprocess.run([KVCS, "moq-pub", "--relay", url, "--insecure", "--namespace",
                             "kvcs-demo/x", "--auth-token", st, "--groups", "1", "--objects",
                             "1", "-q"], capture_output=True, text=True)
        check(p2.returncode != 0 and "UNAUTHORIZED" in p2.stderr, p2.stderr)
        stop(pub)
    finally:
        stop(relay)
        for f in files + [key, pubkey]:
            if os.path.exists(f):
                os.unlink(f)


def test_a_stalled_subscriber_is_cut_off_and_the_others_finish():
    # SIGSTOP: a truly stalled QUIC receiver (no reads, no ACKs). The relay cuts it off past
    # --subscriber-stall-ms (PUBLISH_DONE TOO_FAR_BEHIND), counts and logs it; the others
    # receive everything; resumed, the stalled one exits with an error instead of hanging.
    relay, url = start_relay("--open", "--metrics", "127.0.0.1:0", "--subscriber-stall-ms", 2000)
    # 16 MiB: more than the relay's QUIC buffers for one connection (a 4 MiB unsent budget plus
    # what is in flight), so the stalled subscriber's subscription cannot finish writing.
    G, O, S = 8, 64, 32768
    try:
        pub = publisher(url, "--groups", G, "--objects", O, "--size", S, "--rate", 500,
                        "--start-on-subscribe")
        slow, _, _ = start(["moq-sub", url, "--insecure", "--namespace", NS, "--fill",
                            "--idle-timeout", 60, "--timeout", 120, "--print", "object"],
                           "object ")
        slow.send_signal(signal.SIGSTOP)
        try:
            for _ in range(3):
                s = sub(url, "--fill", "--verify", "--print", "none", "--timeout", 60)
                check(complete_line(G, O, S) in s.stdout and "payload errors 0" in s.stdout,
                      s.stdout)
                check("track ended" in s.stdout, s.stdout)
            wait_for_output(relay, "cut off (TOO_FAR_BEHIND)")
            m = relay_metrics(relay)
            check(m.get('kvcs_relay_refusals_total{cause="slow_subscriber"}') == 1, m)
        finally:
            slow.send_signal(signal.SIGCONT)
        try:
            slow.wait(timeout=30)
        except subprocess.TimeoutExpired:
            slow.kill()
            raise Failure("the stalled subscriber hung after it was cut off")
        out = "".join(slow.rest)
        check(slow.returncode != 0, "the cut-off subscriber claimed success:\n" + out)
        stop(pub)
    finally:
        stop(relay)


def test_relay_killed_mid_stream_ends_subscribers_promptly():
    relay, url = start_relay("--open")
    pub = publisher(url, "--groups", 1000, "--objects", 10, "--size", 100, "--rate", 50)
    # Wait until objects flow, then kill the relay without a goodbye.
    s, _, _ = start(["moq-sub", url, "--insecure", "--namespace", NS, "--fill", "--idle-timeout",
                     2, "--timeout", 120, "--print", "object"], "object ")
    relay.kill()
    relay.wait()
    t0 = time.monotonic()
    try:
        s.wait(timeout=30)
    except subprocess.TimeoutExpired:
        s.kill()
        raise Failure("the subscriber hung after the relay died")
    check(s.returncode != 0, "the subscriber claimed success")
    check(time.monotonic() - t0 < 30, "not prompt")
    pub.kill()
    pub.wait()


def test_graceful_shutdown_sends_goaway():
    relay, url = start_relay("--open", "--drain", 1)
    pub = publisher(url, "--groups", 1000, "--objects", 10, "--size", 100, "--rate", 50)
    rc, out, err = stop(relay)
    check(rc == 0, f"relay rc {rc}\n{out}\n{err}")
    check("GOAWAY" in out, out)
    pub.kill()
    pub.wait()


def test_kvcs_publish_through_the_relay_and_get_bit_exact():
    """kvcs relay, kvcs publish --relay (PUBLISH_NAMESPACE), kvcs get <relay url>: discovery at
    the relay, a completed retrieval written bit-exact, a live join of one layer, and a publish
    the relay refuses (no token) failing with a hint."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src, a, ameta = cli.cache_and_prompt(d, 48)  # 3 blocks of 16
        cli.run("keygen", "producer", "--out-key", f"{d}/p.key", "--out-pub", f"{d}/p.pub")
        relay, url = start_relay("--open")
        pub = None
        try:
            pub, _, seen = start(["publish", src, "--relay", url, "--insecure", "--scope-key-file",
                                  f"{d}/s.key", "--sign-key", f"{d}/p.key"], "all ")
            out = "".join(seen)
            check("namespace accepted by the relay" in out and "layer 1 published (3 blocks)" in out,
                  out)
            ns = [ln.split()[1] for ln in seen if ln.startswith("namespace ")]
            check(ns and ns[0].startswith("kvcs-1/"), out)
            common = [url, "--insecure", "--tokens", f"{d}/prompt.txt", "--descriptor",
                      f"{d}/d.json", "--scope-key-file", f"{d}/s.key", "--producer-key",
                      f"{d}/p.pub"]
            g = cli.run("get", *common, "--completed", "--out", f"{d}/got.safetensors")
            check(f"found {ns[0]} (3 blocks" in g.stdout, g.stdout)
            check("block 2: moqt fetch" in g.stdout, g.stdout)
            b, bmeta = cli.load_safetensors(f"{d}/got.safetensors")
            check(set(a) == set(b), f"tensor names differ: {sorted(set(a) ^ set(b))}")
            for name in a:
                if name == "token_ids":
                    check(cli.token_list(b[name]) == cli.token_list(a[name]), "token ids differ")
                else:
                    check(b[name][2] == a[name][2], f"{name} differs after publish --relay | get")
            check(json.loads(bmeta["kvsp.descriptor"]) == json.loads(ameta["kvsp.descriptor"]),
                  "descriptor differs")
            g = cli.run("get", *common, "--live", "--layers", "1-1", "--blocks", 1)
            check("layer 1 (segment 0, 1 blocks) verified" in g.stdout and
                  "block 0: moqt live" in g.stdout, g.stdout)
        finally:
            if pub is not None:
                pub.send_signal(signal.SIGINT)
                rc, rest, _ = stop(pub)
                check(rc == 0, f"kvcs publish --relay exited {rc} on SIGINT:\n{rest}")
            stop(relay)
        # A relay with keys: without --auth-token the session is refused and publish says so;
        # with a token granting publish on the scope the namespace is accepted.
        cli.run("keygen", "producer", "--alg", "es256", "--kid", "r1", "--out-key",
                f"{d}/r.key", "--out-pub", f"{d}/r.pub")
        locked, lurl = start_relay("--keys", f"r1={d}/r.pub")
        try:
            e = cli.run("publish", src, "--relay", lurl, "--insecure", "--scope-key-file",
                        f"{d}/s.key", ok=False)
            check("relay session ended" in e.stderr, e.stderr)
            scope_hex = ns[0].split("/")[1]
            t = cli.run("token", "--key", f"{d}/r.key", "--sub", "producer", "--grant",
                        f"publish@kvcs-1/{scope_hex}", "--ttl", 600)
            cli.write(f"{d}/pub.jwt", t.stdout.strip())
            pub, _, seen = start(["publish", src, "--relay", lurl, "--insecure", "--auth-token",
                                  f"{d}/pub.jwt", "--scope-key-file", f"{d}/s.key"], "all ")
            check(any("namespace accepted by the relay" in ln for ln in seen), "".join(seen))
            stop(pub, signal.SIGINT)
        finally:
            stop(locked)

def test_publishers_that_leave_before_any_subscriber_leave_their_publication_cached():
    """moq-pub --relay and kvcs publish --relay PUBLISH every track (draft-22 PUBLISH) and exit
    before anyone subscribed; moq-sub (Next Object + fill), a FETCH of a group range and kvcs get
    are then served whole from the relay's cache, without an upstream request."""
    import tempfile
    relay, url = start_relay("--open", "--metrics", "127.0.0.1:0")
    G, O, S = 6, 8, 2048
    try:
        p = cli.run("moq-pub", "--relay", url, "--insecure", "--namespace", NS, "--groups", G,
                    "--objects", O, "--size", S, "--rate", 0, "--linger", 0, "--track", "k",
                    "--track", "v")
        check("PUBLISH 2 track(s)" in p.stdout and "the relay holds 2 track(s)" in p.stdout,
              p.stdout)
        for track in ("k", "v"):
            s = sub(url, "--track", track, "--fill", "--verify", "--print", "none",
                    "--timeout", 30)
            want = complete_line(G, O, S)
            check(want in s.stdout and "payload errors 0" in s.stdout and
                  "DUPLICATES" not in s.stdout and "track ended" in s.stdout, s.stdout)
        f = sub(url, "--track", "k", "--fetch", "--start", 2, "--end", 3, "--verify",
                "--timeout", 30)
        check(f"complete: {2 * O} objects" in f.stdout and "payload errors 0" in f.stdout,
              f.stdout)
        with tempfile.TemporaryDirectory() as d:
            src, a, _ = cli.cache_and_prompt(d, 48)
            pb = cli.run("publish", src, "--relay", url, "--insecure", "--scope-key-file",
                         f"{d}/s.key", "--linger", 0)
            check("PUBLISH " in pb.stdout and "the relay holds" in pb.stdout, pb.stdout)
            g = cli.run("get", url, "--insecure", "--tokens", f"{d}/prompt.txt", "--descriptor",
                        f"{d}/d.json", "--scope-key-file", f"{d}/s.key", "--completed",
                        "--out", f"{d}/got.safetensors")
            b, _ = cli.load_safetensors(f"{d}/got.safetensors")
            for name in a:
                if name != "token_ids":
                    check(b[name][2] == a[name][2], f"{name} differs after the publisher left")
        m = relay_metrics(relay)
        check(m.get("kvcs_relay_upstream_requests_total") == 0, f"nothing pulled: {m}")
        check(m.get("kvcs_relay_publishes_total", 0) >= 3, m)
    finally:
        stop(relay)


def test_kvcs_get_takes_several_relays_in_preference_order():
    """kvcs get URL1 URL2 URL3: a URL that does not answer is passed over, the first that answers
    is the primary, the others up are alternates; the cache is written bit-exact. The relays are
    a root the publication was PUBLISHed to and a leaf pulling from it."""
    import socket
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src, a, _ = cli.cache_and_prompt(d, 48)
        root, root_url = start_relay("--open", "--id", "root")
        leaf, leaf_url = start_relay("--open", "--id", "leaf", "--upstream", root_url,
                                     "--upstream-insecure")
        # A UDP port nobody serves: bound here and closed, so nothing answers the handshake.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            dead_url = f"moqt://127.0.0.1:{s.getsockname()[1]}/"
        try:
            pb = cli.run("publish", src, "--relay", root_url, "--insecure", "--scope-key-file",
                         f"{d}/s.key", "--linger", 0)
            check("the relay holds" in pb.stdout, pb.stdout)
            g = cli.run("get", dead_url, leaf_url, root_url, "--insecure", "--connect-timeout", 2,
                        "--tokens", f"{d}/prompt.txt", "--descriptor", f"{d}/d.json",
                        "--scope-key-file", f"{d}/s.key", "--completed", "--out",
                        f"{d}/got.safetensors")
            check(f"{dead_url}: " in g.stdout and "trying the next URL" in g.stdout, g.stdout)
            check(f"primary {leaf_url}" in g.stdout and f"alternate {root_url}" in g.stdout,
                  g.stdout)
            check("block 2: moqt fetch" in g.stdout, g.stdout)
            b, _ = cli.load_safetensors(f"{d}/got.safetensors")
            for name in a:
                if name != "token_ids":
                    check(b[name][2] == a[name][2], f"{name} differs after get from the leaf")
            e = cli.run("get", dead_url, "--insecure", "--connect-timeout", 1, "--tokens",
                        f"{d}/prompt.txt", "--descriptor", f"{d}/d.json", "--scope-key-file",
                        f"{d}/s.key", ok=False)
            check("session ended" in e.stderr and "hint:" in e.stderr, e.stderr)
        finally:
            stop(leaf)
            stop(root)


def main():
    wanted = sys.argv[2:]
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    tests = [(n, f) for n, f in tests if not wanted or any(w in n for w in wanted)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print(f"PASS {name}")
        except Exception as e:  # noqa: BLE001
            failed += 1
            print(f"FAIL {name}: {e}")
    print(f"{len(tests) - failed}/{len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
