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


def readme_block(section: str) -> list[str]:
    """The commands of the first bash block under a README heading."""
    text = (ROOT / "README.md").read_text()
    match = re.search(r"```bash\n(.*?)```", text[text.index(section) :], re.S)
    assert match, f"README: no bash block under {section}"
    return [line for line in match.group(1).splitlines() if line.strip()]


@pytest.mark.slow  # three belt runs over the fixture crawl
def test_a_crawl_against_an_earlier_one_runs_as_written_and_keeps_what_one_run_keeps(tmp_path, run_here):
    """The README's `dedup.against` block, as written; the second crawl keeps exactly the documents of its
    files that one run over all three files keeps (the first crawl's file sorts first: its documents come first)."""
    for command in readme_block("### A new crawl against the corpus already kept"):
        result = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
    import pyarrow.parquet as pq  # noqa: PLC0415

    from helpers import CONFIGS, FIXTURES, assert_complete  # noqa: PLC0415

    together = tmp_path / "together"
    run_here(CONFIGS / "local.yaml", together, inputs=sorted(str(p) for p in (FIXTURES / "warc").iterdir()))
    later = ("crawl-00001", "crawl-00002")

    def kept(out):
        docs = pq.read_table(out / "docs", columns=["id", "file", "dup_count"]).to_pylist()
        return sorted((d["id"], d["dup_count"]) for d in docs if d["file"].rsplit("/", 1)[-1].startswith(later))

    crawl_b = ROOT / "out" / "crawl-b"
    manifest = assert_complete(crawl_b)
    assert kept(crawl_b) == kept(together) and manifest["counts"]["kept"] == len(kept(crawl_b))
    rejects = pq.read_table(crawl_b / "rejects", columns=["dup_of"])["dup_of"].to_pylist()
    assert any(d and d.startswith(str(ROOT / "out" / "crawl-a") + "#") for d in rejects)  # named with its output


@pytest.mark.slow  # one belt run over the fixture crawl, in a process of its own
def test_before_and_during_a_large_run_runs_as_written():
    """The README's block as one script: validate, a run in the background scraped over HTTP and `status`-ed
    while it runs, then the finished run's status from its manifest."""
    script = "\n".join(readme_block("## Before and during a large run"))
    result = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "config configs/local.yaml: no problems found" in result.stdout
    assert re.search(r"^crawlbelt_pass_fraction\{pass=\"\w+\"\} [\d.]+$", result.stdout, re.M), result.stdout[-3000:]
    assert "run in progress: pid " in result.stdout, result.stdout[-3000:]
    manifest = json.loads((ROOT / "out" / "large" / "manifest.json").read_text())
    finished = result.stdout[result.stdout.rindex("run complete in ") :]
    assert f"kept: {manifest['counts']['kept']:,}" in finished and "from manifest.json" in finished
