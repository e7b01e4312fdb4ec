#!/usr/bin/python3
"""End-to-end: boto3 (Debian's python3-boto3) against `kvcs store` over real sockets.

Usage: e2e_boto3.py /path/to/kvcs
Covers bucket/object lifecycle, metadata, ranges, conditionals, listing (delimiter, prefix,
continuation, start-after, v1 markers, url encoding), copy, DeleteObjects, multipart (and its error
codes), presigned GET/PUT, bad signatures, payload hash mismatch, signed aws-chunked streaming
uploads (hand-signed here, chunk by chunk), virtual-hosted addressing and a restart.
"""
import datetime
import hashlib
import hmac
import http.client
import io
import os
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402


def expect_error(code, status, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except ClientError as e:
        got = e.response["Error"]["Code"]
        got_status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        if got != code or got_status != status:
            harness.fail("%s: expected %s/%d, got %s/%d" % (fn.__name__, code, status, got,
                                                            got_status))
        return
    harness.fail("%s: expected error %s, got success" % (getattr(fn, "__name__", fn), code))


def check(cond, msg):
    if not cond:
        harness.fail(msg)


from harness import sign_request, sha  # noqa: E402


def raw_request(port, method, path, headers, body=b""):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, urllib.parse.quote(path, safe="/~"), body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def error_code(body):
    s = body.decode(errors="replace")
    if "<Code>" not in s:
        return s
    return s.split("<Code>")[1].split("</Code>")[0]


def aws_chunked(payload, key, amz_date, scope, seed, chunk=64 * 1024, corrupt_chunk=None):
    out = b""
    prev = seed
    chunks = [payload[i:i + chunk] for i in range(0, len(payload), chunk)] + [b""]
    for i, c in enumerate(chunks):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, prev,
                         sha(b""), sha(c)])
        sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        data = c
        if corrupt_chunk == i and c:
            data = b"X" + c[1:]
        out += b"%x;chunk-signature=%s\r\n" % (len(c), sig.encode()) + data + b"\r\n"
        prev = sig
    return out


# ---------------------------------------------------------------- tests

def test_buckets(s3):
    s3.create_bucket(Bucket="alpha")
    s3.create_bucket(Bucket="beta")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check(names == ["alpha", "beta"], "list_buckets: %s" % names)
    s3.head_bucket(Bucket="alpha")
    expect_error("404", 404, s3.head_bucket, Bucket="nope-bucket")
    s3.create_bucket(Bucket="alpha")  # the owner again: us-east-1 answers 200 (e2e_tenants.py)
    expect_error("InvalidBucketName", 400, s3.create_bucket, Bucket="Bad_Name")
    expect_error("NoSuchBucket", 404, s3.list_objects_v2, Bucket="nope-bucket")
    s3.put_object(Bucket="beta", Key="x", Body=b"1")
    expect_error("BucketNotEmpty", 409, s3.delete_bucket, Bucket="beta")
    s3.delete_object(Bucket="beta", Key="x")
    s3.delete_bucket(Bucket="beta")
    expect_error("NoSuchBucket", 404, s3.delete_bucket, Bucket="beta")
    loc = s3.get_bucket_location(Bucket="alpha")
    check(loc.get("LocationConstraint") in (None, ""), "location: %s" % loc)


def test_objects(s3):
    body = os.urandom(300_000)
    r = s3.put_object(Bucket="alpha", Key="dir/obj.bin", Body=body, ContentType="application/x-kv",
                      Metadata={"Layer-Count": "32", "owner": "me"})
    check(r["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), "put etag %s" % r["ETag"])
    g = s3.get_object(Bucket="alpha", Key="dir/obj.bin")
    data = g["Body"].read()
    check(sha(data) == sha(body), "get body digest")
    check(g["ContentType"] == "application/x-kv", "content type %s" % g["ContentType"])
    check(g["Metadata"] == {"layer-count": "32", "owner": "me"}, "metadata %s" % g["Metadata"])
    h = s3.head_object(Bucket="alpha", Key="dir/obj.bin")
    check(h["ContentLength"] == len(body) and h["ETag"] == r["ETag"], "head")
    expect_error("NoSuchKey", 404, s3.get_object, Bucket="alpha", Key="missing")
    expect_error("404", 404, s3.head_object, Bucket="alpha", Key="missing")
    # Content-MD5 of other bytes -> BadDigest, object untouched.
    import base64
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    expect_error("BadDigest", 400, s3.put_object, Bucket="alpha", Key="dir/obj.bin", Body=b"new",
                 ContentMD5=wrong)
    expect_error("InvalidDigest", 400, s3.put_object, Bucket="alpha", Key="dir/obj.bin",
                 Body=b"new", ContentMD5="not-base64!")
    check(sha(s3.get_object(Bucket="alpha", Key="dir/obj.bin")["Body"].read()) == sha(body),
          "object changed by a refused PUT")
    # Empty object and odd keys.
    s3.put_object(Bucket="alpha", Key="empty", Body=b"")
    check(s3.get_object(Bucket="alpha", Key="empty")["Body"].read() == b"", "empty object")
    odd = "odd/sp ace+plus%pct&amp=eq?q#h~t/\u00fc\u00f1i.txt"
    s3.put_object(Bucket="alpha", Key=odd, Body=b"odd")
    check(s3.get_object(Bucket="alpha", Key=odd)["Body"].read() == b"odd", "odd key")
    expect_error("KeyTooLongError", 400, s3.put_object, Bucket="alpha", Key="k" * 1025, Body=b"")
    return body


def test_ranges_and_conditions(s3, body):
    def rng(spec):
        return s3.get_object(Bucket="alpha", Key="dir/obj.bin", Range=spec)

    g = rng("bytes=0-9")
    check(g["Body"].read() == body[:10] and g["ContentRange"] == "bytes 0-9/%d" % len(body),
          "range 0-9")
    check(g["ResponseMetadata"]["HTTPStatusCode"] == 206, "206")
    check(rng("bytes=-5")["Body"].read() == body[-5:], "suffix range")
    check(rng("bytes=299990-")["Body"].read() == body[299990:], "open range")
    check(rng("bytes=299990-400000")["Body"].read() == body[299990:], "clamped range")
    expect_error("InvalidRange", 416, rng, "bytes=300000-")
    etag = s3.head_object(Bucket="alpha", Key="dir/obj.bin")["ETag"]
    lm = s3.head_object(Bucket="alpha", Key="dir/obj.bin")["LastModified"]
    s3.get_object(Bucket="alpha", Key="dir/obj.bin", IfMatch=etag)
    expect_error("PreconditionFailed", 412, s3.get_object, Bucket="alpha", Key="dir/obj.bin",
                 IfMatch='"0000"')
    expect_error("304", 304, s3.get_object, Bucket="alpha", Key="dir/obj.bin", IfNoneMatch=etag)
    future = lm + datetime.timedelta(days=1)
    past = lm - datetime.timedelta(days=1)
    expect_error("304", 304, s3.get_object, Bucket="alpha", Key="dir/obj.bin",
                 IfModifiedSince=future)
    s3.get_object(Bucket="alpha", Key="dir/obj.bin", IfModifiedSince=past)
    expect_error("PreconditionFailed", 412, s3.get_object, Bucket="alpha", Key="dir/obj.bin",
                 IfUnmodifiedSince=past)
    s3.get_object(Bucket="alpha", Key="dir/obj.bin", IfUnmodifiedSince=future)


def test_listing(s3):
    s3.create_bucket(Bucket="listing")
    keys = ["a/1", "a/2", "a/b/3", "b/1", "c", "d/x/y", "e/\u00e9 sp"]
    for k in keys:
        s3.put_object(Bucket="listing", Key=k, Body=k.encode())
    r = s3.list_objects_v2(Bucket="listing", Delimiter="/")
    check([o["Key"] for o in r.get("Contents", [])] == ["c"], "v2 delimiter contents %s" % r)
    check([p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/", "d/", "e/"], "prefixes")
    r = s3.list_objects_v2(Bucket="listing", Prefix="a/", Delimiter="/")
    check([o["Key"] for o in r["Contents"]] == ["a/1", "a/2"], "prefix a/")
    check([p["Prefix"] for p in r["CommonPrefixes"]] == ["a/b/"], "prefix a/ cps")
    # Continuation, 2 at a time, through every key.
    seen, token, pages = [], None, 0
    while True:
        kw = {"Bucket": "listing", "MaxKeys": 2}
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw)
        pages += 1
        seen += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    check(seen == sorted(keys) and pages == 4, "continuation: %s in %d pages" % (seen, pages))
    # Paginator with delimiter (common prefixes across pages).
    pg = s3.get_paginator("list_objects_v2")
    items = []
    for page in pg.paginate(Bucket="listing", Delimiter="/", PaginationConfig={"PageSize": 1}):
        items += [o["Key"] for o in page.get("Contents", [])]
        items += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    check(items == ["a/", "b/", "c", "d/", "e/"], "paginated delimiter %s" % items)
    r = s3.list_objects_v2(Bucket="listing", StartAfter="b/1")
    check([o["Key"] for o in r["Contents"]] == ["c", "d/x/y", "e/\u00e9 sp"], "start-after")
    r = s3.list_objects_v2(Bucket="listing", Prefix="e/", EncodingType="url")
    # botocore leaves keys encoded when the caller asked for EncodingType itself.
    check([o["Key"] for o in r["Contents"]] == ["e/%C3%A9%20sp"], "url encoding %s" % r["Contents"])
    # v1 with markers.
    pg = s3.get_paginator("list_objects")
    v1 = []
    for page in pg.paginate(Bucket="listing", PaginationConfig={"PageSize": 3}):
        v1 += [o["Key"] for o in page.get("Contents", [])]
    check(v1 == sorted(keys), "v1 pagination %s" % v1)
    expect_error("InvalidArgument", 400, s3.list_objects_v2, Bucket="listing",
                 ContinuationToken="zz-not-hex")
    # DeleteObjects.
    r = s3.delete_objects(Bucket="listing", Delete={"Objects": [{"Key": k} for k in keys] +
                                                    [{"Key": "never-existed"}]})
    check(sorted(d["Key"] for d in r["Deleted"]) == sorted(keys + ["never-existed"]),
          "delete_objects %s" % r)
    check(s3.list_objects_v2(Bucket="listing")["KeyCount"] == 0, "bucket empty after delete")
    s3.delete_bucket(Bucket="listing")


def test_copy(s3, body):
    r = s3.copy_object(Bucket="alpha", Key="copy.bin",
                       CopySource={"Bucket": "alpha", "Key": "dir/obj.bin"})
    check(r["CopyObjectResult"]["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), "copy etag")
    g = s3.get_object(Bucket="alpha", Key="copy.bin")
    check(sha(g["Body"].read()) == sha(body) and g["Metadata"]["owner"] == "me", "copy content")
    s3.copy_object(Bucket="alpha", Key="copy.bin", CopySource="alpha/copy.bin",
                   MetadataDirective="REPLACE", Metadata={"new": "yes"}, ContentType="text/x")
    h = s3.head_object(Bucket="alpha", Key="copy.bin")
    check(h["Metadata"] == {"new": "yes"} and h["ContentType"] == "text/x", "replace metadata")
    expect_error("InvalidRequest", 400, s3.copy_object, Bucket="alpha", Key="copy.bin",
                 CopySource="alpha/copy.bin")
    expect_error("NoSuchKey", 404, s3.copy_object, Bucket="alpha", Key="c2",
                 CopySource="alpha/missing")


def test_multipart(s3):
    p1 = os.urandom(5 * 1024 * 1024)
    p2 = os.urandom(1024 * 1024 + 17)
    up = s3.create_multipart_upload(Bucket="alpha", Key="mp/big", ContentType="application/x-mp",
                                    Metadata={"m": "1"})
    uid = up["UploadId"]
    e1 = s3.upload_part(Bucket="alpha", Key="mp/big", UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part(Bucket="alpha", Key="mp/big", UploadId=uid, PartNumber=2, Body=p2)["ETag"]
    parts = s3.list_parts(Bucket="alpha", Key="mp/big", UploadId=uid)["Parts"]
    check([(p["PartNumber"], p["Size"], p["ETag"]) for p in parts] ==
          [(1, len(p1), e1), (2, len(p2), e2)], "list_parts %s" % parts)
    ups = s3.list_multipart_uploads(Bucket="alpha")["Uploads"]
    check([u["UploadId"] for u in ups] == [uid], "list uploads")
    expect_error("InvalidPartOrder", 400, s3.complete_multipart_upload, Bucket="alpha",
                 Key="mp/big", UploadId=uid,
                 MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": e2},
                                            {"PartNumber": 1, "ETag": e1}]})
    expect_error("InvalidPart", 400, s3.complete_multipart_upload, Bucket="alpha", Key="mp/big",
                 UploadId=uid, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e2}]})
    r = s3.complete_multipart_upload(Bucket="alpha", Key="mp/big", UploadId=uid,
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                                                {"PartNumber": 2, "ETag": e2}]})
    md5s = hashlib.md5(bytes.fromhex(e1.strip('"')) + bytes.fromhex(e2.strip('"'))).hexdigest()
    check(r["ETag"] == '"%s-2"' % md5s, "multipart etag %s" % r["ETag"])
    g = s3.get_object(Bucket="alpha", Key="mp/big")
    check(sha(g["Body"].read()) == sha(p1 + p2), "multipart content")
    check(g["ContentType"] == "application/x-mp" and g["Metadata"] == {"m": "1"}, "mp metadata")
    check(s3.get_object(Bucket="alpha", Key="mp/big", Range="bytes=5242870-5242889")["Body"]
          .read() == (p1 + p2)[5242870:5242890], "range across the part boundary")
    expect_error("NoSuchUpload", 404, s3.list_parts, Bucket="alpha", Key="mp/big", UploadId=uid)
    # EntityTooSmall, abort, NoSuchUpload.
    uid2 = s3.create_multipart_upload(Bucket="alpha", Key="mp/small")["UploadId"]
    a = s3.upload_part(Bucket="alpha", Key="mp/small", UploadId=uid2, PartNumber=1, Body=b"x")
    b = s3.upload_part(Bucket="alpha", Key="mp/small", UploadId=uid2, PartNumber=2, Body=b"y")
    expect_error("EntityTooSmall", 400, s3.complete_multipart_upload, Bucket="alpha",
                 Key="mp/small", UploadId=uid2,
                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": a["ETag"]},
                                            {"PartNumber": 2, "ETag": b["ETag"]}]})
    s3.abort_multipart_upload(Bucket="alpha", Key="mp/small", UploadId=uid2)
    expect_error("NoSuchUpload", 404, s3.upload_part, Bucket="alpha", Key="mp/small",
                 UploadId=uid2, PartNumber=3, Body=b"z")
    expect_error("NoSuchUpload", 404, s3.abort_multipart_upload, Bucket="alpha", Key="mp/small",
                 UploadId=uid2)
    # The managed transfer (multipart above the threshold) round-trips 24 MiB.
    from boto3.s3.transfer import TransferConfig
    big = os.urandom(24 * 1024 * 1024)
    cfg = TransferConfig(multipart_threshold=8 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024)
    s3.upload_fileobj(io.BytesIO(big), "alpha", "mp/managed", Config=cfg)
    out = io.BytesIO()
    s3.download_fileobj("alpha", "mp/managed", out, Config=cfg)
    check(sha(out.getvalue()) == sha(big), "managed transfer digest")
    check(s3.head_object(Bucket="alpha", Key="mp/managed")["ETag"].endswith('-3"'), "3 parts")


def test_presigned(s3, port):
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "alpha", "Key": "dir/obj.bin"},
                                    ExpiresIn=300)
    with urllib.request.urlopen(url) as r:
        data = r.read()
    check(sha(data) == sha(s3.get_object(Bucket="alpha", Key="dir/obj.bin")["Body"].read()),
          "presigned GET")
    bad = url.replace("X-Amz-Signature=", "X-Amz-Signature=0")[:-1]
    try:
        urllib.request.urlopen(bad)
        harness.fail("tampered presigned URL accepted")
    except urllib.error.HTTPError as e:
        check(e.code == 403 and error_code(e.read()) == "SignatureDoesNotMatch", "tampered: %d" % e.code)
    other = url.replace("dir/obj.bin", "copy.bin")
    try:
        urllib.request.urlopen(other)
        harness.fail("presigned URL reused for another key")
    except urllib.error.HTTPError as e:
        check(e.code == 403 and error_code(e.read()) == "SignatureDoesNotMatch", "other key")
    put = s3.generate_presigned_url("put_object", Params={"Bucket": "alpha", "Key": "presigned-put"},
                                    ExpiresIn=300)
    req = urllib.request.Request(put, data=b"via presigned put", method="PUT")
    with urllib.request.urlopen(req) as r:
        check(r.status == 200, "presigned PUT")
    check(s3.get_object(Bucket="alpha", Key="presigned-put")["Body"].read() == b"via presigned put",
          "presigned PUT content")
    # Unsigned request: AccessDenied.
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/alpha/presigned-put" % port)
        harness.fail("anonymous GET accepted")
    except urllib.error.HTTPError as e:
        check(e.code == 403 and error_code(e.read()) == "AccessDenied", "anonymous")


def test_bad_signatures(endpoint):
    wrong = harness.boto_client(endpoint, secret="not-the-secret")
    expect_error("SignatureDoesNotMatch", 403, wrong.list_buckets)
    expect_error("SignatureDoesNotMatch", 403, wrong.put_object, Bucket="alpha", Key="evil",
                 Body=b"x")
    unknown = harness.boto_client(endpoint, access="NOSUCHKEY")
    expect_error("InvalidAccessKeyId", 403, unknown.get_object, Bucket="alpha", Key="dir/obj.bin")


def test_raw_payloads(s3, port):
    host = "127.0.0.1:%d" % port
    body = b"payload bytes" * 1000
    # Signed payload hash that does not match the body: refused, nothing stored.
    h, *_ = sign_request("PUT", "/alpha/raw-bad", host, {"content-length": str(len(body))},
                         sha(b"something else"))
    st, data = raw_request(port, "PUT", "/alpha/raw-bad", h, body)
    check(st == 400 and error_code(data) == "XAmzContentSHA256Mismatch", "sha mismatch %d %s" % (st, data))
    expect_error("NoSuchKey", 404, s3.get_object, Bucket="alpha", Key="raw-bad")
    # Correct signed payload.
    h, *_ = sign_request("PUT", "/alpha/raw-good", host, {"content-length": str(len(body))}, sha(body))
    st, data = raw_request(port, "PUT", "/alpha/raw-good", h, body)
    check(st == 200, "signed payload %d %s" % (st, data))
    # Stale x-amz-date.
    h, *_ = sign_request("GET", "/alpha/raw-good", host, {}, sha(b""), amz_date="20130524T000000Z")
    st, data = raw_request(port, "GET", "/alpha/raw-good", h)
    check(st == 403 and error_code(data) == "RequestTimeTooSkewed", "skew %d" % st)
    # aws-chunked with per-chunk signatures (STREAMING-AWS4-HMAC-SHA256-PAYLOAD).
    payload = os.urandom(200_000)
    for corrupt in (None, 1):
        enc_len = len(aws_chunked(payload, b"k" * 32, "x", "y", "0" * 64))
        hdrs = {"content-encoding": "aws-chunked", "content-length": str(enc_len),
                "x-amz-decoded-content-length": str(len(payload))}
        key_name = "/alpha/chunked-%s" % corrupt
        h, key, amz_date, scope, seed = sign_request("PUT", key_name, host, hdrs,
                                                     "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
        enc = aws_chunked(payload, key, amz_date, scope, seed, corrupt_chunk=corrupt)
        st, data = raw_request(port, "PUT", key_name, h, enc)
        if corrupt is None:
            check(st == 200, "aws-chunked PUT %d %s" % (st, data))
            got = s3.get_object(Bucket="alpha", Key=key_name[7:])["Body"].read()
            check(sha(got) == sha(payload), "aws-chunked content")
        else:
            check(st == 403 and error_code(data) == "SignatureDoesNotMatch",
                  "corrupt chunk accepted: %d %s" % (st, data))
            expect_error("NoSuchKey", 404, s3.get_object, Bucket="alpha", Key=key_name[7:])
    # Virtual-hosted style: Host alpha.localhost:PORT, path is the key.
    vhost = "alpha.localhost:%d" % port
    h, *_ = sign_request("GET", "/raw-good", vhost, {}, sha(b""))
    st, data = raw_request(port, "GET", "/raw-good", h)
    check(st == 200 and data == body, "virtual-hosted GET %d" % st)
    # Malformed DeleteObjects XML.
    xml = b"<Delete><Object><Key>k</Key></Object>"
    h, *_ = sign_request("POST", "/alpha", vhost.replace("alpha.", ""), {"content-length": str(len(xml))}, sha(xml))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/alpha?delete", body=xml, headers=h)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    # The query is part of the signature: this request was signed without ?delete, so the server
    # must refuse it as a bad signature rather than parse it.
    check(r.status == 403, "unsigned query accepted: %d" % r.status)


def test_malformed_xml(port):
    host = "127.0.0.1:%d" % port
    for xml, code in ((b"<Delete><Object><Key>k</Key></Object>", "MalformedXML"),
                      (b"<!DOCTYPE d [<!ENTITY x 'y'>]><Delete/>", "MalformedXML"),
                      (b"<Delete><Object><Key>k</Key></Object></Delete>", None)):
        h, *_ = sign_request("POST", "/alpha", host, {"content-length": str(len(xml))}, sha(xml),
                             canonical_query="delete=")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/alpha?delete", body=xml, headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        if code is None:
            check(r.status == 200 and b"<Deleted><Key>k</Key></Deleted>" in data,
                  "signed DeleteObjects %d %s" % (r.status, data))
        else:
            check(r.status == 400 and error_code(data) == code, "%s: %d %s" % (xml, r.status, data))


def test_tls(kvcs):
    """The same server over HTTPS (--tls-cert/--tls-key) with a throw-away self-signed cert."""
    import shutil
    import subprocess
    import tempfile
    if not shutil.which("openssl"):
        print("e2e_boto3: openssl CLI missing; TLS check skipped")
        return
    d = tempfile.mkdtemp(prefix="kvcs-tls-")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    with harness.Store(kvcs, tls=(cert, key)) as store:
        import boto3
        from botocore.config import Config
        s3 = boto3.client("s3", endpoint_url=store.endpoint, region_name=harness.REGION,
                          aws_access_key_id=harness.ACCESS_KEY,
                          aws_secret_access_key=harness.SECRET_KEY, verify=cert,
                          config=Config(signature_version="s3v4",
                                        s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="tls")
        body = os.urandom(3 * 1024 * 1024 + 5)
        s3.put_object(Bucket="tls", Key="k", Body=body)
        check(sha(s3.get_object(Bucket="tls", Key="k")["Body"].read()) == sha(body), "TLS GET")
        check(s3.get_object(Bucket="tls", Key="k", Range="bytes=10-19")["Body"].read() ==
              body[10:20], "TLS range")
    shutil.rmtree(d, ignore_errors=True)


def main():
    kvcs = sys.argv[1]
    test_tls(kvcs)
    with harness.Store(kvcs) as store:
        s3 = harness.boto_client(store.endpoint)
        test_buckets(s3)
        body = test_objects(s3)
        test_ranges_and_conditions(s3, body)
        test_listing(s3)
        test_copy(s3, body)
        test_multipart(s3)
        test_presigned(s3, store.port)
        test_bad_signatures(store.endpoint)
        test_raw_payloads(s3, store.port)
        test_malformed_xml(store.port)
        # Restart on the same root: everything acknowledged is still there, byte for byte.
        before = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="alpha")["Contents"]}
        store.stop()
        store.start()
        s3 = harness.boto_client(store.endpoint)
        after = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="alpha")["Contents"]}
        check(before == after, "listing changed across restart")
        check(sha(s3.get_object(Bucket="alpha", Key="dir/obj.bin")["Body"].read()) == sha(body),
              "content changed across restart")
    print("e2e_boto3: OK")


if __name__ == "__main__":
    import urllib.parse  # noqa: F401
    main()
