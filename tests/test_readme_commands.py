"""The README's "two commands" block, as written: the sample run is run here, line for line; the test command
is the one CI runs (.ci/run), so the suite does not run itself."""

import json
import re
import subprocess

import pytest

from helpers import ROOT


def two_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"```bash\n(.*?)```", text[text.index("## The two commands") :], re.S)
    assert match, "README: no bash block under ## The two commands"
    block = match.group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_the_readme_sample_command_runs_as_written():
    sample, tests = two_commands()
    assert tests == "bash scripts/test.sh"
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()  # CI runs the README's test command
    result = subprocess.run(["bash", "-c", sample], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads((ROOT / "out" / "local" / "manifest.json").read_text())
    assert manifest["complete"] and all(manifest["invariants"].values()) and manifest["counts"]["kept"] > 0
    assert "output: " in result.stdout and "report: " in result.stdout
