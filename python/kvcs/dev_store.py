#!/usr/bin/env python3
"""A development `kvcs store` process on 127.0.0.1, for the engine tests and examples (standard
library only).

As a program: python3 python/kvcs/dev_store.py KVCS [--store-arg ARG]... [--relay] -- COMMAND...
starts the store in a fresh temporary directory (port 0, same-host socket in that directory),
with --relay also a `kvcs relay --open` on 127.0.0.1 (port 0, its dev certificate), runs COMMAND
with the environment below, stops them and exits with COMMAND's status.
As a module: `with StoreProcess(kvcs) as s:` gives the same values as attributes, and
`with RelayProcess([kvcs, "relay", "--open"]) as r:` a relay's r.url.

  KVCS_TEST_STORE_URL   http://127.0.0.1:PORT
  KVCS_TEST_ACCESS_KEY  KVCS_TEST_SECRET_KEY   the store's SigV4 credentials
  KVCS_TEST_STORE_ROOT  the store's directory (objects under buckets/<bucket>/obj/)
  KVCS_TEST_SHM_SOCKET  the same-host delivery socket
  KVCS_TEST_RELAY_URL   moqt://127.0.0.1:PORT/ (with --relay; its certificate: connect insecure)
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading

ACCESS_KEY = "kvcs-engine-test"
SECRET_KEY = "engine-test-secret-0123456789"


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class StoreProcess:
    def __init__(self, kvcs, extra_args=()):
        self.kvcs = kvcs
        self.extra_args = list(extra_args)
        self.proc = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="kvcs-eng-")
        self.root = os.path.join(self.dir, "root")
        self.shm_socket = os.path.join(self.dir, "shm.sock")
        env = dict(os.environ, KVCS_S3_ACCESS_KEY=ACCESS_KEY, KVCS_S3_SECRET_KEY=SECRET_KEY)
        self.proc = subprocess.Popen(
            [self.kvcs, "store", "--root", self.root, "--listen", "127.0.0.1:0",
             "--shm-socket", self.shm_socket, "--io-threads", "2", *self.extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        # The store prints its address once it listens (the line is the readiness signal).
        seen = []
        for line in self.proc.stdout:
            seen.append(line)
            if "listening on http://" in line or "listening on https://" in line:
                self.url = line.split("listening on ")[1].split()[0]
                break
        else:
            self.proc.wait()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise RuntimeError("kvcs store did not start:\n" + "".join(seen))
        self.access_key, self.secret_key = ACCESS_KEY, SECRET_KEY
        # Keep draining its output so that the store never blocks on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        return self

    def env(self):
        return {"KVCS_TEST_STORE_URL": self.url, "KVCS_TEST_ACCESS_KEY": ACCESS_KEY,
                "KVCS_TEST_SECRET_KEY": SECRET_KEY, "KVCS_TEST_STORE_ROOT": self.root,
                "KVCS_TEST_SHM_SOCKET": self.shm_socket}

    def __exit__(self, *exc):
        _stop(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


class RelayProcess:
    """A relay process: `command` (e.g. [kvcs, "relay", "--open"]) gets --listen 127.0.0.1:0 and
    must print "listening on moqt://HOST:PORT/" once it serves (kvcs relay does). With scheme
    "http" the same for any server that prints "listening on http://HOST:PORT" (IndexProcess)."""
    scheme = "moqt"

    def __init__(self, command):
        self.command = list(command)
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.command + ["--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seen = []
        for line in self.proc.stdout:
            seen.append(line)
            mark = "listening on %s://" % self.scheme
            if mark in line:
                self.url = "%s://" % self.scheme + line.split(mark)[1].split()[0]
                break
        else:
            self.proc.wait()
            raise RuntimeError("%s did not start:\n%s" % (self.command[0], "".join(seen)))
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        return self

    def __exit__(self, *exc):
        _stop(self.proc)
        return False


class IndexProcess(RelayProcess):
    """`kvcs index --open` (no authorization) with an embedded store in a temporary directory;
    .url is its http://HOST:PORT."""
    scheme = "http"

    def __init__(self, kvcs):
        self.dir = tempfile.mkdtemp(prefix="kvcs-idx-")
        super().__init__([kvcs, "index", "--open", "--db", os.path.join(self.dir, "index.db")])

    def __exit__(self, *exc):
        super().__exit__(*exc)
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def object_path(root, bucket, key):
    """Where the local store keeps an object (docs/formats/kvcs-object-file.md)."""
    h = hashlib.sha256(key.encode()).hexdigest()
    return os.path.join(root, "buckets", bucket, "obj", h[:2], h)


def main(argv):
    if "--" not in argv or len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    sep = argv.index("--")
    kvcs, opts, cmd = argv[1], argv[2:sep], argv[sep + 1:]
    extra = [opts[i + 1] for i, o in enumerate(opts) if o == "--store-arg"]
    with StoreProcess(kvcs, extra) as s:
        env = dict(os.environ, **s.env())
        if "--relay" not in opts:
            return subprocess.call(cmd, env=env)
        with RelayProcess([kvcs, "relay", "--open"]) as r:
            env["KVCS_TEST_RELAY_URL"] = r.url
            return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
