#!/usr/bin/python3
"""Stores that scale out, on the RADOS backend: two `kvcs store` processes on one pool and
namespace serve the same buckets and objects, and a write acknowledged by one is read whole by the
other at once; then one of them is killed with SIGKILL while PUTs (small, overwriting, a striped
24 MiB one, and one certainly mid-body) are in flight, and the survivor serves every acknowledged
object intact, lists nothing torn or half-written, and never shows the unacknowledged upload.

Usage: e2e_rados_stores.py /path/to/kvcs CEPH_CONF POOL
"""
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s3"))
import harness  # noqa: E402
from e2e_crash import content  # noqa: E402

WRITERS = 4
ACKS_BEFORE_KILL = 40


def check(cond, msg):
    if not cond:
        harness.fail(msg)


def two_stores_see_each_other(a, b):
    sa, sb = harness.boto_client(a.endpoint), harness.boto_client(b.endpoint)
    sa.create_bucket(Bucket="shared")
    check(any(x["Name"] == "shared" for x in sb.list_buckets()["Buckets"]),
          "a bucket made through one store is not listed by the other")
    for i in range(10):
        w, r = (sa, sb) if i % 2 == 0 else (sb, sa)
        body = content("v%d" % i)
        w.put_object(Bucket="shared", Key="k", Body=body)
        got = r.get_object(Bucket="shared", Key="k")["Body"].read()
        check(got == body, "round %d: the other store did not read the acknowledged write" % i)
    sa.delete_object(Bucket="shared", Key="k")
    try:
        sb.head_object(Bucket="shared", Key="k")
        harness.fail("a delete through one store is not seen by the other")
    except Exception as e:  # botocore ClientError 404
        check("404" in str(e), "unexpected error after delete: %s" % e)
    print("e2e_rados_stores: two stores see each other's writes at once")


def kill_mid_put(a, b):
    s3 = harness.boto_client(a.endpoint)
    s3.create_bucket(Bucket="crash")
    lock = threading.Condition()
    acked, hot_acked = [], [-1]
    stop = threading.Event()
    big_started = threading.Event()

    def writer(i):
        c = harness.boto_client(a.endpoint)
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
        c = harness.boto_client(a.endpoint)
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
        c = harness.boto_client(a.endpoint)
        while not stop.is_set():
            big_started.set()
            try:
                c.put_object(Bucket="crash", Key="big", Body=content("big-0") * 16)
            except Exception:
                return

    # A PUT certainly mid-body at the kill (100 Continue: the store has opened its writer).
    partial_len = 8 << 20
    host = "127.0.0.1:%d" % a.port
    hdrs, *_ = harness.sign_request("PUT", "/crash/partial", host,
                                    {"content-length": str(partial_len),
                                     "expect": "100-continue"}, "UNSIGNED-PAYLOAD")
    partial = socket.create_connection(("127.0.0.1", a.port))
    head = "PUT /crash/partial HTTP/1.1\r\n" + "".join("%s: %s\r\n" % kv for kv in hdrs.items())
    partial.sendall((head + "\r\n").encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = partial.recv(4096)
        if not chunk:
            break
        reply += chunk
    check(reply.startswith(b"HTTP/1.1 100"), "expected 100 Continue, got %r" % reply[:200])
    partial.sendall(b"p" * (partial_len // 2))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    threads += [threading.Thread(target=overwriter), threading.Thread(target=big)]
    for t in threads:
        t.start()
    with lock:
        lock.wait_for(lambda: len(acked) >= ACKS_BEFORE_KILL, timeout=120)
    big_started.wait(timeout=60)
    a.kill9()
    a.proc = None  # killed on purpose: its exit status is not a failure
    partial.close()
    stop.set()
    for t in threads:
        t.join()
    check(len(acked) >= ACKS_BEFORE_KILL, "only %d uploads acknowledged before the kill" % len(acked))

    s3 = harness.boto_client(b.endpoint)  # the survivor
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="crash"):
        listed += [o["Key"] for o in page.get("Contents", [])]
    missing = sorted(set(acked) - set(listed))
    check(not missing, "acknowledged objects lost: %s" % missing[:10])
    check("partial" not in listed, "an unacknowledged, half-sent upload became visible")
    for key in listed:
        data = s3.get_object(Bucket="crash", Key=key)["Body"].read()
        if key == "hot":
            floor = hot_acked[0]
            ok = any(data == content("hot-v%d" % v) for v in range(max(floor, 0), floor + 3))
            check(ok, "'hot' is torn or older than its last acknowledged version %d" % floor)
        elif key == "big":
            check(data == content("big-0") * 16, "'big' is torn (%d bytes)" % len(data))
        else:
            check(data == content(key), "%s is torn (%d bytes)" % (key, len(data)))
    print("e2e_rados_stores: killed one store mid-PUT: %d acknowledged, %d listed by the other, "
          "all whole" % (len(acked), len(listed)))


def main():
    kvcs, conf, pool = sys.argv[1], sys.argv[2], sys.argv[3]
    ns = "e2e-stores-%d" % os.getpid()
    os.environ["KVCS_E2E_STORE_ARGS"] = (
        "--backend rados --rados-pool %s --rados-namespace %s --ceph-conf %s" % (pool, ns, conf))
    a, b = harness.Store(kvcs), harness.Store(kvcs)
    with b:
        a.start()
        two_stores_see_each_other(a, b)
        kill_mid_put(a, b)  # a is killed
        a.__exit__(None, None, None)  # removes its temporary directory
    print("e2e_rados_stores: OK")


if __name__ == "__main__":
    main()
