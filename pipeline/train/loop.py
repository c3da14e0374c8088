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
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from pipeline.config import Config, TrainConfig
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


@dataclasses.dataclass
class Run:
    """One worker's training run: what `start` builds, and what the steps change (state, timings)."""

    cfg: TrainConfig
    rank: int
    world: int
    device: torch.device
    data: TokenShards
    folder: Path
    log: RunLog
    model: Transformer
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    checkpoints: Checkpointer
    n_params: int
    # Everything a resumed run needs besides tensors and RNG; saved as state.json in each checkpoint.
    state: dict[str, Any]
    peak: float | None
    interval: int | None  # steps between checkpoints; auto: chosen once a save has been timed
    last_saved: int
    step_seconds: list[float] = dataclasses.field(default_factory=list)
    bytes_per_parameter: float | None = None

    @property
    def fp16(self) -> bool:
        return self.cfg.precision == "fp16"


def train(config: Config, stop_after: int | None = None, device: torch.device | None = None) -> dict | None:
    """Train, or resume from the newest complete checkpoint; returns the run summary (rank 0)."""
    run = start(config, device)
    cfg = run.cfg
    while run.state["step"] < cfg.steps:
        record = train_step(run)
        log_step(run, record)
        if spike_rolled_back(run, record["step"], record["loss"]):
            continue
        run.checkpoints.poll()
        if stop_after is not None and run.state["step"] >= stop_after:
            run.log.line(f"stopping after step {run.state['step']} (--stop-after)")
            break
        # Never save in the middle of a spike: a rollback would land on it.
        if run.state["spike_streak"] == 0 and checkpoint_due(run):
            seconds = save(run)
            if cfg.checkpoint.interval == "auto":  # save every sqrt(2 C M) seconds (Young, 1974), C measured each time
                run.interval = choose_interval(
                    seconds, run.step_seconds, cfg.checkpoint.mtbf_hours, run.log, run.device, run.interval
                )
    return finish(run)


def start(config: Config, device: torch.device | None) -> Run:
    """Build the model, its optimizer and schedule, and resume from the newest complete checkpoint if any."""
    cfg = config.train
    rank, world, device = distributed.start(cfg.device, device)
    assert cfg.data is not None  # validation sets it (pipeline/train/checks.py)
    data = TokenShards(cfg.data)
    folder = Path(cfg.data) / "train"
    log = RunLog(folder, rank)

    # The same seed everywhere: every worker builds the same full model, then keeps its shard.
    torch.manual_seed(cfg.seed)
    args = model_args(cfg.model, data.vocab_size, data.seq_len)
    model = Transformer(args).to(device)
    n_params = count_parameters(model)
    distributed.shard_model(model, cfg.precision)
    # No weight decay on gains (RMSNorm weights), as in nanoGPT.
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, cfg.warmup_steps, cfg.steps, cfg.min_lr / cfg.lr)
    )

    state: dict[str, Any] = {
        "step": 0,
        "consumed": 0,
        "data": data.fingerprint(),
        "model": dataclasses.asdict(args),
        "recent_losses": [],
        "spike_streak": 0,
        "rollbacks": [],
        "loss_scale": 2.0**16 if cfg.precision == "fp16" else 1.0,
        "good_steps": 0,
        "scheduler": scheduler.state_dict(),
    }
    checkpoints = Checkpointer(folder / "checkpoints", cfg.checkpoint.keep, cfg.checkpoint.async_save)
    log.line(
        f"model: {n_params:,} parameters, {cfg.precision} compute, fp32 master weights, "
        f"{world} workers on {device.type}, {data.total:,} sequences of {data.seq_len} tokens"
    )
    latest = checkpoints.latest()  # it fits these shards and this model: the config check made sure
    if latest:
        state = checkpoints.load(latest, model, optimizer)
        scheduler.load_state_dict(state["scheduler"])
        log.line(f"resumed from {latest} at step {state['step']} (data {data.position(state['consumed'])})")
        log.metrics({"event": "resume", "step": state["step"], "data": data.position(state["consumed"])})

    interval = cfg.checkpoint.interval if isinstance(cfg.checkpoint.interval, int) else None  # auto: None for now
    return Run(
        cfg,
        rank,
        world,
        device,
        data,
        folder,
        log,
        model,
        optimizer,
        scheduler,
        checkpoints,
        n_params,
        state,
        peak_flops(device, cfg.peak_tflops),
        interval,
        last_saved=state["step"],
    )


def train_step(run: Run) -> dict:
    """One step: this worker's slice of the batch, forward and backward, the optimizer, the schedule.
    Returns the step's metrics record."""
    started = time.perf_counter()
    step = run.state["step"] + 1
    inputs, targets, batch_index = read_batch(run, step)
    loss = forward_backward(run, inputs, targets)
    grad_norm = optimizer_step(run, step)
    lr = run.scheduler.get_last_lr()[0]
    run.scheduler.step()
    run.state["step"] = step
    run.state["consumed"] += run.cfg.batch_size

    if run.device.type == "cuda":
        torch.cuda.synchronize(run.device)
    seconds = time.perf_counter() - started
    run.step_seconds.append(seconds)
    record = {
        "step": step,
        "loss": loss,
        "lr": lr,
        "grad_norm": grad_norm,
        "tokens_per_s": run.cfg.batch_size * run.data.seq_len / seconds,
        "batch": batch_index,
    }
    if run.fp16:
        record["loss_scale"] = run.state["loss_scale"]
    if run.peak:
        record["mfu"] = 6 * run.n_params * record["tokens_per_s"] / (run.peak * run.world)
    if run.device.type == "cuda":
        record["max_memory_gb"] = torch.cuda.max_memory_allocated(run.device) / 1e9
    return record


def read_batch(run: Run, step: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """This worker's inputs and targets of the next global batch (noise for train.corrupt_batches), and its index."""
    cfg = run.cfg
    batch_index = run.state["consumed"] // cfg.batch_size
    inputs, targets = run.data.batch(run.state["consumed"], cfg.batch_size, run.rank, run.world)
    if batch_index in cfg.corrupt_batches:
        noise_seed = (cfg.seed * 1_000_003 + batch_index) * 101 + run.rank
        inputs, targets = corrupt(inputs, targets, run.data.vocab_size, noise_seed)
        run.log.line(f"step {step}: batch {batch_index} replaced with noise (train.corrupt_batches)")
    return inputs.to(run.device), targets.to(run.device), batch_index


def forward_backward(run: Run, inputs: torch.Tensor, targets: torch.Tensor) -> float:
    """The loss is the mean over every real target token of the global batch. FSDP averages gradients
    over workers, so each worker's sum is scaled by world / (global token count). Returns the loss."""
    logits = run.model(inputs)
    loss_sum = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE, reduction="sum")
    n_tokens = distributed.all_reduce_sum((targets != IGNORE).sum().float())
    (loss_sum * (run.world * run.state["loss_scale"]) / n_tokens).backward()
    return (distributed.all_reduce_sum(loss_sum) / n_tokens).item()


def optimizer_step(run: Run, step: int) -> float:
    """Clip the global gradient norm, then AdamW, unless fp16 gradients overflowed; returns the norm."""
    state = run.state
    grad_norm = distributed.clip_grad_norm_(run.model.parameters(), run.cfg.grad_clip, state["loss_scale"])
    overflow = not math.isfinite(grad_norm)
    if overflow and run.fp16:  # dynamic loss scaling: skip the update, halve the scale
        state["loss_scale"] /= 2
        state["good_steps"] = 0
    elif overflow:
        raise FloatingPointError(f"step {step}: gradient norm is {grad_norm}")
    else:
        run.optimizer.step()
        if run.fp16:
            state["good_steps"] += 1
            if state["good_steps"] % SCALE_GROWTH_STEPS == 0:  # long without overflow: try a larger scale
                state["loss_scale"] *= 2
    if run.bytes_per_parameter is None and not overflow:  # gradients and Adam's moments exist only now
        run.bytes_per_parameter = state_bytes_per_parameter(run.model, run.optimizer, run.n_params, run.device)
    run.optimizer.zero_grad(set_to_none=True)
    return grad_norm


def log_step(run: Run, record: dict) -> None:
    run.log.metrics(record)
    step, steps = record["step"], run.cfg.steps
    if step % run.cfg.log_every == 0 or step == steps:
        run.log.line(
            f"step {step}/{steps} | loss {record['loss']:.4f} | lr {record['lr']:.2e} | "
            f"grad norm {record['grad_norm']:.3f} | {record['tokens_per_s']:,.0f} tokens/s"
            + (f" | MFU {record['mfu']:.1%}" if run.peak else "")
        )


def spike_rolled_back(run: Run, step: int, loss: float) -> bool:
    """The median rule, then, after train.spike.persist spikes in a row, a rollback to the newest checkpoint.
    True when it rolled back."""
    cfg, log = run.cfg.spike, run.log
    # The window is the losses before this step, spikes included.
    median = spike_median(loss, run.state["recent_losses"], cfg.window, cfg.factor)
    spike = median is not None
    run.state["recent_losses"] = (run.state["recent_losses"] + [loss])[-cfg.window :]
    run.state["spike_streak"] = run.state["spike_streak"] + 1 if spike else 0
    if spike:
        log.line(f"step {step}: loss spike, {loss:.4f} > {cfg.factor} x median {median:.4f}")
        log.metrics({"event": "spike", "step": step, "loss": loss, "median": median})
    if not (cfg.persist and run.state["spike_streak"] >= cfg.persist):
        return False
    target = run.checkpoints.latest()
    if target is None:
        log.line(f"step {step}: no checkpoint to roll back to; going on")
        run.state["spike_streak"] = 0
        return False
    # Back to the checkpoint's weights, and on past the batches that led into the spike.
    batch = run.cfg.batch_size
    resume_at, rollbacks = run.state["consumed"], run.state["rollbacks"]
    state = run.state = run.checkpoints.load(target, run.model, run.optimizer)
    run.scheduler.load_state_dict(state["scheduler"])
    skipped = [state["consumed"] // batch, resume_at // batch - 1]
    rollback = {"spike_step": step, "to_step": state["step"], "skipped_batches": skipped}
    # The checkpoint's list lacks the rollbacks since it was saved (to it, too): keep ours.
    state["rollbacks"] = rollbacks + [rollback]
    state["consumed"] = resume_at
    run.last_saved = state["step"]
    log.line(
        f"step {step}: rolled back to step {state['step']} ({target.name}), "
        f"skipping batches {skipped[0]} to {skipped[1]}"
    )
    log.metrics({"event": "rollback", **rollback})
    return True


def save(run: Run) -> float:
    """A checkpoint of this step; returns the seconds it took."""
    state = run.state
    state["scheduler"] = run.scheduler.state_dict()
    seconds = run.checkpoints.save(state["step"], run.model, run.optimizer, state)
    run.last_saved = state["step"]
    run.log.metrics({"event": "checkpoint", "step": state["step"], "seconds": round(seconds, 4)})
    return seconds


def checkpoint_due(run: Run) -> bool:
    step, interval = run.state["step"], run.interval
    if run.cfg.checkpoint.interval == "auto":  # the first save, after step 2, is timed to choose the interval
        return step - run.last_saved >= interval if interval else step >= 2
    return bool(interval) and step % interval == 0


def finish(run: Run) -> dict | None:
    """The last checkpoint and the summary (summary.json); returns the summary on rank 0."""
    state, batch, seq_len = run.state, run.cfg.batch_size, run.data.seq_len
    if state["step"] != run.last_saved or not run.checkpoints.latest():
        save(run)
    run.checkpoints.wait()
    summary = {
        "steps": state["step"],
        "final_loss": state["recent_losses"][-1] if state["recent_losses"] else None,
        "rollbacks": state["rollbacks"],
        "parameters": run.n_params,
        "workers": run.world,
        "compute_dtype": str(distributed.COMPUTE_DTYPES[run.cfg.precision]),
        "master_dtype": str(next(run.model.parameters()).dtype),
        "bytes_per_parameter": run.bytes_per_parameter,
        "expected_bytes_per_parameter": BYTES_PER_PARAMETER,
        "tokens_per_s": batch * seq_len * len(run.step_seconds) / max(sum(run.step_seconds), 1e-9),
        "data": run.data.position(state["consumed"]),
    }
    if run.rank == 0:
        (run.folder / "summary.json").write_text(json.dumps(summary, indent=1))
    if run.bytes_per_parameter:
        run.log.line(
            f"memory: {run.bytes_per_parameter:.1f} bytes of weights, gradients and Adam state per "
            f"parameter (crawl_sample.md's mixed-precision bill: {BYTES_PER_PARAMETER})"
        )
    dist.barrier()
    return summary if run.rank == 0 else None


def choose_interval(
    save_seconds: float,
    step_seconds: list[float],
    mtbf_hours: float,
    log: RunLog,
    device: torch.device,
    previous: int | None,
) -> int:
    """Young's rule in steps. Every worker must agree, so rank 0's measurement is broadcast."""
    recent = step_seconds[-20:]
    figures = torch.tensor([save_seconds, sum(recent) / len(recent)], dtype=torch.float64, device=device)
    dist.broadcast(figures, src=0)
    save_seconds, step_time = figures.tolist()
    seconds = young_interval(save_seconds, mtbf_hours * 3600)
    steps = max(1, round(seconds / step_time))
    if steps == previous:
        return steps
    log.line(
        f"checkpoint interval (auto): save C = {save_seconds:.3f} s, MTBF M = {mtbf_hours} h, "
        f"sqrt(2 C M) = {seconds:.1f} s = {steps} steps of {step_time:.3f} s"
    )
    log.metrics(
        {
            "event": "checkpoint_interval",
            "save_seconds": save_seconds,
            "mtbf_hours": mtbf_hours,
            "interval_seconds": seconds,
            "interval_steps": steps,
        }
    )
    return steps
