"""The train stage on real torch.distributed: two CPU processes with gloo (torchrun, and once Ray Train),
a tiny model, token shards made from the fixture crawl's articles by a real BPE tokenizer."""

import json
import os
import pickle
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT
from pipeline.cli import main
from pipeline.train.resume import complete_checkpoints
from token_shards import write_token_shards

# Run side by side (CRAWLBELT_TEST_WORKERS), one worker still runs this file's tests in order: the module's
# corpus is made once, and no two torchruns share the cores.
pytestmark = pytest.mark.xdist_group("torchrun")

# 24 steps of 8 sequences of 64 tokens; the corpus has about 200 sequences, so the stream wraps once.
TRAIN_YAML = """
train:
  steps: 24
  batch_size: 8
  lr: 0.003
  warmup_steps: 4
  log_every: 100
  checkpoint: {interval: 4, keep: 2}
  spike: {window: 5, factor: 2.0, persist: 1}
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    write_token_shards(folder)
    (folder / "train.yaml").write_text(TRAIN_YAML)
    return folder


def fresh_run(corpus: Path, folder: Path) -> Path:
    """A curation output folder of its own (manifest and tokens), so each run has its own train/."""
    folder.mkdir()
    shutil.copy(corpus / "manifest.json", folder)
    shutil.copytree(corpus / "tokens", folder / "tokens")
    return folder


def train(corpus: Path, data: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "train", str(corpus / "train.yaml"), "--data", str(data), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def metrics(data: Path) -> tuple[dict[int, dict], list[dict]]:
    """The last record of each step, and the events, from the run's metrics.jsonl."""
    steps, events = {}, []
    for line in (data / "train" / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "event" in record:
            events.append(record)
        else:
            steps[record["step"]] = record
    return steps, events


def step_records(data: Path) -> list[dict]:
    """Every step record of metrics.jsonl in order, steps done again after a rollback included."""
    records = [json.loads(line) for line in (data / "train" / "metrics.jsonl").read_text().splitlines()]
    return [r for r in records if "event" not in r]


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory):
    data = fresh_run(corpus, tmp_path_factory.mktemp("uninterrupted") / "out")
    train(corpus, data)
    return data


@pytest.mark.slow
def test_loss_falls_with_bf16_compute_and_fp32_master_weights(uninterrupted):
    steps, events = metrics(uninterrupted)
    assert sorted(steps) == list(range(1, 25))
    losses = [steps[s]["loss"] for s in range(1, 25)]
    assert sum(losses[:3]) / 3 - sum(losses[-3:]) / 3 > 0.5, losses
    lrs = [steps[s]["lr"] for s in range(1, 25)]
    assert lrs[:4] == sorted(lrs[:4]) and lrs[4:] == sorted(lrs[4:], reverse=True)  # warmup, then cosine
    assert all(steps[s]["grad_norm"] > 0 and steps[s]["tokens_per_s"] > 0 for s in steps)
    summary = json.loads((uninterrupted / "train" / "summary.json").read_text())
    assert summary["compute_dtype"] == "torch.bfloat16" and summary["master_dtype"] == "torch.float32"
    assert summary["bytes_per_parameter"] == 16.0  # fp32 master 4 + fp32 gradient 4 + Adam 8, over 2 shards
    assert [e["step"] for e in events if e["event"] == "checkpoint"] == [4, 8, 12, 16, 20, 24]
    kept = sorted(p.name for p in (uninterrupted / "train" / "checkpoints").iterdir())
    assert kept == ["step-00000020", "step-00000024"]


@pytest.mark.slow
def test_stop_and_resume_gives_the_same_losses_bit_for_bit(corpus, uninterrupted, tmp_path):
    data = fresh_run(corpus, tmp_path / "out")
    # Asynchronous saves here, synchronous in the uninterrupted run: both must hold the same state.
    train(corpus, data, "--stop-after", "10", "--set", "train.checkpoint.async_save=true")
    checkpoints = data / "train" / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-00000008", "step-00000010"]
    # A save that was cut off: complete-looking files under the .tmp name. It must never be loaded.
    shutil.copytree(checkpoints / "step-00000010", checkpoints / "step-00000012.tmp")
    state = json.loads((checkpoints / "step-00000012.tmp" / "state.json").read_text())
    (checkpoints / "step-00000012.tmp" / "state.json").write_text(json.dumps({**state, "step": 12}))
    result = train(corpus, data, "--set", "train.checkpoint.async_save=true")
    assert "resumed from" in result.stdout and "step-00000010 at step 10" in result.stdout
    assert not (checkpoints / "step-00000012.tmp").exists()

    expected, _ = metrics(uninterrupted)
    resumed, events = metrics(data)
    assert [e["step"] for e in events if e["event"] == "resume"] == [10]
    for step in range(1, 25):
        for key in ("loss", "grad_norm", "lr", "batch"):
            assert resumed[step][key] == expected[step][key], (step, key)


@pytest.mark.slow
def test_corrupted_batches_spike_and_training_rolls_back_past_them_twice(corpus, tmp_path):
    data = fresh_run(corpus, tmp_path / "out")
    # Batches 13 and 14 become random tokens. To a barely trained tiny model that is only about 1.2 times
    # its usual loss, so the drill uses f = 1.15; normal steps stay within a few percent of the median.
    train(corpus, data, "--set", "train.corrupt_batches=[13, 14]", "--set", "train.spike.factor=1.15")
    steps, events = metrics(data)
    spikes = [e for e in events if e["event"] == "spike"]
    # Step 14 (batch 13) spikes: back to step 12. Step 13 again, now on batch 14, spikes: back to step 12 again.
    assert [e["step"] for e in spikes] == [14, 13] and all(e["loss"] > 1.15 * e["median"] for e in spikes)
    # The logged median is the rule's: of the `window` (5) losses before the spike, the first time steps
    # 9-13; the second time the checkpoint's, steps 8-12 (before the first rollback).
    first_losses = [r["loss"] for r in step_records(data)]
    assert spikes[0]["median"] == statistics.median(first_losses[8:13])
    assert spikes[1]["median"] == statistics.median(first_losses[7:12])
    first, second = (
        {"spike_step": 14, "to_step": 12, "skipped_batches": [12, 13]},
        {"spike_step": 13, "to_step": 12, "skipped_batches": [12, 14]},
    )
    assert [e for e in events if e["event"] == "rollback"] == [
        {"event": "rollback", **first},
        {"event": "rollback", **second},
    ]
    # Step 13 was done again on the batch after both spikes; training went on to the end.
    assert steps[13]["batch"] == 15 and steps[14]["batch"] == 16 and steps[24]["batch"] == 26
    assert steps[24]["loss"] < spikes[0]["loss"] and max(steps[s]["loss"] for s in steps) < spikes[0]["loss"]
    summary = json.loads((data / "train" / "summary.json").read_text())
    assert summary["steps"] == 24 and summary["rollbacks"] == [first, second]
    log = (data / "train" / "log.txt").read_text()
    assert "rolled back to step 12" in log and "skipping batches 12 to 13" in log and "skipping batches 12 to 14" in log


@pytest.mark.slow
def test_fp16_with_loss_scaling_and_checkpoint_interval_by_youngs_rule(corpus, tmp_path):
    data = fresh_run(corpus, tmp_path / "out")
    result = train(
        corpus,
        data,
        "--set",
        "train.precision=fp16",
        "--set",
        "train.steps=8",
        "--set",
        "train.checkpoint.interval=auto",
        "--set",
        "train.checkpoint.mtbf_hours=0.001",
    )
    steps, events = metrics(data)
    assert sorted(steps) == list(range(1, 9)) and all(s["loss_scale"] == 2.0**16 for s in steps.values())
    assert steps[8]["loss"] < steps[1]["loss"]
    chosen = [e for e in events if e["event"] == "checkpoint_interval"]
    assert chosen and chosen[0]["save_seconds"] > 0 and chosen[0]["mtbf_hours"] == 0.001
    assert chosen[0]["interval_seconds"] == pytest.approx((2 * chosen[0]["save_seconds"] * 3.6) ** 0.5)
    assert "checkpoint interval (auto): save C = " in result.stdout and "MTBF M = 0.001 h" in result.stdout
    assert json.loads((data / "train" / "summary.json").read_text())["compute_dtype"] == "torch.float16"


@pytest.mark.slow
def test_fp32_compute_trains_without_loss_scaling(corpus, tmp_path):
    data = fresh_run(corpus, tmp_path / "out")
    train(corpus, data, "--set", "train.precision=fp32", "--set", "train.steps=6")
    steps, _ = metrics(data)
    assert sorted(steps) == list(range(1, 7)) and steps[6]["loss"] < steps[1]["loss"]
    assert json.loads((data / "train" / "summary.json").read_text())["compute_dtype"] == "torch.float32"


def test_precision_policy_and_global_grad_norm_across_shards(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node=2",
            str(ROOT / "tests" / "dist_checks.py"),
            str(tmp_path / "result.json"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    checks = json.loads((tmp_path / "result.json").read_text())
    assert checks["world"] == 2
    precision = checks["precision"]
    assert precision["master_dtypes"] == ["torch.float32"] and precision["optimizer_params_are_master"]
    assert precision["moment_dtypes"] == ["torch.float32"] and precision["grad_dtypes"] == ["torch.float32"]
    assert precision["compute_weight_dtypes"] == ["torch.bfloat16"]
    assert precision["activation_dtypes"] == ["torch.bfloat16"] and precision["logits_dtype"] == "torch.bfloat16"
    assert precision["master_has_values_beyond_bf16"]
    norm = checks["grad_norm"]
    assert norm["gathered_grad_max_error"] < 1e-6  # the sharded model's gradients are the full model's
    assert norm["sharded_norm"] == pytest.approx(norm["gathered_norm"], rel=1e-6)
    assert norm["sharded_norm"] == pytest.approx(norm["reference_norm"], rel=1e-5)
    assert norm["local_shard_norm"] < 0.9 * norm["reference_norm"]  # one shard alone would be wrong
    assert norm["returned_norm"] == norm["sharded_norm"]
    assert norm["clipped_norm"] == pytest.approx(norm["max_norm"], rel=1e-5)
    assert norm["clipped_direction_max_error"] < 1e-6


@pytest.mark.slow
def test_ray_train_runs_the_same_loop_with_the_same_losses(corpus, uninterrupted, tmp_path):
    data = fresh_run(corpus, tmp_path / "out")
    result = train(
        corpus,
        data,
        "--stop-after",
        "4",
        "--set",
        "train.launcher=ray",
        "--set",
        "ray.num_cpus=2",
        "--set",
        "ray.object_store_mb=256",
    )
    assert "train: 4 steps" in result.stdout
    expected, _ = metrics(uninterrupted)
    steps, _ = metrics(data)
    assert [steps[s]["loss"] for s in range(1, 5)] == [expected[s]["loss"] for s in range(1, 5)]


def test_checkpoints_of_other_shards_are_refused_in_one_line_before_torchrun(corpus, uninterrupted, tmp_path):
    # The curation run was redone (here: other sequence lengths) after training; its train/ folder stayed.
    data = tmp_path / "out"
    write_token_shards(data, seq_len=32)
    shutil.copytree(uninterrupted / "train" / "checkpoints", data / "train" / "checkpoints")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "train", str(corpus / "train.yaml"), "--data", str(data)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: train.data: "), result.stderr
    assert "step-00000024 was made on other token shards" in lines[0]
    assert not (data / "train" / "metrics.jsonl").exists()


@pytest.fixture(scope="module")
def resumable(corpus, uninterrupted, tmp_path_factory):
    """Token shards with a run's checkpoints (model dim 64, 2 layers) and nothing else of the run."""
    data = fresh_run(corpus, tmp_path_factory.mktemp("resumable") / "out")
    shutil.copytree(uninterrupted / "train" / "checkpoints", data / "train" / "checkpoints")
    return data


@pytest.mark.parametrize(
    "arguments, expected",
    [
        (["--set", "train.lr=-1"], "config error: train.lr: expected a finite number above 0, got -1.0"),
        (["--set", "train.lr=.nan"], "config error: train.lr: expected a finite number, got nan"),
        (["--set", "train.min_lr=0.01"], "config error: train.min_lr: expected a number in [0, train.lr = 0.003]"),
        (["--set", "train.beta1=-0.1"], "config error: train.beta1: expected a number in [0, 1), got -0.1"),
        (["--set", "train.beta2=1.5"], "config error: train.beta2: expected a number in [0, 1), got 1.5"),
        (["--set", "train.weight_decay=-1"], "config error: train.weight_decay: expected a finite number >= 0"),
        (["--set", "train.warmup_steps=-5"], "config error: train.warmup_steps: expected an integer >= 0, got -5"),
        (["--set", "train.grad_clip=-1"], "config error: train.grad_clip: expected a finite number above 0"),
        (
            ["--set", "train.peak_tflops=-1"],
            "config error: train.peak_tflops: expected a finite number above 0 or null",
        ),
        (["--set", "train.max_restarts=-1"], "config error: train.max_restarts: expected an integer >= 0, got -1"),
        (
            ["--set", "train.start_timeout_s=.inf"],
            "config error: train.start_timeout_s: expected a finite number, got inf",
        ),
        (["--set", "train.seed=-1"], "config error: train.seed: expected an integer in [0, 2^32), got -1"),
        (["--set", "train.steps=0"], "config error: train.steps: expected a positive integer, got 0"),
        (["--set", "train.corrupt_batches=[-1]"], "config error: train.corrupt_batches: expected batch numbers >= 0"),
        (["--set", "train.spike.window=0"], "config error: train.spike.window: expected a positive integer, got 0"),
        (["--set", "train.spike.factor=.inf"], "config error: train.spike.factor: expected a finite number, got inf"),
        (["--set", "train.spike.persist=-1"], "config error: train.spike.persist: expected an integer >= 0, got -1"),
        (["--set", "train.checkpoint.keep=0"], "config error: train.checkpoint.keep: expected a positive integer"),
        (
            ["--set", "train.checkpoint.mtbf_hours=0"],
            "config error: train.checkpoint.mtbf_hours: expected a finite number",
        ),
        (
            ["--set", "train.checkpoint.interval=0"],
            "config error: train.checkpoint.interval: expected a positive integer",
        ),
        (["--set", "train.model.dim=0"], "config error: train.model.dim: expected a positive integer, got 0"),
        (["--set", "train.model.n_heads=0"], "config error: train.model.n_heads: expected a positive integer, got 0"),
        (["--set", "train.model.ffn_dim=0"], "config error: train.model.ffn_dim: expected a positive integer or null"),
        (
            ["--set", "train.model.rope_theta=-1"],
            "config error: train.model.rope_theta: expected a finite number above 0",
        ),
        (
            ["--set", "train.device=cuda", "--set", "train.workers=64", "--set", "train.batch_size=64"],
            "config error: train.device: cuda needs 64 GPUs (train.workers) and this machine has ",
        ),
        (["--stop-after", "0"], "crawlbelt train: error: argument --stop-after: expected a positive integer, got '0'"),
        # The checkpoints were made with 2 layers of width 64: fewer layers would be dropped, more or wider fail.
        (["--set", "train.model.n_layers=1"], "config error: train.model: "),
        (["--set", "train.model.n_layers=4"], "config error: train.model: "),
        (["--set", "train.model.dim=128"], "config error: train.model: "),
    ],
)
def test_train_mistakes_are_one_line_config_errors_before_anything_starts(
    corpus, resumable, capsys, arguments, expected
):
    try:
        code = main(["train", str(corpus / "train.yaml"), "--data", str(resumable), *arguments])
    except SystemExit as exit_:  # argparse's own usage error: the usage, then one line
        code = exit_.code
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    error = captured.err.strip().splitlines()[-1]
    assert error.startswith(expected), captured.err
    assert captured.err.startswith("usage: ") or len(captured.err.strip().splitlines()) == 1, captured.err
    if error.startswith("config error: train.model: "):
        changed = {
            "n_layers=1": "n_layers 2 there, 1 here",
            "n_layers=4": "n_layers 2 there, 4 here",
            "dim=128": "dim 64 there, 128 here",
        }[arguments[-1].split(".")[-1]]
        assert "step-00000024 was made with another model shape (" in error and changed in error
    assert sorted(p.name for p in (resumable / "train").iterdir()) == ["checkpoints"]  # nothing written


class _Planted:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):  # unpickling this runs a command
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_checkpoint_metadata_is_refused_in_one_line_and_nothing_in_it_runs(
    corpus, resumable, tmp_path, capsys
):
    data = tmp_path / "out"
    shutil.copytree(resumable, data)
    latest = complete_checkpoints(data / "train" / "checkpoints")[-1]
    marker = tmp_path / "ran"
    (latest / ".metadata").write_bytes(pickle.dumps({"storage_data": [_Planted(marker)]}))
    code = main(["train", str(corpus / "train.yaml"), "--data", str(data)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err == (
        f"config error: train.data: {latest}/.metadata names posix.system, which no DCP checkpoint holds: it was "
        f"not written by crawlbelt and is not loaded; move {data / 'train'} away to start a new run\n"
    )
    assert not marker.exists()


@pytest.mark.slow
def test_ctrl_c_is_one_line_exit_130_and_a_rerun_resumes(corpus, tmp_path):
    data = fresh_run(corpus, tmp_path / "out")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [
        sys.executable,
        "-m",
        "pipeline",
        "train",
        str(corpus / "train.yaml"),
        "--data",
        str(data),
        "--set",
        "train.steps=100000",
    ]
    # As a terminal runs it: a process group of its own with the default SIGINT action (this test's own
    # runner may have started with SIGINT ignored, which children inherit), then SIGINT to the whole group.
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    checkpoints = data / "train" / "checkpoints"
    while not complete_checkpoints(checkpoints) and process.poll() is None:
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert (
        err == f"train: interrupted; run the same command again to resume from the last checkpoint in {checkpoints}\n"
    )
    assert "Traceback" not in out
    last = int(complete_checkpoints(checkpoints)[-1].name.split("-")[1])
    result = train(corpus, data, "--set", "train.steps=100000", "--stop-after", str(last + 1))
    assert f"resumed from {checkpoints / f'step-{last:08d}'} at step {last}" in result.stdout
    assert f"train: {last + 1} steps" in result.stdout


@pytest.mark.slow
def test_ray_workers_the_cluster_cannot_hold_are_one_line(corpus, tmp_path):
    data = fresh_run(corpus, tmp_path / "out")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "train",
            str(corpus / "train.yaml"),
            "--data",
            str(data),
            "--set",
            "train.launcher=ray",
            "--set",
            "train.workers=4",
            "--set",
            "ray.num_cpus=2",
            "--set",
            "ray.object_store_mb=256",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.strip().splitlines() == [
        "config error: train.workers: 4 CPUs needed, one per worker, and the "
        "Ray cluster has 2; lower train.workers or give the cluster more"
    ]
    assert not (data / "train").exists()


def test_train_without_shards_is_a_one_line_config_error(tmp_path):
    (tmp_path / "train.yaml").write_text("output: nowhere\ntrain: {steps: 3}\n")
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "train", "train.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: train.data: no token shards in "), result.stderr
    assert not (tmp_path / "nowhere").exists()


def test_waiting_for_workers_on_a_cluster_is_bounded(embedded_ray):
    # A cluster that could grow (an autoscaler asked for the workers) is given train.start_timeout_s, then the
    # same one line; here the embedded Ray (conftest.py) stands in for a cluster that did not grow.
    from pipeline.config import ConfigError
    from pipeline.train.launch import wait_for_workers

    wait_for_workers({"CPU": 1}, 2, timeout_s=1)  # fits: returns at once
    with pytest.raises(
        ConfigError,
        match=r"^train.workers: 4 CPUs needed, one per worker, and the Ray cluster "
        r"has 2 after waiting 1 s \(train.start_timeout_s\)",
    ):
        wait_for_workers({"CPU": 1}, 4, timeout_s=1)
