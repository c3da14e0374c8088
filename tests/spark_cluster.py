"""A real Spark standalone cluster on loopback for tests: a master and N workers started with the pyspark
package's own `bin/spark-class` (the pip package has no `sbin/start-*.sh`), each in its own process group, and
jobs sent to it with `bin/spark-submit`. The test stops exactly the processes it started.

    with SparkCluster(workers=2) as cluster:
        driver = cluster.submit([str(job_py), "arg"], wait=False)   # a Popen
        cluster.kill_worker(1)                                      # SIGKILL: a machine lost mid-job
        result = cluster.wait(driver, timeout=300)                  # a CompletedProcess
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from helpers import spark_jvm_options
from ray_cluster import free_ports

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The pyspark package's folder, which holds bin/ and jars/. Not $SPARK_HOME: the tests run the Spark
    this venv pins, whatever other Spark the machine has."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_env(folder: Path) -> dict:
    """The environment of every daemon and driver of a cluster whose files are under FOLDER."""
    env = dict(os.environ)
    for name in ("SPARK_MASTER_HOST", "SPARK_MASTER_PORT", "SPARK_WORKER_CORES", "SPARK_WORKER_MEMORY"):
        env.pop(name, None)  # the command lines say these; a value from the caller's shell would fight them
    env.update(
        SPARK_HOME=str(spark_home()),
        # an empty conf folder: no spark-defaults.conf or spark-env.sh from the machine changes the cluster
        SPARK_CONF_DIR=str(folder / "conf"),
        SPARK_LOCAL_IP="127.0.0.1",
        # block manager and shuffle scratch space of the daemons, executors and driver: under the cluster's
        # folder, so that stop() leaves nothing in /tmp
        SPARK_LOCAL_DIRS=str(folder / "local"),
        # executors' Python (sent to them with each Python function) and the driver's Python under spark-submit
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        # the master's and workers' own JVMs (not executors): 1g each by default, more than they need
        SPARK_DAEMON_MEMORY="512m",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


class SparkCluster:
    """A standalone master on 127.0.0.1 and `workers` workers of `cores` cores and `memory` each; worker i on
    127.0.0.(i+2), an address of its own as a machine would have (any 127.x.y.z is loopback on Linux): Spark
    keys shuffle outputs, locality and exclusion by host, and if all workers shared one address, a lost
    worker's host would be every worker's (Spark would drop the surviving workers' shuffle outputs too).

    A context manager: `with SparkCluster(...) as cluster:` starts it and waits until every worker is
    registered and ALIVE, and stops it on the way out, also when the block raised."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g", folder: Path | None = None):
        self.worker_count, self.cores, self.memory = workers, cores, memory
        self._own_folder = folder is None  # a folder this object made is removed by stop()
        self.folder = Path(tempfile.mkdtemp(prefix="cb-spark-")) if folder is None else Path(folder)
        self.logs = self.folder / "logs"
        for name in ("conf", "local", "logs"):
            (self.folder / name).mkdir(parents=True, exist_ok=True)
        self.env = spark_env(self.folder)
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.drivers: list[subprocess.Popen] = []
        self.port = self.webui_port = 0

    # -- the cluster's addresses and folders

    @property
    def url(self) -> str:
        """The master's address, as --master takes it."""
        return f"spark://127.0.0.1:{self.port}"

    @property
    def webui(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"

    def worker_host(self, i: int) -> str:
        """Worker i's address, and its executors'."""
        return f"127.0.0.{i + 2}"

    def worker_dir(self, i: int) -> Path:
        """Worker i's SPARK_WORKER_DIR: executor i/APP/ID runs with its working folder there (and so do the
        Python workers it starts), which is how a task can tell which worker it runs on."""
        return self.folder / f"worker-{i}"

    # -- start

    def __enter__(self) -> SparkCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 120) -> SparkCluster:
        self._start_master(timeout)
        for i in range(self.worker_count):
            self.worker_dir(i).mkdir(exist_ok=True)
            self.workers.append(self._start_worker(i))
        self._wait(lambda: len(self.alive_workers()) == self.worker_count, timeout, f"{self.worker_count} workers")
        return self

    def _start_worker(self, i: int) -> subprocess.Popen:
        return self._daemon(
            f"worker-{i}",
            [WORKER_CLASS, "--host", self.worker_host(i), "--cores", str(self.cores), "--memory", self.memory]
            # --port 0 and --webui-port 0: ports the kernel picks as the worker binds, so none can collide
            + ["--port", "0", "--webui-port", "0", "--work-dir", str(self.worker_dir(i)), self.url],
            extra_env={"SPARK_WORKER_DIR": str(self.worker_dir(i)), "SPARK_LOCAL_IP": self.worker_host(i)},
        )

    def restart_killed_workers(self, timeout: float = 120) -> None:
        """Start again, on its address and folder, each worker kill_worker() ended (a machine replaced), and wait
        until every worker is ALIVE: the next job finds the cluster as start() left it."""
        killed = [i for i, worker in enumerate(self.workers) if worker.poll() is not None]
        hosts = {self.worker_host(i) for i in killed}
        alive = [p for p in (self.master, *self.workers) if p is not None and p.poll() is None]

        def dropped() -> bool:  # by the master: until then a killed worker counts as one of the workers ALIVE
            return not [w for w in self.alive_workers() if w["host"] in hosts]

        self._wait(dropped, timeout, "the master to drop the killed workers", alive)
        for i in killed:
            self.workers[i] = self._start_worker(i)
        self._wait(lambda: len(self.alive_workers()) == self.worker_count, timeout, f"{self.worker_count} workers")

    def _start_master(self, timeout: float) -> None:
        """The master needs known ports (the workers and drivers are told them). Ports free a moment ago can be
        taken before the master binds them; Spark would then quietly bind the next port up, so it is told not to
        (spark.port.maxRetries=0) and fails, and the master is started again on other ports."""
        for attempt in range(3):
            self.port, self.webui_port = free_ports(2)
            self.master = self._daemon(
                "master",
                [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.webui_port)],
                # no REST submission server: its fixed port 6066 would be taken by any other cluster of the machine
                extra_env={"SPARK_MASTER_OPTS": "-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false"},
            )
            try:
                self._wait(lambda: (self.master_state() or {}).get("status") == "ALIVE", timeout, "the master")
                return
            except RuntimeError:
                lost_port = "BindException" in self._tail("master.log", 10**9)
                if not lost_port or attempt == 2:
                    raise
                self.master.wait()
                (self.logs / "master.log").unlink()  # the next try's log starts empty

    def _daemon(self, name: str, args: list[str], extra_env: dict | None = None) -> subprocess.Popen:
        """`spark-class ARGS` in a process group of its own (spark-class execs the JVM, so its pid leads the
        group, and the executors a worker starts join it), its output appended to logs/NAME.log."""
        with open(self.logs / f"{name}.log", "a") as log:
            return subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                env={**self.env, **(extra_env or {})},
                cwd=self.folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    # -- state

    def master_state(self) -> dict | None:
        """The master's JSON (url, status, workers, activeapps, completedapps...), None while it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.webui}/json/", timeout=5) as response:
                return json.load(response)
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> list[dict]:
        state = self.master_state() or {}
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def _wait(self, ready, timeout: float, what: str, processes: list | None = None) -> None:
        """Until READY(); a daemon of PROCESSES (the master and the workers unless said) that exits is an error."""
        deadline = time.monotonic() + timeout
        while not ready():
            for process in (self.master, *self.workers) if processes is None else processes:
                if process is not None and process.poll() is not None:
                    raise RuntimeError(
                        f"a Spark daemon exited ({process.returncode}) while waiting for {what}:\n" + self.log_tails()
                    )
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not up in {timeout} s:\n" + self.log_tails())
            time.sleep(0.5)

    def _tail(self, name: str, chars: int) -> str:
        path = self.logs / name
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def log_tails(self, chars: int = 2000) -> str:
        """The end of each daemon's, driver's and executor's log, for a failure message."""
        paths = (
            sorted(self.logs.glob("*.log"))
            + sorted(self.logs.glob("*.out"))
            + sorted(self.folder.glob("worker-*/app-*/*/stderr"))
        )
        return "\n".join(f"--- {p.relative_to(self.folder)}:\n{p.read_text(errors='replace')[-chars:]}" for p in paths)

    # -- jobs

    def submit_command(self, args: list[str], conf: dict | None = None) -> list[str]:
        """spark-submit's command line: the cluster's defaults, then CONF (which wins), then ARGS (the script
        and its arguments, or further spark-submit options before them)."""
        settings = {
            "spark.ui.enabled": "false",  # no driver web UI: one port less, and nothing to look at in a test
            # every worker's executor, not only the first to start, before the first task: cores.max is what
            # "all" is, the ratio says all of it (standalone's default ratio is 0: run on whatever is there)
            "spark.cores.max": str(self.cores * self.worker_count),
            "spark.executor.cores": str(self.cores),
            "spark.executor.memory": self.memory,  # one executor fits a worker's --memory exactly
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
            # A lost worker's running tasks run again elsewhere. When the master reports the worker lost first
            # (what this harness sees) they do not count as failures; when the driver sees the executor's
            # connection drop first, they do, and 4 (the cluster default, said here because a lost worker relies
            # on it; local mode's is 1) lets them run again.
            "spark.task.maxFailures": "4",
            "spark.executor.extraJavaOptions": spark_jvm_options(),  # as the daemons' (conftest)
            **(conf or {}),
        }
        conf_args = [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]
        return [str(spark_home() / "bin" / "spark-submit"), "--master", self.url, *conf_args, *args]

    def submit(
        self,
        args: list[str],
        conf: dict | None = None,
        wait: bool = True,
        timeout: float = 300,
        cwd: Path | None = None,
    ) -> subprocess.Popen | subprocess.CompletedProcess:
        """spark-submit ARGS to the cluster (client mode: the driver runs here), in a process group of its own
        that stop() ends. wait=False returns the Popen (give it to wait()); wait=True returns wait()'s
        CompletedProcess. The driver's stdout goes to logs/driver-N.out, its stderr (Spark's log) to driver-N.log."""
        n = len(self.drivers)
        with open(self.logs / f"driver-{n}.out", "w") as out, open(self.logs / f"driver-{n}.log", "w") as err:
            driver = subprocess.Popen(
                self.submit_command(args, conf),
                env=self.env,
                cwd=cwd or self.folder,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.drivers.append(driver)
        return self.wait(driver, timeout) if wait else driver

    def wait(self, driver: subprocess.Popen, timeout: float = 300) -> subprocess.CompletedProcess:
        """The driver's exit status and output once it ends; past TIMEOUT its group is killed and TimeoutError
        raised with the logs' tails."""
        try:
            driver.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(driver, signal.SIGKILL)
            driver.wait()
            raise TimeoutError(f"spark-submit did not end in {timeout} s:\n" + self.log_tails()) from None
        n = self.drivers.index(driver)
        return subprocess.CompletedProcess(
            driver.args, driver.returncode, self._tail(f"driver-{n}.out", 10**9), self._tail(f"driver-{n}.log", 10**9)
        )

    # -- stop

    def kill_worker(self, i: int, timeout: float = 30) -> None:
        """Kill worker i at once, no shutdown, as a machine lost: SIGKILL to its process group, which holds its
        executors; then its executors' Python workers, which PySpark's daemon puts in a group of their own (they
        end by themselves when they see their executor gone: waited for up to TIMEOUT s, then killed)."""
        _kill_group(self.workers[i], signal.SIGKILL)
        self.workers[i].wait()
        _end_processes_in(self.worker_dir(i), timeout)

    def stop(self) -> None:
        """End the drivers, workers and master this object started (their process groups: SIGTERM, then SIGKILL
        whatever is left after 30 s), then their executors' Python workers, and remove the folder if this
        object made it."""
        processes = [p for p in (*self.drivers, *self.workers, self.master) if p is not None]
        for process in processes:
            _kill_group(process, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for process in processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _kill_group(process, signal.SIGKILL)  # whatever did not stop on SIGTERM
            process.wait()
        _end_processes_in(self.folder, timeout=10)  # the Python workers of the executors just ended
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)  # the group start_new_session made, led by this process
    except ProcessLookupError:
        pass


def processes_in(folder: Path) -> list[int]:
    """Pids of the processes whose working folder lies in FOLDER (an executor and the Python workers it starts
    work in SPARK_WORKER_DIR/APP/ID)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if Path(os.readlink(proc / "cwd")).is_relative_to(folder):
                    pids.append(int(proc.name))
            except OSError:
                pass  # gone, or not ours to read
    return pids


def _end_processes_in(folder: Path, timeout: float) -> None:
    """Wait up to TIMEOUT s for the processes working in FOLDER to end, then SIGKILL those left: they are this
    cluster's, by their folder, which only this cluster uses."""
    deadline = time.monotonic() + timeout
    while (pids := processes_in(folder)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
