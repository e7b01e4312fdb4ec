"""Starts `kvcs store` on a free 127.0.0.1 port with a temporary root, for the S3 end-to-end tests.

$KVCS_E2E_STORE_ARGS, when set, is appended to every store's command line with "{ns}" replaced by
a name unique to that Store (kept across its restarts): tests/ceph runs these tests against the
RADOS backend with "--backend rados --rados-pool P --rados-namespace {ns} --ceph-conf F".

Nothing leaks into the user's configuration: every client gets a temporary HOME and config files,
and AWS_* variables from the caller's environment are removed.
"""
import datetime
import hashlib
import hmac
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.parse

ACCESS_KEY = "kvcstestkey"
SECRET_KEY = "kvcs-test-secret-0123456789abcdef"
REGION = "us-east-1"
_TEST_KEYS = (ACCESS_KEY, SECRET_KEY)


def clean_env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    for k in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "RCLONE_CONFIG",
              "S3CMD_CONFIG", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env.pop(k, None)
    env["HOME"] = home
    env["NO_PROXY"] = "*"
    env["AWS_CONFIG_FILE"] = os.path.join(home, ".aws", "config")
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(home, ".aws", "credentials")
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    return env


class Store:
    """One `kvcs store` process. Use as a context manager."""

    def __init__(self, kvcs, root=None, extra_keys=None, tls=None, extra_config=""):
        self.kvcs = kvcs
        self.tmp = tempfile.mkdtemp(prefix="kvcs-s3-e2e-")
        self.root = root or os.path.join(self.tmp, "root")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home, exist_ok=True)
        self.env = clean_env(self.home)
        self.config = os.path.join(self.tmp, "s3.conf")
        with open(self.config, "w") as f:
            f.write("region = %s\nvirtual_host = localhost\n[key %s]\nsecret = %s\n" %
                    (REGION, ACCESS_KEY, SECRET_KEY))
            for k, s in (extra_keys or {}).items():
                f.write("[key %s]\nsecret = %s\n" % (k, s))
            f.write(extra_config)  # more [key] sections (user =, display_name =)
        self.proc = None
        self.port = None
        self.tls = tls  # (cert_file, key_file) or None

    def start(self):
        self.proc = subprocess.Popen(
            [self.kvcs, "store", "--root", self.root, "--listen", "127.0.0.1:0", "--config",
             self.config, "--io-threads", "4"] +
            (["--tls-cert", self.tls[0], "--tls-key", self.tls[1]] if self.tls else []) +
            backend_args(os.path.basename(self.tmp)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, text=True)
        self.banner = []
        for line in self.proc.stdout:  # blocks until the server prints its address
            self.banner.append(line)
            if "listening on http://" in line or "listening on https://" in line:
                self.port = int(re.search(r"listening on https?://[^:\s]+:(\d+)", line).group(1))
                break
        if self.port is None:
            err = self.proc.stderr.read()
            raise RuntimeError("kvcs store did not start: %s %s" % (self.banner, err))
        return self

    @property
    def endpoint(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("kvcs store ignored SIGTERM")
        return self.proc.returncode if self.proc else None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        rc = self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if exc[0] is None and rc not in (0, None):
            raise RuntimeError("kvcs store exited with %s" % rc)


class Radosgw:
    """The Ceph fixture's radosgw (scripts/ceph-fixture.sh), to run the same test against it:
    $KVCS_E2E_TARGET=radosgw and $KVCS_CEPH_DIR (the fixture's directory). Makes the fixture's
    main user the default key of this module (ACCESS_KEY / SECRET_KEY). Has no process to stop."""

    def __init__(self):
        env = {}
        with open(os.path.join(os.environ["KVCS_CEPH_DIR"], "fixture.env")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                env[k] = shlex.split(v)[0] if v else ""
        global ACCESS_KEY, SECRET_KEY
        ACCESS_KEY, SECRET_KEY = env["KVCS_CEPH_ACCESS_KEY"], env["KVCS_CEPH_SECRET_KEY"]
        self.endpoint = env["KVCS_CEPH_RGW_ENDPOINT"]
        self.tmp = tempfile.mkdtemp(prefix="kvcs-s3-rgw-")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home, exist_ok=True)
        self.env = clean_env(self.home)

    def purge(self, buckets):
        """Deletes these buckets (objects and uploads first) if a previous run left them."""
        c = boto_client(self.endpoint)
        for b in buckets:
            try:
                for u in c.list_multipart_uploads(Bucket=b).get("Uploads", []):
                    c.abort_multipart_upload(Bucket=b, Key=u["Key"], UploadId=u["UploadId"])
                for page in c.get_paginator("list_objects_v2").paginate(Bucket=b):
                    for o in page.get("Contents", []):
                        c.delete_object(Bucket=b, Key=o["Key"])
                c.delete_bucket(Bucket=b)
            except Exception:  # absent, or another user's
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, ignore_errors=True)


def target():
    """"kvcs" (a `kvcs store` the test starts) or "radosgw" ($KVCS_E2E_TARGET)."""
    return os.environ.get("KVCS_E2E_TARGET", "kvcs")


def backend_args(ns):
    """The extra store arguments of $KVCS_E2E_STORE_ARGS for a store whose unique name is ns."""
    extra = os.environ.get("KVCS_E2E_STORE_ARGS", "")
    if "{rgw_" in extra:  # the S3 backend on the Ceph fixture's radosgw ($KVCS_CEPH_DIR)
        rgw = Radosgw()
        extra = (extra.replace("{rgw_endpoint}", rgw.endpoint)
                 .replace("{rgw_access_key}", shlex.quote(ACCESS_KEY))
                 .replace("{rgw_secret_key}", shlex.quote(SECRET_KEY)))
        rgw.__exit__()
        restore_test_keys()
    return shlex.split(extra.replace("{ns}", ns.replace("_", "-")))


def restore_test_keys():
    global ACCESS_KEY, SECRET_KEY
    ACCESS_KEY, SECRET_KEY = _TEST_KEYS


def write_aws_profiles(home, profiles):
    """awscli files under `home` (path-style, us-east-1): profiles maps name -> (key, secret)."""
    os.makedirs(os.path.join(home, ".aws"), exist_ok=True)
    with open(os.path.join(home, ".aws", "config"), "w") as f:
        f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n")
    with open(os.path.join(home, ".aws", "credentials"), "w") as f:
        for name, (key, secret) in profiles.items():
            f.write("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n" %
                    (name, key, secret))


def http_status(url, data=None, method="GET"):
    """The HTTP status of a plain (unsigned or presigned) request."""
    import urllib.error
    import urllib.request
    req = url if isinstance(url, urllib.request.Request) else urllib.request.Request(
        url, data=data, method=method)
    try:
        with urllib.request.urlopen(req) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code


def boto_client(endpoint, access=None, secret=None, style="path"):
    import boto3
    access = access or ACCESS_KEY
    secret = secret or SECRET_KEY
    from botocore.config import Config
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=access,
        aws_secret_access_key=secret,
        config=Config(signature_version="s3v4", s3={"addressing_style": style},
                      retries={"max_attempts": 1}, connect_timeout=10, read_timeout=60))


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def expect_error(code, status, what, fn, *args, **kw):
    """Calls boto3's fn(*args, **kw) and fails unless it raises S3 error `code` (any when empty)
    with HTTP `status`; returns the ClientError."""
    from botocore.exceptions import ClientError
    try:
        fn(*args, **kw)
    except ClientError as e:
        got = e.response["Error"]["Code"]
        got_status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        if got_status != status or (code and got != code):
            fail("%s: expected %s/%d, got %s/%d" % (what, code, status, got, got_status))
        return e
    fail("%s: expected error %s, got success" % (what, code))


def denied(what, fn, *args, **kw):
    return expect_error("AccessDenied", 403, what, fn, *args, **kw)


def sha(b):
    return hashlib.sha256(b).hexdigest()


# Hand-rolled SigV4 (test side), for raw requests botocore would not send.

def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signing_key(secret, date):
    k = _hmac(("AWS4" + secret).encode(), date)
    k = _hmac(k, REGION)
    k = _hmac(k, "s3")
    return _hmac(k, "aws4_request")


def sign_request(method, path, host, headers, payload_hash, secret=None,
                 access=None, amz_date=None, canonical_query=""):
    secret = secret or SECRET_KEY
    access = access or ACCESS_KEY
    amz_date = amz_date or datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    date = amz_date[:8]
    headers = dict(headers)
    headers["host"] = host
    headers["x-amz-date"] = amz_date
    headers["x-amz-content-sha256"] = payload_hash
    names = sorted(k.lower() for k in headers)
    canon_headers = "".join("%s:%s\n" % (n, str(headers[[k for k in headers if k.lower() == n][0]]).strip())
                            for n in names)
    signed = ";".join(names)
    quoted = urllib.parse.quote(path, safe="/~")
    cr = "\n".join([method, quoted, canonical_query, canon_headers, signed, payload_hash])
    scope = "%s/%s/s3/aws4_request" % (date, REGION)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, sha(cr.encode())])
    key = signing_key(secret, date)
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                                % (access, scope, signed, sig))
    return headers, key, amz_date, scope, sig


