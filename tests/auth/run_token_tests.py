#!/usr/bin/env python3
"""End-to-end checks of `kvcs token`: mint with a key from `kvcs keygen`, read the header and
claims back, and refuse bad input with exit code 1 or 2 and a message."""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

KVCS = sys.argv[1]
SCOPE = "ab" * 32


def run(*args, ok=True):
    p = subprocess.run([KVCS, *args], capture_output=True, text=True, timeout=60)
    if ok and p.returncode != 0:
        sys.exit(f"kvcs {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    if not ok and p.returncode == 0:
        sys.exit(f"kvcs {' '.join(args)} succeeded but should fail")
    return p


def b64(part):
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def main():
    with tempfile.TemporaryDirectory() as d:
        key, pub = os.path.join(d, "signer.pem"), os.path.join(d, "signer.pub.pem")
        run("keygen", "producer", "--alg", "es256", "--kid", "idx-1", "--out-key", key,
            "--out-pub", pub)
        out = run("token", "--key", key, "--sub", "store-1", "--scope-id", SCOPE, "--allow",
                  "lookup,register", "--grant", "subscribe@kvcs-1", "--ttl", "600").stdout
        token = out.strip()
        parts = token.split(".")
        assert len(parts) == 3 and all(parts), token
        header = json.loads(b64(parts[0]))
        assert header == {"alg": "ES256", "kid": "idx-1", "typ": "JWT"}, header
        claims = json.loads(b64(parts[1]))
        assert claims["sub"] == "store-1", claims
        assert 590 <= claims["exp"] - int(time.time()) <= 610, claims
        assert claims["exp"] - claims["iat"] == 600, claims
        grants = claims["grants"]
        assert {"actions": ["subscribe"], "prefixes": [["kvcs-1"]]} in grants, grants
        assert {"actions": ["lookup", "register"], "prefixes": [["kvcs-1", SCOPE]]} in grants
        assert len(b64(parts[2])) == 64  # JWA ES256: r || s

        # Bad input: a clear message, a non-zero exit.
        p = run("token", "--key", key, "--sub", "x", "--scope-id", "AB" * 32, ok=False)
        assert "lowercase hex" in p.stderr, p.stderr
        p = run("token", "--key", key, "--sub", "x", "--grant", "admin@kvcs-1", ok=False)
        assert "unknown action" in p.stderr, p.stderr
        p = run("token", "--key", key, "--sub", "x", ok=False)
        assert "nothing granted" in p.stderr, p.stderr
        p = run("token", "--key", key, "--sub", "x", "--scope-id", SCOPE, "--ttl", "0", ok=False)
        ed, ed_pub = os.path.join(d, "ed.pem"), os.path.join(d, "ed.pub.pem")
        run("keygen", "producer", "--alg", "eddsa", "--out-key", ed, "--out-pub", ed_pub)
        p = run("token", "--key", ed, "--sub", "x", "--scope-id", SCOPE, ok=False)
        assert "P-256" in p.stderr, p.stderr
        helptext = run("token", "--help").stdout
        assert "Example" in helptext and "--scope-id" in helptext, helptext
    print("kvcs token: all checks passed")


if __name__ == "__main__":
    main()
