#!/usr/bin/env python3
"""Writes a small KV cache in the safetensors KV convention (docs/formats/safetensors-kv.md)
using only the Python standard library: an independent writer to test kvcs against.

usage: make_kv_safetensors.py OUT [--tokens T] [--layers L] [--heads H] [--head-dim D]
                              [--block B] [--token-dtype I64|I32|U32] [--variant NAME]
variants (deliberately broken files): no-descriptor, wrong-dtype, wrong-shape, extra-tensor,
negative-token, missing-v
"""
import argparse
import json
import struct

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--tokens", type=int, default=40)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--heads", type=int, default=2)
p.add_argument("--head-dim", type=int, default=8)
p.add_argument("--block", type=int, default=16)
p.add_argument("--token-dtype", default="I64")
p.add_argument("--first-token", type=int, default=1000)
p.add_argument("--variant", default="")
a = p.parse_args()

descriptor = {"kvsp": 1, "model": "test/tiny-llama", "model_rev": "r1", "tokenizer_rev": "t1",
              "attn": "gqa", "layers": a.layers, "kv_heads": a.heads, "head_dim": a.head_dim,
              "kv_dtype": "bf16", "block_tokens": a.block, "layout": "thd"}

tensors = []  # (name, dtype, shape, bytes)
n = a.tokens * a.heads * a.head_dim
for l in range(a.layers):
    for kv, mul in (("k", 7), ("v", 11)):
        # bf16 values: a deterministic pattern of small finite numbers (sign, exponent 120..127).
        vals = bytearray()
        for i in range(n):
            x = (i * mul + l * 131) & 0x7F
            vals += struct.pack("<H", (0x8000 if i & 1 else 0) | ((120 + (x & 7)) << 7) | (x >> 3))
        shape = [a.tokens, a.heads, a.head_dim]
        dtype = "BF16"
        if a.variant == "wrong-dtype" and l == 0 and kv == "k":
            dtype = "F16"
        if a.variant == "wrong-shape" and l == 0 and kv == "k":
            shape = [a.tokens, a.head_dim, a.heads]
        if a.variant == "missing-v" and kv == "v" and l == a.layers - 1:
            continue
        tensors.append((f"layers.{l}.{kv}", dtype, shape, bytes(vals)))
ids = list(range(a.first_token, a.first_token + a.tokens))
if a.variant == "negative-token":
    ids[3] = -5
fmt = {"I64": "<q", "I32": "<i", "U32": "<I"}[a.token_dtype]
tensors.append(("token_ids", a.token_dtype, [a.tokens], b"".join(struct.pack(fmt, t) for t in ids)))
if a.variant == "extra-tensor":
    tensors.append(("lm_head.weight", "U8", [4], b"\x00\x01\x02\x03"))

header = {}
off = 0
for name, dtype, shape, data in tensors:
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
    off += len(data)
if a.variant != "no-descriptor":
    header["__metadata__"] = {"kvsp.descriptor": json.dumps(descriptor), "format": "pt"}
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(a.out, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for _, _, _, data in tensors:
        f.write(data)
