"""A real two-node Ray cluster on loopback for tests: `ray start --head` and `ray start --address`, each in
its own process group (`--block`), so that the test stops exactly the processes it started."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def cluster_env() -> dict:
    """No auth token, and this venv's python first on PATH (a job's `python` is the one on the PATH that
    `ray start` saw). Loopback comes from --node-ip-address: RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 would
    refuse a second node."""
    env = dict(os.environ)
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    env.update(
        RAY_AUTH_MODE="disabled",
        RAY_USAGE_STATS_ENABLED="0",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


class LocalCluster:
    """A head node and, unless worker_cpus is None, a worker node."""

    def __init__(self, head_cpus: int = 1, worker_cpus: int | None = 1, object_store_mb: int = 200):
        self.head_cpus, self.worker_cpus, self.store = head_cpus, worker_cpus, object_store_mb * 1024 * 1024
        # The cluster's RAY_TMPDIR: Ray's files, and the address file `ray start` writes, go to TEMP_DIR/ray
        # rather than the machine's /tmp/ray, where every other Ray of the machine would find it. Short: Ray's
        # unix socket paths must stay under about 100 characters.
        self.temp_dir = tempfile.mkdtemp(prefix="cb-ray-", dir="/tmp")
        self.head: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None
        self.log = Path(self.temp_dir) / "ray-start.log"
        self.address_file = Path(self.temp_dir) / "ray" / "ray_current_cluster"

    def _node_ports(self) -> list[str]:
        node, objects, agent, agent_grpc, metrics, env_agent = free_ports(6)
        return [
            f"--node-manager-port={node}",
            f"--object-manager-port={objects}",
            f"--dashboard-agent-listen-port={agent}",
            f"--dashboard-agent-grpc-port={agent_grpc}",
            f"--metrics-export-port={metrics}",
            f"--runtime-env-agent-port={env_agent}",
            "--min-worker-port=0",
            "--max-worker-port=0",
            "--node-ip-address=127.0.0.1",
            f"--object-store-memory={self.store}",
            "--block",
            "--disable-usage-stats",
        ]

    def _start(self, args: list[str]) -> subprocess.Popen:
        with open(self.log, "a") as log:
            return subprocess.Popen(
                [RAY, "start", *args],
                env={**cluster_env(), "RAY_TMPDIR": self.temp_dir},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def start(self, timeout: float = 120) -> LocalCluster:
        gcs, dashboard, client = free_ports(3)
        self.gcs_address = f"127.0.0.1:{gcs}"
        self.dashboard = f"http://127.0.0.1:{dashboard}"
        self.head = self._start(
            [
                "--head",
                f"--port={gcs}",
                f"--num-cpus={self.head_cpus}",
                "--include-dashboard=true",
                "--dashboard-host=127.0.0.1",
                f"--dashboard-port={dashboard}",
                f"--ray-client-server-port={client}",
                '--resources={"head_node": 1}',
                *self._node_ports(),
            ]
        )
        # `ray start` writes the address file last, after the node is up
        self._wait(lambda: len(self.alive_nodes()) == 1 and self.address_file.exists(), timeout, "the head node")
        if self.worker_cpus is None:
            return self
        self.worker = self._start(
            [
                f"--address={self.gcs_address}",
                f"--num-cpus={self.worker_cpus}",
                '--resources={"worker_node": 1}',
                *self._node_ports(),
            ]
        )
        self._wait(lambda: len(self.alive_nodes()) == 2, timeout, "the worker node")
        return self

    def alive_nodes(self) -> list[dict]:
        """The alive nodes as the dashboard lists them ([] while it is not up)."""
        try:
            with urllib.request.urlopen(f"{self.dashboard}/nodes?view=summary", timeout=5) as response:
                summary = json.load(response)["data"]["summary"]
        except (OSError, ValueError, KeyError):
            return []
        return [n for n in summary if n.get("raylet", {}).get("state") == "ALIVE"]

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            for process in (self.head, self.worker):
                if process is not None and process.poll() is not None:
                    raise RuntimeError(
                        f"ray start exited ({process.returncode}) while waiting for {what}:\n"
                        + self.log.read_text()[-3000:]
                    )
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not come up in {timeout} s:\n" + self.log.read_text()[-3000:])
            time.sleep(0.5)

    def worker_node_id(self) -> str:
        (worker,) = [n["raylet"]["nodeId"] for n in self.alive_nodes() if not n["raylet"].get("isHeadNode")]
        return worker

    def running_tasks(self, node_id: str) -> list[str]:
        """Names of the tasks (not actors' methods) running on the node, as Ray's state API lists them."""
        from ray.util.state import list_tasks

        tasks = list_tasks(
            address=self.dashboard,
            filters=[("state", "=", "RUNNING"), ("node_id", "=", node_id)],
            raise_on_missing_output=False,
        )
        return [t.name for t in tasks if t.type == "NORMAL_TASK"]

    def kill_worker(self) -> None:
        """Kill the worker node's processes at once (no graceful shutdown): a machine lost mid-job."""
        _kill_group(self.worker, signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM to each node's processes, then SIGKILL to what is left after 5 s: the GCS server and the
        autoscaler's monitor outlive SIGTERM by 30 s (Ray 2.60), and `ray start --block` waits for them."""
        for process in (self.worker, self.head):
            _kill_group(process, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for process in (self.worker, self.head):
            if process is not None:
                try:
                    process.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
                _kill_group(process, signal.SIGKILL)
                process.wait()


def _kill_group(process: subprocess.Popen | None, sig: int) -> None:
    if process is None:
        return
    try:
        os.killpg(process.pid, sig)  # the group `start_new_session` made for this `ray start` and its children
    except ProcessLookupError:
        pass
