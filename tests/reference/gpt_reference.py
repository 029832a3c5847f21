"""GPT-2 and Llama in plain PyTorch (eager), written from the architectures' papers, as the
reference bench-train's C++ models are checked against (check_training_step.py) and measured
against (bench/train_vs_pytorch.py). Parameter names match src/model/model.cc.

GPT-2: learned positions, pre-LayerNorm, GELU(tanh), biases, tied head.
Llama: RMSNorm, rotary embeddings (half-split), SwiGLU, grouped-query attention, untied head.

Attention is written out (scores, mask, softmax) for the numerics tests; sdpa=True uses
F.scaled_dot_product_attention instead, as PyTorch 2.x users write it for speed (bench/).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_attention(q, k, v, sdpa=False):
    # q (B, H, T, D); k, v (B, Hkv, T, D)
    if sdpa:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=q.size(1) != k.size(1))
    groups = q.size(1) // k.size(1)
    if groups > 1:
        k = k.repeat_interleave(groups, 1)
        v = v.repeat_interleave(groups, 1)
    t = q.size(2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(3)))
    future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    att = att.masked_fill(future, float("-inf")).softmax(-1)
    return att @ v


class Gpt2Block(nn.Module):
    def __init__(self, d, n_head, n_kv_head, ffn, sdpa=False):
        super().__init__()
        self.sdpa = sdpa
        self.n_head, self.n_kv_head, self.hd = n_head, n_kv_head, d // n_head
        kv = n_kv_head * self.hd
        self.ln_1 = nn.LayerNorm(d, eps=1e-5)
        self.c_attn = nn.Linear(d, d + 2 * kv)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=1e-5)
        self.c_fc = nn.Linear(d, ffn)
        self.mlp_proj = nn.Linear(ffn, d)

    def forward(self, x):
        b, t, c = x.shape
        kv = self.n_kv_head * self.hd
        q, k, v = self.c_attn(self.ln_1(x)).split([c, kv, kv], -1)
        q = q.view(b, t, self.n_head, self.hd).transpose(1, 2)
        k = k.view(b, t, self.n_kv_head, self.hd).transpose(1, 2)
        v = v.view(b, t, self.n_kv_head, self.hd).transpose(1, 2)
        y = causal_attention(q, k, v, self.sdpa).transpose(1, 2).contiguous().view(b, t, c)
        h = x + self.attn_proj(y)
        return h + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(h)), approximate="tanh"))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, -1)
    return torch.cat([-x2, x1], -1)


class LlamaBlock(nn.Module):
    def __init__(self, d, n_head, n_kv_head, ffn, sdpa=False):
        super().__init__()
        self.sdpa = sdpa
        self.n_head, self.n_kv_head, self.hd = n_head, n_kv_head, d // n_head
        kv = n_kv_head * self.hd
        self.attention_norm = RMSNorm(d)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, kv, bias=False)
        self.wv = nn.Linear(d, kv, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.ffn_norm = RMSNorm(d)
        self.w1 = nn.Linear(d, ffn, bias=False)
        self.w2 = nn.Linear(ffn, d, bias=False)
        self.w3 = nn.Linear(d, ffn, bias=False)

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        n = self.attention_norm(x)
        q = self.wq(n).view(b, t, self.n_head, self.hd).transpose(1, 2)
        k = self.wk(n).view(b, t, self.n_kv_head, self.hd).transpose(1, 2)
        v = self.wv(n).view(b, t, self.n_kv_head, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        y = causal_attention(q, k, v, self.sdpa).transpose(1, 2).contiguous().view(b, t, c)
        h = x + self.wo(y)
        f = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(f)) * self.w3(f))


class ReferenceLM(nn.Module):
    def __init__(self, arch, n_layer, n_embd, n_head, n_kv_head, ffn_dim, vocab_size, block_size,
                 max_seq_len, rope_theta=10000.0, sdpa=False):
        super().__init__()
        self.arch = arch
        self.wte = nn.Embedding(vocab_size, n_embd)
        if arch == "llama":
            for i in range(n_layer):
                self.add_module(f"h{i}", LlamaBlock(n_embd, n_head, n_kv_head, ffn_dim, sdpa))
            self.norm = RMSNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            hd = n_embd // n_head
            inv_freq = rope_theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
            angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float64), inv_freq)
            angles = torch.cat([angles, angles], -1)
            self.register_buffer("rope_cos", angles.cos().float(), persistent=False)
            self.register_buffer("rope_sin", angles.sin().float(), persistent=False)
        else:
            self.wpe = nn.Embedding(block_size, n_embd)
            for i in range(n_layer):
                self.add_module(f"h{i}", Gpt2Block(n_embd, n_head, n_kv_head, ffn_dim, sdpa))
            self.ln_f = nn.LayerNorm(n_embd, eps=1e-5)
        self.n_layer = n_layer

    def forward(self, tokens):
        t = tokens.size(1)
        x = self.wte(tokens)
        if self.arch == "llama":
            cos, sin = self.rope_cos[:t], self.rope_sin[:t]
            for i in range(self.n_layer):
                x = getattr(self, f"h{i}")(x, cos, sin)
            return self.lm_head(self.norm(x))
        x = x + self.wpe(torch.arange(t, device=tokens.device))
        for i in range(self.n_layer):
            x = getattr(self, f"h{i}")(x)
        return F.linear(self.ln_f(x), self.wte.weight)

    def loss(self, tokens, targets):
        logits = self.forward(tokens)
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))
