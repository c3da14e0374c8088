"""`python -m pipeline submit CONFIG.yaml --address http://HEAD:8265 [--wait]`: run a config on a Ray cluster.

It calls `ray job submit` with the config's folder as the job's working directory and the same entrypoint
as on one machine (`python -m pipeline run CONFIG.yaml ...`), so the job id, its status and its logs are
the ones Ray shows (`ray job status ID`, `ray job logs ID`, the dashboard). The cluster's nodes need
crawlbelt installed (docker/Dockerfile): the working directory is the driver's, and the job's tasks run the
crawlbelt of their node (pipeline.engine.start_ray; docs/design.md).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

from pipeline.config import Config, ConfigError, read_config


def check_config(config_path: str, overrides: list[str], output: str | None) -> Config:
    """The checks that make sense away from the cluster: the file parses, every key and type is known,
    and the output is a place every node sees. Inputs are checked by the job itself, where they are read."""
    config = read_config(config_path, overrides)
    target = output or config.output
    # A relative output would land in the job's temporary working directory and vanish with it.
    if "://" not in target and not os.path.isabs(target):
        raise ConfigError(
            f"output {target!r}: a submitted job needs an absolute path on storage every node "
            "sees, or an s3:// URI (set it in the config or with --output)"
        )
    return config


def submit_command(args) -> int:
    try:
        check_config(args.config, args.overrides, args.output)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    config = Path(args.config).resolve()
    working_dir = Path(args.working_dir).resolve() if args.working_dir else config.parent
    if not config.is_relative_to(working_dir):
        print(f"submit: the config {str(config)!r} is not inside --working-dir {str(working_dir)!r}", file=sys.stderr)
        return 2
    entrypoint = ["python", "-m", "pipeline", "run", str(config.relative_to(working_dir))]
    for assignment in args.overrides:
        entrypoint += ["--set", assignment]
    if args.output:
        entrypoint += ["--output", args.output]
    env_vars = {}
    for name in args.env:
        if name not in os.environ:
            print(f"submit: --env {name}: not set here", file=sys.stderr)
            return 2
        env_vars[name] = os.environ[name]
    if not args.address.startswith(("http://", "https://")):
        print(
            f"submit: --address {args.address!r}: expected the head's dashboard, e.g. http://HEAD:8265", file=sys.stderr
        )
        return 2
    why = unreachable(args.address)
    if why is not None:
        print(
            f"submit: no Ray cluster answers at --address {args.address} ({why}; give the head's dashboard, "
            "e.g. http://HEAD:8265)",
            file=sys.stderr,
        )
        return 2
    submission_id = args.submission_id or f"crawlbelt-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    command = [
        ray_executable(),
        "job",
        "submit",
        "--address",
        args.address,
        "--submission-id",
        submission_id,
        "--working-dir",
        str(working_dir),
    ]
    if env_vars:
        command += ["--runtime-env-json", json.dumps({"env_vars": env_vars})]
    if not args.wait:
        command.append("--no-wait")
    command += ["--", *entrypoint]
    print(f"submit: job {submission_id}: {' '.join(entrypoint)}", flush=True)
    # `ray job submit` prints the job id and next steps; with --wait it streams the logs and exits 1 on failure.
    return subprocess.call(command)


def unreachable(address: str) -> str | None:
    """Why the cluster's job server does not answer, or None if it does, asked as `ray job submit` first asks
    it (that command answers an address where nothing listens with a long traceback)."""
    from ray.job_submission import JobSubmissionClient  # imports Ray: only once the arguments are known to be good

    try:
        JobSubmissionClient(address)
    except ConnectionError:
        return "nothing listens there"
    except (RuntimeError, ValueError, OSError) as error:  # not a Ray dashboard, a bad URL (requests' errors)
        return str(error).splitlines()[0] if str(error) else type(error).__name__
    return None


def ray_executable() -> str:
    """The `ray` command of this Python environment, else the one on PATH."""
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else (shutil.which("ray") or "ray")
