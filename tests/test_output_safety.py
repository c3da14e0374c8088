"""Where a run may write, and what it says when it cannot: a full disk mid-run is one line and a rerun
after freeing space finishes; input and source names cannot make a run write outside its output folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import ROOT

FIXTURE_WARCS = sorted((ROOT / "tests" / "fixtures" / "warc").iterdir())


def run(output: Path, inputs: list[Path], *settings: str) -> subprocess.CompletedProcess:
    sets = [arg for s in ("ray.num_cpus=1", "packing.seq_len=32", *settings) for arg in ("--set", s)]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "run",
            str(ROOT / "configs" / "local.yaml"),
            "--input",
            *map(str, inputs),
            "--output",
            str(output),
            *sets,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if mounted.returncode:
        pytest.skip(
            f"a full disk is simulated with a small tmpfs, and mounting one failed here: {mounted.stderr.strip()}"
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(disk: Path, leave: int) -> Path:
    """Fill the file system but `leave` bytes."""
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    with open(filler, "r+b") as handle:
        handle.truncate(max(0, filler.stat().st_size - leave))
    return filler


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_a_rerun_after_freeing_space_finishes(small_disk):
    filler = fill(small_disk, leave=16 * 1024)
    out = small_disk / "out"
    failed = run(out, FIXTURE_WARCS)
    assert failed.returncode == 2, failed.stderr[-3000:]
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("output error: ") and "No space left on device" in last, failed.stderr[-3000:]
    assert "Traceback" not in failed.stderr
    for name in ("docs", "rejects", "tokens"):  # nothing partial under a final name
        assert not [p for p in (out / name).glob("*") if not p.name.startswith(".")]
    assert not (out / "manifest.json").exists()

    filler.unlink()
    rerun = run(out, FIXTURE_WARCS)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert all(manifest["invariants"].values()) and manifest["counts"]["kept"] > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "point,leave_kb,settings",
    [
        # what the run writes before the tokenizer (dedup_index/ included, about 400 KB) fits in 520 KB, the trained tokenizer (about 240 KB) does not
        ("saving the tokenizer", 520, []),
        # the tokenizer and the encoded tokens fit, 2M drawn tokens of shards (about 360 passes) do not
        ("writing the token shards", 800, ["mixture.budget_tokens=2000000", "mixture.max_passes=1000"]),
    ],
)
def test_a_full_disk_in_the_tokens_pass_is_one_line(small_disk, point, leave_kb, settings):
    fill(small_disk, leave=leave_kb * 1024)
    out = small_disk / "out"
    failed = run(out, FIXTURE_WARCS, *settings)
    assert failed.returncode == 2, failed.stderr[-3000:]
    reached = "crawlbelt: finalize:" if point == "saving the tokenizer" else "crawlbelt: encode:"
    assert reached in failed.stderr and "crawlbelt: pack:" not in failed.stderr, failed.stderr[-3000:]
    assert ("crawlbelt: tokenizer:" in failed.stderr) == (point == "writing the token shards")
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith(f"output error: {out}") and "No space left on device" in last, failed.stderr[-3000:]
    assert "Traceback" not in failed.stderr and " ERROR " not in failed.stderr, failed.stderr[-3000:]
    for shard in (out / "tokens").glob("part-*.parquet"):  # shards written before the disk filled are whole
        assert pq.ParquetFile(shard).metadata.num_rows > 0


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.slow
def test_input_and_source_names_cannot_write_outside_the_output(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    names = ["..warc.gz", "a b <c> ..%2F..%2Fescape.warc.gz", "-dash.warc"]
    for name, source in zip(names, FIXTURE_WARCS):
        shutil.copy(source, inputs / name)
    before_here, before_root = tree(tmp_path), sorted(p.name for p in ROOT.iterdir())
    result = run(tmp_path / "out", sorted(inputs.iterdir()), "sources=[{name: '../../escape', input: []}]")
    assert result.returncode == 0, result.stderr[-3000:]
    written = tree(tmp_path) - before_here
    assert written and all(path == "out" or path.startswith("out/") for path in written), sorted(written)
    assert sorted(p.name for p in ROOT.iterdir()) == before_root
    parts = sorted(p.name for p in (tmp_path / "out" / "docs").iterdir())
    assert parts and all(p.startswith("part-") for p in parts)
