#!/usr/bin/python3
"""Stores that scale out, on the RADOS backend: two `kvcs store` processes on one pool and
namespace serve the same buckets and objects, and a write acknowledged by one is read whole by the
other at once; then one of them is killed with SIGKILL while PUTs (small, overwriting, a striped
24 MiB one, and one certainly mid-body) are in flight, and the survivor serves every acknowledged
object intact, lists nothing torn or half-written, and never shows the unacknowledged upload;
last, `kvcs store --sweep-orphans` removes the stripes the killed store left (and a planted
orphan) once past the grace period, keeps younger ones, and touches no committed object.

Usage: e2e_rados_stores.py /path/to/kvcs CEPH_CONF POOL
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s3"))
import e2e_crash  # noqa: E402
import harness  # noqa: E402
from e2e_crash import content  # noqa: E402


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
    harness.boto_client(a.endpoint).create_bucket(Bucket="crash")
    load = e2e_crash.Load(a.endpoint, 16)  # "big" is 16 x content("big-0"): several stripes
    partial = e2e_crash.start_partial_put(a)
    load.start()
    load.wait_for_acks(e2e_crash.ACKS_BEFORE_KILL)
    a.kill9()
    a.proc = None  # killed on purpose: its exit status is not a failure
    partial.close()
    load.join()
    listed = load.check(harness.boto_client(b.endpoint))  # through the survivor
    print("e2e_rados_stores: killed one store mid-PUT: %d acknowledged, %d listed by the other, "
          "all whole" % (len(load.acked), len(listed)))
    return load


def rados(conf, pool, ns, *args, **kw):
    return subprocess.run(["rados", "-c", conf, "-p", pool, "-N", ns] + list(args),
                          check=True, capture_output=True, timeout=60, **kw).stdout


def sweep(kvcs, conf, pool, ns, grace):
    with tempfile.TemporaryDirectory() as root:
        out = subprocess.run(
            [kvcs, "store", "--root", root, "--backend", "rados", "--rados-pool",
             pool, "--rados-namespace", ns, "--ceph-conf", conf, "--sweep-orphans",
             "--sweep-grace", str(grace)], capture_output=True, text=True, timeout=120)
    check(out.returncode == 0, "--sweep-orphans failed: %s %s" % (out.stdout, out.stderr))
    print("e2e_rados_stores: " + out.stdout.strip())
    # "... N unreferenced, Y kept (...), R removed"
    words = out.stdout.replace(",", "").split()
    return (int(words[words.index("unreferenced") - 1]), int(words[words.index("kept") - 1]),
            int(words[words.index("removed") - 1]))


def sweep_orphans(kvcs, conf, pool, ns, survivor, load):
    # A planted orphan: a stripe of a version no index entry names, in the bucket "crash".
    with tempfile.NamedTemporaryFile() as f:
        rados(conf, pool, ns, "getomapval", "kvcs.buckets", "crash", f.name)
        bucket = json.load(open(f.name))
    orphan = "b.%s.d.%s.1" % (bucket["id"], "0" * 32)
    rados(conf, pool, ns, "put", orphan, "-", input=b"orphaned bytes")
    unreferenced, kept, _ = sweep(kvcs, conf, pool, ns, 3600)  # all younger than an hour: kept
    check(unreferenced >= 1 and kept == unreferenced, "a young orphan was not kept")
    check(orphan in rados(conf, pool, ns, "ls").decode().split(), "the young orphan was removed")
    unreferenced, _, removed = sweep(kvcs, conf, pool, ns, 0)
    check(removed == unreferenced and removed >= 1, "the orphans were not removed")
    check(orphan not in rados(conf, pool, ns, "ls").decode().split(), "the orphan is still there")
    again, _, _ = sweep(kvcs, conf, pool, ns, 0)
    check(again == 0, "%d orphans after a sweep" % again)
    load.check(harness.boto_client(survivor.endpoint))  # every committed object still whole
    print("e2e_rados_stores: the sweep removed %d orphaned objects, committed objects intact"
          % removed)


def main():
    kvcs, conf, pool = sys.argv[1], sys.argv[2], sys.argv[3]
    ns = "e2e-stores-%d" % os.getpid()
    os.environ["KVCS_E2E_STORE_ARGS"] = (
        "--backend rados --rados-pool %s --rados-namespace %s --ceph-conf %s" % (pool, ns, conf))
    a, b = harness.Store(kvcs), harness.Store(kvcs)
    with b:
        a.start()
        two_stores_see_each_other(a, b)
        load = kill_mid_put(a, b)  # a is killed
        a.__exit__(None, None, None)  # removes its temporary directory
        sweep_orphans(kvcs, conf, pool, ns, b, load)
    print("e2e_rados_stores: OK")


if __name__ == "__main__":
    main()
