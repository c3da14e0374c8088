#!/usr/bin/env python3
"""The train stage on one GPU, in one call of a few minutes (written for a lent H200):

    bash scripts/gpu_check.sh            (or: PYTHONPATH=. python3 scripts/gpu_check.py)

Prints one JSON object (also written to $OUT/gpu_check.json when OUT is set):
  - throughput: the 125M and 350M shapes, bf16 compute with fp32 master weights under FSDP2, AdamW, global
    norm clipping, on synthetic tokens: tokens/s, MFU = 6 N tokens/s / peak (H100/H200 dense bf16: 989
    TFLOPS), and the peak memory next to the 16 bytes per parameter of crawl_sample.md;
  - checkpoint: one torch.distributed.checkpoint save and load of the 125M model and its optimizer
    (seconds, bytes), the blocking part of an asynchronous save, and whether the loaded model gives the
    same loss;
  - cli_run: `python -m pipeline train` with device: cuda on synthetic token shards, stopped after 10
    steps and resumed to 20 (needs pyarrow and pyyaml; reported as skipped without them);
  - transformer_scorer: the belt's transformers scorer with a BERT-base-shaped model at 512 tokens,
    documents per second (needs transformers; reported as skipped without it).
Needs only torch with CUDA; no network, no Ray. Exit code 0 when every part worked.
`--smoke` runs the same code on the CPU with tiny shapes, to check the script itself without a GPU.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from pipeline.train import distributed  # noqa: E402
from pipeline.train.model import SIZES, ModelArgs, Transformer, count_parameters  # noqa: E402

SMOKE = "--smoke" in sys.argv
DEVICE = "cpu" if SMOKE else "cuda"
VOCAB, SEQ_LEN = (512, 32) if SMOKE else (50304, 1024)
if SMOKE:
    SIZES = {"125m": dict(dim=64, n_layers=2, n_heads=4), "350m": dict(dim=64, n_layers=3, n_heads=4)}
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0}
BATCH = {"125m": 32, "350m": 16}  # sequences of SEQ_LEN tokens per step
WORK = Path(tempfile.mkdtemp(prefix="gpu_check_"))


def build(size: str):
    torch.manual_seed(0)
    with torch.device(DEVICE):
        model = Transformer(ModelArgs(vocab_size=VOCAB, seq_len=SEQ_LEN, **SIZES[size]))
    n_params = count_parameters(model)
    distributed.shard_model(model, "bf16")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    return model, optimizer, n_params


def train_step(model, optimizer, inputs, targets) -> float:
    logits = model(inputs)
    loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
    loss.backward()
    distributed.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def batch(size: str, seed: int):
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (BATCH[size], SEQ_LEN + 1), device=DEVICE, generator=generator)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def synchronize():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def throughput(size: str, peak: float, warmup: int = 3, steps: int = 20) -> dict:
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    model, optimizer, n_params = build(size)
    inputs, targets = batch(size, 0)
    for _ in range(warmup):
        train_step(model, optimizer, inputs, targets)
    synchronize()
    started = time.perf_counter()
    for _ in range(steps):
        loss = train_step(model, optimizer, inputs, targets)
    synchronize()
    seconds = (time.perf_counter() - started) / steps
    tokens_per_s = BATCH[size] * SEQ_LEN / seconds
    result = {
        "parameters": n_params,
        "batch_tokens": BATCH[size] * SEQ_LEN,
        "step_s": seconds,
        "tokens_per_s": tokens_per_s,
        "mfu": 6 * n_params * tokens_per_s / (peak * 1e12),
        "loss_after_steps": loss,
        "max_memory_gb": torch.cuda.max_memory_allocated() / 1e9 if DEVICE == "cuda" else None,
        "state_gb_at_16_bytes_per_parameter": 16 * n_params / 1e9,
    }
    del model, optimizer
    return result


def checkpoint_roundtrip() -> dict:
    from pipeline.train.checkpoint import Checkpointer

    model, optimizer, _ = build("125m")
    inputs, targets = batch("125m", 0)
    for _ in range(2):
        train_step(model, optimizer, inputs, targets)
    folder = WORK / "checkpoints"
    checkpoints = Checkpointer(folder, keep=2, async_save=False)
    synchronize()
    save_s = checkpoints.save(2, model, optimizer, {"step": 2})
    size = sum(f.stat().st_size for f in (folder / "step-00000002").iterdir())
    probe = batch("125m", 1)
    with torch.no_grad():
        before = F.cross_entropy(model(probe[0]).float().flatten(0, 1), probe[1].flatten()).item()
    train_step(model, optimizer, inputs, targets)  # move away from the saved state
    with torch.no_grad():
        moved = F.cross_entropy(model(probe[0]).float().flatten(0, 1), probe[1].flatten()).item()
    synchronize()
    started = time.perf_counter()
    latest = checkpoints.latest()
    assert latest is not None  # saved above
    checkpoints.load(latest, model, optimizer)
    synchronize()
    load_s = time.perf_counter() - started
    with torch.no_grad():
        after = F.cross_entropy(model(probe[0]).float().flatten(0, 1), probe[1].flatten()).item()
    moved_away = moved != before
    async_checkpoints = Checkpointer(WORK / "async", keep=2, async_save=True)
    async_blocking_s = async_checkpoints.save(3, model, optimizer, {"step": 3})
    started = time.perf_counter()
    async_checkpoints.wait()
    async_rest_s = time.perf_counter() - started
    del model, optimizer
    return {
        "save_s": save_s,
        "load_s": load_s,
        "bytes": size,
        "same_loss_after_load": abs(before - after) < 1e-5,
        "loss_saved": before,
        "loss_after_one_more_step": moved,
        "loss_loaded": after,
        "moved_away": moved_away,
        "async_blocking_s": async_blocking_s,
        "async_background_s_after_blocking": async_rest_s,
    }


def cli_run() -> dict:
    try:
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq
        import yaml  # noqa: F401  (the config loader needs it)
    except ImportError as exc:
        return {"skipped": f"{exc}"}
    data = WORK / "run"
    (data / "tokens").mkdir(parents=True)
    rng = np.random.default_rng(0)
    rows = 256
    tokens = rng.integers(0, min(1000, VOCAB), size=(rows, SEQ_LEN + 1)).astype(np.uint16)  # few ids: learnable
    table = pa.table(
        {
            "tokens": pa.FixedSizeListArray.from_arrays(pa.array(tokens.ravel()), SEQ_LEN + 1),
            "source": pa.array(["synthetic"] * rows),
            "length": pa.array([SEQ_LEN + 1] * rows, pa.int32()),
        }
    )
    pq.write_table(table, data / "tokens" / "part-00000.parquet")
    (data / "manifest.json").write_text(
        json.dumps(
            {
                "tokens": {
                    "seq_len": SEQ_LEN,
                    "vocab_size": VOCAB,
                    "eos_id": 0,
                    "pad_id": None,
                    "dtype": "uint16",
                    "shards": [{"path": "tokens/part-00000.parquet", "sequences": rows}],
                    "sequences": rows,
                }
            }
        )
    )
    config = data / "train.yaml"
    model = "{dim: 64, n_layers: 2, n_heads: 4}" if SMOKE else "{size: 125m}"
    config.write_text(
        f"train:\n  device: {DEVICE}\n  workers: 1\n  steps: 20\n  batch_size: 8\n  lr: 0.0006\n"
        f"  warmup_steps: 5\n  log_every: 5\n  model: {model}\n  checkpoint: {{interval: 5}}\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pipeline", "train", str(config), "--data", str(data)]
    started = time.perf_counter()
    first = subprocess.run(
        command + ["--stop-after", "10"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=240
    )
    second = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=240)
    seconds = time.perf_counter() - started
    result = {
        "seconds": seconds,
        "exit_codes": [first.returncode, second.returncode],
        "resumed": "resumed from" in second.stdout,
    }
    if first.returncode or second.returncode:
        result["output_tail"] = (first.stdout + first.stderr)[-1500:] + (second.stdout + second.stderr)[-1500:]
        return result
    steps = [json.loads(line) for line in (data / "train" / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "event" not in s]
    result.update(
        {
            "losses": [round(s["loss"], 4) for s in steps],
            "last_step": steps[-1],
            "summary": json.loads((data / "train" / "summary.json").read_text()),
        }
    )
    return result


def transformer_scorer() -> dict:
    """crawlbelt's transformers scorer (stages/model_scorer.py) on the GPU: documents per second with a
    BERT-base-shaped model (12 layers, 768 wide, random weights) at 512 tokens under bf16 autocast, the texts
    sorted and padded per batch as in a run. Goal: 2,000 documents/s on an H200 (FineWeb-Edu's published rate
    is about 1,000 per H100). Needs transformers (the classify extra): skipped without it."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return {"skipped": "transformers is not installed (the classify extra)"}
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_scorer import bert_folder

    from stages.model_scorer import TransformerScorer

    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    count, layers, hidden, heads = (64, 2, 64, 2) if SMOKE else (8192, 12, 768, 12)
    texts = [" ".join(rng.choices(words, k=rng.randint(300, 700))) for _ in range(count)]
    folder = bert_folder(WORK / "scorer-bert", texts[:500], layers, hidden, heads)
    scorer = TransformerScorer(str(folder), max_tokens=512, batch_size=256, device=DEVICE)
    scorer.score(texts[:512])  # loaded and warm, as an actor is after its first file
    synchronize()
    started = time.perf_counter()
    scores, _ = scorer.score(texts)
    synchronize()
    seconds = time.perf_counter() - started
    tokens = sum(len(ids) for ids in scorer.tokenize(texts))
    return {
        "documents": len(texts),
        "tokens": tokens,
        "seconds": round(seconds, 2),
        "documents_per_second": round(len(texts) / seconds, 1),
        "shape": f"BERT {layers} layers x {hidden}, 512 tokens, batch 256, bf16 autocast",
        "finite_scores": all(score == score for score in scores),
    }


def main() -> int:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    if DEVICE == "cuda":
        torch.cuda.set_device(0)
    # CPU and CUDA backends: DCP's asynchronous save needs a CPU group.
    dist.init_process_group("gloo" if SMOKE else "cpu:gloo,cuda:nccl", rank=0, world_size=1)
    name = torch.cuda.get_device_name(0) if DEVICE == "cuda" else "cpu (smoke test)"
    peak = next((v for k, v in PEAK_TFLOPS.items() if k in name), 989.0)
    report: dict[str, Any] = {
        "device": name,
        "torch": torch.__version__,
        "peak_tflops": peak,
        "seq_len": SEQ_LEN,
        "vocab": VOCAB,
    }
    ok = True
    for part, run in [
        ("throughput_125m", lambda: throughput("125m", peak)),
        ("throughput_350m", lambda: throughput("350m", peak)),
        ("checkpoint", checkpoint_roundtrip),
        ("cli_run", cli_run),
        ("transformer_scorer", transformer_scorer),
    ]:
        started = time.perf_counter()
        try:
            report[part] = run()
        except Exception:  # report the failure and go on to the next part
            report[part] = {"error": traceback.format_exc()[-2000:]}
            ok = False
        report[part]["part_seconds"] = round(time.perf_counter() - started, 1)
        print(f"{part}: done in {report[part]['part_seconds']} s", file=sys.stderr, flush=True)
    cli = report["cli_run"]
    ok = (
        ok
        and report["checkpoint"].get("same_loss_after_load", False)
        and ("skipped" in cli or cli.get("exit_codes") == [0, 0] and cli.get("resumed"))
    )
    report["ok"] = bool(ok)
    text = json.dumps(report, indent=1, default=str)
    print(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_check.json").write_text(text)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
