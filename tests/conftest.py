"""Fixtures shared by several test files. Paths and small helpers are in helpers.py (conftest is not meant
to be imported); the markers (slow, cluster, browser, gpu) are registered in pyproject.toml."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from helpers import CONFIGS, FIXTURES, SPARK_SETTINGS, build_spark_class_archive, spark_jvm_options
from helpers import run_here as run_here_
from ray_cluster import free_ports


def pytest_configure(config):
    """The environment of every process a test starts: tests/ on PYTHONPATH, and the JVM flags of every JVM,
    in this process or in its subprocesses: drivers (local or spark-submit) and the standalone harness's daemons
    (the README's blocks pass them on through JAVA_TOOL_OPTIONS). The class archive is built first, by the
    controller alone (xdist's workers start later)."""
    if not hasattr(config, "workerinput"):
        build_spark_class_archive()
    # The users' stages that tests define in tests/ (`use: test_user_stages:...`) import wherever a test's Ray
    # starts, in this process or a subprocess, as a user's PYTHONPATH reaches their stages. Set for the whole
    # session: a Ray started later (after a test stopped the session's) must have it too.
    here = str(Path(__file__).parent)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if here not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, *paths]))
    os.environ.setdefault("SPARK_SUBMIT_OPTS", spark_jvm_options())
    os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", spark_jvm_options())


def pytest_collection_modifyitems(items):
    """Run side by side (CRAWLBELT_TEST_WORKERS), the tests that start a cluster still run one after another, on one
    worker: the README's blocks use the default ports, and two clusters at once would crowd a small machine.
    Such groups go first, so that the other workers share the rest of the tests while one runs a group."""
    for item in items:
        if item.get_closest_marker("cluster"):
            item.add_marker(pytest.mark.xdist_group("cluster"))
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)  # stable: else file order


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray of 2 CPUs in this process, as a run without --address starts it, for every test that runs
    the belt in this process: it starts once, and its workers, once warm, stay warm."""
    import ray

    from pipeline.config import RayConfig
    from pipeline.engines.engine_ray import start_ray

    start_ray(RayConfig(num_cpus=2))
    yield
    ray.shutdown()


@pytest.fixture
def embedded_ray(ray_session):
    """The session's Ray as the engine of this test's in-process passes (an earlier test may have run Spark)."""
    from pipeline.engines import engine

    engine.use("ray")


@pytest.fixture
def run_here(ray_session):
    """helpers.run_here, with the session's Ray up first (else the first run here would start one of its own
    settings for every later test)."""
    return run_here_


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """moto's S3 API server on a free loopback port; yields its endpoint."""
    (port,) = free_ports(1)
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "w")
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=2)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "moto_server did not start"
                time.sleep(0.2)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


@pytest.fixture(scope="session")
def fixture_crawl_on_ray(tmp_path_factory, ray_session) -> Path:
    """The fixture crawl run uninterrupted on the session's Ray with SPARK_SETTINGS: the bytes
    that every Spark run of it (embedded, on a cluster, killed and resumed) must give. One run for the session."""
    out = tmp_path_factory.mktemp("fixture-crawl-on-ray") / "out"
    inputs = sorted(str(p) for p in (FIXTURES / "warc").iterdir())
    run_here_(CONFIGS / "local.yaml", out, SPARK_SETTINGS, inputs=inputs)
    return out
