"""A small Llama-architecture decoder in PyTorch over a paged KV cache, driven the way vLLM drives
a model with a KV connector. RMSNorm, rotary position embeddings, grouped-query attention, SwiGLU;
weights drawn from a fixed seed (no download). Small enough that a prefill of a few hundred
tokens takes well under a second on 2 CPU cores.

The KV cache is vLLM's layout: per layer one tensor [2][num_blocks][block_tokens][kv_heads]
[head_dim]; a request's block table maps its token position p to engine block
table[p // block_tokens], slot p % block_tokens. forward() computes the KV and hidden states of
tokens [start, len) only, attending to the cached KV of [0, start), and calls the connector
exactly where vLLM's attention layers do: wait_for_layer_load(name) before a layer's attention,
save_kv_layer(name, kv_cache, None) after it.
"""
import math
import time
from dataclasses import dataclass

import torch


@dataclass
class TinyLlamaConfig:
    vocab: int = 512
    hidden: int = 128
    layers: int = 4
    heads: int = 8
    kv_heads: int = 2
    head_dim: int = 16
    intermediate: int = 256
    rope_theta: float = 10000.0
    rms_eps: float = 1e-5
    seed: int = 1234
    dtype: torch.dtype = torch.float32


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope(x, positions, theta):
    """Rotary embedding (the Llama half-split form) of x [T][heads][dim] at positions [T]."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    ang = positions.to(torch.float32)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :].to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :].to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class TinyLlama:
    def __init__(self, cfg=TinyLlamaConfig()):
        self.cfg = cfg
        g = torch.Generator().manual_seed(cfg.seed)

        def w(*shape, scale=None):
            scale = scale if scale is not None else 1.0 / math.sqrt(shape[-1])
            return (torch.randn(*shape, generator=g) * scale).to(cfg.dtype)

        h, q, kv = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
        self.embed = w(cfg.vocab, h, scale=1.0)
        self.blocks = []
        for _ in range(cfg.layers):
            self.blocks.append(dict(
                attn_norm=(1.0 + 0.1 * torch.randn(h, generator=g)).to(cfg.dtype),
                wq=w(q, h), wk=w(kv, h), wv=w(kv, h), wo=w(h, q),
                mlp_norm=(1.0 + 0.1 * torch.randn(h, generator=g)).to(cfg.dtype),
                w_gate=w(cfg.intermediate, h), w_up=w(cfg.intermediate, h),
                w_down=w(h, cfg.intermediate)))
        self.final_norm = torch.ones(h, dtype=cfg.dtype)
        self.lm_head = w(cfg.vocab, h)

    def layer_names(self):
        return ["model.layers.%d.self_attn" % i for i in range(self.cfg.layers)]

    def descriptor(self, block_tokens):
        c = self.cfg
        dtype = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}[c.dtype]
        return dict(model="kvcs-test/tiny-llama", model_rev="seed-%d" % c.seed,
                    tokenizer_rev="bytes", attn="gqa", layers=c.layers, kv_heads=c.kv_heads,
                    head_dim=c.head_dim, kv_dtype=dtype, block_tokens=block_tokens)

    def new_kv_caches(self, num_blocks, block_tokens):
        c = self.cfg
        return {name: torch.zeros(2, num_blocks, block_tokens, c.kv_heads, c.head_dim,
                                  dtype=c.dtype) for name in self.layer_names()}

    @torch.no_grad()
    def forward(self, tokens, start, block_table, kv_caches, connector=None, timeline=None):
        """Next-token logits after tokens, computing positions [start, len(tokens)) only.
        timeline (a list), when given, gets (layer, wait_start, wait_end, compute_end) per layer
        in time.perf_counter() seconds."""
        c = self.cfg
        n = len(tokens)
        bt = next(iter(kv_caches.values())).shape[2]
        pos = torch.arange(start, n)
        table = torch.tensor(block_table, dtype=torch.long)
        blk, slot = table[pos // bt], pos % bt
        all_pos = torch.arange(n)
        all_blk, all_slot = table[all_pos // bt], all_pos % bt
        x = self.embed[torch.tensor(tokens[start:], dtype=torch.long)]
        group = c.heads // c.kv_heads
        mask = all_pos[None, :] <= pos[:, None]  # [new][all]: causal
        for i, (name, p) in enumerate(zip(self.layer_names(), self.blocks)):
            t0 = time.perf_counter()
            if connector is not None:
                connector.wait_for_layer_load(name)
            t1 = time.perf_counter()
            cache = kv_caches[name]
            hn = rms_norm(x, p["attn_norm"], c.rms_eps)
            q = (hn @ p["wq"].T).view(-1, c.heads, c.head_dim)
            k = (hn @ p["wk"].T).view(-1, c.kv_heads, c.head_dim)
            v = (hn @ p["wv"].T).view(-1, c.kv_heads, c.head_dim)
            q, k = rope(q, pos, c.rope_theta), rope(k, pos, c.rope_theta)
            cache[0, blk, slot] = k
            cache[1, blk, slot] = v
            ks = cache[0, all_blk, all_slot].repeat_interleave(group, dim=1)  # [all][heads][d]
            vs = cache[1, all_blk, all_slot].repeat_interleave(group, dim=1)
            scores = torch.einsum("qhd,khd->hqk", q, ks) / math.sqrt(c.head_dim)
            scores = scores.masked_fill(~mask[None], float("-inf"))
            attn = torch.einsum("hqk,khd->qhd", scores.softmax(-1), vs).reshape(len(pos), -1)
            if connector is not None:
                connector.save_kv_layer(name, cache, None)
            x = x + attn @ p["wo"].T
            hn = rms_norm(x, p["mlp_norm"], c.rms_eps)
            gate = torch.nn.functional.silu(hn @ p["w_gate"].T)
            x = x + (gate * (hn @ p["w_up"].T)) @ p["w_down"].T
            if timeline is not None:
                timeline.append((i, t0, t1, time.perf_counter()))
        x = rms_norm(x[-1:], self.final_norm, c.rms_eps)
        return (x @ self.lm_head.T)[0]
