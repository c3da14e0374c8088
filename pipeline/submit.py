"""`python -m pipeline submit CONFIG.yaml --address http://HEAD:8265 [--wait]`: run a config on a Ray cluster.

It calls `ray job submit` with the same entrypoint as on one machine (`python -m pipeline run CONFIG.yaml
...`), so the job id, its status and its logs are the ones Ray shows (`ray job status ID`, `ray job logs ID`,
the dashboard). The cluster's nodes need crawlbelt installed (docker/Dockerfile): the working directory is
the driver's, and the job's tasks run the crawlbelt of their node (pipeline.engines.engine.start_ray; docs/design.md).

The job's working directory is a copy of only what it needs, never the folder as it is: a folder beside a
config often holds a `.env`, cloud credentials, an SSH key, `.git/config` with a token or earlier outputs,
and Ray would upload them all. The copy holds the config, the local files its values name (inputs, lists,
eval sets, ...), the modules of its own stages found in the folder, and what `--include` adds; dot-files,
keys and credential files are never sent.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pipeline.config import Config, ConfigError
from pipeline.config.read import read_config


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


# Never sent, whatever names them: hidden files and folders (.env, .git, .aws, .ssh, .venv), keys and
# credential files.
NEVER_SENT = re.compile(
    r"(^|/)(\.[^/]*|__pycache__|[^/]*\.(pem|key|p12|pfx|jks|kdbx|ppk)|id_(rsa|dsa|ecdsa|ed25519)[^/]*|credentials[^/]*)(/|$)"
)


def job_files(config_path: Path, working_dir: Path, config: Config, includes: list[str]) -> list[Path]:
    """The files a submitted job needs, relative to `working_dir`, sorted: the config; each local file (or the
    files of a folder) that a value of the config names, relative paths taken from the config's folder; the
    Python files of each user stage's top-level package or module found in `working_dir`; and the files
    matching `includes` (globs relative to `working_dir`). ConfigError if one of them may not be sent."""
    found: set[Path] = {config_path}
    settings = dataclasses.asdict(config)
    del settings["output"]  # an earlier output is not the job's to read
    for value in _strings(settings):
        if "://" not in value:
            found.update(_files_named(config_path.parent / value))
    for entry in config.stages or []:
        if isinstance(entry, dict) and isinstance(entry.get("use"), str):
            top = entry["use"].partition(":")[0].split(".")[0]
            found.update(_files_named(working_dir / f"{top}.py"))
            found.update(p for p in _files_named(working_dir / top) if p.suffix == ".py")
    for pattern in includes:
        matched = [f for p in glob.glob(str(working_dir / pattern), recursive=True) for f in _files_named(Path(p))]
        if not matched:
            raise ConfigError(f"--include {pattern!r}: no file matches it in {str(working_dir)!r}")
        found.update(matched)
    inside = sorted({p.resolve().relative_to(working_dir) for p in found if p.resolve().is_relative_to(working_dir)})
    refused = [str(p) for p in inside if NEVER_SENT.search(p.as_posix())]
    if refused:
        raise ConfigError(
            f"submit: {refused[0]!r} would be sent to the cluster, and a hidden, key or credential file never is; "
            "pass secrets with --env NAME"
        )
    return inside


def _strings(value) -> Iterator[str]:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str) and value:
        yield value


def _files_named(path: Path) -> list[Path]:
    """The files `path` names: itself, those under it (a folder), or those it matches (a glob)."""
    if any(c in str(path) for c in "*?["):
        return [f for match in glob.glob(str(path)) for f in _files_named(Path(match))]
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not NEVER_SENT.search(p.as_posix()))
    return []


def stage_working_dir(working_dir: Path, files: list[Path]) -> Path:
    """A new temporary folder holding `files` (relative to `working_dir`) at the same relative places."""
    staged = Path(tempfile.mkdtemp(prefix="crawlbelt-submit-"))
    for relative in files:
        (staged / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(working_dir / relative, staged / relative)
    return staged


def submit_command(args) -> int:
    try:
        checked = check_config(args.config, args.overrides, args.output)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    config = Path(args.config).resolve()
    working_dir = Path(args.working_dir).resolve() if args.working_dir else config.parent
    if not config.is_relative_to(working_dir):
        print(f"submit: the config {str(config)!r} is not inside --working-dir {str(working_dir)!r}", file=sys.stderr)
        return 2
    try:
        files = job_files(config, working_dir, checked, args.include)
    except ConfigError as exc:
        print(str(exc) if str(exc).startswith("submit: ") else f"config error: {exc}", file=sys.stderr)
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
    size = sum((working_dir / f).stat().st_size for f in files)
    print(f"submit: sending {len(files)} files, {size:,} bytes, from {working_dir}: {', '.join(map(str, files))}")
    print(f"submit: job {submission_id}: {' '.join(entrypoint)}", flush=True)
    staged = stage_working_dir(working_dir, files)
    command = [ray_executable(), "job", "submit", "--address", args.address, "--submission-id", submission_id]
    command += ["--working-dir", str(staged)]
    if env_vars:
        command += ["--runtime-env-json", json.dumps({"env_vars": env_vars})]
    if not args.wait:
        command.append("--no-wait")
    command += ["--", *entrypoint]
    try:
        # `ray job submit` uploads the folder before it returns; it prints the job id and next steps, and with
        # --wait streams the logs and exits 1 on failure.
        return submit_when_the_agent_is_ready(command)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


AGENT_NOT_READY = "No available agent to submit job"  # the head's answer until its job agent has registered
AGENT_WAIT_S = 60.0


def submit_when_the_agent_is_ready(command: list[str]) -> int:
    """`ray job submit`, again while the head answers that no job agent is ready yet (for a while after `ray
    start`; no job was made, so the same submission id is free), for at most AGENT_WAIT_S. Its stderr is read
    to see that answer and passed on as it is."""
    deadline = time.monotonic() + AGENT_WAIT_S
    while True:
        done = subprocess.run(command, stderr=subprocess.PIPE, text=True, errors="replace")
        if done.returncode == 0 or AGENT_NOT_READY not in done.stderr or time.monotonic() > deadline:
            sys.stderr.write(done.stderr)
            return done.returncode
        print("submit: the head's job agent is not ready yet; submitting again in 3 s", flush=True)
        time.sleep(3)


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
