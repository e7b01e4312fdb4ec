#!/usr/bin/python3
"""End-to-end: Debian's awscli (/usr/bin/aws), s3cmd and rclone against `kvcs store`.

Usage: e2e_clis.py /path/to/kvcs
Each client gets a temporary HOME and its own config file (shared/specs/s3-testing.md). Contents
are compared by SHA-256; failures assert the S3 error code the client reports.
"""
import hashlib
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

AWS = "/usr/bin/aws"


def sha_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(cmd, env, expect_ok=True):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if expect_ok and p.returncode != 0:
        harness.fail("%s -> %d\nstdout: %s\nstderr: %s" % (" ".join(cmd), p.returncode, p.stdout,
                                                           p.stderr))
    if not expect_ok and p.returncode == 0:
        harness.fail("%s unexpectedly succeeded: %s" % (" ".join(cmd), p.stdout))
    return p


def make_files(d):
    os.makedirs(d, exist_ok=True)
    files = {"small.txt": b"hello kvcs\n" * 100, "sub/mid.bin": os.urandom(300_000),
             "big.bin": os.urandom(12 * 1024 * 1024 + 123)}
    for name, data in files.items():
        p = os.path.join(d, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    return files


def test_awscli(store, src):
    home = store.home
    os.makedirs(os.path.join(home, ".aws"), exist_ok=True)
    with open(os.path.join(home, ".aws", "config"), "w") as f:
        f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n"
                "    signature_version = s3v4\n")
    with open(os.path.join(home, ".aws", "credentials"), "w") as f:
        f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" %
                (harness.ACCESS_KEY, harness.SECRET_KEY))
    env = store.env
    aws = [AWS, "--endpoint-url", store.endpoint]
    run(aws + ["s3", "mb", "s3://awsb"], env)
    run(aws + ["s3", "cp", os.path.join(src, "small.txt"), "s3://awsb/d/small.txt"], env)
    run(aws + ["s3", "cp", os.path.join(src, "big.bin"), "s3://awsb/d/big.bin"], env)  # multipart
    run(aws + ["s3", "sync", os.path.join(src, "sub"), "s3://awsb/d/sub"], env)
    ls = run(aws + ["s3", "ls", "--recursive", "s3://awsb/"], env).stdout
    names = sorted(line.split()[-1] for line in ls.splitlines())
    if names != ["d/big.bin", "d/small.txt", "d/sub/mid.bin"]:
        harness.fail("aws s3 ls: %s" % ls)
    ls = run(aws + ["s3", "ls", "s3://awsb/d/"], env).stdout
    if "PRE sub/" not in ls:
        harness.fail("aws s3 ls delimiter: %s" % ls)
    out = os.path.join(store.tmp, "aws-big.out")
    run(aws + ["s3", "cp", "s3://awsb/d/big.bin", out], env)
    if sha_file(out) != sha_file(os.path.join(src, "big.bin")):
        harness.fail("aws download digest")
    rng = os.path.join(store.tmp, "range.out")
    run(aws + ["s3api", "get-object", "--bucket", "awsb", "--key", "d/big.bin", "--range",
               "bytes=1000-1999", rng], env)
    with open(os.path.join(src, "big.bin"), "rb") as f:
        f.seek(1000)
        want = f.read(1000)
    with open(rng, "rb") as f:
        if f.read() != want:
            harness.fail("aws ranged get")
    url = run(aws + ["s3", "presign", "s3://awsb/d/small.txt", "--expires-in", "300"],
              env).stdout.strip()
    with urllib.request.urlopen(url) as r:
        if r.read() != b"hello kvcs\n" * 100:
            harness.fail("aws presigned URL")
    bad_env = dict(env)
    bad_env["AWS_SECRET_ACCESS_KEY"] = "wrong-secret"
    bad_env["AWS_ACCESS_KEY_ID"] = harness.ACCESS_KEY
    p = run(aws + ["s3", "ls", "s3://awsb/"], bad_env, expect_ok=False)
    if "SignatureDoesNotMatch" not in p.stderr:
        harness.fail("aws with a wrong secret: %s" % p.stderr)
    p = run(aws + ["s3", "rb", "s3://awsb"], env, expect_ok=False)
    if "BucketNotEmpty" not in p.stderr:
        harness.fail("aws rb non-empty: %s" % p.stderr)
    run(aws + ["s3", "rm", "--recursive", "s3://awsb/"], env)
    run(aws + ["s3", "rb", "s3://awsb"], env)


def test_s3cmd(store, src):
    cfg = os.path.join(store.tmp, "s3cfg")
    hostport = "127.0.0.1:%d" % store.port
    with open(cfg, "w") as f:
        f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
                "use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n"
                "check_ssl_certificate = False\n" % (harness.ACCESS_KEY, harness.SECRET_KEY,
                                                     hostport, hostport))
    s3cmd = ["s3cmd", "-c", cfg]
    env = store.env
    run(s3cmd + ["mb", "s3://s3cmdb"], env)
    run(s3cmd + ["put", "--multipart-chunk-size-mb=5", os.path.join(src, "big.bin"),
                 "s3://s3cmdb/big.bin"], env)
    run(s3cmd + ["put", os.path.join(src, "small.txt"), "s3://s3cmdb/dir/small.txt"], env)
    ls = run(s3cmd + ["ls", "--recursive", "s3://s3cmdb"], env).stdout
    if "s3://s3cmdb/big.bin" not in ls or "s3://s3cmdb/dir/small.txt" not in ls:
        harness.fail("s3cmd ls: %s" % ls)
    ls = run(s3cmd + ["ls", "s3://s3cmdb/"], env).stdout
    if "DIR" not in ls or "s3://s3cmdb/dir/" not in ls:
        harness.fail("s3cmd ls with delimiter: %s" % ls)
    out = os.path.join(store.tmp, "s3cmd-big.out")
    run(s3cmd + ["get", "--force", "s3://s3cmdb/big.bin", out], env)
    if sha_file(out) != sha_file(os.path.join(src, "big.bin")):
        harness.fail("s3cmd download digest")
    info = run(s3cmd + ["info", "s3://s3cmdb/big.bin"], env).stdout
    if "File size: %d" % os.path.getsize(os.path.join(src, "big.bin")) not in info:
        harness.fail("s3cmd info: %s" % info)
    bad = cfg + ".bad"
    with open(cfg) as f, open(bad, "w") as g:
        g.write(f.read().replace(harness.SECRET_KEY, "wrong-secret"))
    p = run(["s3cmd", "-c", bad, "ls", "s3://s3cmdb"], env, expect_ok=False)
    if "SignatureDoesNotMatch" not in p.stdout + p.stderr:
        harness.fail("s3cmd with a wrong secret: %s %s" % (p.stdout, p.stderr))
    run(s3cmd + ["del", "--recursive", "--force", "s3://s3cmdb"], env)
    run(s3cmd + ["rb", "s3://s3cmdb"], env)


def test_rclone(store, src):
    cfg = os.path.join(store.tmp, "rclone.conf")
    with open(cfg, "w") as f:
        f.write("[kv]\ntype = s3\nprovider = Other\naccess_key_id = %s\nsecret_access_key = %s\n"
                "endpoint = %s\nregion = us-east-1\nforce_path_style = true\n" %
                (harness.ACCESS_KEY, harness.SECRET_KEY, store.endpoint))
    rc = ["rclone", "--config", cfg, "--low-level-retries", "1", "--retries", "1"]
    env = store.env
    run(rc + ["mkdir", "kv:rcb"], env)
    run(rc + ["copy", src, "kv:rcb/d"], env)  # single PUTs, UNSIGNED-PAYLOAD
    run(rc + ["copyto", "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M",
              os.path.join(src, "big.bin"), "kv:rcb/mp/big.bin"], env)  # multipart
    items = json.loads(run(rc + ["lsjson", "-R", "kv:rcb"], env).stdout)
    files = sorted(i["Path"] for i in items if not i["IsDir"])
    if files != ["d/big.bin", "d/small.txt", "d/sub/mid.bin", "mp/big.bin"]:
        harness.fail("rclone lsjson: %s" % files)
    run(rc + ["check", src, "kv:rcb/d"], env)
    with open(os.path.join(src, "sub/mid.bin"), "rb") as f:
        f.seek(5000)
        want = f.read(100)
    raw = subprocess.run(rc + ["cat", "--offset", "5000", "--count", "100",
                               "kv:rcb/d/sub/mid.bin"], env=env, capture_output=True, timeout=60)
    if raw.stdout != want:
        harness.fail("rclone ranged cat")
    out = os.path.join(store.tmp, "rclone-big.out")
    run(rc + ["copyto", "kv:rcb/mp/big.bin", out], env)
    if sha_file(out) != sha_file(os.path.join(src, "big.bin")):
        harness.fail("rclone multipart download digest")
    bad = cfg + ".bad"
    with open(cfg) as f, open(bad, "w") as g:
        g.write(f.read().replace(harness.SECRET_KEY, "wrong-secret"))
    p = run(["rclone", "--config", bad, "--low-level-retries", "1", "--retries", "1", "lsjson",
             "kv:rcb"], env, expect_ok=False)
    if "SignatureDoesNotMatch" not in p.stderr:
        harness.fail("rclone with a wrong secret: %s" % p.stderr)
    run(rc + ["purge", "kv:rcb"], env)
    items = json.loads(run(rc + ["lsjson", "kv:"], env).stdout)
    if any(i["Path"] == "rcb" for i in items):
        harness.fail("rclone purge left the bucket")


def main():
    import time
    kvcs = sys.argv[1]
    with harness.Store(kvcs) as store:
        src = os.path.join(store.tmp, "src")
        make_files(src)
        for test in (test_awscli, test_s3cmd, test_rclone):
            t0 = time.monotonic()
            test(store, src)
            print("%s: OK (%.1f s)" % (test.__name__, time.monotonic() - t0), flush=True)
    print("e2e_clis: OK")


if __name__ == "__main__":
    main()
