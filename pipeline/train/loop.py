"""The training loop, top to bottom. Every worker runs `train` (under torchrun or Ray Train).

One step: read this worker's slice of the global batch, forward and backward in the compute dtype,
gradients reduced in fp32, the global gradient norm clipped, AdamW on the fp32 master shards, the
learning rate schedule, then the loss-spike check (rollback and skip), metrics and a checkpoint when due.
The run's folder (DATA/train) holds checkpoints/, metrics.jsonl (one line per step or event), log.txt
and, at the end, summary.json.
"""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

from pipeline.config import Config
from pipeline.train import distributed
from pipeline.train.checkpoint import Checkpointer
from pipeline.train.data import IGNORE, TokenShards
from pipeline.train.model import Transformer, count_parameters, model_args
from pipeline.train.plan import young_interval

BYTES_PER_PARAMETER = 16  # crawl_sample.md's bill for Adam in mixed precision
SCALE_GROWTH_STEPS = 2000  # fp16: steps without overflow before the loss scale doubles (GradScaler's default)
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "L4": 121.0, "A10": 125.0}


def lr_factor(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warmup over `warmup` steps, then cosine decay to min_ratio of the peak at `total`."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def spike_median(loss: float, previous: list[float], window: int, factor: float) -> float | None:
    """The median rule: a spike when loss > factor * median of the previous `window` losses.
    Returns that median for a spike (it is logged), None otherwise."""
    if len(previous) < window:
        return None
    median = statistics.median(previous[-window:])
    return median if loss > factor * median else None


def corrupt(inputs: torch.Tensor, targets: torch.Tensor, vocab_size: int, seed: int):
    """A drill: replace a batch with random token ids, which a trained model finds very surprising."""
    generator = torch.Generator().manual_seed(seed)
    noise = torch.randint(0, vocab_size, (inputs.shape[0], inputs.shape[1] + 1), generator=generator)
    return noise[:, :-1].contiguous(), noise[:, 1:].contiguous()


def peak_flops(device: torch.device, configured_tflops: float | None) -> float | None:
    if configured_tflops:
        return configured_tflops * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((tflops * 1e12 for key, tflops in PEAK_TFLOPS.items() if key in name), None)


def state_bytes_per_parameter(model, optimizer, n_params: int, device: torch.device) -> float:
    """Bytes of training state (sharded weights, gradients, optimizer moments) summed over workers, per parameter."""
    local = 0
    for p in model.parameters():
        for t in [p, p.grad, *optimizer.state.get(p, {}).values()]:
            if isinstance(t, torch.Tensor) and t.dim() > 0:  # not Adam's step counter
                t = t.to_local() if hasattr(t, "to_local") else t
                local += t.numel() * t.element_size()
    total = distributed.all_reduce_sum(torch.tensor(float(local), device=device)).item()
    return total / n_params


class RunLog:
    """metrics.jsonl (every step and event) and log.txt plus stdout (lines for people), written by rank 0."""

    def __init__(self, folder: Path, rank: int):
        self.rank = rank
        self.folder = folder
        if rank == 0:
            folder.mkdir(parents=True, exist_ok=True)

    def metrics(self, record: dict) -> None:
        if self.rank == 0:
            with open(self.folder / "metrics.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")

    def line(self, text: str) -> None:
        if self.rank == 0:
            print(text, flush=True)
            with open(self.folder / "log.txt", "a") as f:
                f.write(text + "\n")


def train(config: Config, stop_after: int | None = None, device: torch.device | None = None) -> dict | None:
    """Train, or resume from the newest complete checkpoint; returns the run summary (rank 0)."""
    cfg = config.train
    rank, world, device = distributed.start(cfg.device, device)
    data = TokenShards(cfg.data)
    folder = Path(cfg.data) / "train"
    log = RunLog(folder, rank)
    batch, seq_len = cfg.batch_size, data.seq_len

    # The same seed everywhere: every worker builds the same full model, then keeps its shard.
    torch.manual_seed(cfg.seed)
    args = model_args(cfg.model, data.vocab_size, seq_len)
    model = Transformer(args).to(device)
    n_params = count_parameters(model)
    distributed.shard_model(model, cfg.precision)
    # No weight decay on gains (RMSNorm weights), as in nanoGPT.
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(
        step, cfg.warmup_steps, cfg.steps, cfg.min_lr / cfg.lr))
    fp16 = cfg.precision == "fp16"

    # Everything a resumed run needs besides tensors and RNG; saved as state.json in each checkpoint.
    state = {"step": 0, "consumed": 0, "data": data.fingerprint(), "model": dataclasses.asdict(args),
             "recent_losses": [], "spike_streak": 0,
             "rollbacks": [], "loss_scale": 2.0 ** 16 if fp16 else 1.0, "good_steps": 0,
             "scheduler": scheduler.state_dict()}
    checkpoints = Checkpointer(folder / "checkpoints", cfg.checkpoint.keep, cfg.checkpoint.async_save)
    log.line(f"model: {n_params:,} parameters, {cfg.precision} compute, fp32 master weights, "
             f"{world} workers on {device.type}, {data.total:,} sequences of {seq_len} tokens")
    latest = checkpoints.latest()  # it fits these shards and this model: the config check made sure
    if latest:
        state = checkpoints.load(latest, model, optimizer)
        scheduler.load_state_dict(state["scheduler"])
        log.line(f"resumed from {latest} at step {state['step']} (data {data.position(state['consumed'])})")
        log.metrics({"event": "resume", "step": state["step"], "data": data.position(state["consumed"])})

    auto_interval = cfg.checkpoint.interval == "auto"
    interval = None if auto_interval else cfg.checkpoint.interval  # auto: chosen once a save has been timed
    peak = peak_flops(device, cfg.peak_tflops)
    step_seconds = []
    last_saved = state["step"]
    bytes_per_parameter = None

    def save() -> float:
        nonlocal last_saved
        state["scheduler"] = scheduler.state_dict()
        seconds = checkpoints.save(state["step"], model, optimizer, state)
        last_saved = state["step"]
        log.metrics({"event": "checkpoint", "step": state["step"], "seconds": round(seconds, 4)})
        return seconds

    def checkpoint_due() -> bool:
        if auto_interval:  # the first save, after step 2, is timed to choose the interval
            return state["step"] - last_saved >= interval if interval else state["step"] >= 2
        return bool(interval) and state["step"] % interval == 0

    while state["step"] < cfg.steps:
        started = time.perf_counter()
        step = state["step"] + 1
        batch_index = state["consumed"] // batch
        inputs, targets = data.batch(state["consumed"], batch, rank, world)
        if batch_index in cfg.corrupt_batches:
            noise_seed = (cfg.seed * 1_000_003 + batch_index) * 101 + rank
            inputs, targets = corrupt(inputs, targets, data.vocab_size, noise_seed)
            log.line(f"step {step}: batch {batch_index} replaced with noise (train.corrupt_batches)")
        inputs, targets = inputs.to(device), targets.to(device)

        # The loss is the mean over every real target token of the global batch. FSDP averages gradients
        # over workers, so each worker's sum is scaled by world / (global token count).
        logits = model(inputs)
        loss_sum = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE,
                                   reduction="sum")
        n_tokens = distributed.all_reduce_sum((targets != IGNORE).sum().float())
        (loss_sum * (world * state["loss_scale"]) / n_tokens).backward()
        loss = (distributed.all_reduce_sum(loss_sum) / n_tokens).item()

        grad_norm = distributed.clip_grad_norm_(model.parameters(), cfg.grad_clip, state["loss_scale"])
        overflow = not math.isfinite(grad_norm)
        if overflow and fp16:  # dynamic loss scaling: skip the update, halve the scale
            state["loss_scale"] /= 2
            state["good_steps"] = 0
        elif overflow:
            raise FloatingPointError(f"step {step}: gradient norm is {grad_norm}")
        else:
            optimizer.step()
            if fp16:
                state["good_steps"] += 1
                if state["good_steps"] % SCALE_GROWTH_STEPS == 0:  # long without overflow: try a larger scale
                    state["loss_scale"] *= 2
        if bytes_per_parameter is None and not overflow:  # gradients and Adam's moments exist only now
            bytes_per_parameter = state_bytes_per_parameter(model, optimizer, n_params, device)
        optimizer.zero_grad(set_to_none=True)
        lr = scheduler.get_last_lr()[0]
        scheduler.step()
        state["step"] = step
        state["consumed"] += batch

        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - started
        step_seconds.append(seconds)
        record = {"step": step, "loss": loss, "lr": lr, "grad_norm": grad_norm,
                  "tokens_per_s": batch * seq_len / seconds, "batch": batch_index}
        if fp16:
            record["loss_scale"] = state["loss_scale"]
        if peak:
            record["mfu"] = 6 * n_params * record["tokens_per_s"] / (peak * world)
        if device.type == "cuda":
            record["max_memory_gb"] = torch.cuda.max_memory_allocated(device) / 1e9
        log.metrics(record)
        if step % cfg.log_every == 0 or step == cfg.steps:
            log.line(f"step {step}/{cfg.steps} | loss {loss:.4f} | lr {lr:.2e} | grad norm {grad_norm:.3f} | "
                     f"{record['tokens_per_s']:,.0f} tokens/s" + (f" | MFU {record['mfu']:.1%}" if peak else ""))

        # The median rule. The window is the losses before this step, spikes included.
        median = spike_median(loss, state["recent_losses"], cfg.spike.window, cfg.spike.factor)
        spike = median is not None
        state["recent_losses"] = (state["recent_losses"] + [loss])[-cfg.spike.window:]
        state["spike_streak"] = state["spike_streak"] + 1 if spike else 0
        if spike:
            log.line(f"step {step}: loss spike, {loss:.4f} > {cfg.spike.factor} x median {median:.4f}")
            log.metrics({"event": "spike", "step": step, "loss": loss, "median": median})
        if cfg.spike.persist and state["spike_streak"] >= cfg.spike.persist:
            target = checkpoints.latest()
            if target is None:
                log.line(f"step {step}: no checkpoint to roll back to; going on")
                state["spike_streak"] = 0
            else:
                # Back to the checkpoint's weights, and on past the batches that led into the spike.
                resume_at, rollbacks = state["consumed"], state["rollbacks"]
                state = checkpoints.load(target, model, optimizer)
                scheduler.load_state_dict(state["scheduler"])
                skipped = [state["consumed"] // batch, resume_at // batch - 1]
                rollback = {"spike_step": step, "to_step": state["step"], "skipped_batches": skipped}
                # The checkpoint's list lacks the rollbacks since it was saved (to it, too): keep ours.
                state["rollbacks"] = rollbacks + [rollback]
                state["consumed"] = resume_at
                last_saved = state["step"]
                log.line(f"step {step}: rolled back to step {state['step']} ({target.name}), "
                         f"skipping batches {skipped[0]} to {skipped[1]}")
                log.metrics({"event": "rollback", **rollback})
                continue

        checkpoints.poll()
        if stop_after is not None and state["step"] >= stop_after:
            log.line(f"stopping after step {state['step']} (--stop-after)")
            break
        # Never save in the middle of a spike: a rollback would land on it.
        if state["spike_streak"] == 0 and checkpoint_due():
            seconds = save()
            if auto_interval:  # save every sqrt(2 C M) seconds (Young, 1974), C measured each time
                interval = choose_interval(seconds, step_seconds, cfg.checkpoint.mtbf_hours, log, device, interval)

    if state["step"] != last_saved or not checkpoints.latest():
        save()
    checkpoints.wait()
    summary = {"steps": state["step"], "final_loss": state["recent_losses"][-1] if state["recent_losses"] else None,
               "rollbacks": state["rollbacks"], "parameters": n_params, "workers": world,
               "compute_dtype": str(distributed.COMPUTE_DTYPES[cfg.precision]),
               "master_dtype": str(next(model.parameters()).dtype),
               "bytes_per_parameter": bytes_per_parameter, "expected_bytes_per_parameter": BYTES_PER_PARAMETER,
               "tokens_per_s": batch * seq_len * len(step_seconds) / max(sum(step_seconds), 1e-9),
               "data": data.position(state["consumed"])}
    if rank == 0:
        (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    if bytes_per_parameter:
        log.line(f"memory: {bytes_per_parameter:.1f} bytes of weights, gradients and Adam state per parameter "
                 f"(crawl_sample.md's mixed-precision bill: {BYTES_PER_PARAMETER})")
    dist.barrier()
    return summary if rank == 0 else None


def choose_interval(save_seconds: float, step_seconds: list[float], mtbf_hours: float, log: RunLog,
                    device: torch.device, previous: int | None) -> int:
    """Young's rule in steps. Every worker must agree, so rank 0's measurement is broadcast."""
    recent = step_seconds[-20:]
    figures = torch.tensor([save_seconds, sum(recent) / len(recent)], dtype=torch.float64, device=device)
    dist.broadcast(figures, src=0)
    save_seconds, step_time = figures.tolist()
    seconds = young_interval(save_seconds, mtbf_hours * 3600)
    steps = max(1, round(seconds / step_time))
    if steps == previous:
        return steps
    log.line(f"checkpoint interval (auto): save C = {save_seconds:.3f} s, MTBF M = {mtbf_hours} h, "
             f"sqrt(2 C M) = {seconds:.1f} s = {steps} steps of {step_time:.3f} s")
    log.metrics({"event": "checkpoint_interval", "save_seconds": save_seconds, "mtbf_hours": mtbf_hours,
                 "interval_seconds": seconds, "interval_steps": steps})
    return steps
