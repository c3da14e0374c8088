"""The checks of the config's train section and of the token shards and checkpoints it would train on.

pipeline/config/load.py runs them for `python -m pipeline train`; they sit above the train modules they ask
(the resume check and the torchrun test), which read the config.
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.config import Config, ConfigError, TrainConfig
from pipeline.config.checks import check_choice


def check_train(config: Config) -> None:
    """The train section's choices and ranges, the GPUs a local run needs, its token shards and checkpoints."""
    train = config.train
    check_choice(train.launcher, ("torchrun", "ray"), "train.launcher")
    check_choice(train.device, ("cpu", "cuda"), "train.device")
    check_choice(train.precision, ("bf16", "fp16", "fp32"), "train.precision")
    if train.model.size is not None:
        check_choice(train.model.size, ("125m", "350m"), "train.model.size")
    for key, value, accepted, expected in _train_ranges(train):
        if not accepted:  # a comparison with nan is false: nan is refused too
            raise ConfigError(f"train.{key}: expected {expected}, got {value!r}")
    if train.batch_size % train.workers:
        raise ConfigError(f"train.batch_size: {train.batch_size} sequences do not split over {train.workers} workers")
    model = train.model
    if model.dim % model.n_heads or (model.dim // model.n_heads) % 2:
        raise ConfigError("train.model.dim: must be n_heads times an even head size (rotary positions)")
    interval = train.checkpoint.interval
    if isinstance(interval, str) and interval != "auto" or isinstance(interval, int) and interval < 1:
        raise ConfigError(f"train.checkpoint.interval: expected a positive integer, auto or null, got {interval!r}")
    if train.device == "cuda" and train.launcher == "torchrun":  # launcher ray: the cluster's GPUs, checked on start
        _check_local_gpus(train.workers)
    # The token shards: relative to where you run, like `output`.
    train.data = os.path.abspath(train.data or config.output)
    tokens = Path(train.data) / "tokens"
    if not any(tokens.glob("*.parquet")):
        raise ConfigError(
            f"train.data: no token shards in {str(tokens)!r} (make them with `python -m pipeline run`, with parquet among packing.formats)"
        )
    from pipeline.train.resume import check_resumable  # imports torch: only once the cheaper checks pass

    check_resumable(train)


def _train_ranges(train: TrainConfig) -> list[tuple[str, object, bool, str]]:
    """Each numeric train key: (key, value, whether it is in range, the range in words)."""
    model, checkpoint, spike = train.model, train.checkpoint, train.spike
    inf = float("inf")
    positive, at_least_0, above_0 = "a positive integer", "an integer >= 0", "a finite number above 0"
    ranges = [
        (key, getattr(train, key), getattr(train, key) >= 1, positive)
        for key in ("workers", "steps", "batch_size", "log_every")
    ]
    ranges += [
        ("lr", train.lr, 0 < train.lr < inf, above_0),
        ("min_lr", train.min_lr, 0 <= train.min_lr <= train.lr, f"a number in [0, train.lr = {train.lr}]"),
        ("warmup_steps", train.warmup_steps, train.warmup_steps >= 0, at_least_0),
        ("weight_decay", train.weight_decay, 0 <= train.weight_decay < inf, "a finite number >= 0"),
        ("beta1", train.beta1, 0 <= train.beta1 < 1, "a number in [0, 1)"),
        ("beta2", train.beta2, 0 <= train.beta2 < 1, "a number in [0, 1)"),
        ("grad_clip", train.grad_clip, 0 < train.grad_clip < inf, above_0),
        ("seed", train.seed, 0 <= train.seed < 2**32, "an integer in [0, 2^32)"),
        ("max_restarts", train.max_restarts, train.max_restarts >= 0, at_least_0),
        ("start_timeout_s", train.start_timeout_s, 0 <= train.start_timeout_s < inf, "a finite number >= 0"),
        (
            "peak_tflops",
            train.peak_tflops,
            train.peak_tflops is None or 0 < train.peak_tflops < inf,
            f"{above_0} or null",
        ),
        ("corrupt_batches", train.corrupt_batches, all(b >= 0 for b in train.corrupt_batches), "batch numbers >= 0"),
        ("model.ffn_dim", model.ffn_dim, model.ffn_dim is None or model.ffn_dim >= 1, f"{positive} or null"),
        ("model.rope_theta", model.rope_theta, 0 < model.rope_theta < inf, above_0),
        ("checkpoint.mtbf_hours", checkpoint.mtbf_hours, 0 < checkpoint.mtbf_hours < inf, above_0),
        ("checkpoint.keep", checkpoint.keep, checkpoint.keep >= 1, positive),
        ("spike.window", spike.window, spike.window >= 1, positive),
        ("spike.factor", spike.factor, 1 < spike.factor < inf, "a finite number above 1"),
        ("spike.persist", spike.persist, spike.persist >= 0, at_least_0),
    ]
    ranges += [
        (f"model.{key}", getattr(model, key), getattr(model, key) >= 1, positive)
        for key in ("dim", "n_layers", "n_heads")
    ]
    return ranges


def _check_local_gpus(workers: int) -> None:
    import torch

    from pipeline.train.launch import inside_torchrun

    needed = 1 if inside_torchrun() else workers  # a worker of a torchrun you started needs its own GPU only
    found = torch.cuda.device_count()
    if found < needed:
        raise ConfigError(
            f"train.device: cuda needs {needed} GPUs (train.workers) and this machine has {found}; "
            f"use device: cpu, or fewer workers"
        )
