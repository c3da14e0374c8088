"""The Spark standalone cluster harness (spark_cluster.py) with a small stand-in PySpark job sent by spark-submit:
the job runs on both workers, and it still completes when a worker is killed while it runs one of its tasks."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from helpers import needs_spark
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


def test_a_job_runs_on_both_workers(tmp_path):
    with SparkCluster(workers=2, cores=1, memory="1g", folder=tmp_path / "cluster") as cluster:
        driver, _, _ = start_job(cluster, tmp_path, gate_open=True)
        output = job_output(cluster, cluster.wait(driver, timeout=300))
        workers = {worker_of(cluster, r["cwd"]) for r in output["results"]}
        assert workers == {0, 1}, output["results"]
    # stop() ended every process of the cluster: daemons, driver, executors and their Python workers
    assert processes_in(cluster.folder) == []


def test_a_job_completes_when_a_worker_is_killed_under_it(tmp_path):
    with SparkCluster(workers=2, cores=1, memory="1g", folder=tmp_path / "cluster") as cluster:
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
    assert processes_in(cluster.folder) == []
