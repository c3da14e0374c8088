"""Mistakes and interruptions end in one line, not a traceback, with the right exit code and nothing written:
the commands run as real subprocesses, on a real run's output, a real closed port and a real SIGINT."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray._private import ray_constants

from helpers import ROOT, cli, run_here
from pipeline.cli import interrupted, interrupted_line
from pipeline.config import RAY_OBJECT_STORE_MIN_MB, Config, StorageConfig

SETTINGS = ["--set", "ray.num_cpus=2"]
INTERRUPTED = "crawlbelt: interrupted; run the same command again to resume (the filter pass's finished files are kept)"


def run_command(out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipeline",
        "run",
        str(ROOT / "configs" / "local.yaml"),
        "--output",
        str(out),
        *SETTINGS,
    ]


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, ray_session) -> Path:
    """The bundled sample, run to the end without interruption (in this process)."""
    out = tmp_path_factory.mktemp("finished") / "out"
    run_here(ROOT / "configs" / "local.yaml", out)
    return out


def test_object_store_below_rays_minimum_is_refused_before_anything_is_written(tmp_path):
    assert RAY_OBJECT_STORE_MIN_MB * 1024 * 1024 == ray_constants.OBJECT_STORE_MINIMUM_MEMORY_BYTES
    out = tmp_path / "out"
    result = cli("run", str(ROOT / "configs" / "local.yaml"), "--output", str(out), "--set", "ray.object_store_mb=50")
    assert result.returncode == 2
    assert one_line(result) == "config error: ray.object_store_mb: expected at least 75 (Ray's minimum), got 50"
    assert not out.exists()


def test_submit_to_a_closed_port_is_one_line_naming_the_address(tmp_path):
    config = tmp_path / "job.yaml"
    config.write_text(f"sources: [{{name: web, input: [x.warc]}}]\noutput: {tmp_path / 'out'}\n")
    with socket.socket() as closed:  # bound but not listening: connections to it are refused
        closed.bind(("127.0.0.1", 0))
        address = f"http://127.0.0.1:{closed.getsockname()[1]}"
        result = cli("submit", str(config), "--address", address)
    assert result.returncode == 2
    assert one_line(result).startswith(f"submit: no Ray cluster answers at --address {address} ")


@pytest.mark.parametrize(
    "address, expected",
    [
        ("notaurl", "submit: --address 'notaurl': expected the head's dashboard, e.g. http://HEAD:8265"),
        ("127.0.0.1:1", "submit: --address '127.0.0.1:1': expected the head's dashboard, e.g. http://HEAD:8265"),
        ("http://[::1", "submit: no Ray cluster answers at --address http://[::1 (Failed to parse: "),
    ],
)
def test_submit_to_a_malformed_address_is_one_line_in_seconds(tmp_path, address, expected):
    config = tmp_path / "job.yaml"
    config.write_text(f"sources: [{{name: web, input: [x.warc]}}]\noutput: {tmp_path / 'out'}\n")
    result = cli("submit", str(config), "--address", address, timeout=30)
    assert result.returncode == 2
    assert one_line(result).startswith(expected)


def _missing_folder(run: Path, tmp_path: Path) -> tuple[Path, Path]:
    return run, tmp_path / "missing" / "dir" / "r.html"


def _existing_folder(run: Path, tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "existing").mkdir()
    return run, tmp_path / "existing"


def _foreign_manifest(run: Path, tmp_path: Path) -> tuple[Path, None]:
    (tmp_path / "webapp").mkdir()
    (tmp_path / "webapp" / "manifest.json").write_text('{"name": "pwa"}')
    return tmp_path / "webapp", None


def _truncated_manifest(run: Path, tmp_path: Path) -> tuple[Path, None]:
    (tmp_path / "cut").mkdir()
    whole = (run / "manifest.json").read_bytes()
    (tmp_path / "cut" / "manifest.json").write_bytes(whole[: len(whole) // 2])
    return tmp_path / "cut", None


@pytest.mark.parametrize(
    "make_case, expected",
    [
        (_missing_folder, "r.html: No such file or directory"),
        (_existing_folder, "existing: Is a directory"),
        (_foreign_manifest, "manifest.json' is not a crawlbelt manifest"),
        (_truncated_manifest, "manifest.json' is not valid JSON"),
    ],
)
def test_report_mistakes_are_one_line_and_write_nothing(finished_run, tmp_path, make_case, expected):
    out_dir, output = make_case(finished_run, tmp_path)
    before, run_before = files_under(tmp_path), files_under(finished_run)
    result = cli("report", str(out_dir), *(["--output", str(output)] if output else []))
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith("report: ") and expected in line, line
    assert files_under(tmp_path) == before and files_under(finished_run) == run_before


@pytest.mark.slow
def test_ctrl_c_in_run_is_one_line_and_a_rerun_gives_the_same_docs(finished_run, tmp_path):
    out = tmp_path / "out"
    # As a terminal runs it: a process group of its own with the default SIGINT action (this test's own runner
    # may have started with SIGINT ignored, as a shell's background job does, which children inherit).
    process = subprocess.Popen(
        run_command(out),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    while not (out / "_work" / "filtered").exists():  # the filter pass has started
        assert process.poll() is None, process.stderr.read()[-3000:]
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to every process of the group
    stderr = process.communicate(timeout=120)[1]
    assert process.returncode == 130, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == INTERRUPTED and "Traceback" not in stderr, stderr[-3000:]

    rerun = subprocess.run(run_command(out), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert files_under(out / "docs") == files_under(finished_run / "docs")
    assert (
        json.loads((out / "manifest.json").read_text())["counts"]
        == json.loads((finished_run / "manifest.json").read_text())["counts"]
    )


@pytest.mark.parametrize(
    "output, staging, resumes",
    [
        ("out/run", None, True),
        ("s3://bucket/run", "/shared/staging", True),
        ("s3://bucket/run", None, False),  # built in a new temporary folder each time
    ],
)
def test_the_interrupted_line_says_whether_a_rerun_resumes(output, staging, resumes):
    line = interrupted_line(Config(output=output, storage=StorageConfig(staging=staging)))
    assert line.startswith("crawlbelt: interrupted; ") and (line == INTERRUPTED) == resumes


HALF_BUILT_AT_EXIT = """
import sys
from pipeline.cli import stopped_by_interrupt
from pipeline.config import Config


class HalfBuilt:  # as Ray Data's Dataset when Ctrl-C lands in its constructor: __del__ reads a missing field
    def __init__(self):
        raise KeyboardInterrupt

    def __del__(self):
        self.never_set


try:
    HalfBuilt()
except KeyboardInterrupt:
    sys.exit(stopped_by_interrupt(Config(output="out/run")))
"""


def test_objects_cut_short_by_the_interrupt_do_not_print_after_its_line():
    result = subprocess.run([sys.executable, "-c", HALF_BUILT_AT_EXIT], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 130 and result.stderr.strip() == INTERRUPTED, result.stderr


def py4j_cleaning_up_after_ctrl_c():
    """What py4j does when Ctrl-C cuts a call to the JVM short, and the JVM, which got the SIGINT too, is gone."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]

    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        raise Py4JError("Gateway must be connected to send cancel cmd.")  # noqa: B904 (as py4j raises it)


def test_an_error_raised_while_a_ctrl_c_was_handled_is_the_interrupt():
    with pytest.raises(Exception) as raised:
        py4j_cleaning_up_after_ctrl_c()
    assert interrupted(raised.value)
    assert not interrupted(RuntimeError("a stage broke")) and not interrupted(OSError(28, "No space left"))


SWALLOWED_CTRL_C = """
import weakref
from pipeline.engines import engine

class Held:
    pass

def ctrl_c(_):  # PySpark's SIGINT handler raises, here inside a py4j object's weakref callback
    raise KeyboardInterrupt

def broken(_):
    raise ValueError("some other finalizer's error")

engine.keep_swallowed_interrupts()
held, other = Held(), Held()
refs = weakref.ref(held, ctrl_c), weakref.ref(other, broken)
del other, held  # Python cannot raise either; it goes on
print("went on", engine.interrupted())
engine.cpu_count()  # the run's next primitive
print("not reached")
"""


def test_a_ctrl_c_that_python_swallows_in_a_finalizer_still_stops_the_run():
    """Once in about ten Spark runs the Ctrl-C landed in py4j's finalizer: the run went on and ended 0."""
    result = subprocess.run([sys.executable, "-c", SWALLOWED_CTRL_C], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == -signal.SIGINT and result.stdout == "went on True\n", result  # as Python ends on one
    assert result.stderr.strip().endswith("KeyboardInterrupt"), result.stderr
    assert "ValueError: some other finalizer's error" in result.stderr, result.stderr  # others are still said
    assert "ctrl_c" not in result.stderr, result.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """`validate | head -1`: the reader closes the pipe before the command writes; it ends as a Unix tool
    does (128 + SIGPIPE), with nothing on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pipeline", "validate", str(ROOT / "configs" / "local.yaml")],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 128 + signal.SIGPIPE and result.stderr == "", result.stderr[-3000:]


STARTUP = "The current node timed out during startup. This could happen because some of the Ray processes\nfailed"


def test_an_engine_that_does_not_start_is_one_line(monkeypatch):
    """An embedded Ray slow to start under load (ray.init raises), or Spark's session failing: one line naming
    what failed, not the engine's traceback."""
    import ray

    from pipeline.engines import engine_ray
    from pipeline.config import RayConfig
    from pipeline.engines.engine import EngineStartError

    def slow_start(**_):
        raise Exception(STARTUP)

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", slow_start)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(EngineStartError) as error:
        engine_ray.start_ray(RayConfig())
    assert str(error.value) == (
        "Ray did not start: The current node timed out during startup. This could happen because some of the "
        "Ray processes failed (a machine under load may start it on a rerun)"
    )


def test_spark_that_does_not_start_is_one_line(monkeypatch):
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from pipeline.engines import engine_spark
    from pipeline.engines.engine import EngineStartError

    def no_java(self):
        raise RuntimeError("Java gateway process exited before sending its port number")

    monkeypatch.setattr(engine_spark, "_session", None)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", no_java)
    with pytest.raises(EngineStartError, match="^Spark did not start: Java gateway process exited before sending"):
        engine_spark.start(Config(engine="spark"))


def test_the_engine_start_error_is_the_commands_one_line(tmp_path, monkeypatch, capsys):
    from pipeline import belt, cli
    from pipeline.engines.engine import EngineStartError

    def fails(config, kind):
        raise EngineStartError("Ray did not start: timed out")

    monkeypatch.setattr(belt, "run", fails)
    monkeypatch.setattr(cli.reaper, "start", lambda: None)
    code = cli.main(["run", str(ROOT / "configs" / "local.yaml"), "--output", str(tmp_path / "out")])
    assert (code, capsys.readouterr().err) == (1, "engine error: Ray did not start: timed out\n")


def test_submit_tries_again_while_the_heads_job_agent_is_not_ready(tmp_path, capsys):
    """Right after `ray start` the head answers "No available agent to submit job" (CI saw it once); the submit
    is made again, and any other failure is passed on at once."""
    from pipeline import submit

    tries = tmp_path / "tries"
    script = tmp_path / "ray_job_submit.sh"
    script.write_text(
        f'echo x >> {tries}\nif [ "$(wc -l < {tries})" -lt 2 ]; then\n'
        '  echo "RuntimeError: Request failed with status code 500: No available agent to submit job" >&2; exit 1\n'
        "fi\necho submitted\n"
    )
    assert submit.submit_when_the_agent_is_ready(["bash", str(script)]) == 0
    assert tries.read_text().count("x") == 2 and "not ready yet" in capsys.readouterr().out
    other = tmp_path / "other.sh"
    other.write_text('echo "some other failure" >&2; exit 3\n')
    assert submit.submit_when_the_agent_is_ready(["bash", str(other)]) == 3
    assert "some other failure" in capsys.readouterr().err
