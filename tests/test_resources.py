"""A pass's per-task request that no node of the cluster can satisfy is one line before any work, not a hang."""

import subprocess
import sys

import pytest

from helpers import ROOT
from pipeline.config import ConfigError, PassResources, RayConfig, ResourcesConfig
from pipeline.engines.engine_ray import check_resources


pytestmark = pytest.mark.usefixtures("embedded_ray")  # conftest.py


@pytest.mark.parametrize(
    "filter_settings, encode_settings, expected",
    [
        (
            PassResources(num_cpus=4),
            PassResources(),
            "resources.filter.num_cpus: a task asks for 4 CPUs, which no node",
        ),
        (PassResources(), PassResources(num_cpus=2.5), "resources.encode.num_cpus: a task asks for 2.5 CPUs"),
        (PassResources(memory_mb=10**9), PassResources(), "resources.filter.memory_mb: a task asks for 1000000000 MB"),
    ],
)
def test_a_request_no_node_fits_names_the_key_and_the_cluster(filter_settings, encode_settings, expected):
    with pytest.raises(ConfigError) as error:
        check_resources(ResourcesConfig(filter=filter_settings, encode=encode_settings), RayConfig())
    assert expected in str(error.value) and "(cluster: 1 node of 2 CPUs and " in str(error.value)


def test_requests_that_fit_pass_and_a_joined_cluster_waits_its_bound_first():
    check_resources(ResourcesConfig(filter=PassResources(num_cpus=2, memory_mb=64)), RayConfig())
    # As a joined cluster (an address), the check waits ray.resource_wait_s for a node that fits, then fails.
    with pytest.raises(ConfigError, match=r"after waiting 0.5 s \(ray.resource_wait_s\)"):
        check_resources(
            ResourcesConfig(encode=PassResources(num_cpus=3)),
            RayConfig(address="auto", resource_wait_s=0.5),
            poll_s=0.1,
        )


def test_the_command_line_says_it_in_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "run",
            str(ROOT / "configs" / "local.yaml"),
            "--output",
            str(out),
            "--set",
            "resources.filter.num_cpus=4",
            "--set",
            "ray.num_cpus=2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: resources.filter.num_cpus: a task asks for 4 CPUs")
    assert not out.exists()
