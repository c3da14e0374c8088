"""Nothing outlives its run (pipeline/engines/reaper.py): a run whose stage is stuck in C code that ignores signals,
in the worker and in a process the stage started, is ended by Ctrl-C, SIGTERM or SIGKILL, and within
30 s none of the processes it started is left, on Ray and on Spark; a run that ends normally leaves none
either, not even a helper process a stage started and never stopped. A run's processes are found as the
test sees them, not as the reaper does: the descendants of the driver and every process whose environment
carries a token the test gave the driver. Real subprocesses, a real Ray and a real Spark; every wait is
bounded and whatever is left is SIGKILLed at the end, so a failing test neither hangs nor leaves a busy core."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, needs_spark
from ray_cluster import LocalCluster, cluster_env
from test_user_stages import PYTHON, base_config, write_jsonl

STAGES = """
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

# Blocks every signal but SIGKILL and waits for ever in C holding the GIL: a C extension stuck on a page
# (waiting, not computing, so that the stuck processes leave the machine's cores to the other tests).
STUCK = (
    "import ctypes, signal; "
    "signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP}); "
    "ctypes.PyDLL(None).pause()"
)


def _mark(name):
    Path(os.environ["MARKS"], f"{name}-{os.getpid()}").write_text("")


class Stuck:
    # The probe batch that validation runs (2 rows) passes; the belt's batches do not.
    def __call__(self, batch):
        if batch.num_rows > 2:
            subprocess.Popen([sys.executable, "-c", f"open({os.environ['MARKS']!r} + '/helper', 'w'); {STUCK}"])
            _mark("worker")
            exec(STUCK)
        return {}


class Spawns:
    # A helper process (a model server, say) that the stage starts and never stops.
    def __call__(self, batch):
        if batch.num_rows > 2:
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            _mark("helper")
        return {}
"""

LEFT_WITHIN_S = 30


def start_run(
    tmp_path: Path,
    engine: str,
    stage: str | None,
    code: Path = ROOT,
    settings: tuple[str, ...] = (),
    env: dict | None = None,
) -> tuple[subprocess.Popen, str]:
    """`python -m pipeline run` (of the crawlbelt in `code`) on two JSONL files through the stage `stage` of
    STAGES (or none), as a terminal starts it (a process group of its own, SIGINT's default action); its environment
    (`env`, default this process's) carries a token of the test's."""
    (tmp_path / "stages_here.py").write_text(STAGES)
    (tmp_path / "marks").mkdir()
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for f in range(2):
        write_jsonl(inputs / f"part-{f}.jsonl", f * 5, 5)
    stages = ["language", *([{"use": f"stages_here:{stage}"}] if stage else [])]
    raw = base_config([str(inputs)], tmp_path / "out", stages=stages)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    token = uuid.uuid4().hex
    env = {
        **(env or os.environ),
        "PYTHONPATH": str(tmp_path),
        "MARKS": str(tmp_path / "marks"),
        "LEFTOVER_PROBE": token,
    }
    sets = [arg for setting in (f"engine={engine}", *settings) for arg in ("--set", setting)]
    process = subprocess.Popen(
        [PYTHON, "-m", "pipeline", "run", str(config), *sets],
        cwd=code,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "stderr", "w"),
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    return process, token


def stat(pid: int) -> tuple[int, str, int] | None:
    """(parent PID, state, start time) of a process, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0], int(fields[19])


def carries(pid: int, token: str) -> bool:
    try:
        return f"LEFTOVER_PROBE={token}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def run_processes(driver: int, token: str) -> dict[int, int]:
    """{PID: start time} of the driver's descendants and of every process carrying the test's token."""
    stats = {pid: s for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if (s := stat(pid))}
    found = {driver} | {pid for pid in stats if carries(pid, token)}
    grew = True
    while grew:
        children = {pid for pid, (parent, _, _) in stats.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return {pid: stats[pid][2] for pid in found if pid in stats}


def alive(processes: dict[int, int]) -> dict[int, str]:
    """Those of `processes` still running (a zombie is not; a reused PID is another process), with their
    command lines."""
    left = {}
    for pid, started in processes.items():
        now = stat(pid)
        if now is not None and now[1] != "Z" and now[2] == started:
            try:
                left[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120].decode()
            except (OSError, UnicodeDecodeError):
                left[pid] = "?"
    return left


def wait_for(condition, timeout_s: float, process: subprocess.Popen, stderr: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None, f"the run ended first ({process.returncode}): {stderr.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not within {timeout_s:g} s: {stderr.read_text()[-3000:]}"
        time.sleep(0.1)


def left_after(processes: dict[int, int], timeout_s: float) -> dict[int, str]:
    """Those of `processes` still running after up to `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while (left := alive(processes)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def kill_all(processes: dict[int, int]) -> None:
    """SIGKILL whatever the test leaves (a failed test must not leave busy cores)."""
    for pid in alive(processes):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# Ctrl-C and SIGTERM as a terminal, `timeout` or a supervisor send them: to the run's process group; SIGKILL
# (kill -9, the OOM killer) to the driver alone.
@pytest.mark.slow
@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("engine", ["ray", pytest.param("spark", marks=needs_spark)])
def test_a_run_stuck_in_c_code_leaves_no_process_once_stopped(tmp_path, engine, sent) -> None:
    process, token = start_run(tmp_path, engine, "Stuck")
    marks = tmp_path / "marks"
    processes: dict[int, int] = {}
    try:
        wait_for(lambda: (marks / "helper").exists() and any(marks.glob("worker-*")), 420, process, tmp_path / "stderr")
        time.sleep(1)  # the worker is in its loop
        processes = run_processes(process.pid, token)
        stuck = [int(path.name.split("-")[1]) for path in marks.glob("worker-*")]
        assert set(stuck) <= set(processes), (stuck, processes)
        if sent == signal.SIGKILL:
            process.kill()
        else:
            os.killpg(process.pid, sent)
        code = process.wait(timeout=120)
        left = left_after(processes, LEFT_WITHIN_S)
        assert not left, f"left {LEFT_WITHIN_S} s after {sent.name}: {left}"
        if sent == signal.SIGINT:  # Ctrl-C says what it always said
            assert code == 130, (tmp_path / "stderr").read_text()[-3000:]
            last = (tmp_path / "stderr").read_text().strip().splitlines()[-1]
            assert last.startswith("crawlbelt: interrupted; run the same command again to resume"), last
    finally:
        process.kill()
        kill_all(processes)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ray", pytest.param("spark", marks=needs_spark)])
def test_a_run_that_ends_normally_leaves_no_process_not_even_a_stages_helper(tmp_path, engine) -> None:
    process, token = start_run(tmp_path, engine, "Spawns")
    processes: dict[int, int] = {}
    try:
        wait_for(lambda: any((tmp_path / "marks").glob("helper-*")), 420, process, tmp_path / "stderr")
        processes = run_processes(process.pid, token)
        code = process.wait(timeout=300)
        assert code == 0, (tmp_path / "stderr").read_text()[-3000:]
        processes.update(run_processes(process.pid, token))  # the helpers of the run's later batches
        assert not left_after(processes, LEFT_WITHIN_S)
    finally:
        process.kill()
        kill_all(processes)


@pytest.mark.slow
@pytest.mark.cluster
def test_a_run_that_joined_a_ray_cluster_leaves_the_cluster_running(tmp_path) -> None:
    cluster = LocalCluster(head_cpus=2, worker_cpus=None).start()
    process = None
    try:
        assert cluster.head is not None
        # `ray start` and the head's daemons (gcs, raylet, dashboard, monitors); not its workers, which Ray
        # itself starts and ends
        daemons = {
            pid: started
            for pid, started in run_processes(cluster.head.pid, "not a run's").items()
            if not alive({pid: started}).get(pid, "ray::").startswith("ray::")
        }
        assert len(daemons) >= 3, daemons
        process, token = start_run(
            tmp_path, "ray", None, settings=(f"ray.address={cluster.gcs_address}",), env=cluster_env()
        )
        assert process.wait(timeout=300) == 0, (tmp_path / "stderr").read_text()[-3000:]
        assert "joined the cluster at" in (tmp_path / "stderr").read_text()
        run = {pid: started for pid, started in run_processes(process.pid, token).items() if pid not in daemons}
        assert not left_after(run, LEFT_WITHIN_S)  # the run's watchdog has swept and ended
        assert alive(daemons).keys() == daemons.keys(), "a process of the cluster ended with the run"
    finally:
        if process is not None:
            process.kill()
        cluster.stop()
