"""A small decoder-only transformer: RMSNorm, rotary positions, SwiGLU, tied or untied embeddings.

Sizes run from a few layers of width 64 (tests) to the GPT-3 paper's 125M and 350M shapes (GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

import torch
import torch.nn.functional as F
from torch import nn


# GPT-3's small and medium shapes; with a 50k vocabulary and tied embeddings about 124M and 360M parameters.
class Shape(TypedDict):
    dim: int
    n_layers: int
    n_heads: int


SIZES: dict[str, Shape] = {
    "125m": Shape(dim=768, n_layers=12, n_heads=12),
    "350m": Shape(dim=1024, n_layers=24, n_heads=16),
}


@dataclass
class ModelArgs:
    vocab_size: int
    seq_len: int
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    ffn_dim: int | None = None
    tie_embeddings: bool = True
    rope_theta: float = 10000.0

    def __post_init__(self):
        if self.ffn_dim is None:
            # SwiGLU has three matrices: 8/3 * dim keeps the parameters of a 4 * dim two-matrix MLP.
            self.ffn_dim = 64 * math.ceil(8 * self.dim / 3 / 64)


def model_args(model_config, vocab_size: int, seq_len: int) -> ModelArgs:
    """ModelArgs from the config's `train.model` section and the token shards' vocabulary and length."""
    shape = (
        SIZES[model_config.size]
        if model_config.size
        else Shape(dim=model_config.dim, n_layers=model_config.n_layers, n_heads=model_config.n_heads)
    )
    return ModelArgs(
        vocab_size=vocab_size,
        seq_len=seq_len,
        ffn_dim=model_config.ffn_dim,
        tie_embeddings=model_config.tie_embeddings,
        rope_theta=model_config.rope_theta,
        **shape,
    )


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # The mean of squares in fp32: in bf16 it loses the small differences that normalization keeps.
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotary_tables(seq_len: int, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of position * frequency, (seq_len, head_dim / 2), fp32."""
    freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), freqs)
    return angles.cos(), angles.sin()


def apply_rotary(x, cos, sin):
    """Rotate each (first half, second half) pair of x (batch, time, heads, head_dim) by its position's angle."""
    t = x.shape[1]
    cos, sin = cos[:t, None, :], sin[:t, None, :]
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).type_as(x)


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.qkv = nn.Linear(args.dim, 3 * args.dim, bias=False)
        self.out = nn.Linear(args.dim, args.dim, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).unbind(2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class SwiGLU(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        assert args.ffn_dim is not None  # ModelArgs.__post_init__ fills it
        self.gate = nn.Linear(args.dim, args.ffn_dim, bias=False)
        self.up = nn.Linear(args.dim, args.ffn_dim, bias=False)
        self.down = nn.Linear(args.ffn_dim, args.dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.attention_norm = RMSNorm(args.dim)
        self.attention = Attention(args)
        self.ffn_norm = RMSNorm(args.dim)
        self.ffn = SwiGLU(args)

    def forward(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.embed = nn.Embedding(args.vocab_size, args.dim)
        self.blocks = nn.ModuleList(Block(args) for _ in range(args.n_layers))
        self.norm = RMSNorm(args.dim)
        self.head = nn.Linear(args.dim, args.vocab_size, bias=False)
        if args.tie_embeddings:
            self.head.weight = self.embed.weight
        cos, sin = rotary_tables(args.seq_len, args.dim // args.n_heads, args.rope_theta)
        # Not in the state dict: they are recomputed from the config, and FSDP leaves buffers in fp32.
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.init_weights()

    def init_weights(self):
        """GPT-2's: N(0, 0.02), the projections into the residual stream scaled down by 1/sqrt(2 * layers)."""
        residual_std = 0.02 / math.sqrt(2 * self.args.n_layers)
        for name, param in self.named_parameters():
            if param.dim() == 1:
                nn.init.ones_(param)
            else:
                std = residual_std if name.endswith(("attention.out.weight", "ffn.down.weight")) else 0.02
                nn.init.normal_(param, mean=0.0, std=std)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (batch, time, vocab) for token ids (batch, time)."""
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, self.rope_cos, self.rope_sin)
        return self.head(self.norm(x))


def count_parameters(model: nn.Module) -> int:
    """Parameters counted once (a tied embedding is one matrix), whole even when the model is sharded."""
    return sum(p.numel() for p in model.parameters())
