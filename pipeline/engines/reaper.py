"""Nothing outlives its run: a small watchdog process per run ends every process the run started once the
driver is gone, however it went (a normal exit, Ctrl-C, SIGTERM, SIGKILL, the OOM killer).

The watchdog holds the read end of a pipe whose write end only the driver holds: at its end of file the
driver has ended. Until then it notes, every `WATCH_S`, the run's processes: the driver's descendants, and
every process whose environment carries the token the driver put in its own (CRAWLBELT_RUN) before it
started the engine, which the processes the run starts inherit. Either alone misses some: Ray's gcs,
raylet and workers are re-parented when the driver dies, a process orphaned within a second may never be
seen in the tree, and Ray's agents overwrite their environment with their process title. Once the driver
is gone, the watchdog gives the run's processes (and theirs) `GRACE_S` to end by themselves (the engines
stop their own at a normal exit), then SIGKILLs those left, such as a worker stuck in C code that ignores
signals. The processes of a cluster the run joins (`ray.address`, spark-submit) are neither the driver's
children nor marked: they are left alone.

    python -m pipeline.engines.reaper TOKEN DRIVER_PID      the watchdog (started by `start`, its stdin the pipe)
"""

from __future__ import annotations

import functools
import os
import secrets
import select
import signal
import subprocess
import sys
import time

MARK = "CRAWLBELT_RUN"
GRACE_S = 5.0  # the engines' own shutdown: Ray's, after a Ctrl-C, takes about 3 s here
WATCH_S = 1.0  # how often the run's processes are noted while it runs
POLL_S = 0.1  # how often the sweep looks again

_watchdog: subprocess.Popen | None = None  # the run's watchdog, and the pipe's write end, held for the driver's life
_pipe_end: int | None = None


def start() -> None:
    """Mark this process's environment for the processes it will start, and start the run's watchdog: in a
    session of its own (a terminal's Ctrl-C reaches the driver, not it), its stdin a pipe from this process."""
    global _watchdog, _pipe_end
    if _watchdog is not None:
        return
    token = secrets.token_hex(8)
    os.environ[MARK] = token
    read_end, _pipe_end = os.pipe()  # not inherited by the processes the run starts (O_CLOEXEC): the driver's alone
    _watchdog = subprocess.Popen(
        [sys.executable, "-m", "pipeline.engines.reaper", token, str(os.getpid())],
        stdin=read_end,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(read_end)


def watch(token: str, driver: int) -> None:
    """The watchdog: signals sent to the run (a terminal's, `timeout`'s, a supervisor's) are the driver's to
    act on; this notes the run's processes until the driver's end, then sweeps them. The driver's tree is
    followed only while it is this process's parent: its PID, once it is gone, may be another process's."""
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)
    seen: dict[int, int] = {}
    while not driver_ended(WATCH_S):
        seen = run_processes(token, driver if os.getppid() == driver else None, seen)
    sweep(token, seen)


def driver_ended(timeout_s: float) -> bool:
    """Whether the pipe reached its end of file within `timeout_s` (the driver writes nothing into it)."""
    readable, _, _ = select.select([0], [], [], timeout_s)
    return bool(readable) and not os.read(0, 4096)


def run_processes(token: str, driver: int | None, seen: dict[int, int]) -> dict[int, int]:
    """{PID: start time} of the run's live processes: those seen before (the same start time: a reused PID is
    another process), those carrying the token, and the descendants of these and of the driver. Never the
    driver or this process."""
    table = processes()
    found = {pid for pid, (_, started) in table.items() if seen.get(pid) == started or carries(pid, started, token)}
    roots = found | ({driver} if driver is not None else set())
    while children := {pid for pid, (parent, _) in table.items() if parent in roots} - roots:
        roots |= children
    found = roots - {os.getpid(), driver}
    return {pid: table[pid][1] for pid in found if pid in table}


def processes() -> dict[int, tuple[int, int]]:
    """{PID: (parent PID, start time)} of every live process (a zombie's work is done)."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := process_stat(int(name))) and stat[0] != "Z":
            table[int(name)] = stat[1:]
    return table


def process_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent PID, start time) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after the command name, which may hold anything
    except OSError:
        return None
    return fields[0], int(fields[1]), int(fields[19])


@functools.lru_cache(maxsize=1 << 16)
def carries(pid: int, started: int, token: str) -> bool:
    """Whether the process's environment carries the token: read once per process (PID and start time), as
    an environment gets the token only from the process it was started from."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return f"\0{MARK}={token}\0".encode() in b"\0" + environ.read() + b"\0"
    except OSError:  # gone, or not ours to read
        return False


def kill(pid: int, started: int) -> None:
    """SIGKILL the process `pid` if it is still the one that started at `started`: through a pidfd, so that a
    PID reused by another process between the check and the signal is never hit."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # gone
        return
    try:
        stat = process_stat(pid)
        if stat is not None and stat[2] == started:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:  # ended meanwhile
        pass
    finally:
        os.close(pidfd)


def sweep(token: str, seen: dict[int, int], grace_s: float = GRACE_S) -> None:
    """Wait up to `grace_s` for the run's processes to end, then SIGKILL every one left (again, until none
    is: one may have started another meanwhile)."""
    deadline = time.monotonic() + grace_s
    while seen := run_processes(token, None, seen):
        if time.monotonic() >= deadline:
            for pid, started in seen.items():
                kill(pid, started)
        time.sleep(POLL_S)


if __name__ == "__main__":
    watch(sys.argv[1], int(sys.argv[2]))
