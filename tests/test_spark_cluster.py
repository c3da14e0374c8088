"""The Spark standalone cluster harness (spark_cluster.py) with a small stand-in PySpark job sent by spark-submit:
it completes when a worker is killed while it runs one of its tasks, the task run again on the other worker.
Then crawlbelt's own job, scripts/spark_run.py on the fixture crawl: with worker 1 killed during the filter pass
or during the dedup shuffle, it gives the bytes of an uninterrupted local run (the job on two workers that are
not killed is the README's, run as written by test_readme_spark.py). The tests share one cluster; a worker
killed by one is started again before the next."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from helpers import CONFIGS, FIXTURES, ROOT, SPARK_SETTINGS, assert_complete, assert_same_output, needs_spark
from spark_cluster import SparkCluster, processes_in

pytestmark = [needs_spark, pytest.mark.cluster, pytest.mark.slow]

PARTITIONS = 8

# Each task writes markers/pP.aA.started (A: the attempt), waits until the file GATE exists, works for SECONDS,
# then writes markers/pP.aA.done; each marker holds the task's working folder, which lies in the SPARK_WORKER_DIR
# of the worker whose executor runs it. The driver checks that every partition has a done marker and prints one
# JSON line: the successful attempt of each partition, and where it ran.
JOB = """
import json, os, sys, time
from pathlib import Path

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import SparkSession

markers, gate, partitions, seconds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])


def mark(name, task):
    (markers / (name + ".tmp")).write_text(json.dumps(task))
    os.replace(markers / (name + ".tmp"), markers / name)  # whole or not there, for the test that polls


def work(batches):
    context = TaskContext.get()
    task = {"partition": context.partitionId(), "attempt": context.attemptNumber(), "cwd": os.getcwd()}
    name = "p%(partition)d.a%(attempt)d" % task
    mark(name + ".started", task)
    rows = sum(batch.num_rows for batch in batches)
    deadline = time.monotonic() + 120
    while not gate.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the gate was not opened in 120 s")
        time.sleep(0.05)
    time.sleep(seconds)
    mark(name + ".done", task)
    yield pa.RecordBatch.from_pylist([{**task, "rows": rows}])


spark = SparkSession.builder.appName("stand-in").getOrCreate()
schema = "partition long, attempt long, cwd string, rows long"
results = spark.range(0, 100 * partitions, 1, partitions).mapInArrow(work, schema).collect()
spark.stop()
done = {int(p.name.split(".")[0][1:]) for p in markers.glob("*.done")}
if done != set(range(partitions)):
    sys.exit(f"partitions without a done marker: {sorted(set(range(partitions)) - done)}")
print(json.dumps({"rows": sum(r.rows for r in results), "results": [r.asDict() for r in results]}))
"""


def start_job(cluster: SparkCluster, folder: Path, gate_open: bool):
    """The stand-in job, submitted; returns the driver's Popen, the markers folder and the gate file."""
    (folder / "job.py").write_text(JOB)
    markers, gate = folder / "markers", folder / "gate"
    markers.mkdir()
    if gate_open:
        gate.touch()
    driver = cluster.submit([str(folder / "job.py"), str(markers), str(gate), str(PARTITIONS), "1"], wait=False)
    return driver, markers, gate


def job_output(cluster: SparkCluster, result) -> dict:
    assert result.returncode == 0, f"spark-submit exited {result.returncode}:\n" + cluster.log_tails()
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("{")]
    output = json.loads(line)
    assert output["rows"] == 100 * PARTITIONS
    assert sorted(r["partition"] for r in output["results"]) == list(range(PARTITIONS))
    return output


def worker_of(cluster: SparkCluster, cwd: str) -> int:
    (i,) = [i for i in range(cluster.worker_count) if Path(cwd).is_relative_to(cluster.worker_dir(i))]
    return i


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory):
    """One cluster for the module's jobs (its JVMs' start is the fixed cost of each test otherwise). stop()
    must end every process of it: daemons, drivers, executors and their Python workers."""
    with SparkCluster(workers=2, cores=1, memory="1g", folder=tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster
    assert processes_in(cluster.folder) == []


@pytest.fixture
def cluster(shared_cluster):
    """The module's cluster with both workers ALIVE: a worker an earlier test killed is started again."""
    shared_cluster.restart_killed_workers()
    return shared_cluster


def test_a_job_completes_when_a_worker_is_killed_under_it(tmp_path, cluster):
    driver, markers, gate = start_job(cluster, tmp_path, gate_open=False)
    # the tasks wait at the gate: kill worker 1 while one of its tasks is certainly running
    deadline = time.monotonic() + 180
    killed = []
    while not killed:
        assert driver.poll() is None, "the job ended before a task started on worker 1:\n" + cluster.log_tails()
        assert time.monotonic() < deadline, "no task started on worker 1 in 180 s:\n" + cluster.log_tails()
        started = [json.loads(p.read_text()) for p in markers.glob("*.started")]
        killed = [task for task in started if worker_of(cluster, task["cwd"]) == 1]
        time.sleep(0.1)
    cluster.kill_worker(1)
    gate.touch()
    output = job_output(cluster, cluster.wait(driver, timeout=300))
    # the killed task never finished there: its partition was run again, and finished, on worker 0
    (task,) = killed
    name = f"p{task['partition']}.a{task['attempt']}"
    assert not (markers / f"{name}.done").exists()
    (rerun,) = [r for r in output["results"] if r["partition"] == task["partition"]]
    assert rerun["attempt"] > task["attempt"] and worker_of(cluster, rerun["cwd"]) == 0, (task, rerun)


# -- crawlbelt's job

CRAWL = sorted(str(p) for p in (FIXTURES / "warc").iterdir())
# SPARK_SETTINGS, as in the Ray run compared with (conftest's fixture_crawl_on_ray), and batch_size 4: a filter
# task keeps its input file open while it filters the file's first batches, long enough to be seen reading it
# (the output bytes do not depend on the batch size).
SETS = [arg for setting in [*SPARK_SETTINGS, "read.batch_size=4"] for arg in ("--set", setting)]


def crawl_job(out: Path) -> list[str]:
    """spark-submit's arguments: scripts/spark_run.py on the fixture crawl into OUT (absolute: the executors
    write their parts there)."""
    script = ROOT / "scripts" / "spark_run.py"
    return [str(script), "run", str(CONFIGS / "local.yaml"), "--input", *CRAWL, "--output", str(out), *SETS]


def reading_input(cluster: SparkCluster, i: int) -> bool:
    """Whether a process of worker i (its executor's Python workers) has an input file of the crawl open: a
    filter-pass task is reading it there."""
    for pid in processes_in(cluster.worker_dir(i)):
        try:
            if any(os.readlink(fd).startswith(str(FIXTURES)) for fd in Path(f"/proc/{pid}/fd").iterdir()):
                return True
        except OSError:
            pass  # the process or the descriptor is gone
    return False


def at_moment(moment: str, cluster: SparkCluster, out: Path) -> bool:
    if moment == "filter":
        return reading_input(cluster, 1)
    return any((out / "_work" / "candidates").glob("part-*.parquet"))


@pytest.mark.parametrize("moment", ["filter", "dedup"])
def test_the_crawl_gives_the_same_bytes_when_a_worker_is_killed_mid_job(
    tmp_path, fixture_crawl_on_ray, cluster, moment
):
    """Worker 1 killed while one of its filter tasks reads an input file (the task must run again on worker 0),
    or once the near-dedup shuffle's first reducer has written its part of _work/candidates (the map outputs
    worker 1 holds are lost to the reducers still to fetch them, and must be computed again). The job completes,
    or fails in one line and the same command on the worker left completes; either way with the reference bytes."""
    out = tmp_path / "out"
    driver = cluster.submit(crawl_job(out), wait=False)
    deadline = time.monotonic() + 300
    while not at_moment(moment, cluster, out):
        assert driver.poll() is None, f"the job ended before the {moment} moment:\n" + cluster.log_tails()
        assert time.monotonic() < deadline, f"no {moment} moment in 300 s:\n" + cluster.log_tails()
        time.sleep(0.1)
    cluster.kill_worker(1, timeout=0)  # its executor's Python workers too, at once: the machine is gone
    result = cluster.wait(driver, timeout=600)
    if result.returncode != 0:
        last = result.stdout.strip().splitlines()[-1]  # crawlbelt's stderr, through spark-submit's stdout
        assert last.startswith(("crawlbelt: error:", "stage error:", "output error:")), result.stdout[-3000:]
        # cores.max 1: the job starts on the one worker left instead of waiting for a second
        result = cluster.submit(crawl_job(out), conf={"spark.cores.max": "1"}, timeout=600)
    assert result.returncode == 0, cluster.log_tails()
    assert_same_output(fixture_crawl_on_ray, out)
    assert_complete(out)
