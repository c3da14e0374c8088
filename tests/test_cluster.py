"""A YAML config submitted as a Ray job to a real two-node Ray cluster on loopback (`python -m pipeline submit`)."""
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from ray_cluster import RAY, LocalCluster, cluster_env

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
FIXTURES = ROOT / "tests" / "fixtures"


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
    raw["classifier"].update(good_examples=[str(CONFIGS / "classifier" / "good.txt")],
                             bad_examples=[str(CONFIGS / "classifier" / "bad.txt")])
    raw["packing"]["seq_len"] = 64
    for name, values in sections.items():
        raw.setdefault(name, {}).update(values)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.yaml").write_text(yaml.safe_dump(raw))
    return folder / "job.yaml"


def submit(config: Path, address: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "submit", str(config), "--address", address, *extra],
                          capture_output=True, text=True, timeout=400, env=cluster_env(), cwd=ROOT)


@pytest.fixture(scope="module")
def two_node_run(cluster, tmp_path_factory):
    folder = tmp_path_factory.mktemp("two-nodes")
    # per-task resources from the config, as a cluster run would set them
    config = job_config(folder / "job", folder / "out", resources={"filter": {"num_cpus": 1}})
    result = submit(config, cluster.dashboard, "--wait", "--submission-id", "crawlbelt-test-two-nodes")
    return result, folder / "out"


def test_submitted_job_runs_on_both_nodes(cluster, two_node_run):
    result, out = two_node_run
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "crawlbelt-test-two-nodes" in result.stdout and "succeeded" in result.stdout
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
    status = subprocess.run([RAY, "job", "status", "crawlbelt-test-two-nodes",
                             "--address", cluster.dashboard], capture_output=True, text=True, env=cluster_env())
    assert "crawlbelt-test-two-nodes' succeeded" in status.stdout + status.stderr


def test_submit_refuses_a_relative_output(tmp_path):
    config = job_config(tmp_path / "job", Path("relative/out"))
    result = submit(config, "http://127.0.0.1:1")
    assert result.returncode == 2 and "absolute path" in result.stderr
