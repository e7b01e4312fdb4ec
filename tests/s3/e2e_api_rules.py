#!/usr/bin/python3
"""End-to-end: the smaller S3 rules tools rely on (boto3 and awscli over real sockets).

Usage: e2e_api_rules.py /path/to/kvcs
- Conditional PUT: If-None-Match: * / If-Match → 412 PreconditionFailed (If-Match on a missing
  key → 404 NoSuchKey); a race of writers with If-None-Match: * on one key, many rounds: exactly
  one winner each, and the key holds the winner's bytes; the same race under kill -9 of the
  store: no acknowledged write lost, never two winners.
- UploadPartCopy with and without x-amz-copy-source-range; malformed ranges → InvalidArgument,
  ranges past the end → InvalidRange.
- Presigned URLs: X-Amz-Expires outside 1..604800 → AuthorizationQueryParametersError; expired →
  AccessDenied "Request has expired"; X-Amz-Date (query or header) over 15 min off →
  RequestTimeTooSkewed.
- Bucket names → InvalidBucketName; versioning requests → NotImplemented; an empty
  continuation token lists from the start; Expires stored and returned; a multipart upload whose
  first part is sent again and finishes last.
"""
import concurrent.futures
import datetime
import hashlib
import hmac
import http.client
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, expect_error  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

RACE_ROUNDS = 30
RACE_WRITERS = 6
RACE_BODY = 256 * 1024


def with_headers(client, op, headers):
    """Makes every `op` call of `client` carry `headers` (botocore 1.29 has no IfNoneMatch)."""
    def add(request, **kw):
        for k, v in headers.items():
            request.headers[k] = v
    client.meta.events.register_first("before-sign.s3." + op, add)
    return add


def put_if(client, bucket, key, body, headers):
    add = with_headers(client, "PutObject", headers)
    try:
        return client.put_object(Bucket=bucket, Key=key, Body=body)
    finally:
        client.meta.events.unregister("before-sign.s3.PutObject", add)


def test_conditional_put(c):
    c.create_bucket(Bucket="cond")
    e1 = put_if(c, "cond", "k", b"first", {"If-None-Match": "*"})["ETag"]
    expect_error("PreconditionFailed", 412, "If-None-Match * on an existing key", put_if, c,
                 "cond", "k", b"second", {"If-None-Match": "*"})
    check(c.get_object(Bucket="cond", Key="k")["Body"].read() == b"first", "412 kept the object")
    e2 = put_if(c, "cond", "k", b"second", {"If-Match": e1})["ETag"]
    expect_error("PreconditionFailed", 412, "If-Match, stale ETag", put_if, c, "cond", "k",
                 b"third", {"If-Match": e1})
    expect_error("PreconditionFailed", 412, "If-None-Match, current ETag", put_if, c, "cond", "k",
                 b"third", {"If-None-Match": e2})
    put_if(c, "cond", "k", b"third", {"If-Match": "*"})
    put_if(c, "cond", "k", b"fourth", {"If-None-Match": e1})  # not the current one: allowed
    expect_error("NoSuchKey", 404, "If-Match on a missing key", put_if, c, "cond", "absent",
                 b"x", {"If-Match": e1})
    check(c.get_object(Bucket="cond", Key="k")["Body"].read() == b"fourth", "conditional chain")


def test_conditional_race(endpoint):
    """RACE_WRITERS writers PUT one fresh key with If-None-Match: * at once, RACE_ROUNDS times."""
    clients = []
    for _ in range(RACE_WRITERS):
        cl = harness.boto_client(endpoint)
        with_headers(cl, "PutObject", {"If-None-Match": "*"})
        clients.append(cl)
    barrier = threading.Barrier(RACE_WRITERS)

    def write(i, rnd):
        body = (b"%d-%d|" % (i, rnd)) * (RACE_BODY // 8)
        barrier.wait()
        try:
            clients[i].put_object(Bucket="race", Key="k%d" % rnd, Body=body)
            return ("won", body)
        except ClientError as e:
            return (e.response["Error"]["Code"], None)

    harness.boto_client(endpoint).create_bucket(Bucket="race")
    reader = harness.boto_client(endpoint)
    with concurrent.futures.ThreadPoolExecutor(RACE_WRITERS) as pool:
        for rnd in range(RACE_ROUNDS):
            results = list(pool.map(lambda i: write(i, rnd), range(RACE_WRITERS)))
            winners = [b for code, b in results if code == "won"]
            others = {code for code, _ in results if code != "won"}
            check(len(winners) == 1, "round %d: %d winners (%s)" % (rnd, len(winners), results))
            check(others <= {"PreconditionFailed"}, "round %d: losers got %s" % (rnd, others))
            got = reader.get_object(Bucket="race", Key="k%d" % rnd)["Body"].read()
            check(got == winners[0], "round %d: the key holds another writer's bytes" % rnd)


def test_race_under_kill9(store):
    """Writers race with If-None-Match: * while the store is killed with SIGKILL: after the
    restart every acknowledged write is there with its writer's bytes, and no key ever had two
    acknowledged writers."""
    harness.boto_client(store.endpoint).create_bucket(Bucket="crash-race")
    acked = {}  # key -> body of the (only) writer that got 200
    lock = threading.Condition()
    stop = threading.Event()
    errors = []

    def writer(i):
        cl = harness.boto_client(store.endpoint)
        with_headers(cl, "PutObject", {"If-None-Match": "*"})
        rnd = 0
        while not stop.is_set() and rnd < 400:
            key = "k%d" % rnd
            body = (b"%d-%d|" % (i, rnd)) * 4096
            rnd += 1
            try:
                cl.put_object(Bucket="crash-race", Key=key, Body=body)
            except Exception:  # 412, or the connection died with the store
                continue
            with lock:
                if key in acked:
                    errors.append("two winners for %s" % key)
                acked[key] = body
                lock.notify_all()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    with lock:  # kill once some writes have been acknowledged, while others are in flight
        lock.wait_for(lambda: len(acked) >= 20, timeout=120)
    store.kill9()
    stop.set()
    for t in threads:
        t.join()
    check(not errors, "; ".join(errors))
    store.start()
    c = harness.boto_client(store.endpoint)
    for key, body in acked.items():
        check(c.get_object(Bucket="crash-race", Key=key)["Body"].read() == body,
              "acknowledged %s lost or overwritten after kill -9" % key)
        expect_error("PreconditionFailed", 412, "If-None-Match * after restart", put_if, c,
                     "crash-race", key, b"late", {"If-None-Match": "*"})


def test_upload_part_copy(c):
    c.create_bucket(Bucket="upc")
    src = os.urandom((5 << 20) + 1000)
    c.put_object(Bucket="upc", Key="src", Body=src)
    c.put_object(Bucket="upc", Key="small", Body=b"tail bytes")
    up = c.create_multipart_upload(Bucket="upc", Key="dst")["UploadId"]
    p1 = c.upload_part_copy(Bucket="upc", Key="dst", UploadId=up, PartNumber=1,
                            CopySource={"Bucket": "upc", "Key": "src"},
                            CopySourceRange="bytes=0-%d" % ((5 << 20) - 1))
    p2 = c.upload_part_copy(Bucket="upc", Key="dst", UploadId=up, PartNumber=2,
                            CopySource={"Bucket": "upc", "Key": "src"},
                            CopySourceRange="bytes=%d-%d" % (5 << 20, len(src) - 1))
    p3 = c.upload_part_copy(Bucket="upc", Key="dst", UploadId=up, PartNumber=3,
                            CopySource="upc/small")  # no range: the whole object
    check(p1["CopyPartResult"]["ETag"].strip('"') == hashlib.md5(src[:5 << 20]).hexdigest(),
          "UploadPartCopy ETag is the part's MD5")
    # Part 2 is smaller than 5 MiB and not last: completing with all three fails as S3 does.
    parts = [{"PartNumber": n, "ETag": p["CopyPartResult"]["ETag"]}
             for n, p in ((1, p1), (2, p2), (3, p3))]
    expect_error("EntityTooSmall", 400, "small middle part", c.complete_multipart_upload,
                 Bucket="upc", Key="dst", UploadId=up, MultipartUpload={"Parts": parts})
    c.complete_multipart_upload(Bucket="upc", Key="dst", UploadId=up,
                                MultipartUpload={"Parts": parts[:2]})
    check(c.get_object(Bucket="upc", Key="dst")["Body"].read() == src, "copied parts reassemble")
    up = c.create_multipart_upload(Bucket="upc", Key="bad")["UploadId"]
    for rng in ("bytes=0-", "bytes=-5", "bytes=5-1", "bytes=a-b", "items=0-1", "0-1"):
        expect_error("InvalidArgument", 400, "range %s" % rng, c.upload_part_copy, Bucket="upc",
                     Key="bad", UploadId=up, PartNumber=1, CopySource="upc/small",
                     CopySourceRange=rng)
    for rng in ("bytes=0-10", "bytes=10-20"):
        try:
            c.upload_part_copy(Bucket="upc", Key="bad", UploadId=up, PartNumber=1,
                               CopySource="upc/small", CopySourceRange=rng)
            harness.fail("range %s past the end accepted" % rng)
        except ClientError as e:
            check(e.response["Error"]["Code"] == "InvalidRange" and
                  e.response["ResponseMetadata"]["HTTPStatusCode"] in (400, 416),
                  "range %s: %s" % (rng, e.response["Error"]))
    expect_error("NoSuchKey", 404, "missing copy source", c.upload_part_copy, Bucket="upc",
                 Key="bad", UploadId=up, PartNumber=1, CopySource="upc/absent")
    expect_error("NoSuchUpload", 404, "unknown upload", c.upload_part_copy, Bucket="upc",
                 Key="bad", UploadId="0" * 32, PartNumber=1, CopySource="upc/small")
    c.abort_multipart_upload(Bucket="upc", Key="bad", UploadId=up)


def presign(endpoint, method, path, amz_date, expires):
    host = endpoint.split("://", 1)[1]
    date = amz_date[:8]
    scope = "%s/%s/s3/aws4_request" % (date, harness.REGION)
    q = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256",
         "X-Amz-Credential": "%s/%s" % (harness.ACCESS_KEY, scope),
         "X-Amz-Date": amz_date, "X-Amz-Expires": str(expires), "X-Amz-SignedHeaders": "host"}
    enc = lambda s: urllib.parse.quote(s, safe="-_.~")  # noqa: E731
    cq = "&".join("%s=%s" % (enc(k), enc(v)) for k, v in sorted(q.items()))
    cr = "\n".join([method, urllib.parse.quote(path, safe="/~"), cq, "host:%s\n" % host, "host",
                    "UNSIGNED-PAYLOAD"])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, harness.sha(cr.encode())])
    sig = hmac.new(harness.signing_key(harness.SECRET_KEY, date), sts.encode(),
                   hashlib.sha256).hexdigest()
    return "%s%s?%s&X-Amz-Signature=%s" % (endpoint, path, cq, sig)


def fetch(url, headers=None):
    """(status, S3 error code or None, body) of a GET."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {})) as r:
            return r.status, None, r.read()
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace")
        m = re.search(r"<Code>([^<]*)</Code>", body)
        return e.code, m.group(1) if m else None, body


def amz(delta_s):
    t = datetime.datetime.utcnow() + datetime.timedelta(seconds=delta_s)
    return t.strftime("%Y%m%dT%H%M%SZ")


def test_presigned_limits(c, endpoint):
    c.create_bucket(Bucket="pre")
    c.put_object(Bucket="pre", Key="k", Body=b"presigned")
    check(fetch(presign(endpoint, "GET", "/pre/k", amz(0), 604800))[0] == 200, "7-day presign")
    check(fetch(presign(endpoint, "GET", "/pre/k", amz(0), 1))[0] == 200, "1 s presign")
    for bad in (0, 604801, -1):
        st, code, _ = fetch(presign(endpoint, "GET", "/pre/k", amz(0), bad))
        check((st, code) == (400, "AuthorizationQueryParametersError"),
              "X-Amz-Expires=%d: %s %s" % (bad, st, code))
    st, code, body = fetch(presign(endpoint, "GET", "/pre/k", amz(-120), 60))
    check((st, code) == (403, "AccessDenied") and "Request has expired" in body,
          "expired presign: %s %s %s" % (st, code, body))
    st, code, _ = fetch(presign(endpoint, "GET", "/pre/k", amz(20 * 60), 3600))
    check((st, code) == (403, "RequestTimeTooSkewed"), "presign from the future: %s %s" % (st,
                                                                                        code))
    check(fetch(presign(endpoint, "GET", "/pre/k", amz(10 * 60), 3600))[0] == 200,
          "10 min ahead is within the skew")
    # Header-signed requests: x-amz-date bounded by 15 minutes either way.
    host = endpoint.split("://", 1)[1]
    for delta, want in ((-20 * 60, 403), (20 * 60, 403), (-10 * 60, 200)):
        hdrs, *_ = harness.sign_request("GET", "/pre/k", host, {}, harness.sha(b""),
                                        amz_date=amz(delta))
        conn = http.client.HTTPConnection(host, timeout=30)
        conn.request("GET", "/pre/k", headers=hdrs)
        r = conn.getresponse()
        body = r.read().decode(errors="replace")
        conn.close()
        check(r.status == want, "x-amz-date %+d s: %d %s" % (delta, r.status, body))
        if want == 403:
            check("<Code>RequestTimeTooSkewed</Code>" in body, "skew code: %s" % body)
    # boto3's own presigned URL with the default and the maximum expiry.
    url = c.generate_presigned_url("get_object", Params={"Bucket": "pre", "Key": "k"},
                                   ExpiresIn=604800)
    check(fetch(url)[0] == 200, "boto3 7-day presign")


def test_bucket_names(c):
    for name in ("ab", "a" * 64, "a..b", "a.-b", "a-.b", "-abc", "abc-", ".abc", "192.168.1.1",
                 "xn--abc", "sthree-abc", "abc-s3alias", "abc--ol-s3", "ABC", "a_b"):
        expect_error("InvalidBucketName", 400, "bucket name %r" % name, c.create_bucket,
                     Bucket=name)
    for name in ("abc", "a" * 63, "a.b-c", "1.2.3", "my-bucket.example"):
        c.create_bucket(Bucket=name)
        c.delete_bucket(Bucket=name)


def test_versioning_refused(c):
    c.create_bucket(Bucket="vers")
    c.put_object(Bucket="vers", Key="k", Body=b"v")
    check("Status" not in c.get_bucket_versioning(Bucket="vers"), "never versioned")
    expect_error("NotImplemented", 501, "PutBucketVersioning", c.put_bucket_versioning,
                 Bucket="vers", VersioningConfiguration={"Status": "Enabled"})
    expect_error("NotImplemented", 501, "ListObjectVersions", c.list_object_versions,
                 Bucket="vers")
    expect_error("NotImplemented", 501, "GET with versionId", c.get_object, Bucket="vers",
                 Key="k", VersionId="3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY")
    expect_error("NotImplemented", 501, "DELETE with versionId", c.delete_object, Bucket="vers",
                 Key="k", VersionId="3HL4kqtJlcpXroDTDmJ-rmSpXd3dIbrHY")
    check(c.get_object(Bucket="vers", Key="k", VersionId="null")["Body"].read() == b"v",
          "versionId=null is the only version")


def test_listing_and_metadata(c):
    c.create_bucket(Bucket="meta")
    for k in ("a", "b", "c"):
        c.put_object(Bucket="meta", Key=k, Body=k.encode())
    r = c.list_objects_v2(Bucket="meta", ContinuationToken="")
    check([o["Key"] for o in r["Contents"]] == ["a", "b", "c"], "empty continuation token")
    check(r.get("ContinuationToken") == "", "empty token echoed: %s" % r.get("ContinuationToken"))
    when = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    c.put_object(Bucket="meta", Key="exp", Body=b"e", Expires=when)
    h = c.head_object(Bucket="meta", Key="exp")
    check(h.get("Expires") == when, "Expires returned: %s" % h.get("Expires"))
    check(c.get_object(Bucket="meta", Key="exp").get("Expires") == when, "Expires on GET")
    c.copy_object(Bucket="meta", Key="exp-copy", CopySource="meta/exp")
    check(c.head_object(Bucket="meta", Key="exp-copy").get("Expires") == when, "Expires copied")
    # A multipart upload whose first part is sent again, finishing last.
    first = os.urandom(5 << 20)
    again = os.urandom(5 << 20)
    up = c.create_multipart_upload(Bucket="meta", Key="mp")["UploadId"]
    c.upload_part(Bucket="meta", Key="mp", UploadId=up, PartNumber=1, Body=first)
    e2 = c.upload_part(Bucket="meta", Key="mp", UploadId=up, PartNumber=2, Body=b"end")["ETag"]
    e1 = c.upload_part(Bucket="meta", Key="mp", UploadId=up, PartNumber=1, Body=again)["ETag"]
    c.complete_multipart_upload(Bucket="meta", Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    check(c.get_object(Bucket="meta", Key="mp")["Body"].read() == again + b"end",
          "the re-sent first part wins")


def test_awscli(store, endpoint):
    harness.write_aws_profiles(store.home, {"default": (harness.ACCESS_KEY, harness.SECRET_KEY)})
    aws = ["/usr/bin/aws", "--endpoint-url", endpoint]

    def run(args, ok=True):
        r = subprocess.run(aws + args, env=store.env, capture_output=True, text=True, timeout=60)
        if ok != (r.returncode == 0):
            harness.fail("aws %s: rc %d %s" % (" ".join(args), r.returncode, r.stderr))
        return r

    r = run(["s3api", "create-bucket", "--bucket", "bad..name"], ok=False)
    check("InvalidBucketName" in r.stderr, "awscli bad name: %s" % r.stderr)
    run(["s3api", "create-bucket", "--bucket", "cli-rules"])
    src = os.path.join(store.tmp, "cli-src")
    with open(src, "wb") as f:
        f.write(b"0123456789")
    run(["s3api", "put-object", "--bucket", "cli-rules", "--key", "src", "--body", src])
    up = run(["s3api", "create-multipart-upload", "--bucket", "cli-rules", "--key", "d",
              "--query", "UploadId", "--output", "text"]).stdout.strip()
    out = run(["s3api", "upload-part-copy", "--bucket", "cli-rules", "--key", "d", "--upload-id",
               up, "--part-number", "1", "--copy-source", "cli-rules/src",
               "--copy-source-range", "bytes=2-5"]).stdout
    check(hashlib.md5(b"2345").hexdigest() in out, "awscli upload-part-copy: %s" % out)
    r = run(["s3api", "upload-part-copy", "--bucket", "cli-rules", "--key", "d", "--upload-id",
             up, "--part-number", "1", "--copy-source", "cli-rules/src",
             "--copy-source-range", "bytes=2-50"], ok=False)
    check("InvalidRange" in r.stderr, "awscli invalid range: %s" % r.stderr)
    r = run(["s3api", "put-bucket-versioning", "--bucket", "cli-rules",
             "--versioning-configuration", "Status=Enabled"], ok=False)
    check("NotImplemented" in r.stderr, "awscli versioning: %s" % r.stderr)
    url = run(["s3", "presign", "s3://cli-rules/src", "--expires-in", "60"]).stdout.strip()
    check(fetch(url)[2] == b"0123456789", "awscli presigned URL")


def main():
    kvcs = sys.argv[1]
    with harness.Store(kvcs) as store:
        ep = store.endpoint
        c = harness.boto_client(ep)
        test_conditional_put(c)
        test_conditional_race(ep)
        test_race_under_kill9(store)
        ep = store.endpoint
        c = harness.boto_client(ep)
        test_upload_part_copy(c)
        test_presigned_limits(c, ep)
        test_bucket_names(c)
        test_versioning_refused(c)
        test_listing_and_metadata(c)
        test_awscli(store, ep)
    print("e2e_api_rules: OK")


if __name__ == "__main__":
    main()
