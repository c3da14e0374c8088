"""The README's two-node procedure ("On a two-node Ray cluster, through `submit`") run as written: its bash
block is read out of README.md and each command line typed into one bash session, from the repository root."""

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import ROOT

HEADING = "**2. On a two-node Ray cluster"

# `ray stop` stops every Ray process it can see. A PID namespace of its own (as a machine of its own) shows it
# only the processes of this session, not other Ray runs of this machine (other tests, other users).
UNSHARE = ["unshare", "--kill-child", "--fork", "--pid", "--mount-proc"]
if os.geteuid() != 0:
    UNSHARE[1:1] = ["--user", "--map-root-user"]


def readme_commands() -> list[str]:
    """The block's command lines, a line ending in a backslash joined with the next."""
    text = (ROOT / "README.md").read_text()
    match = re.search(r"```bash\n(.*?)```", text[text.index(HEADING) :], re.S)
    assert match, f"README: no bash block under {HEADING}"
    block = match.group(1)
    return re.split(r"(?<!\\)\n", block.strip())


def private_namespaces() -> bool:
    try:
        return subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Shell:
    """One bash session, as a person types into a terminal: `export` holds for the lines after it."""

    def __init__(self, env: dict, timeout: float):
        self.process = subprocess.Popen(
            [*UNSHARE, "bash"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        # A safety deadline only: the whole session is ended if a command hangs.
        self.deadline = threading.Timer(timeout, self.close)
        self.deadline.start()

    def run(self, command: str) -> tuple[int, str]:
        """The command's exit status and output. Its stdin is /dev/null, so that it cannot read the lines after it."""
        done = f"__done_{secrets.token_hex(4)}__"
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin and stdout  # opened as pipes
        stdin.write(f"{{ {command}\n}} </dev/null\necho {done} $?\n")
        stdin.flush()
        output: list[str] = []
        for line in stdout:
            if line.startswith(done):
                return int(line.split()[1]), "".join(output)
            output.append(line)
        raise RuntimeError(f"the shell ended during {command!r}:\n" + "".join(output)[-4000:])

    def close(self) -> None:
        """Ends the session, and with it every process left in its namespace."""
        self.deadline.cancel()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


@pytest.mark.skipif(
    not private_namespaces(),
    reason="needs `unshare` (PID namespaces), so that the README's "
    "`ray stop` stops only this test's Ray and not other Ray runs of this machine",
)
@pytest.mark.cluster
@pytest.mark.slow
def test_the_readme_two_node_procedure_as_written(tmp_path):
    commands = readme_commands()
    assert len(commands) == 6 and "--working-dir ." in commands[3], commands
    output = Path(re.search(r"--output (\S+)", commands[3]).group(1).replace("$PWD", str(ROOT)))
    shutil.rmtree(output, ignore_errors=True)  # the manifest checked below is this run's
    # Ray's files and the address file `ray start` writes go to a folder of this test's (RAY_TMPDIR), not the
    # machine's /tmp/ray; a short one: Ray's socket paths must stay under about 100 characters.
    ray_tmpdir = tempfile.mkdtemp(prefix="cb-ray-", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmpdir, "RAY_USAGE_STATS_ENABLED": "0"}
    # A user's shell, not this process's environment: an embedded Ray started by an earlier test set
    # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 here (engine.start_ray), which makes `ray start --address` refuse.
    for name in ("RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"):
        env.pop(name, None)
    shell = Shell(env, timeout=900)
    try:
        job_id = None
        for command in commands:
            if "<JOB_ID>" in command:
                command = command.replace("<JOB_ID>", job_id)
            status, said = shell.run(command)
            assert status == 0, (command, said[-6000:])
            if " pipeline submit " in command:
                job_id = re.search(r"submit: job (\S+):", said).group(1)
                assert f"Job '{job_id}' succeeded" in said, said[-6000:]
                assert "crawlbelt: ray: joined the cluster at " in said, said[-6000:]
            if " job status " in command:
                assert f"'{job_id}' succeeded" in said, said
        _, left = shell.run("ps -e -o comm=")
        assert not {"raylet", "gcs_server"} & set(left.split()), left  # `ray stop` stopped both nodes
    finally:
        shell.close()
        shutil.rmtree(ray_tmpdir, ignore_errors=True)

    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["complete"] and manifest["invariants"] and all(manifest["invariants"].values())
    counts = manifest["counts"]
    assert counts["records_read"] == counts["documents"] + sum(counts["not_documents"].values())
    assert counts["documents"] == counts["kept"] + sum(counts["rejected"].values())
    kept = sum(pq.ParquetFile(part).metadata.num_rows for part in (output / "docs").glob("*.parquet"))
    assert counts["kept"] == kept > 0 and manifest["tokens"]["sequences"] > 0
    assert len(manifest["nodes"]) == 2, manifest["nodes"]  # both nodes did per-document work
