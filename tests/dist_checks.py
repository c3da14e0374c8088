"""Checks that need real workers, run by tests/test_train.py under torchrun (2 processes, gloo):

    python -m torch.distributed.run --nproc-per-node=2 tests/dist_checks.py RESULT.json

Rank 0 writes what it measured to RESULT.json; the test asserts on it.
"""

import copy
import gc
import json
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.tensor import DTensor

from pipeline.train import distributed
from pipeline.train.model import ModelArgs, Transformer

ARGS = ModelArgs(vocab_size=97, seq_len=16, dim=32, n_layers=2, n_heads=4)


def global_batch(batch=4):
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, ARGS.vocab_size, (batch, ARGS.seq_len + 1), generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


def my_slice(tensor, rank, world):
    per_worker = tensor.shape[0] // world
    return tensor[rank * per_worker : (rank + 1) * per_worker]


def sharded(tensor: torch.Tensor | None) -> DTensor:
    """A parameter or gradient of the sharded model: FSDP2 makes each a DTensor."""
    assert isinstance(tensor, DTensor), type(tensor)
    return tensor


def grad(parameter: torch.Tensor) -> torch.Tensor:
    assert parameter.grad is not None  # after backward()
    return parameter.grad


def check_precision(rank, world) -> dict:
    """Which dtypes the parameters, activations, gradients and Adam's moments have under the bf16 policy."""
    torch.manual_seed(0)
    model = distributed.shard_model(Transformer(ARGS), "bf16")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    seen: dict[str, set[str]] = {"weights": set(), "activations": set()}

    def record(module, inputs, output):
        seen["weights"].add(str(module.weight.dtype))
        seen["activations"].add(str(output.dtype))

    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.register_forward_hook(record)
    inputs, targets = (my_slice(t, rank, world) for t in global_batch())
    logits = model(inputs)
    F.cross_entropy(logits.float().flatten(0, 1), targets.flatten()).backward()
    optimizer.step()
    params = list(model.parameters())
    moments = [t for p in params for t in optimizer.state[p].values() if t.dim() > 0]
    # Master weights that are really fp32: after an update they hold values that bf16 cannot represent.
    beyond_bf16 = any((sharded(p).to_local() != sharded(p).to_local().bfloat16().float()).any().item() for p in params)
    return {
        "master_dtypes": sorted({str(p.dtype) for p in params}),
        "optimizer_params_are_master": all(
            any(q is p for q in params) for g in optimizer.param_groups for p in g["params"]
        ),
        "moment_dtypes": sorted({str(t.dtype) for t in moments}),
        "grad_dtypes": sorted({str(grad(p).dtype) for p in params}),
        "compute_weight_dtypes": sorted(seen["weights"]),
        "activation_dtypes": sorted(seen["activations"]),
        "logits_dtype": str(logits.dtype),
        "master_has_values_beyond_bf16": beyond_bf16,
    }


def norm64(tensors) -> float:
    """The L2 norm of tensors taken as one vector, in float64 (an fp32 sum over a long vector drifts)."""
    return torch.cat([t.flatten().double() for t in tensors]).norm().item()


def check_grad_norm(rank, world) -> dict:
    """The sharded global norm and clipping against one unsharded copy of the model fed the whole batch."""
    torch.manual_seed(0)
    reference = Transformer(ARGS)
    model = distributed.shard_model(copy.deepcopy(reference), "fp32")
    inputs, targets = global_batch()
    n_tokens = targets.numel()

    # The reference: every rank computes the whole batch's mean loss on the unsharded model.
    F.cross_entropy(reference(inputs).flatten(0, 1), targets.flatten(), reduction="sum").div(n_tokens).backward()
    full_grads = [grad(p) for p in reference.parameters()]
    reference_norm = norm64(full_grads)

    # The sharded model: each rank its slice, scaled the way the training loop scales it.
    logits = model(my_slice(inputs, rank, world))
    loss_sum = F.cross_entropy(logits.flatten(0, 1), my_slice(targets, rank, world).flatten(), reduction="sum")
    (loss_sum * world / n_tokens).backward()
    params = list(model.parameters())
    local_only = torch.linalg.vector_norm(torch.cat([sharded(p.grad).to_local().flatten() for p in params])).item()
    sharded_norm = distributed.total_grad_norm(params).item()
    gathered = [sharded(p.grad).full_tensor() for p in params]
    gathered_error = max((a - b).abs().max().item() for a, b in zip(gathered, full_grads))
    gathered_norm = norm64(gathered)

    max_norm = reference_norm / 2
    returned = distributed.clip_grad_norm_(params, max_norm)
    clipped = [sharded(p.grad).full_tensor() for p in params]
    clipped_norm = norm64(clipped)
    direction_error = max((c - g * (max_norm / reference_norm)).abs().max().item() for c, g in zip(clipped, full_grads))
    return {
        "reference_norm": reference_norm,
        "sharded_norm": sharded_norm,
        "local_shard_norm": local_only,
        "returned_norm": returned,
        "gathered_grad_max_error": gathered_error,
        "gathered_norm": gathered_norm,
        "max_norm": max_norm,
        "clipped_norm": clipped_norm,
        "clipped_direction_max_error": direction_error,
    }


def main(result_path):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    result = {"world": world, "precision": check_precision(rank, world), "grad_norm": check_grad_norm(rank, world)}
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump(result, f, indent=1)
    gc.collect()  # FSDP modules hold the process group in reference cycles: free them while Python is whole
    # Leaving together: a rank that tears gloo down while its peer still has work queued aborts the process.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
