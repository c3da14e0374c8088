"""Failures of the engines and their processes end in bounded time with one line, on Ray and on Spark: a user
stage that kills its worker process, a Ray or Spark address where nothing answers, a malformed one, and a
stage's `print`, which reaches the console and run.log. Real subprocesses, a real Ray and a real Spark; every
run has a timeout, so a run that hangs fails the test instead of hanging it."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers import CONFIGS, FIXTURES, ROOT, SPARK_SETTINGS, assert_same_output, needs_spark
from pipeline.passes import filtering
from test_user_stages import PYTHON, base_config, write_jsonl

KILLERS = """
import ctypes
import os
import signal
import time


def _hits(batch):
    # The probe batch that validation runs (2 rows) passes; the belt's batches of page 7 do not.
    return batch.num_rows > 2 and any(text.startswith("Page 7 ") for text in batch["text"].to_pylist())


class Exits:
    def __call__(self, batch):
        if _hits(batch):
            os._exit(1)
        return {}


class ExitsBesideSlowOnes:
    # Exits on page 7's file while the other files' tasks are still running: Spark then kills their workers
    # too, and the driver must still name the file that did it.

    def __call__(self, batch):
        if _hits(batch):
            os._exit(1)
        if batch.num_rows > 2:
            time.sleep(20)
        return {}


class Segfaults:
    def __call__(self, batch):
        if _hits(batch):
            ctypes.string_at(0)
        return {}


class StuckInC:
    def __call__(self, batch):
        if _hits(batch):  # for ever in one C call (without the GIL) that never looks at signals
            signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})
            ctypes.CDLL(None).pause()
        return {}


class Prints:
    def __call__(self, batch):
        print(f"prints: a batch of {batch.num_rows} rows")
        return {}
"""


def run_cli(args: list[str], cwd: Path, timeout: float = 240, console: bool = False) -> subprocess.CompletedProcess:
    """The command line in `cwd`, with `cwd` on PYTHONPATH (where KILLERS is). `console`: stdout and stderr
    in one stream, `stdout`, in the order a user's console shows them."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT} if console else {"capture_output": True}
    return subprocess.run([PYTHON, "-m", "pipeline", *args], cwd=cwd, env=env, text=True, timeout=timeout, **streams)


def own_lines(console: str) -> list[str]:
    """The console's lines but those Ray relays from its raylet and workers ("(raylet) ...", "(pid=...) ...")."""
    relayed = re.compile(r"^(\x1b\[\d+m)?\(")
    return [line for line in console.strip().splitlines() if not relayed.match(line)]


def config_with_stage(tmp_path: Path, target: str, **extra) -> Path:
    """Three JSONL files of five documents (page 7 is in the second) and a belt with the stage `target` of
    KILLERS; the module is outside the repository, on PYTHONPATH."""
    (tmp_path / "killers.py").write_text(KILLERS)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for f in range(3):
        write_jsonl(inputs / f"part-{f}.jsonl", f * 5, 5)
    stage = {"use": f"killers:{target}", "timeout_s": 30 if target == "ExitsBesideSlowOnes" else 0.5}
    raw = base_config([str(inputs)], tmp_path / "out", stages=["language", stage], **extra)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "engine, target",
    [
        ("ray", "Exits"),
        ("ray", "Segfaults"),
        ("ray", "StuckInC"),
        pytest.param("spark", "ExitsBesideSlowOnes", marks=needs_spark),
        pytest.param("spark", "StuckInC", marks=needs_spark),
    ],
)
def test_a_stage_that_kills_its_worker_stops_in_one_line_naming_the_stage_and_file(tmp_path, engine, target):
    config = config_with_stage(tmp_path, target)
    done = run_cli(["run", str(config), "--set", f"engine={engine}"], tmp_path, console=True)
    ours = "\n".join(own_lines(done.stdout))
    assert done.returncode == 2, done.stdout[-3000:]
    assert "Traceback" not in ours and "\tat org.apache" not in ours, done.stdout[-3000:]
    last = done.stdout.strip().splitlines()[-1]  # ours, after all Ray relays (the console's last line)
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", target).lower()
    assert last.startswith(f"stage error: stage {name} ended its worker process "), last
    assert f"while on {tmp_path / 'inputs' / 'part-1.jsonl'}," in last, last
    assert not (tmp_path / "out" / "docs").exists()


@needs_spark
def test_the_file_the_engine_names_is_blamed_though_other_workers_are_gone_too(tmp_path):
    """Spark kills the workers of a failed job's other tasks: their markers then look like the crash's own.
    The file whose task Spark's error names (engine_spark.failed_item) is the one blamed."""
    from pipeline.engines import engine_spark

    gone = subprocess.Popen(["true"])
    gone.wait()
    for index, stage in [(0, "language"), (1, "exits")]:
        at = {"stage": stage, "path": f"part-{index}.jsonl", "pid": gone.pid, "host": socket.gethostname()}
        (tmp_path / filtering.marker_name(index)).write_text(json.dumps(at))
    assert filtering.crashed_in(tmp_path)["stage"] == "language"  # the first of two alike
    assert filtering.crashed_in(tmp_path, 1) == {**at, "stage": "exits"}
    error = "Job aborted due to stage failure: Task 1 in stage 3.0 failed 4 times, most recent failure: ..."
    assert engine_spark.failed_item(RuntimeError(error)) == 1
    assert engine_spark.failed_item(RuntimeError("Python worker exited unexpectedly (crashed)")) is None


def closed_port() -> int:
    """A loopback port where nothing listens (bound a moment, never listened on)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    return lines[0]


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            ["ray.address=127.0.0.1:{port}"],
            "config error: ray.address '127.0.0.1:{port}': no Ray cluster answers there (",
        ),
        (["ray.address=notaurl"], "config error: ray.address 'notaurl': expected HOST:PORT"),
        pytest.param(
            ["engine=spark", "spark.master=foo"],
            "config error: spark.master 'foo': expected local[N], spark://HOST:PORT, yarn or k8s://...",
            marks=needs_spark,
        ),
        pytest.param(
            ["engine=spark", "spark.master=spark://127.0.0.1:{port}"],
            "config error: spark.master 'spark://127.0.0.1:{port}': no Spark master answers",
            marks=needs_spark,
        ),
    ],
)
def test_a_cluster_address_where_nothing_answers_is_one_line_within_a_minute(tmp_path, settings, message):
    port = closed_port()
    config = config_with_stage(tmp_path, "Prints")
    sets = [arg for setting in settings for arg in ("--set", setting.format(port=port))]
    done = run_cli(["run", str(config), *sets], tmp_path, timeout=60)
    assert done.returncode == 2
    assert one_line(done).startswith(message.format(port=port))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ray", pytest.param("spark", marks=needs_spark)])
def test_a_stage_that_prints_reaches_the_console_and_run_log(tmp_path, engine):
    config = config_with_stage(tmp_path, "Prints")
    done = run_cli(["run", str(config), "--set", f"engine={engine}"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    run_log = (tmp_path / "out" / "run.log").read_text()
    for f in range(3):
        line = f"stage prints on {tmp_path / 'inputs' / f'part-{f}.jsonl'}: prints: a batch of 5 rows"
        assert done.stderr.count(line) == 1 and line in run_log, done.stderr[-3000:]


@pytest.mark.slow
@needs_spark
def test_ctrl_c_on_spark_is_one_line_and_a_rerun_gives_the_same_bytes(fixture_crawl_on_ray, tmp_path):
    out = tmp_path / "out"
    inputs = sorted(str(p) for p in (FIXTURES / "warc").iterdir())
    sets = [arg for setting in [*SPARK_SETTINGS, "engine=spark"] for arg in ("--set", setting)]
    command = [sys.executable, "-m", "pipeline", "run", str(CONFIGS / "local.yaml"), "--input", *inputs]
    command += ["--output", str(out), *sets]
    # As a terminal runs it (tests/test_one_line_errors.py): a process group of its own, SIGINT's default action.
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300
    while not (out / "_work" / "filtered").exists():  # the filter pass has started
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()[-3000:]
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: to the driver, the JVM and the Python workers
    stderr = process.communicate(timeout=120)[1]
    assert process.returncode == 130, stderr[-3000:]
    lines = stderr.strip().splitlines()
    assert lines[-1].startswith("crawlbelt: interrupted; run the same command again to resume"), stderr[-3000:]
    noise = [line for line in lines if "Traceback" in line or line.startswith(("\tat ", "spark: ", "root: "))]
    assert not noise, stderr[-3000:]

    rerun = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert_same_output(fixture_crawl_on_ray, out)
