"""The README's "On Spark" blocks run as written, each with `bash -euo pipefail -c`, from the repository root:
the embedded run, then the standalone cluster (a master and two workers started with spark-class, the job
sent with spark-submit, the daemons stopped by the block's own `kill $(jobs -p)`)."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from helpers import ROOT, assert_complete, assert_same_output, needs_spark, spark_jvm_options

pytestmark = [needs_spark, pytest.mark.cluster, pytest.mark.slow]
HEADING = "## On Spark"


def readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(HEADING) :]
    section = section[: section.index("\n## ")]  # up to the next section
    return re.findall(r"```bash\n(.*?)```", section, re.S)


def port_taken(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Spark binds: a TIME_WAIT is no owner
        try:
            probe.bind(("0.0.0.0", port))  # taken on any address of the machine, 127.0.0.1 included
        except OSError:
            return True
    return False


def processes_of_session(sid: int) -> list[int]:
    """Pids in session SID. The block's shell leads a session of its own; the background jobs of a shell without
    job control stay in it, and so do the processes they start (executors, their Python workers)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue  # not a process, or gone
        if int(stat[stat.rindex(")") + 2 :].split()[3]) == sid:  # the fields after the command's name
            pids.append(int(proc.name))
    return pids


def run_block(block: str, env: dict) -> tuple[str, list[int]]:
    """Run BLOCK to its end (it must succeed); returns its output and the pids of its processes still there 30 s
    later."""
    shell = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = shell.communicate(timeout=900)
        assert shell.returncode == 0, output[-6000:]
        deadline = time.monotonic() + 30  # the JVMs' shutdown after SIGTERM
        while (left := processes_of_session(shell.pid)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return output, left
    finally:
        # what the block left (it failed, or its kill missed some): its own processes, by their session
        for pid in processes_of_session(shell.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shell.kill()
        shell.wait()


def test_the_readme_spark_blocks_as_written():
    embedded, cluster = readme_blocks()
    busy = [port for port in map(int, re.findall(r"--(?:webui-)?port (\d+)", cluster)) if port_taken(port)]
    if busy:
        pytest.skip(f"the README's Spark cluster needs ports {busy} of this machine, which are taken")
    outputs = [ROOT / re.search(r"--output (?:\$PWD/)?(\S+)", block).group(1) for block in (embedded, cluster)]
    for old in (ROOT / "out").glob("spark*"):  # the output and logs checked below are this run's
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()
    # a user's shell: no Spark setting that this process or an earlier test left; the block says what it needs
    env = {name: value for name, value in os.environ.items() if not name.startswith(("SPARK_", "PYSPARK_"))}
    # but the tests' JVM flags (helpers.spark_jvm_options: how fast a JVM is, not what Spark does) for every JVM
    # the blocks start, executors included, which inherit their worker's environment
    env["JAVA_TOOL_OPTIONS"] = spark_jvm_options()

    assert run_block(embedded, env)[1] == []
    output, left = run_block(cluster, env)
    assert left == [], f"the block's `kill $(jobs -p)` left processes running: {left}"
    # crawlbelt's line, on spark-submit's stdout, where Spark's PythonRunner sends the Python driver's stderr
    assert "crawlbelt: spark: submitted to spark://127.0.0.1:7078, 2 cores" in output, output[-3000:]

    for out in outputs:
        assert_complete(out)
    assert_same_output(outputs[0], outputs[1])  # embedded and on the cluster: the same bytes
    # the job ran on both workers: each one's executor (SPARK_WORKER_DIR/APP/N) ran tasks
    executor_logs = sorted((ROOT / "out" / "spark-work").glob("app-*/*/stderr"))
    assert len(executor_logs) == 2 and all("Running task" in log.read_text() for log in executor_logs)
