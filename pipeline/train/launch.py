"""Starting the workers: torchrun processes on this machine, or Ray Train workers (CPU or GPU).

`python -m pipeline train CONFIG` starts them; each worker runs `loop.train`. Under torchrun the workers
are `python -m pipeline train CONFIG ...` again, which see torchrun's environment and train directly.
"""
from __future__ import annotations

import os
import subprocess
import sys

from pipeline.config import Config


def inside_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ or "LOCAL_RANK" in os.environ


def run_torchrun(config: Config, worker_args: list[str]) -> int:
    """torchrun --standalone on this machine; for several nodes, run torchrun yourself (README)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={config.train.workers}", f"--max-restarts={config.train.max_restarts}",
               "-m", "pipeline", "train", *worker_args]
    return subprocess.call(command)


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

    from pipeline.engine import start_ray

    train = config.train
    start_ray(config.ray)
    trainer = TorchTrainer(
        ray_worker,
        train_loop_config={"config": config, "stop_after": stop_after},
        scaling_config=ScalingConfig(num_workers=train.workers, use_gpu=train.device == "cuda"),
        torch_config=TorchConfig(backend="nccl" if train.device == "cuda" else "gloo"),
        run_config=RunConfig(name="ray", storage_path=os.path.join(train.data, "train"),
                             failure_config=FailureConfig(max_failures=train.max_restarts)),
    )
    trainer.fit()
    return 0
