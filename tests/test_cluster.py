"""A YAML config submitted as a Ray job to a real two-node Ray cluster on loopback (`python -m pipeline submit`)."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from helpers import CONFIGS, FIXTURES, ROOT, cli
from pipeline.config.read import read_config
from pipeline.submit import job_files
from ray_cluster import RAY, LocalCluster, cluster_env, free_ports
from test_s3 import CREDENTIALS
from test_s3 import client as s3_client


@pytest.fixture(scope="module")
def cluster():
    cluster = LocalCluster(head_cpus=1, worker_cpus=1)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def job_config(folder: Path, output: Path, **sections) -> Path:
    """The bundled sample's config with absolute paths (this machine's disk is every node's storage)."""
    raw = yaml.safe_load((CONFIGS / "local.yaml").read_text())
    raw["sources"] = [{"name": "web", "input": [str(FIXTURES / "warc" / "*")]}]
    raw["output"] = str(output)
    raw["classifier"].update(
        good_examples=[str(CONFIGS / "classifier" / "good.txt")], bad_examples=[str(CONFIGS / "classifier" / "bad.txt")]
    )
    raw["packing"]["seq_len"] = 64
    for name, values in sections.items():
        raw.setdefault(name, {}).update(values)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.yaml").write_text(yaml.safe_dump(raw))
    return folder / "job.yaml"


def submit(config: Path, address: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", "submit", str(config), "--address", address, *extra],
        capture_output=True,
        text=True,
        timeout=400,
        env=cluster_env(),
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def two_node_run(cluster, tmp_path_factory):
    folder = tmp_path_factory.mktemp("two-nodes")
    # per-task resources from the config, as a cluster run would set them
    config = job_config(folder / "job", folder / "out", resources={"filter": {"num_cpus": 1}})
    (config.parent / ".env").write_text("AWS_SECRET_ACCESS_KEY=not-for-the-cluster\n")  # never sent
    result = submit(config, cluster.dashboard, "--wait", "--submission-id", "crawlbelt-test-two-nodes")
    return result, folder / "out"


@pytest.mark.cluster
@pytest.mark.slow
def test_submitted_job_runs_on_both_nodes(cluster, two_node_run):
    result, out = two_node_run
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "crawlbelt-test-two-nodes" in result.stdout and "succeeded" in result.stdout
    job = out.parent / "job"  # the config alone: its inputs are absolute paths, and .env beside it stays here
    size = (job / "job.yaml").stat().st_size
    assert f"submit: sending 1 files, {size:,} bytes, from {job}: job.yaml\n" in result.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["invariants"] and all(manifest["invariants"].values()), manifest["invariants"]
    counts = manifest["counts"]
    assert counts["records_read"] == counts["documents"] + sum(counts["not_documents"].values())
    kept = sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "docs").glob("*.parquet"))
    assert counts["kept"] == kept > 0
    assert manifest["tokens"]["sequences"] > 0
    # both nodes of the cluster did per-document work
    cluster_nodes = {n["raylet"]["nodeId"] for n in cluster.alive_nodes()}
    assert len(cluster_nodes) == 2 and set(manifest["nodes"]) == cluster_nodes, (manifest["nodes"], cluster_nodes)
    # Ray keeps the job: its status and logs are there to ask for by id
    status = subprocess.run(
        [RAY, "job", "status", "crawlbelt-test-two-nodes", "--address", cluster.dashboard],
        capture_output=True,
        text=True,
        env=cluster_env(),
    )
    assert "crawlbelt-test-two-nodes' succeeded" in status.stdout + status.stderr


def test_submit_refuses_a_relative_output(tmp_path):
    config = job_config(tmp_path / "job", Path("relative/out"))
    result = submit(config, "http://127.0.0.1:1")
    assert result.returncode == 2 and "absolute path" in result.stderr


def test_submit_sends_only_what_the_job_needs(tmp_path):
    project = tmp_path / "project"
    files = {
        "configs/job.yaml": "",
        "configs/good.txt": "good text\n",
        "configs/bad.txt": "bad text\n",
        "data/a.warc.gz": "",
        "data/b.warc.gz": "",
        "mystage/__init__.py": "",
        "mystage/filters.py": "def keep(batch):\n    return {}\n",
        "notes.txt": "not named by the config\n",
        # what a project folder also holds, and a job never needs
        ".env": "AWS_SECRET_ACCESS_KEY=abc\n",
        ".git/config": "[remote] url = https://ghp_token@github.com/x\n",
        ".venv/bin/python": "",
        "id_ed25519": "PRIVATE KEY\n",
        "deploy.pem": "",
        "out/old/manifest.json": "{}",
        "data/.cache/x": "",
    }
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    raw = yaml.safe_load((CONFIGS / "local.yaml").read_text())
    raw.update(output="../out/old", sources=[{"name": "web", "input": ["../data/*.warc.gz"]}])
    raw["classifier"].update(good_examples=["good.txt"], bad_examples=["bad.txt"])
    (project / "configs" / "job.yaml").write_text(yaml.safe_dump(raw))
    config = project / "configs" / "job.yaml"
    loaded = read_config(str(config), ["stages=[extract, {use: 'mystage.filters:keep'}]"])
    sent = [str(p) for p in job_files(config, project, loaded, [])]
    assert sent == [
        "configs/bad.txt",
        "configs/good.txt",
        "configs/job.yaml",
        "data/a.warc.gz",
        "data/b.warc.gz",
        "mystage/__init__.py",
        "mystage/filters.py",
    ]
    assert "notes.txt" in [str(p) for p in job_files(config, project, loaded, ["notes.txt"])]

    raw["classifier"]["good_examples"] = ["../.env"]  # named by the config, still never sent
    (project / "configs" / "job.yaml").write_text(yaml.safe_dump(raw))
    result = submit(config, "http://127.0.0.1:1", "--working-dir", str(project), "--output", str(tmp_path / "o"))
    assert result.returncode == 2 and result.stderr == (
        "submit: '.env' would be sent to the cluster, and a hidden, key or credential file never is; "
        "pass secrets with --env NAME\n"
    )
    raw["classifier"]["good_examples"] = ["good.txt"]
    (project / "configs" / "job.yaml").write_text(yaml.safe_dump(raw))
    for include, expected in [
        ("*.pem", "submit: 'deploy.pem' would be sent to the cluster, and a hidden, key or credential file never is"),
        ("docs/*.md", "config error: --include 'docs/*.md': no file matches it in "),
    ]:
        result = submit(
            config, "http://127.0.0.1:1", "--working-dir", str(project), "--include", include, "--output", "/o"
        )
        assert result.returncode == 2 and result.stderr.startswith(expected), result.stderr
        assert len(result.stderr.splitlines()) == 1


@pytest.mark.cluster
@pytest.mark.slow
def test_an_s3_output_on_several_nodes_needs_a_shared_staging_folder(cluster, s3_server, tmp_path):
    """Without one the parts would be built in a temporary folder on each node's own disk."""
    s3_client(s3_server).create_dir("curated")
    config = job_config(tmp_path / "job", tmp_path / "unused")
    raw = yaml.safe_load(config.read_text())
    raw["output"], raw["storage"] = "s3://curated/out", {"endpoint": s3_server}
    config.write_text(yaml.safe_dump(raw))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "submit",
            str(config),
            "--address",
            cluster.dashboard,
            "--wait",
            "--submission-id",
            "crawlbelt-test-s3-staging",
            *[arg for name in CREDENTIALS for arg in ("--env", name)],
        ],
        capture_output=True,
        text=True,
        timeout=400,
        env={**cluster_env(), **CREDENTIALS},
        cwd=ROOT,
    )
    logs = subprocess.run(
        [RAY, "job", "logs", "crawlbelt-test-s3-staging", "--address", cluster.dashboard],
        capture_output=True,
        text=True,
        env=cluster_env(),
    ).stdout
    assert result.returncode != 0
    assert "output error:" in logs and "needs storage.staging" in logs and "Traceback" not in logs, logs[-3000:]


@pytest.mark.cluster
@pytest.mark.parametrize("other_ray", ["a running ray start cluster", "a killed cluster's address file"])
@pytest.mark.slow
def test_an_embedded_run_starts_its_own_ray_whatever_other_ray_the_machine_has(other_ray, cluster, tmp_path):
    """`ray start` writes the cluster's address to RAY_TMPDIR/ray/ray_current_cluster (by default
    /tmp/ray/...), where ray.init() without an address would find it and join (or fail to join) that cluster.
    The run is given the cluster's RAY_TMPDIR, so that it would find the file: the module's running cluster's,
    or that of one killed with SIGKILL, whose file is left behind naming a port where nothing listens now."""
    other = cluster if other_ray == "a running ray start cluster" else LocalCluster()  # the latter never started
    if other is not cluster:
        other.address_file.parent.mkdir()
        other.address_file.write_text(f"127.0.0.1:{free_ports(1)[0]}")
    assert other.address_file.exists()
    env = {**os.environ, "RAY_TMPDIR": other.temp_dir}
    env.pop("RAY_ADDRESS", None)
    result = cli("dry-run", "--output", str(tmp_path / "out"), env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "crawlbelt: ray: embedded on this machine, " in result.stderr, result.stderr[-4000:]
    assert "joined" not in result.stderr


class FakeCluster:
    """ray.nodes() as NodeWatch reads it, and a clock, both moved by hand."""

    def __init__(self):
        self.now = 0.0
        self.table = [
            {"NodeID": "head", "NodeManagerAddress": "10.0.0.1", "Alive": True},
            {"NodeID": "worker", "NodeManagerAddress": "10.0.0.2", "Alive": True},
            {"NodeID": "gone-before", "NodeManagerAddress": "10.0.0.3", "Alive": False},
        ]

    def nodes(self) -> list[dict]:
        return self.table

    def clock(self) -> float:
        return self.now

    def kill(self, node_id: str) -> None:
        for node in self.table:
            if node["NodeID"] == node_id:
                node["Alive"] = False


def test_node_watch_ends_a_run_that_stalls_after_a_node_is_lost():
    from pipeline.engines.engine_ray import NodeWatch

    fake, stalls = FakeCluster(), []
    watch = NodeWatch(60, nodes=fake.nodes, clock=fake.clock, on_stall=stalls.append)
    watch.check()
    fake.now = 500.0  # a long run without a loss is none of the watch's business
    watch.check()
    assert not watch.lost and not stalls
    fake.kill("worker")
    fake.now = 510.0
    watch.check()
    assert list(watch.lost) == ["worker"] and watch.lost_line() == "lost node worker (10.0.0.2)"
    fake.now = 550.0
    watch.progress()  # a task finished: the wait starts again
    fake.now = 600.0
    watch.check()
    assert not stalls
    fake.now = 610.0
    watch.check()
    assert len(stalls) == 1 and stalls[0].startswith("lost node worker (10.0.0.2, lost at ")
    assert "no progress for 60 s" in stalls[0] and "gone-before" not in stalls[0]


def test_node_watch_without_a_timeout_only_names_the_lost_node():
    from pipeline.engines.engine_ray import NodeWatch

    fake, stalls = FakeCluster(), []
    watch = NodeWatch(None, nodes=fake.nodes, clock=fake.clock, on_stall=stalls.append)
    watch.check()
    fake.kill("worker")
    fake.now = 10_000.0
    watch.check()
    assert not stalls and watch.lost_line() == "lost node worker (10.0.0.2)"


def test_node_watch_settles_an_error_that_looks_like_a_node_death():
    """A run failed with a node-death error before Ray marked the node dead: the watch waits to name it."""
    from pipeline.engines.engine_ray import NodeWatch

    fake = FakeCluster()
    watch = NodeWatch(60, poll_s=0.01, nodes=fake.nodes, clock=fake.clock, on_stall=lambda _: None)
    watch.check()
    calls = []

    def nodes():
        calls.append(1)
        if len(calls) == 3:
            fake.kill("worker")  # Ray marks it dead a few checks later
        return fake.table

    watch.nodes = nodes
    try:
        raise RuntimeError("ListFiles failed") from RuntimeError("The actor died because its node has died.")
    except RuntimeError as error:
        watch.settle(error, wait_s=1e9)  # the fake clock stands still: only the node's death ends the wait
    assert watch.lost_line() == "lost node worker (10.0.0.2)"
    healthy, looks = FakeCluster(), []
    watch = NodeWatch(60, nodes=lambda: looks.append(1) or healthy.table, clock=healthy.clock)
    watch.check()
    watch.settle(ValueError("a bug in a stage"), wait_s=1e9)
    assert len(looks) == 2 and not watch.lost  # not a node's death: one more look, no wait


def job_status(cluster, submission_id: str) -> str:
    with urllib.request.urlopen(f"{cluster.dashboard}/api/jobs/{submission_id}", timeout=10) as response:
        return json.load(response)["status"]


def kill_the_worker_mid_job(cluster, submission_id: str, timeout: float = 300) -> str:
    """Wait until the job runs a task on the worker node, then kill that node; returns its id."""
    deadline = time.monotonic() + timeout
    worker = cluster.worker_node_id()
    while not cluster.running_tasks(worker):
        assert job_status(cluster, submission_id) in ("PENDING", "RUNNING"), "no task ran on the worker"
        assert time.monotonic() < deadline, "the job never ran a task on the worker node"
        time.sleep(0.2)
    cluster.kill_worker()
    return worker


def wait_for_the_end(cluster, submission_id: str, timeout: float = 300) -> str:
    """The job's final status, once it has one (a safety deadline only)."""
    deadline = time.monotonic() + timeout
    while (status := job_status(cluster, submission_id)) in ("PENDING", "RUNNING"):
        assert time.monotonic() < deadline, "the job did not end after its worker node was lost"
        time.sleep(1)
    return status


@pytest.mark.cluster
@pytest.mark.slow
def test_losing_the_worker_node_mid_job_then_a_rerun_gives_the_same_outputs(cluster, two_node_run, tmp_path):
    """Runs last in this module: it kills the worker node's processes while a job runs on both nodes."""
    _, reference = two_node_run
    config = job_config(tmp_path / "job", tmp_path / "out", ray={"node_lost_timeout_s": 60})
    result = submit(config, cluster.dashboard, "--submission-id", "crawlbelt-test-node-lost")  # no --wait
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # Kill the worker node while it runs one of the job's tasks (a filter task: one per input file, spread
    # over both nodes), so that work in flight and outputs kept only there are lost with it.
    worker = kill_the_worker_mid_job(cluster, "crawlbelt-test-node-lost")
    # A safety deadline only: the job's node_lost_timeout_s (60 s without progress) bounds a stalled run.
    first = wait_for_the_end(cluster, "crawlbelt-test-node-lost")
    logs = subprocess.run(
        [RAY, "job", "logs", "crawlbelt-test-node-lost", "--address", cluster.dashboard],
        capture_output=True,
        text=True,
        env=cluster_env(),
    ).stdout
    # Either Ray's task retries (or the run starting over, ray.node_lost_retries) carried it through on the
    # head node, or it failed in one line naming the node.
    assert first == "SUCCEEDED" or (first == "FAILED" and f"crawlbelt: error: lost node {worker}" in logs), (
        first,
        logs[-3000:],
    )

    rerun = submit(config, cluster.dashboard, "--wait", "--submission-id", "crawlbelt-test-rerun")
    assert rerun.returncode == 0, rerun.stdout[-4000:] + rerun.stderr[-2000:]
    out = tmp_path / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    assert all(manifest["invariants"].values()) and not (out / "_work").exists()
    assert manifest["counts"] == json.loads((reference / "manifest.json").read_text())["counts"]
    parts = sorted(str(p.relative_to(reference)) for p in reference.rglob("*.parquet"))
    assert parts and parts == sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))
    for part in parts + ["tokens/tokenizer.json"]:
        assert (out / part).read_bytes() == (reference / part).read_bytes(), part


@pytest.mark.cluster
@pytest.mark.slow
def test_a_job_left_without_cpus_by_a_lost_node_fails_in_one_line_in_bounded_time(tmp_path):
    """The stall path on a real cluster: every CPU is on the worker node (the head has none), so once that
    node is killed nothing can run; the job must end by ray.node_lost_timeout_s with one line naming it."""
    stalled = LocalCluster(head_cpus=0, worker_cpus=2).start()
    try:
        config = job_config(tmp_path / "job", tmp_path / "out", ray={"node_lost_timeout_s": 5})
        result = submit(config, stalled.dashboard, "--submission-id", "crawlbelt-test-stall")  # no --wait
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        worker = kill_the_worker_mid_job(stalled, "crawlbelt-test-stall")
        killed = time.monotonic()
        status = wait_for_the_end(stalled, "crawlbelt-test-stall")
        ended_after = time.monotonic() - killed
        logs = subprocess.run(
            [RAY, "job", "logs", "crawlbelt-test-stall", "--address", stalled.dashboard],
            capture_output=True,
            text=True,
            env=cluster_env(),
        ).stdout
        assert status == "FAILED", logs[-3000:]
        assert f"crawlbelt: error: lost node {worker} (" in logs, logs[-3000:]
        assert "no progress for" in logs and "Traceback" not in logs, logs[-3000:]
        assert ended_after >= 5, ended_after  # it waited the configured time for progress, not less
    finally:
        stalled.stop()
