"""The capacity planner: memory per parameter and per GPU under ZeRO, compute-optimal tokens, training
FLOPs and GPU-hours, and the checkpoint interval by Young's rule. Plain arithmetic, no torch.

    python -m pipeline plan --params 7.5B --gpus 64 [--tokens 150B] [--save-seconds 60 --mtbf-hours 3]

The figures are crawl_sample.md's: Adam in mixed precision holds 16 bytes per parameter; ZeRO stage 0
keeps all of it on every GPU, stage 1 shards the optimizer state (12 bytes), stage 2 also the gradients,
stage 3 everything; about 20 tokens per parameter is compute-optimal; training costs about 6 N D FLOPs.
"""

from __future__ import annotations

import math

# Bytes per parameter, by kind.
MEMORY_BILL = {
    "bf16 weights": 2,
    "bf16 gradients": 2,
    "fp32 master weights": 4,
    "fp32 Adam first moment": 4,
    "fp32 Adam second moment": 4,
}
TOKENS_PER_PARAMETER = 20  # compute-optimal (Chinchilla)


def parse_count(text: str) -> float:
    """'7.5B', '125M', '300k', '1.2T' or a plain number; ValueError unless it is finite and above 0."""
    text = str(text).strip().upper()
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}.get(text[-1:], 1)
    count = float(text[:-1] if scale != 1 else text) * scale
    if not 0 < count < math.inf:  # also refuses nan
        raise ValueError(f"expected a count above 0, got {text!r}")
    return count


def zero_bytes_per_gpu(params: float, gpus: int) -> dict[int, float]:
    """Training state per GPU for ZeRO stages 0-3 (weights 2, gradients 2, optimizer 12 bytes per parameter)."""
    p, g = params, gpus
    return {0: 16 * p, 1: 4 * p + 12 * p / g, 2: 2 * p + 14 * p / g, 3: 16 * p / g}


def training_flops(params: float, tokens: float) -> float:
    return 6 * params * tokens


def gpu_hours(flops: float, peak_tflops: float, mfu: float) -> float:
    return flops / (peak_tflops * 1e12 * mfu) / 3600


def young_interval(save_seconds: float, mtbf_seconds: float) -> float:
    """The checkpoint interval that wastes least time: sqrt(2 C M) (Young, 1974)."""
    return math.sqrt(2 * save_seconds * mtbf_seconds)


def wasted_fraction(save_seconds: float, mtbf_seconds: float, interval_seconds: float) -> float:
    """Time spent saving (C / T) plus work lost to a failure, on average half an interval (T / 2M)."""
    return save_seconds / interval_seconds + interval_seconds / (2 * mtbf_seconds)


def plan(
    params: float,
    gpus: int,
    tokens: float | None = None,
    peak_tflops: float = 989.0,
    mfu: float = 0.4,
    save_seconds: float | None = None,
    mtbf_hours: float | None = None,
) -> dict:
    tokens = TOKENS_PER_PARAMETER * params if tokens is None else tokens
    flops = training_flops(params, tokens)
    hours = gpu_hours(flops, peak_tflops, mfu)
    result = {
        "params": params,
        "gpus": gpus,
        "memory_bytes": {kind: b * params for kind, b in MEMORY_BILL.items()},
        "bytes_per_parameter": sum(MEMORY_BILL.values()),
        "zero_bytes_per_gpu": zero_bytes_per_gpu(params, gpus),
        "compute_optimal_tokens": TOKENS_PER_PARAMETER * params,
        "tokens": tokens,
        "training_flops": flops,
        "peak_tflops": peak_tflops,
        "mfu": mfu,
        "gpu_hours": hours,
        "wall_hours": hours / gpus,
    }
    if save_seconds is not None and mtbf_hours is not None:
        interval = young_interval(save_seconds, mtbf_hours * 3600)
        wasted = wasted_fraction(save_seconds, mtbf_hours * 3600, interval)
        # Young's rule wastes sqrt(2 C / M): from C = M / 2 on, saving and lost work would take all the time,
        # and no interval is a plan (its figures would be over 100%).
        keeps_up = wasted < 1
        result["checkpoint"] = {
            "save_seconds": save_seconds,
            "mtbf_hours": mtbf_hours,
            "keeps_up": keeps_up,
            "interval_minutes": interval / 60 if keeps_up else None,
            "wasted_fraction": wasted if keeps_up else None,
        }
    return result


def format_plan(p: dict) -> str:
    gb = 1e9
    lines = [
        f"model: {p['params'] / 1e9:g}B parameters on {p['gpus']} GPUs",
        "",
        f"memory bill, Adam in mixed precision ({p['bytes_per_parameter']} bytes per parameter):",
    ]
    for kind, total in p["memory_bytes"].items():
        lines.append(f"  {kind:<26} {total / p['params']:>2.0f} B/param  {total / gb:>10,.1f} GB")
    lines.append(
        f"  {'total':<26} {p['bytes_per_parameter']:>2} B/param  {sum(p['memory_bytes'].values()) / gb:>10,.1f} GB"
    )
    lines += ["", f"training state per GPU (ZeRO, {p['gpus']} GPUs):"]
    names = {
        0: "data parallel, nothing sharded",
        1: "optimizer state sharded",
        2: "+ gradients sharded",
        3: "+ weights sharded (FSDP)",
    }
    for stage, total in p["zero_bytes_per_gpu"].items():
        lines.append(f"  stage {stage}  {total / gb:>10,.1f} GB   {names[stage]}")
    lines += [
        "",
        f"compute-optimal tokens ({TOKENS_PER_PARAMETER} per parameter): {p['compute_optimal_tokens'] / 1e9:,.1f}B",
        f"training on {p['tokens'] / 1e9:,.1f}B tokens: 6 N D = {p['training_flops']:.3e} FLOPs",
        f"at {p['mfu']:.0%} MFU of {p['peak_tflops']:g} TFLOPS: {p['gpu_hours']:,.0f} GPU-hours, "
        f"{p['wall_hours']:,.1f} hours on {p['gpus']} GPUs",
    ]
    if "checkpoint" in p:
        c = p["checkpoint"]
        if c["keeps_up"]:
            line = (
                f"checkpoint every sqrt(2 C M) = {c['interval_minutes']:.2f} minutes "
                f"(save C = {c['save_seconds']:g} s, MTBF M = {c['mtbf_hours']:g} h), "
                f"wasting {c['wasted_fraction']:.1%} of the time"
            )
        else:
            line = (
                f"checkpoint: a save of C = {c['save_seconds']:g} s does not fit between failures every "
                f"M = {c['mtbf_hours']:g} h (saving and the work lost would take all the time from C = M / 2 on); "
                "save faster (train.checkpoint.async_save) or make failures rarer"
            )
        lines += ["", line]
    return "\n".join(lines)
