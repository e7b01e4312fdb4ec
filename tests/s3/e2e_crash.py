#!/usr/bin/python3
"""Crash safety: kill -9 `kvcs store` while uploads are in flight, restart it on the same root, and
check that every acknowledged object is intact and that no key ever serves a torn object.

Usage: e2e_crash.py /path/to/kvcs
"""
import hashlib
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

WRITERS = 4
ACKS_BEFORE_KILL = 40


def content(name):
    """Deterministic bytes for a key: any torn or mixed object fails the digest check."""
    size = 1000 + int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % 1_500_000
    return hashlib.shake_256(name.encode()).digest(size)


def main():
    kvcs = sys.argv[1]
    store = harness.Store(kvcs)
    store.start()
    s3 = harness.boto_client(store.endpoint)
    s3.create_bucket(Bucket="crash")
    lock = threading.Condition()
    acked = []          # keys whose PUT returned 200
    hot_acked = [-1]    # highest acknowledged version of the overwritten key
    big_started = threading.Event()
    stop = threading.Event()

    def writer(i):
        c = harness.boto_client(store.endpoint)
        j = 0
        while not stop.is_set():
            key = "w%d/%05d" % (i, j)
            try:
                c.put_object(Bucket="crash", Key=key, Body=content(key))
            except Exception:
                return
            with lock:
                acked.append(key)
                lock.notify_all()
            j += 1

    def overwriter():
        c = harness.boto_client(store.endpoint)
        v = 0
        while not stop.is_set():
            try:
                c.put_object(Bucket="crash", Key="hot", Body=content("hot-v%d" % v))
            except Exception:
                return
            with lock:
                hot_acked[0] = v
            v += 1

    def big():
        c = harness.boto_client(store.endpoint)
        while not stop.is_set():
            big_started.set()
            try:
                c.put_object(Bucket="crash", Key="big", Body=content("big-0") * 40)
            except Exception:
                return

    # A PUT that is certainly mid-body at the kill: with Expect: 100-continue the server answers
    # "100 Continue" only once PutObject has opened its temporary file and starts reading the body.
    partial_len = 8 << 20
    host = "127.0.0.1:%d" % store.port
    hdrs, *_ = harness.sign_request("PUT", "/crash/partial", host,
                                    {"content-length": str(partial_len),
                                     "expect": "100-continue"}, "UNSIGNED-PAYLOAD")
    partial = socket.create_connection(("127.0.0.1", store.port))
    head = "PUT /crash/partial HTTP/1.1\r\n" + "".join("%s: %s\r\n" % kv for kv in hdrs.items())
    partial.sendall((head + "\r\n").encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = partial.recv(4096)
        if not chunk:
            break
        reply += chunk
    if not reply.startswith(b"HTTP/1.1 100"):
        harness.fail("expected 100 Continue, got %r" % reply[:200])
    partial.sendall(b"p" * (partial_len // 2))
    temp_files = os.listdir(os.path.join(store.root, "tmp"))
    if not temp_files:
        harness.fail("no temporary file while an upload is in flight")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    threads += [threading.Thread(target=overwriter), threading.Thread(target=big)]
    for t in threads:
        t.start()
    with lock:
        lock.wait_for(lambda: len(acked) >= ACKS_BEFORE_KILL, timeout=120)
    big_started.wait(timeout=60)
    store.kill9()  # uploads are in flight right now, one of them certainly mid-body
    partial.close()
    stop.set()
    for t in threads:
        t.join()
    with lock:
        acked_keys = list(acked)
        hot_floor = hot_acked[0]
    if len(acked_keys) < ACKS_BEFORE_KILL:
        harness.fail("only %d uploads acknowledged before the kill" % len(acked_keys))

    store.start()  # same root
    s3 = harness.boto_client(store.endpoint)
    leftovers = os.listdir(os.path.join(store.root, "tmp"))
    if leftovers:
        harness.fail("temporary files survived the restart: %s" % leftovers)
    if not any("recovery: removed" in line for line in store.banner):
        harness.fail("restart did not report removing the in-flight upload's temporary file: %s"
                     % store.banner)
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="crash"):
        listed += [o["Key"] for o in page.get("Contents", [])]
    missing = sorted(set(acked_keys) - set(listed))
    if missing:
        harness.fail("acknowledged objects lost: %s" % missing[:10])
    for key in listed:
        data = s3.get_object(Bucket="crash", Key=key)["Body"].read()
        if key == "hot":
            versions = [v for v in range(max(hot_floor, 0), hot_floor + 3)
                        if hashlib.sha256(content("hot-v%d" % v)).digest() ==
                        hashlib.sha256(data).digest()]
            if not versions:
                harness.fail("'hot' is torn or older than its last acknowledged version %d" %
                             hot_floor)
        elif key == "big":
            if data != content("big-0") * 40:
                harness.fail("'big' is torn (%d bytes)" % len(data))
        elif data != content(key):
            harness.fail("%s is torn (%d bytes)" % (key, len(data)))
    if "partial" in listed:
        harness.fail("an unacknowledged, half-sent upload became visible")
    if hot_floor >= 0 and "hot" not in listed:
        harness.fail("acknowledged 'hot' lost")
    print("e2e_crash: %d acknowledged, %d listed after restart, all intact; banner: %s" %
          (len(acked_keys), len(listed), "".join(store.banner).strip().replace("\n", " | ")))
    store.__exit__(None, None, None)
    print("e2e_crash: OK")


if __name__ == "__main__":
    main()
