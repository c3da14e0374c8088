"""Starting the workers: torchrun processes on this machine, or Ray Train workers (CPU or GPU).

`python -m pipeline train CONFIG` starts them; each worker runs `loop.train`. Under torchrun the workers
are `python -m pipeline train CONFIG ...` again, which see torchrun's environment and train directly.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time

from pipeline.config import Config, ConfigError


def inside_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ or "LOCAL_RANK" in os.environ


def run_torchrun(config: Config, worker_args: list[str]) -> int:
    """torchrun --standalone on this machine; for several nodes, run torchrun yourself (README).

    The agent runs in a session of its own (its workers have theirs), so a terminal's Ctrl-C reaches only
    this process, which passes one SIGINT on: the agent stops the workers and ends without a word (see
    `quiet_torchrun`), and KeyboardInterrupt goes on to the caller. SIGTERM and SIGHUP are passed on too.
    """
    command = [
        sys.executable,
        "-m",
        "pipeline.train.launch",
        "--standalone",
        f"--nproc-per-node={config.train.workers}",
        f"--max-restarts={config.train.max_restarts}",
        "-m",
        "pipeline",
        "train",
        *worker_args,
    ]
    # torchrun's own default, set here so that it does not print a banner saying so.
    env = {"OMP_NUM_THREADS": "1", **os.environ}
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, lambda signum, frame: sys.exit(128 + signum))
    process = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        return process.wait()
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.wait()


def quiet_torchrun() -> int:
    """torchrun's main. Interrupted, it ends with 128 + the signal and without its traceback or the warnings
    announcing the shutdown (its failures still show). Its workers die of the SIGINT it sends them
    (`train_command`): a checkpoint is complete or invisible, so nothing saved is lost."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.run import main

    for announcing in ("torch.distributed.elastic.agent.server.api", "torch.distributed.elastic.multiprocessing.api"):
        logging.getLogger(announcing).setLevel(logging.ERROR)
    try:
        main()
    except SignalException as exc:
        return 128 + exc.sigval
    return 0


def ray_worker(loop_config: dict) -> None:
    import ray.train.torch

    from pipeline.train.loop import train

    config = loop_config["config"]
    device = ray.train.torch.get_device() if config.train.device == "cuda" else None
    train(config, stop_after=loop_config["stop_after"], device=device)


def run_ray(config: Config, stop_after: int | None) -> int:
    """Ray Train's TorchTrainer: it makes the process group (gloo or NCCL); a failed worker restarts the
    group up to max_restarts times, and the loop resumes from the newest complete checkpoint."""
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    from pipeline.engines.engine_ray import start_ray

    train = config.train
    assert train.data is not None  # validation sets it (pipeline/train/checks.py)
    start_ray(config.ray)
    per_worker: dict[str, float] = {"GPU": 1} if train.device == "cuda" else {"CPU": 1}  # Ray Train's default
    wait_for_workers(per_worker, train.workers, train.start_timeout_s if ray_address(config) else 0)
    trainer = TorchTrainer(
        ray_worker,
        train_loop_config={"config": config, "stop_after": stop_after},
        scaling_config=ScalingConfig(
            num_workers=train.workers, use_gpu=train.device == "cuda", resources_per_worker=per_worker
        ),
        torch_config=TorchConfig(backend="nccl" if train.device == "cuda" else "gloo"),
        run_config=RunConfig(
            name="ray",
            storage_path=os.path.join(train.data, "train"),
            failure_config=FailureConfig(max_failures=train.max_restarts),
        ),
    )
    trainer.fit()
    return 0


def ray_address(config: Config) -> str | None:
    """The cluster joined, as pipeline.engines.engine.start_ray chooses it; None: an embedded Ray of this process."""
    return config.ray.address or os.environ.get("RAY_ADDRESS")


def wait_for_workers(per_worker: dict[str, float], workers: int, timeout_s: float) -> None:
    """Wait until the cluster holds what the workers need, asking an autoscaler for it; an embedded Ray
    (timeout 0) never grows. Without this, Ray Train waits for ever, without a word, for workers it
    cannot place."""
    import ray
    from ray.autoscaler.sdk import request_resources

    needed = {kind: amount * workers for kind, amount in per_worker.items()}
    if timeout_s:
        request_resources(bundles=[per_worker] * workers)
    deadline = time.monotonic() + timeout_s
    while True:
        have = ray.cluster_resources()
        short = {kind: amount for kind, amount in needed.items() if have.get(kind, 0) < amount}
        if not short:
            return
        if time.monotonic() >= deadline:
            wanted = ", ".join(f"{amount:g} {kind}s" for kind, amount in short.items())
            found = ", ".join(f"{have.get(kind, 0):g}" for kind in short)
            waited = f" after waiting {timeout_s:g} s (train.start_timeout_s)" if timeout_s else ""
            raise ConfigError(
                f"train.workers: {wanted} needed, one per worker, and the Ray cluster has {found}"
                f"{waited}; lower train.workers or give the cluster more"
            )
        time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))


if __name__ == "__main__":
    sys.exit(quiet_torchrun())
