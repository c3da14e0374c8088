"""engine: spark gives the same output bytes as engine: ray: the same stages through mapInArrow tasks, the same
survivors of every duplicate group, the same token shards; and a run whose driver is killed resumes from the
filter pass's finished files, as on Ray."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers import CONFIGS, FIXTURES, ROOT, SHARED, SPARK_SETTINGS, assert_same_output, cli, needs_spark
from ray_cluster import free_ports
from test_progress import Scraper, check_against_manifest

SETTINGS = SPARK_SETTINGS


def command(config: Path, out: Path, settings: list[str]) -> list[str]:
    sets = [arg for s in settings for arg in ("--set", s)]
    return [sys.executable, "-m", "pipeline", "run", str(config), "--output", str(out), *sets]


def run(config: Path, out: Path, settings: list[str], timeout: float = 900) -> subprocess.CompletedProcess:
    result = subprocess.run(command(config, out, settings), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@needs_spark
@pytest.mark.slow
def test_real_crawls_give_the_same_bytes_on_ray_and_spark(tmp_path, run_here):
    """../shared's real crawls (odd, truncated and malformed WARC and ARC files with duplicate captures, and
    one file of real pages): the same docs/ ids, rejects/ reasons and token shards, byte for byte."""
    realdata, realhtml = SHARED / "realdata" / "warc", SHARED / "realhtml" / "warc" / "cleaneval-00001.warc.gz"
    if not (realdata.is_dir() and realhtml.is_file()):
        pytest.skip(f"the real crawls are not here: {realdata}, {realhtml} (../shared beside the repository)")
    raw = yaml.safe_load((CONFIGS / "local.yaml").read_text())
    raw["sources"] = [
        {"name": "realdata", "input": [str(realdata / "*")]},
        {"name": "realhtml", "input": [str(realhtml)]},
    ]
    raw["classifier"].update(
        good_examples=[str(CONFIGS / "classifier" / "good.txt")], bad_examples=[str(CONFIGS / "classifier" / "bad.txt")]
    )
    config = tmp_path / "real.yaml"
    config.write_text(yaml.safe_dump(raw))
    settings = [*SETTINGS, "extract.method=resiliparse", "packing.seq_len=256"]  # resiliparse: minutes, not tens
    run_here(config, tmp_path / "ray", settings)  # in this process, on the session's Ray of 2 CPUs
    result = run(config, tmp_path / "spark", [*settings, "engine=spark", "spark.master=local[2]"])
    assert "crawlbelt: spark: embedded, local[2], 2 cores" in result.stderr
    assert_same_output(tmp_path / "ray", tmp_path / "spark")
    rejects = (tmp_path / "spark" / "manifest.json").read_text()
    assert '"exact_duplicate"' in rejects and '"near_duplicate"' in rejects  # both dedup stages found some


@needs_spark
@pytest.mark.slow
def test_a_killed_spark_driver_resumes_with_the_same_bytes_as_ray(tmp_path, fixture_crawl_on_ray):
    """The fixture crawl on Spark, its driver killed (with its JVM) once the filter pass has finished a file;
    the rerun reuses that file and gives the bytes of an uninterrupted Ray run."""
    config = CONFIGS / "local.yaml"
    inputs = sorted(str(p) for p in (FIXTURES / "warc").iterdir())
    spark = [*SETTINGS, "engine=spark", "spark.master=local[2]"]
    out = tmp_path / "spark"
    args = command(config, out, spark) + ["--input", *inputs]
    killed = subprocess.Popen(args, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and killed.poll() is None:
        if any((out / "_work" / "filtered").glob("file-*.parquet")):
            break
        time.sleep(0.2)
    assert killed.poll() is None, "the run ended before the filter pass finished a file"
    os.killpg(killed.pid, signal.SIGKILL)  # the driver and its JVM, as when a machine goes away
    killed.wait(timeout=60)

    # The rerun serves metrics.port, scraped over HTTP while it runs (tests/test_progress.py)
    (port,) = free_ports(1)
    with Scraper(port, out) as scraper:
        result = subprocess.run(
            [*args, "--set", f"metrics.port={port}", "--set", "progress.log_every_s=1"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    resumed = [line for line in result.stderr.splitlines() if "resume:" in line]
    assert resumed and f"of {len(inputs)} files already through the filter pass" in resumed[0], result.stderr[-3000:]
    check_against_manifest(scraper.scrapes, json.loads((out / "manifest.json").read_text()))
    # progress from Spark's finished tasks (its status tracker), logged every second where stderr is no terminal
    counted = re.findall(r"progress: (?:dedup|finalize|tokens)(?: \(step \d+\))?: ([\d,]+) of", result.stderr)
    assert any(done != "0" for done in counted), result.stderr[-3000:]
    assert_same_output(fixture_crawl_on_ray, out)  # conftest.py: the same crawl uninterrupted on Ray, no metrics


def test_engine_spark_without_java_is_one_line(tmp_path):
    """No JVM: the run stops before any work with one line saying what to install."""
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)  # the venv's tools, no java
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", str(CONFIGS / "local.yaml"), "--output", str(tmp_path / "out")]
        + ["--set", "engine=spark"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "config error: engine: spark needs Java 17 on PATH (or JAVA_HOME): apt install openjdk-17-jre-headless"
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "settings, line",
    [
        (["engine=flink"], "config error: engine: expected one of ray, spark, got 'flink'"),
        (
            ["spark.conf=[a, b]"],
            "config error: spark.conf: expected a mapping of names to single values, got ['a', 'b']",
        ),
        (["spark.conf={spark.x: {a: 1}}"], "config error: spark.conf: expected a mapping of names to single values"),
        (["spark.master=7"], "config error: spark.master: expected str, got int 7"),
    ],
)
def test_spark_settings_are_checked(tmp_path, settings, line):
    args = [arg for s in settings for arg in ("--set", s)]
    result = cli("run", str(CONFIGS / "local.yaml"), "--output", str(tmp_path / "out"), *args)
    assert result.returncode == 2
    assert result.stderr.startswith(line), result.stderr


def test_spark_conf_values_reach_spark_as_text():
    """Spark takes every setting as a string: YAML's true and 4 become "true" and "4", not "True"."""
    from pipeline.config.load import load_config

    config = load_config(
        str(CONFIGS / "local.yaml"),
        overrides=["engine=spark", "spark.conf={spark.python.worker.reuse: true, spark.executor.cores: 4}"],
    )
    assert config.spark.conf == {"spark.python.worker.reuse": "true", "spark.executor.cores": "4"}
