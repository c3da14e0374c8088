"""Fixtures shared by several test files. Paths and small helpers are in helpers.py (conftest is not meant
to be imported); the markers (slow, cluster, browser, gpu) are registered in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ray_cluster import free_ports


@pytest.fixture(scope="module")
def embedded_ray():
    """A local Ray in this process for the module's tests, as a run without --address starts it."""
    import ray

    from pipeline.config import RayConfig
    from pipeline.engine_ray import start_ray

    start_ray(RayConfig(num_cpus=2))
    yield
    ray.shutdown()


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
