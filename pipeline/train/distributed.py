"""torch.distributed plumbing: the process group, FSDP2 sharding with a precision policy, and the
global gradient norm across shards."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor

from pipeline.train.model import Transformer

COMPUTE_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def start(device_kind: str, device: torch.device | None = None) -> tuple[int, int, torch.device]:
    """Join the process group (torchrun's environment, or the group Ray Train made) and pick the device."""
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device_kind == "cuda" else "gloo")
    if device is None:
        device = (
            torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if device_kind == "cuda" else torch.device("cpu")
        )
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return dist.get_rank(), dist.get_world_size(), device


def shard_model(model: Transformer, precision: str) -> Transformer:
    """FSDP2 as torchtitan applies it: each block its own unit, then the root (embeddings, norm, head).

    The sharded parameters stay fp32: they are the master weights the optimizer updates. Each unit
    gathers them cast to the compute dtype for forward and backward, and reduce-scatters gradients in fp32.
    """
    dtype = COMPUTE_DTYPES[precision]
    policy = (
        MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
        if dtype != torch.float32
        else MixedPrecisionPolicy()
    )
    for block in model.blocks:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def total_grad_norm(parameters) -> torch.Tensor:
    """The L2 norm of all gradients together, as if they were one unsharded vector.

    Each rank holds a shard of every gradient; the norm of the local pieces is a partial sum of squares,
    and `full_tensor()` all-reduces it across ranks before the square root.
    """
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.nn.utils.get_total_norm(grads, norm_type=2.0)
    return norm.full_tensor() if isinstance(norm, DTensor) else norm


def clip_grad_norm_(parameters, max_norm: float, grad_scale: float = 1.0) -> float:
    """Unscale (fp16 loss scaling) and clip the gradients to a global norm of max_norm.

    Returns the unscaled norm before clipping; inf or nan (an fp16 overflow) leaves the gradients alone.
    """
    parameters = list(parameters)
    norm = total_grad_norm(parameters).item() / grad_scale
    if not torch.isfinite(torch.tensor(norm)):
        return norm
    factor = min(1.0, max_norm / (norm + 1e-6)) / grad_scale
    if factor != 1.0:
        for p in parameters:
            if p.grad is not None:
                p.grad.mul_(factor)
    return norm


def all_reduce_sum(value: torch.Tensor) -> torch.Tensor:
    value = value.detach().clone()
    dist.all_reduce(value)
    return value
