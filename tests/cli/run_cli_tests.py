#!/usr/bin/env python3
"""End-to-end tests of the kvcs binary (standard library only).

usage: run_cli_tests.py /path/to/kvcs [test-name-substring ...]

Every test runs the real binary in a fresh temporary directory. A failing command must exit 1 or
2 with "kvcs <cmd>: error:" on stderr; a crash (signal, abort, uncaught exception) always fails.
"""
import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import traceback

KVCS = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_KV = os.path.join(HERE, "make_kv_safetensors.py")

SPEC_DESCRIPTOR = ('{"kvsp":1,"model":"meta-llama/Llama-3.1-8B-Instruct",'
                   '"model_rev":"0e9e39f249a16976918f6564b8830bc894c89659",'
                   '"tokenizer_rev":"0e9e39f249a16976918f6564b8830bc894c89659","attn":"gqa",'
                   '"layers":32,"kv_heads":8,"head_dim":128,"kv_dtype":"bf16","block_tokens":16,'
                   '"layout":"thd"}')
SPEC = {
    "compat_id": "851898196c814a8d0029a9e763f8ec354cf226a41ec7fabc5ae9c0c6d14c2fa5",
    "scope_id": "50888d23678bd64d5d97ce667dc69306b04ff6d45cd2067d1792ae533282f63c",
    "chain_key": "497ed9d8a187ee3a73e300a752144d1712963c10c7dc875858f77d9b4c59285c",
    "k1": "68e15e899f708e28651c88f9a2065c74cd2a5cd4bcea09d8a524f304680b74ed",
    "k2": "63957209fa7302e933b82c7bc91d228548b84f0c1145f70eace7d69191cd461b",
}
TINY_DESCRIPTOR = {"kvsp": 1, "model": "test/tiny-llama", "model_rev": "r1", "tokenizer_rev": "t1",
                   "attn": "gqa", "layers": 2, "kv_heads": 2, "head_dim": 8, "kv_dtype": "bf16",
                   "block_tokens": 16, "layout": "thd"}


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run(*args, ok=True, stdin=None):
    """Runs kvcs; ok=True: must exit 0; ok=False: must fail cleanly (exit 1/2, message)."""
    p = subprocess.run([KVCS, *map(str, args)], capture_output=True, text=True, input=stdin,
                       timeout=300)
    where = "kvcs " + " ".join(map(str, args))
    crash = p.returncode < 0 or "terminate called" in p.stderr or "Sanitizer" in p.stderr
    check(not crash, f"{where}: crashed (rc {p.returncode})\n{p.stderr}")
    if ok:
        check(p.returncode == 0, f"{where}: rc {p.returncode}\nstdout:{p.stdout}\nstderr:{p.stderr}")
    else:
        check(p.returncode in (1, 2), f"{where}: expected failure, rc {p.returncode}\n{p.stdout}")
        # 1: "kvcs <cmd>: error: ..." from the command; 2: a usage error from the option parser.
        if p.returncode == 1:
            check("error:" in p.stderr, f"{where}: no error message on stderr:\n{p.stderr}")
        else:
            check(p.stderr.strip(), f"{where}: usage error without a message")
    return p


def write(path, data):
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def read(path):
    with open(path, "rb") as f:
        return f.read()


def flip(path, offset, mask=0x01, out=None):
    b = bytearray(read(path))
    b[offset] ^= mask
    return write(out or path, bytes(b))


def make_kv(path, *extra):
    subprocess.run([sys.executable, MAKE_KV, path, *map(str, extra)], check=True)
    return path


def load_safetensors(path):
    """A minimal independent reader: {name: (dtype, shape, bytes)}, metadata."""
    b = read(path)
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", {})
    base = 8 + n
    return {k: (v["dtype"], v["shape"], b[base + v["data_offsets"][0]:base + v["data_offsets"][1]])
            for k, v in h.items()}, meta


def token_list(t):
    dtype, shape, data = t
    fmt = {"I64": "q", "I32": "i", "U32": "I", "U64": "Q"}[dtype]
    return list(struct.unpack("<%d%s" % (shape[0], fmt), data))


# ------------------------------------------------------------------------------------------------

def test_help_of_every_subcommand(d):
    for sub in (["keys"], ["keygen"], ["keygen", "scope"], ["keygen", "producer"], ["pack"],
                ["unpack"], ["inspect"], ["demo"], ["version"], ["relay"]):
        p = run(*sub, "--help")
        check("Example" in p.stdout, f"kvcs {' '.join(sub)} --help shows no example")
    p = run("--help")
    check("Example" in p.stdout, "kvcs --help shows no example")
    run("no-such-command", ok=False)
    run(ok=False)


def test_unknown_command_says_so(d):
    # With or without --help, and after a top-level option: named as unknown, the commands
    # listed, exit status 2 (a usage error) so that a script can tell.
    for args in (["frobnicate"], ["frobnicate", "--help"], ["--log", "info", "frobnicate", "--help"],
                 ["frobnicate", "-h", "--port", "1"]):
        p = run(*args, ok=False)
        check(p.returncode == 2, f"kvcs {' '.join(args)}: exit {p.returncode}, expected 2")
        check("unknown command 'frobnicate'" in p.stderr, f"kvcs {' '.join(args)}: {p.stderr!r}")
        check("store" in p.stderr and "moq-pub" in p.stderr, "the commands are not listed")
        check("Example" not in p.stdout, "top-level help printed for an unknown command")
    # Known commands are unaffected, including after --log.
    p = run("--log", "warn", "version")
    check(p.returncode == 0, "kvcs --log warn version failed")


def test_keys_spec_vector(d):
    desc = write(f"{d}/d.json", SPEC_DESCRIPTOR)
    toks = write(f"{d}/t.json", json.dumps(list(range(1000, 1040))))
    out = json.loads(run("keys", "--descriptor", desc, "--tokens", toks, "--public").stdout)
    check(out["compat_id"] == SPEC["compat_id"], f"compat_id {out['compat_id']}")
    check(out["scope_id"] == SPEC["scope_id"], f"scope_id {out['scope_id']}")
    check(out["block_keys"] == [SPEC["k1"], SPEC["k2"]], f"block keys {out['block_keys']}")
    check(out["anchor"] == SPEC["k2"], "anchor")
    check(out["tail_tokens"] == 8 and out["blocks"] == 2 and out["tokens"] == 40, "counts")
    # The same tokens as text, and wrapped in an object.
    txt = write(f"{d}/t.txt", "1000 1001,1002\n" + " ".join(map(str, range(1003, 1040))))
    out2 = json.loads(run("keys", "--descriptor", desc, "--tokens-file", txt, "--public").stdout)
    check(out2["block_keys"] == out["block_keys"], "text tokens give other keys")
    obj = write(f"{d}/t2.json", json.dumps({"token_ids": list(range(1000, 1040))}))
    out3 = json.loads(run("keys", "--descriptor", desc, "--tokens", obj, "--public").stdout)
    check(out3["anchor"] == SPEC["k2"], "object form")
    # Fewer tokens than a block: no keys, anchor null.
    few = write(f"{d}/few.json", "[1, 2, 3]")
    out4 = json.loads(run("keys", "--descriptor", desc, "--tokens", few, "--public").stdout)
    check(out4["block_keys"] == [] and out4["anchor"] is None and out4["tail_tokens"] == 3, "few")


def test_keys_never_print_secrets(d):
    desc = write(f"{d}/d.json", SPEC_DESCRIPTOR)
    toks = write(f"{d}/t.json", json.dumps(list(range(1000, 1040))))
    p = run("keys", "--descriptor", desc, "--tokens", toks, "--public")
    check(SPEC["chain_key"] not in p.stdout + p.stderr, "public chain key printed")
    run("keygen", "scope", "--out", f"{d}/s.key")
    key = read(f"{d}/s.key").decode().strip()
    p = run("keys", "--descriptor", desc, "--tokens", toks, "--scope-key-file", f"{d}/s.key")
    out = json.loads(p.stdout)
    check(key not in p.stdout + p.stderr, "scope key printed")
    check(out["scope"] == "private" and out["scope_id"] != SPEC["scope_id"], "private scope")
    check(out["block_keys"][0] != SPEC["k1"], "private keys equal public keys")


def test_keys_bad_input(d):
    desc = write(f"{d}/d.json", SPEC_DESCRIPTOR)
    toks = write(f"{d}/t.json", json.dumps(list(range(1000, 1040))))
    cases = {
        "missing descriptor": ["--descriptor", f"{d}/nope.json", "--tokens", toks, "--public"],
        "malformed descriptor": ["--descriptor", write(f"{d}/bad.json", "{\"kvsp\":1,"),
                                 "--tokens", toks, "--public"],
        "unknown field": ["--descriptor", write(f"{d}/uf.json", SPEC_DESCRIPTOR[:-1] + ',"x":1}'),
                          "--tokens", toks, "--public"],
        "float field": ["--descriptor", write(f"{d}/fl.json", SPEC_DESCRIPTOR.replace('"layers":32', '"layers":32.5')),
                        "--tokens", toks, "--public"],
        "missing tokens": ["--descriptor", desc, "--tokens", f"{d}/nope.json", "--public"],
        "no tokens": ["--descriptor", desc, "--public"],
        "tokens not json": ["--descriptor", desc, "--tokens", write(f"{d}/tb.json", "[1,2"), "--public"],
        "negative token": ["--descriptor", desc, "--tokens", write(f"{d}/tn.json", "[1,-2]"), "--public"],
        "token too big": ["--descriptor", desc, "--tokens", write(f"{d}/tg.json", "[4294967296]"), "--public"],
        "token text junk": ["--descriptor", desc, "--tokens-file", write(f"{d}/tj.txt", "1 2 x"), "--public"],
        "no scope": ["--descriptor", desc, "--tokens", toks],
        "both scopes": ["--descriptor", desc, "--tokens", toks, "--public", "--scope-key-file", desc],
        "short scope key": ["--descriptor", desc, "--tokens", toks, "--scope-key-file",
                            write(f"{d}/short.key", "abcd\n")],
        "missing scope key": ["--descriptor", desc, "--tokens", toks, "--scope-key-file", f"{d}/nokey"],
        "descriptor is a directory": ["--descriptor", d, "--tokens", toks, "--public"],
    }
    for name, args in cases.items():
        try:
            run("keys", *args, ok=False)
        except Failure as e:
            raise Failure(f"{name}: {e}")


def test_keygen(d):
    p = run("keygen", "scope", "--out", f"{d}/s.key")
    check(stat.S_IMODE(os.stat(f"{d}/s.key").st_mode) == 0o600, "scope key mode is not 0600")
    key = read(f"{d}/s.key").decode().strip()
    check(len(key) == 64 and all(c in "0123456789abcdef" for c in key), "scope key is not 64 hex")
    check(key not in p.stdout, "keygen printed the key")
    run("keygen", "scope", "--out", f"{d}/s.key", ok=False)  # refuses to overwrite
    run("keygen", "scope", "--out", f"{d}/s.key", "--force")
    check(read(f"{d}/s.key").decode().strip() != key, "--force did not make a new key")
    run("keygen", "scope", "--out", f"{d}/no/such/dir/k", ok=False)
    for alg in ("es256", "eddsa"):
        run("keygen", "producer", "--alg", alg, "--out-key", f"{d}/{alg}.pem", "--out-pub",
            f"{d}/{alg}.pub.pem")
        check(stat.S_IMODE(os.stat(f"{d}/{alg}.pem").st_mode) == 0o600, "private key mode")
        pub = read(f"{d}/{alg}.pub.pem").decode()
        check(pub.startswith("kid: ") and "BEGIN PUBLIC KEY" in pub, "public key file")
        check("PRIVATE" not in pub, "private key material in the public file")
    run("keygen", "producer", "--alg", "rsa", "--out-key", f"{d}/r.pem", "--out-pub", f"{d}/r.pub",
        ok=False)
    run("keygen", "producer", "--alg", "eddsa", "--out-key", f"{d}/eddsa.pem", "--out-pub",
        f"{d}/x.pub", ok=False)  # exists
    run("keygen", ok=False)


def roundtrip(d, codec, token_dtype="I64"):
    src = make_kv(f"{d}/c.safetensors", "--tokens", 40, "--token-dtype", token_dtype)
    p = run("pack", src, "--out", f"{d}/packed", "--codec", codec, "--public")
    check("8 of 40 tokens NOT packed" in p.stdout, "tail not reported:\n" + p.stdout)
    idx = json.loads(read(f"{d}/packed/index.json"))
    check(idx["tail_tokens"] == 8 and len(idx["blocks"]) == 2 and idx["codec"] == codec, "index")
    for b in idx["blocks"]:
        check(os.path.exists(f"{d}/packed/{b['block_key']}.kvsp"), "container file missing")
    p = run("unpack", f"{d}/packed", "--out", f"{d}/back.safetensors")
    check("re-derived from token_ids: match" in p.stdout, "keys not re-derived")
    a, ameta = load_safetensors(src)
    b, bmeta = load_safetensors(f"{d}/back.safetensors")
    check(set(a) == set(b), f"tensor names differ: {sorted(set(a) ^ set(b))}")
    row = 2 * 8 * 2  # heads x head_dim x bf16
    for name in a:
        if name == "token_ids":
            check(token_list(b[name]) == token_list(a[name])[:32], "token ids differ")
            check(b[name][0] == "I64", "token_ids not written as I64")
            continue
        check(b[name][1] == [32, 2, 8], f"{name} shape {b[name][1]}")
        check(b[name][2] == a[name][2][:32 * row], f"{name} differs after the round trip")
    check(json.loads(bmeta["kvsp.descriptor"]) == json.loads(ameta["kvsp.descriptor"]), "descriptor")


def test_pack_unpack_raw_bit_exact(d):
    roundtrip(d, "raw")


def test_pack_unpack_zstd_bit_exact(d):
    roundtrip(d, "zstd")


def test_pack_accepts_i32_and_u32_token_ids(d):
    for dt in ("I32", "U32"):
        sub = f"{d}/{dt}"
        os.mkdir(sub)
        roundtrip(sub, "raw", dt)


def test_pack_lossy_codecs_unpack(d):
    src = make_kv(f"{d}/c.safetensors", "--tokens", 32)
    for codec in ("fp8-e4m3", "int8"):
        run("pack", src, "--out", f"{d}/{codec}", "--codec", codec, "--public")
        run("unpack", f"{d}/{codec}", "--out", f"{d}/{codec}.safetensors")
        run("inspect", f"{d}/{codec}.safetensors")


def test_private_scope_roundtrip(d):
    src = make_kv(f"{d}/c.safetensors", "--tokens", 48)
    run("keygen", "scope", "--out", f"{d}/s.key")
    run("keygen", "scope", "--out", f"{d}/other.key")
    p = run("pack", src, "--out", f"{d}/packed", "--scope-key-file", f"{d}/s.key")
    check("all 48 tokens packed" in p.stdout, "no-tail case not reported")
    idx = read(f"{d}/packed/index.json").decode()
    check(read(f"{d}/s.key").decode().strip() not in idx, "scope key in the index")
    p = run("unpack", f"{d}/packed", "--out", f"{d}/a.safetensors")
    check("not re-derived" in p.stdout, "private scope claimed re-derived without key")
    p = run("unpack", f"{d}/packed", "--out", f"{d}/b.safetensors", "--scope-key-file", f"{d}/s.key")
    check("match" in p.stdout, "keys not re-derived with the key")
    run("unpack", f"{d}/packed", "--out", f"{d}/wrong.safetensors", "--scope-key-file",
        f"{d}/other.key", ok=False)
    check(not os.path.exists(f"{d}/wrong.safetensors"), "output written despite the wrong key")


def test_unpack_refuses_damaged_input(d):
    src = make_kv(f"{d}/c.safetensors", "--tokens", 40)
    run("pack", src, "--out", f"{d}/p", "--public")
    idx = json.loads(read(f"{d}/p/index.json"))
    victim = f"{d}/p/{idx['blocks'][1]['block_key']}.kvsp"
    good = read(victim)
    for off in (0, 5, 20, 50, 80, 100, len(good) // 2, len(good) - 1):
        flip(victim, off)
        p = run("unpack", f"{d}/p", "--out", f"{d}/o.safetensors", ok=False)
        check(os.path.basename(victim) in p.stderr, f"flip at {off}: file not named:\n{p.stderr}")
        check(not os.path.exists(f"{d}/o.safetensors"), "output written from a damaged container")
        write(victim, good)
    write(victim, good[:-1])
    run("unpack", f"{d}/p", "--out", f"{d}/o.safetensors", ok=False)
    os.remove(victim)
    run("unpack", f"{d}/p", "--out", f"{d}/o.safetensors", ok=False)
    write(victim, good)
    # A tampered index: swapped token ids no longer give the listed keys.
    bad = dict(idx)
    bad["token_ids"] = list(reversed(idx["token_ids"]))
    write(f"{d}/p/index.json", json.dumps(bad))
    p = run("unpack", f"{d}/p", "--out", f"{d}/o.safetensors", ok=False)
    check("Block Key computed from token_ids" in p.stderr, p.stderr)
    write(f"{d}/p/index.json", "{not json")
    run("unpack", f"{d}/p", "--out", f"{d}/o.safetensors", ok=False)
    run("unpack", f"{d}/nope", "--out", f"{d}/o.safetensors", ok=False)
    check(not os.path.exists(f"{d}/o.safetensors"), "output written")


def test_pack_bad_input(d):
    run("pack", f"{d}/nope.safetensors", "--out", f"{d}/o", "--public", ok=False)
    write(f"{d}/junk.safetensors", os.urandom(64))
    run("pack", f"{d}/junk.safetensors", "--out", f"{d}/o", "--public", ok=False)
    write(f"{d}/empty.safetensors", b"")
    run("pack", f"{d}/empty.safetensors", "--out", f"{d}/o", "--public", ok=False)
    for variant in ("no-descriptor", "wrong-dtype", "wrong-shape", "extra-tensor", "negative-token",
                    "missing-v"):
        src = make_kv(f"{d}/{variant}.safetensors", "--variant", variant)
        p = run("pack", src, "--out", f"{d}/o-{variant}", "--public", ok=False)
        check("hint:" in p.stderr, f"{variant}: no hint")
    few = make_kv(f"{d}/few.safetensors", "--tokens", 10)
    p = run("pack", few, "--out", f"{d}/o-few", "--public", ok=False)
    check("nothing to pack" in p.stderr, p.stderr)
    good = make_kv(f"{d}/good.safetensors")
    run("pack", good, "--out", f"{d}/o-good", "--codec", "lz4", "--public", ok=False)
    run("pack", good, "--out", f"{d}/o-good", "--codec", "int4", "--public", ok=False)
    run("pack", good, "--out", f"{d}/o-good", ok=False)  # no scope
    run("pack", good, "--out", f"{d}/o-good", "--public")
    run("pack", good, "--out", f"{d}/o-good", "--public", ok=False)  # index exists
    run("pack", good, "--out", f"{d}/o-x", "--public", "--sign-key", f"{d}/nokey.pem", ok=False)


def object_payload(layer=3, block=0, component=1, codec=1, data=b"\x11" * 64, token_start=0):
    h = struct.pack(">IBBHIIQIHHI", 0x4B564F31, 1, component, 0, layer, block, token_start, 16,
                    codec, 0, len(data))
    return h + hashlib.sha256(data).digest() + data


def test_inspect_good_files(d):
    src = make_kv(f"{d}/c.safetensors", "--tokens", 40)
    p = run("inspect", src)
    check("2 full blocks of 16 + 8 tail tokens" in p.stdout, p.stdout)
    run("keygen", "producer", "--alg", "es256", "--out-key", f"{d}/k.pem", "--out-pub", f"{d}/k.pub")
    run("pack", src, "--out", f"{d}/p", "--public", "--codec", "zstd", "--sign-key", f"{d}/k.pem")
    idx = json.loads(read(f"{d}/p/index.json"))
    cont = f"{d}/p/{idx['blocks'][0]['block_key']}.kvsp"
    desc = write(f"{d}/desc.json", json.dumps(TINY_DESCRIPTOR))
    p = run("inspect", cont)
    check("layer digests verified" in p.stdout, p.stdout)
    p = run("inspect", cont, "--descriptor", desc, "--block-key", idx["blocks"][0]["block_key"],
            "--compat-id", idx["compat_id"])
    check("decoded as bf16" in p.stdout, p.stdout)
    run("inspect", f"{d}/p/manifest.json", "--compat-id", idx["compat_id"])
    p = run("inspect", f"{d}/p/manifest.cose", "--pub", f"{d}/k.pub")
    check("VERIFIED" in p.stdout, p.stdout)
    p = run("inspect", f"{d}/p/manifest.cose")
    check("NOT verified" in p.stdout, p.stdout)
    run("inspect", f"{d}/p/index.json")
    run("inspect", desc)
    obj = write(f"{d}/obj.bin", object_payload())
    p = run("inspect", obj, "--group", 3, "--object", 0, "--track", "k.raw.s0")
    check("SHA-256 verified" in p.stdout, p.stdout)


def test_inspect_says_what_is_wrong(d):
    src = make_kv(f"{d}/c.safetensors", "--tokens", 40)
    run("keygen", "producer", "--alg", "eddsa", "--out-key", f"{d}/k.pem", "--out-pub", f"{d}/k.pub")
    run("keygen", "producer", "--alg", "eddsa", "--out-key", f"{d}/o.pem", "--out-pub", f"{d}/o.pub")
    run("pack", src, "--out", f"{d}/p", "--public", "--sign-key", f"{d}/k.pem")
    idx = json.loads(read(f"{d}/p/index.json"))
    cont = f"{d}/p/{idx['blocks'][0]['block_key']}.kvsp"
    good = read(cont)

    def bad(path, *args, expect):
        p = run("inspect", path, *args, ok=False)
        check(expect in p.stderr, f"inspect {os.path.basename(path)} {args}: expected '{expect}' in\n"
                                  f"{p.stderr}")

    # Containers: every byte of the header and layer table, a payload byte, truncation.
    header_and_table = 92 + 2 * 52
    for off in range(header_and_table):
        flip(cont, off, out=f"{d}/x.kvsp")
        p = run("inspect", f"{d}/x.kvsp", "--descriptor", write(f"{d}/desc.json", json.dumps(TINY_DESCRIPTOR)),
                "--block-key", idx["blocks"][0]["block_key"], "--block-index", 1,
                "--type", "container", ok=False)
    flip(cont, len(good) - 3, out=f"{d}/x.kvsp")
    bad(f"{d}/x.kvsp", expect="digest_mismatch")
    write(f"{d}/x.kvsp", good[:200])
    bad(f"{d}/x.kvsp", expect="truncated")
    write(f"{d}/x.kvsp", good + b"\0")
    bad(f"{d}/x.kvsp", expect="INVALID KVSP container")
    bad(cont, "--block-key", idx["blocks"][1]["block_key"], expect="block_key_mismatch")
    bad(cont, "--compat-id", "00" * 32, expect="compat_id_mismatch")

    # Object payloads.
    o = object_payload()
    write(f"{d}/o.bin", o[:-1] + bytes([o[-1] ^ 1]))
    bad(f"{d}/o.bin", expect="digest_mismatch")
    write(f"{d}/o.bin", o[:60])
    bad(f"{d}/o.bin", "--type", "object", expect="truncated")
    write(f"{d}/o.bin", o)
    bad(f"{d}/o.bin", "--group", 4, "--object", 0, expect="layer_mismatch")
    bad(f"{d}/o.bin", "--group", 3, "--object", 1, expect="block_index_mismatch")
    bad(f"{d}/o.bin", "--group", 3, "--object", 0, "--track", "v.raw.s0", expect="component_mismatch")
    write(f"{d}/o.bin", object_payload(codec=0x0900))
    bad(f"{d}/o.bin", expect="INVALID KVCS object payload")

    # Manifests.
    m = json.loads(read(f"{d}/p/manifest.json"))
    m2 = dict(m, layers=3)
    write(f"{d}/m.json", json.dumps(m2))
    bad(f"{d}/m.json", expect="INVALID KVCS manifest")
    write(f"{d}/m.json", json.dumps(m))
    bad(f"{d}/m.json", "--compat-id", SPEC["compat_id"], expect="compat_id")
    write(f"{d}/m.json", read(f"{d}/p/manifest.json")[:-5])
    bad(f"{d}/m.json", expect="INVALID KVCS manifest")

    # Signed manifests: a tampered payload byte, a foreign key, a broken structure.
    cose = read(f"{d}/p/manifest.cose")
    pos = cose.find(b'"deterministic":false')
    check(pos > 0, "manifest text not found in manifest.cose")
    tampered = cose.replace(b'"deterministic":false', b'"deterministic":fals3')
    write(f"{d}/t.cose", tampered)
    bad(f"{d}/t.cose", "--pub", f"{d}/k.pub", expect="bad_signature")
    bad(f"{d}/p/manifest.cose", "--pub", f"{d}/o.pub", expect="unknown_kid")
    write(f"{d}/t.cose", cose[:10])
    bad(f"{d}/t.cose", expect="INVALID COSE_Sign1")

    # safetensors.
    flip(src, 0, mask=0x40, out=f"{d}/s.safetensors")  # header length off by 64
    bad(f"{d}/s.safetensors", expect="INVALID safetensors")
    write(f"{d}/s.safetensors", read(src)[:-1])
    bad(f"{d}/s.safetensors", expect="bad_offsets")
    write(f"{d}/s.safetensors", read(src) + b"\0")
    bad(f"{d}/s.safetensors", expect="gap")
    make_kv(f"{d}/w.safetensors", "--variant", "wrong-shape")
    bad(f"{d}/w.safetensors", expect="wrong_shape")
    make_kv(f"{d}/w.safetensors", "--variant", "extra-tensor")
    bad(f"{d}/w.safetensors", expect="unexpected_tensor")

    # Unknown, empty, missing.
    write(f"{d}/u.bin", b"hello world, not a format")
    bad(f"{d}/u.bin", expect="not a format kvcs knows")
    write(f"{d}/e.bin", b"")
    bad(f"{d}/e.bin", expect="not a format kvcs knows")
    bad(f"{d}/missing.bin", expect="cannot open")
    bad(cont, "--type", "bogus", expect="unknown --type")
    bad(cont, "--compat-id", "xyz", expect="--compat-id")


def test_demo_small(d):
    p = run("demo", "--tokens", 64, "--no-store", "--save", f"{d}/s.safetensors", "--out", f"{d}/p")
    for s in ("[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]", "Summary", "bit-exact"):
        check(s in p.stdout, f"demo output lacks {s}:\n{p.stdout}")
    # The MOQT part: 4 blocks through the relay (A joins live, B fetches the finished
    # publication), both consumers verify everything.
    for s in ("[moqt]", "per-layer timeline", "consumer A (joins mid-production): joined after 16",
              "consumer B (joins after the end): joined after 32", "128/128 (block, layer) verified",
              "3 upstream subscriptions for 2 consumers"):
        check(s in p.stdout, f"demo output lacks {s}:\n{p.stdout}")
    # By the manifest (auto): A joined a segment still produced live, B FETCHed the complete one
    # (a FETCH short of the end, the relay still filling, is continued live: both counts).
    lines = {c: next((l for l in p.stdout.splitlines() if f"consumer {c} (joins" in l), "")
             for c in "AB"}
    check(lines["A"].endswith("live (SUBSCRIBE)"), p.stdout)
    check("by FETCH" in lines["B"], p.stdout)
    check(p.stdout.count("0 duplicates, bit-exact") == 2 and "MISMATCHES" not in p.stdout, p.stdout)
    # The corrupting relay: detected, the pair recovered from the store over KVSP HTTP.
    for s in ("consumer C (through a corrupting relay): blocks 0..3", "detected: k.raw.s0 10:2",
              "block 2: http holder http://127.0.0.1:", "moqt fetch x31",
              "128/128 (block, layer) verified (4 from the store over KVSP HTTP), 0 recompute, "
              "bit-exact"):
        check(s in p.stdout, f"demo output lacks {s}:\n{p.stdout}")
    run("inspect", f"{d}/s.safetensors")
    run("unpack", f"{d}/p", "--out", f"{d}/b.safetensors")
    p = run("demo", "--tokens", 40, "--codec", "int8", "--no-store", "--no-moqt")
    check("RMS error" in p.stdout and "8 tail tokens" in p.stdout, p.stdout)
    run("demo", "--codec", "bogus", "--no-store", ok=False)
    run("demo", "--tokens", 0, "--no-store", ok=False)
    run("demo", "--tokens", 10**9, "--no-store", ok=False)


def test_demo_encrypt_relay_holds_only_ciphertext(d):
    p = run("demo", "--tokens", 16, "--no-store", "--no-moqt", "--encrypt")
    for s in ("secure relay (MOQT secure objects, aes-128-gcm",
              "1025 of 1025 objects decrypted, every block and layer verified",
              "found (ciphertext only)", "0 blocks x layers delivered, 1025 objects discarded"):
        check(s in p.stdout, f"demo --encrypt output lacks {s}:\n{p.stdout}")
    check(", 0 found" in p.stdout, p.stdout)



# ------------------------------------------------------------------------------------------------
# kvcs moq-pub / moq-sub over 127.0.0.1 (MOQT draft-22 over real QUIC).

def start_moq_pub(*args):
    """Starts moq-pub on an ephemeral port; returns (process, url, dev cert path)."""
    import select
    import time
    p = subprocess.Popen([KVCS, "moq-pub", "--listen", "127.0.0.1:0", *map(str, args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = cert = None
    seen = []
    deadline = time.monotonic() + 30
    while url is None and time.monotonic() < deadline:
        r, _, _ = select.select([p.stdout], [], [], 1)
        if not r:
            if p.poll() is not None:
                break
            continue
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith("dev certificate "):
            cert = line.split()[2]
        if line.startswith("listening on "):
            url = line.split()[2] + "/"
    if url is None:
        p.kill()
        raise Failure("moq-pub did not start:\n" + "".join(seen) + p.stderr.read())
    return p, url, cert


def finish_moq_pub(p):
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Failure("moq-pub did not exit after its sessions")
    check(p.returncode == 0, f"moq-pub rc {p.returncode}\n{out}\n{err}")
    return out


def test_moq_help(d):
    for sub in ("moq-pub", "moq-sub"):
        p = run(sub, "--help")
        check("Example" in p.stdout and "moqt://" in p.stdout, f"kvcs {sub} --help: no example")


def test_moq_pub_sub_loopback(d):
    # 4 groups x 8 objects, produced at 100 objects/s: the first subscriber joins during
    # production (fill + live), the others after the end.
    p, url, cert = start_moq_pub("--groups", 4, "--objects", 8, "--size", 2000, "--rate", 100,
                                 "--sessions", 4, "-q")
    try:
        check(cert and os.path.exists(cert), f"no dev certificate printed ({cert})")
        tls = ["--ca", cert, "--server-name", "localhost"]
        s = run("moq-sub", url, *tls, "--namespace", "kvcs-demo/synthetic", "--fill", "--verify",
                "--print", "group", "--timeout", 30)
        check("complete: 32 objects in 4 groups, 64000 bytes" in s.stdout, s.stdout)
        check("track ended" in s.stdout and "payload errors 0" in s.stdout, s.stdout)
        check("DUPLICATES" not in s.stdout, s.stdout)
        check(s.stdout.count("\ngroup ") + s.stdout.startswith("group ") == 4, s.stdout)
        # FETCH groups 1..2, objects 2..5, ascending.
        f = run("moq-sub", url, "--insecure", "--fetch", "--start", 1, "--end", 2, "--objects",
                "2-5", "--verify", "--timeout", 30)
        objs = [ln.split() for ln in f.stdout.splitlines() if ln.startswith("object ")]
        got = [(int(o[2]), int(o[4])) for o in objs]
        want = [(g, o) for g in (1, 2) for o in range(2, 6)]
        check(got == want, f"fetch returned {got}")
        check("complete: 8 objects" in f.stdout and "payload errors 0" in f.stdout, f.stdout)
        # Discovery of the namespace under a prefix.
        n = run("moq-sub", url, "--insecure", "--discover", "kvcs-demo", "--timeout", 30)
        check("namespace kvcs-demo/synthetic" in n.stdout, n.stdout)
        # An unknown track: a clear refusal, non-zero exit.
        u = run("moq-sub", url, "--insecure", "--track", "nope", "--timeout", 30, ok=False)
        check("DOES_NOT_EXIST" in u.stderr and "hint:" in u.stderr, u.stderr)
    except BaseException:
        p.kill()
        raise
    finish_moq_pub(p)


def start_publish(*args):
    """Starts kvcs publish on an ephemeral port and reads its output until every layer is out
    (blocking reads: it prints them at once); returns (process, url, lines seen)."""
    p = subprocess.Popen([KVCS, "publish", "--listen", "127.0.0.1:0", *map(str, args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url, seen = None, []
    for line in p.stdout:
        seen.append(line)
        if line.startswith("listening on "):
            url = line.split()[2]
        if line.startswith("all ") and "layers published" in line:
            break
    if url is None or not seen[-1].startswith("all "):
        p.kill()
        raise Failure("kvcs publish did not start:\n" + "".join(seen) + p.stderr.read())
    return p, url, seen


def stop_publish(p):
    """Stops a start_publish process with SIGINT, as a user would; it must exit promptly."""
    p.send_signal(2)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Failure("kvcs publish did not stop on SIGINT")


def cache_and_prompt(d, tokens):
    """A KV cache of `tokens` tokens at d/c.safetensors, its prompt (d/prompt.txt), descriptor
    (d/d.json) and a scope key (d/s.key), as kvcs get takes them; returns (path, tensors, meta)."""
    src = make_kv(f"{d}/c.safetensors", "--tokens", tokens)
    a, ameta = load_safetensors(src)
    write(f"{d}/prompt.txt", " ".join(map(str, token_list(a["token_ids"]))))
    write(f"{d}/d.json", ameta["kvsp.descriptor"])
    run("keygen", "scope", "--out", f"{d}/s.key")
    return src, a, ameta


def check_first_tokens_bit_exact(a, got_path, tokens, how):
    """The cache at got_path holds exactly the first `tokens` tokens of the loaded cache `a`
    (make_kv's layout: 2 KV heads x 8 x bf16 per token), bit for bit; returns its metadata."""
    b, bmeta = load_safetensors(got_path)
    check(set(a) == set(b), f"tensor names differ: {sorted(set(a) ^ set(b))}")
    row = 2 * 8 * 2
    for name in a:
        if name == "token_ids":
            check(token_list(b[name]) == token_list(a[name])[:tokens], "token ids differ")
            continue
        check(b[name][2] == a[name][2][:tokens * row], f"{name} differs after {how}")
    return bmeta


def test_publish_get_round_trip_bit_exact(d):
    src, a, ameta = cache_and_prompt(d, 40)  # 2 blocks of 16 + a tail of 8
    run("keygen", "producer", "--out-key", f"{d}/p.key", "--out-pub", f"{d}/p.pub")
    p, url, seen = start_publish(src, "--scope-key-file", f"{d}/s.key", "--sign-key", f"{d}/p.key",
                                 "--linger", 60)
    try:
        out = "".join(seen)
        ns = [ln.split()[1] for ln in seen if ln.startswith("namespace ")]
        check(ns and ns[0].startswith("kvcs-1/") and len(ns[0].split("/")) == 5, out)
        check("layer 1 published (2 blocks)" in out and "tail of 8 tokens" in out, out)
        common = [url, "--insecure", "--tokens", f"{d}/prompt.txt", "--descriptor", f"{d}/d.json",
                  "--scope-key-file", f"{d}/s.key", "--producer-key", f"{d}/p.pub"]
        g = run("get", *common, "--completed", "--out", f"{d}/got.safetensors")
        check(f"found {ns[0]} (2 blocks" in g.stdout, g.stdout)
        check("layer 0 (segment 0, 2 blocks) verified" in g.stdout, g.stdout)
        check("block 0: moqt" in g.stdout and "block 1: moqt" in g.stdout, g.stdout)
        bmeta = check_first_tokens_bit_exact(a, f"{d}/got.safetensors", 32, "publish | get")
        check(json.loads(bmeta["kvsp.descriptor"]) == json.loads(ameta["kvsp.descriptor"]), "desc")
        # moq-sub speaks the KVCS text form: discovery under kvcs-1/<scope hex> prints the
        # namespace with hex fields, and a subscription by that text receives the k track.
        scope_prefix = "/".join(ns[0].split("/")[:2])
        n = run("moq-sub", url, "--insecure", "--discover", scope_prefix, "--timeout", 30)
        check(f"namespace {ns[0]}\n" in n.stdout, n.stdout)
        s = run("moq-sub", url, "--insecure", "--namespace", ns[0], "--track", "k.raw.s0",
                "--fill", "--print", "group", "--timeout", 30)
        check("complete: " in s.stdout and "track ended" in s.stdout, s.stdout)
        e = run("moq-sub", url, "--insecure", "--namespace", scope_prefix[:-1], ok=False)
        check("scope_id must be 64 hex characters" in e.stderr, e.stderr)
        # A live join of the first block and layer 1 only; no --out (not every layer).
        g = run("get", *common, "--live", "--layers", "1-1", "--blocks", 1)
        check("layer 1 (segment 0, 1 blocks) verified" in g.stdout, g.stdout)
        check("layer 0 " not in g.stdout, g.stdout)
        # The codec choice inside the retrieval: only the raw pair is offered, so it is chosen.
        g = run("get", *common, "--completed", "--layers", "0-1", "--choose-encoding", "--lossy")
        check("encoding: k+v raw (chosen at" in g.stdout, g.stdout)
        # Another scope finds nothing: a clear error, what to check next.
        run("keygen", "scope", "--out", f"{d}/other.key")
        e = run("get", url, "--insecure", "--tokens", f"{d}/prompt.txt", "--descriptor",
                f"{d}/d.json", "--scope-key-file", f"{d}/other.key", ok=False)
        check("no publication" in e.stderr and "hint:" in e.stderr, e.stderr)
    finally:
        stop_publish(p)
    for sub in ("publish", "get"):
        h = run(sub, "--help")
        check("Example" in h.stdout, f"kvcs {sub} --help: no example")


def test_publish_from_packed_containers_bit_exact(d):
    """kvcs pack -> kvcs publish DIR (KVSP containers, verified before publishing) -> kvcs get:
    bit-exact; a damaged container or another scope's key is refused before anything is served."""
    src, a, _ = cache_and_prompt(d, 40)  # 2 blocks of 16 + a tail of 8
    run("keygen", "scope", "--out", f"{d}/other.key")
    run("pack", src, "--out", f"{d}/packed", "--codec", "zstd", "--scope-key-file", f"{d}/s.key")
    e = run("publish", f"{d}/packed", "--scope-key-file", f"{d}/other.key", ok=False)
    check("scope key" in e.stderr and "hint:" in e.stderr, e.stderr)
    e = run("publish", f"{d}/packed", "--public", ok=False)
    check("hint:" in e.stderr, e.stderr)
    e = run("publish", f"{d}/packed", "--scope-key-file", f"{d}/s.key", "--offer", "kv.zstd",
            ok=False)
    check("--offer kv.zstd" in e.stderr and "hint:" in e.stderr, e.stderr)
    # Offered twice: the raw pair and a joint int8 track; a consumer picks by link and compute.
    p, url, seen = start_publish(f"{d}/packed", "--scope-key-file", f"{d}/s.key", "--offer",
                                 "kv.int8", "--linger", 60)
    try:
        out = "".join(seen)
        check("read 2 verified containers" in out and "layer 1 published (2 blocks)" in out, out)
        check("offered as k+v raw, kv.int8" in out, out)
        common = [url, "--insecure", "--tokens", f"{d}/prompt.txt", "--descriptor", f"{d}/d.json",
                  "--scope-key-file", f"{d}/s.key", "--completed"]
        g = run("get", *common, "--choose-encoding", "--lossy", "--ns-per-token-layer", 1)
        check("encoding: kv.int8 (chosen at" in g.stdout, g.stdout)
        g = run("get", *common, "--out", f"{d}/got.safetensors")
        check("block 0: moqt" in g.stdout and "block 1: moqt" in g.stdout, g.stdout)
        check_first_tokens_bit_exact(a, f"{d}/got.safetensors", 32, "pack | publish | get")
    finally:
        stop_publish(p)
    # One flipped byte in a container: refused, naming the block; nothing is served.
    idx = json.loads(read(f"{d}/packed/index.json"))
    victim = f"{d}/packed/{idx['blocks'][1]['block_key']}.kvsp"
    data = bytearray(open(victim, "rb").read())
    data[-1] ^= 1
    open(victim, "wb").write(bytes(data))
    e = run("publish", f"{d}/packed", "--scope-key-file", f"{d}/s.key", "--listen",
            "127.0.0.1:0", ok=False)
    check("block 2" in e.stderr and "listening" not in e.stdout, e.stdout + e.stderr)


def test_publish_get_encrypted(d):
    """kvcs publish --encrypt=aes-256-gcm | kvcs get: detected, decrypted, bit-exact."""
    src, a, _ = cache_and_prompt(d, 32)
    e = run("publish", src, "--public", "--encrypt", ok=False)
    check("--encrypt with --public" in e.stderr and "hint:" in e.stderr, e.stderr)
    e = run("publish", src, "--scope-key-file", f"{d}/s.key", "--encrypt=rot13", ok=False)
    check("not a cipher suite" in e.stderr, e.stderr)
    p, url, seen = start_publish(src, "--scope-key-file", f"{d}/s.key", "--encrypt=aes-256-gcm",
                                 "--linger", 60)
    try:
        out = "".join(seen)
        check("every object encrypted (aes-256-gcm, Key ID 0)" in out, out)
        g = run("get", url, "--insecure", "--tokens", f"{d}/prompt.txt", "--descriptor",
                f"{d}/d.json", "--scope-key-file", f"{d}/s.key", "--completed", "--out",
                f"{d}/got.safetensors")
        check("block 0: moqt" in g.stdout and "block 1: moqt" in g.stdout, g.stdout)
        check("secure objects: " in g.stdout and " 0 discarded" in g.stdout, g.stdout)
        b, _ = load_safetensors(f"{d}/got.safetensors")
        for name in a:
            if name != "token_ids":
                check(b[name][2] == a[name][2], f"{name} differs after publish --encrypt | get")
    finally:
        stop_publish(p)


def test_moq_bad_input(d):
    r = run("moq-sub", "http://127.0.0.1:4443/", "--insecure", ok=False)
    check("not a moqt:// URL" in r.stderr and "hint:" in r.stderr, r.stderr)
    r = run("moq-sub", "moqt://127.0.0.1/", "--insecure", ok=False)
    check("no port" in r.stderr, r.stderr)
    r = run("moq-sub", "moqt://127.0.0.1:4443/", "--insecure", "--end", 3, ok=False)
    check("--end needs --start" in r.stderr, r.stderr)
    r = run("moq-sub", "moqt://127.0.0.1:4443/", "--insecure", "--objects", "9-2", ok=False)
    check("end below start" in r.stderr, r.stderr)
    # Nothing listens on UDP port 9 of 127.0.0.1: a clear connection error, quickly.
    r = run("moq-sub", "moqt://127.0.0.1:9/", "--insecure", "--connect-timeout", 1, "--timeout",
            20, ok=False)
    check("cannot connect" in r.stderr and "hint:" in r.stderr, r.stderr)
    r = run("moq-pub", "--listen", "nonsense", ok=False)
    check("HOST:PORT" in r.stderr, r.stderr)
    r = run("moq-pub", "--listen", "127.0.0.1:0", "--size", 1 << 30, ok=False)
    check("above the limit" in r.stderr, r.stderr)
    r = run("moq-pub", "--listen", "127.0.0.1:0", "--namespace", "a//b", ok=False)
    check("empty field" in r.stderr, r.stderr)
    r = run("moq-pub", "--listen", "127.0.0.1:0", "--cert", f"{d}/missing.pem", "--key",
            f"{d}/missing.key", ok=False)
    check("cannot serve" in r.stderr, r.stderr)


def test_store_s3_backend_tls_flags(d):
    # --s3-ca-file / --s3-insecure only mean something for an https backend: refused on http.
    common = ["store", "--root", f"{d}/root", "--listen", "127.0.0.1:0", "--backend", "s3",
              "--s3-access-key", "AK", "--s3-secret-key", "SK"]
    r = run(*common, "--s3-endpoint", "http://127.0.0.1:9", "--s3-insecure", ok=False)
    check("https endpoints only" in r.stderr, r.stderr)
    # An https backend whose CA file cannot be read fails before serving, saying which file.
    r = run(*common, "--s3-endpoint", "https://127.0.0.1:9", "--s3-ca-file", f"{d}/missing.pem",
            ok=False)
    check("missing.pem" in r.stderr, r.stderr)
    p = run("store", "--help")
    check("--s3-ca-file" in p.stdout and "--s3-insecure" in p.stdout, p.stdout)



def test_store_bandwidth_flags(d):
    # How the cap is shared and the read window are flags; bad values fail before serving.
    p = run("store", "--help")
    check("--bandwidth-policy" in p.stdout and "--read-window-bytes" in p.stdout, p.stdout)
    r = run("store", "--root", f"{d}/root", "--bandwidth-policy", "fair", ok=False)
    check("--bandwidth-policy" in r.stderr, r.stderr)
    r = run("store", "--root", f"{d}/root", "--read-window-bytes", "1024", ok=False)
    check("--read-window-bytes" in r.stderr, r.stderr)

def main():
    wanted = sys.argv[2:]
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    tests = [(n, f) for n, f in tests if not wanted or any(w in n for w in wanted)]
    failed = 0
    for name, fn in tests:
        d = tempfile.mkdtemp(prefix="kvcs_cli_")
        try:
            fn(d)
            print(f"PASS {name}")
        except Exception as e:  # noqa: BLE001 - report every failure kind
            failed += 1
            print(f"FAIL {name}: {e}")
            if not isinstance(e, Failure):
                traceback.print_exc()
        finally:
            shutil.rmtree(d, ignore_errors=True)
    print(f"{len(tests) - failed}/{len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
