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


class Load:
    """The crash load on one store: WRITERS writers of new keys, one overwriter of "hot" and one
    writer of "big" (big_copies x content("big-0")), all into bucket "crash"; every acknowledged
    PUT is recorded. Shared with tests/ceph/e2e_rados_stores.py."""

    def __init__(self, endpoint, big_copies):
        self.endpoint = endpoint
        self.big_body = content("big-0") * big_copies
        self.lock = threading.Condition()
        self.acked = []        # keys whose PUT returned 200
        self.hot_acked = -1    # highest acknowledged version of the overwritten key
        self.big_started = threading.Event()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._writer, args=(i,)) for i in range(WRITERS)]
        self.threads += [threading.Thread(target=self._overwriter), threading.Thread(target=self._big)]

    def _writer(self, i):
        c = harness.boto_client(self.endpoint)
        j = 0
        while not self.stop.is_set():
            key = "w%d/%05d" % (i, j)
            try:
                c.put_object(Bucket="crash", Key=key, Body=content(key))
            except Exception:
                return
            with self.lock:
                self.acked.append(key)
                self.lock.notify_all()
            j += 1

    def _overwriter(self):
        c = harness.boto_client(self.endpoint)
        v = 0
        while not self.stop.is_set():
            try:
                c.put_object(Bucket="crash", Key="hot", Body=content("hot-v%d" % v))
            except Exception:
                return
            with self.lock:
                self.hot_acked = v
            v += 1

    def _big(self):
        c = harness.boto_client(self.endpoint)
        while not self.stop.is_set():
            self.big_started.set()
            try:
                c.put_object(Bucket="crash", Key="big", Body=self.big_body)
            except Exception:
                return

    def start(self):
        for t in self.threads:
            t.start()

    def wait_for_acks(self, n):
        with self.lock:
            self.lock.wait_for(lambda: len(self.acked) >= n, timeout=120)
        self.big_started.wait(timeout=60)

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join()
        if len(self.acked) < ACKS_BEFORE_KILL:
            harness.fail("only %d uploads acknowledged before the kill" % len(self.acked))

    def check(self, s3):
        """After the kill, through `s3`: every acknowledged object listed and whole, nothing torn,
        the half-sent "partial" invisible. Returns the listed keys."""
        listed = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket="crash"):
            listed += [o["Key"] for o in page.get("Contents", [])]
        missing = sorted(set(self.acked) - set(listed))
        if missing:
            harness.fail("acknowledged objects lost: %s" % missing[:10])
        hot_floor = self.hot_acked
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
                if data != self.big_body:
                    harness.fail("'big' is torn (%d bytes)" % len(data))
            elif data != content(key):
                harness.fail("%s is torn (%d bytes)" % (key, len(data)))
        if "partial" in listed:
            harness.fail("an unacknowledged, half-sent upload became visible")
        if hot_floor >= 0 and "hot" not in listed:
            harness.fail("acknowledged 'hot' lost")
        return listed


def start_partial_put(store, length=8 << 20):
    """A PUT of crash/partial that is certainly mid-body: with Expect: 100-continue the server
    answers "100 Continue" only once PutObject has opened its writer and starts reading the body;
    then half the body is sent. Returns the socket (close it after the kill)."""
    host = "127.0.0.1:%d" % store.port
    hdrs, *_ = harness.sign_request("PUT", "/crash/partial", host,
                                    {"content-length": str(length),
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
    partial.sendall(b"p" * (length // 2))
    return partial


def main():
    kvcs = sys.argv[1]
    store = harness.Store(kvcs)
    store.start()
    s3 = harness.boto_client(store.endpoint)
    s3.create_bucket(Bucket="crash")
    load = Load(store.endpoint, 40)
    partial = start_partial_put(store)
    temp_files = os.listdir(os.path.join(store.root, "tmp"))
    if not temp_files:
        harness.fail("no temporary file while an upload is in flight")
    load.start()
    load.wait_for_acks(ACKS_BEFORE_KILL)
    store.kill9()  # uploads are in flight right now, one of them certainly mid-body
    partial.close()
    load.join()

    store.start()  # same root
    s3 = harness.boto_client(store.endpoint)
    leftovers = os.listdir(os.path.join(store.root, "tmp"))
    if leftovers:
        harness.fail("temporary files survived the restart: %s" % leftovers)
    if not any("recovery: removed" in line for line in store.banner):
        harness.fail("restart did not report removing the in-flight upload's temporary file: %s"
                     % store.banner)
    listed = load.check(s3)
    print("e2e_crash: %d acknowledged, %d listed after restart, all intact; banner: %s" %
          (len(load.acked), len(listed), "".join(store.banner).strip().replace("\n", " | ")))
    store.__exit__(None, None, None)
    print("e2e_crash: OK")


if __name__ == "__main__":
    main()
