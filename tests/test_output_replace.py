"""What a run may replace: only crawlbelt's own outputs (by their marker), and an earlier output only once
the new one is complete. A rerun that fails or is killed leaves the earlier output whole; a dry run never
replaces a real run; a run cut short is never taken for a finished one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, cli, run_here
from pipeline import storage
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from test_kill_resume import INPUTS, SETTINGS, command, run_and_kill

SAMPLE = ROOT / "configs" / "local.yaml"

# Folders a user may point --output at by mistake: a web app's build, dbt's target/, a killed tool's _work,
# and markers that are not crawlbelt's (another format, a newer version of ours).
FOREIGN = {
    "web app": {"manifest.json": '{"name": "pwa"}', "docs/guide.md": "hi"},
    "dbt target": {"manifest.json": '{"metadata": {}}', "run_results.json": "{}"},
    "a _work folder": {"_work/notes.txt": "mine"},
    "another marker": {".crawlbelt": "hello", "docs/guide.md": "hi"},
    "a newer format": {".crawlbelt": '{"format": "crawlbelt-output", "version": 99, "kind": "run"}'},
}


def make_tree(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "_work" not in p.parts
    }


@pytest.mark.parametrize("layout", FOREIGN)
def test_a_folder_that_is_not_a_crawlbelt_output_is_refused(tmp_path, layout):
    make_tree(tmp_path / "x", FOREIGN[layout])
    with pytest.raises(ConfigError, match="is not an earlier crawlbelt output"):
        load_config(str(SAMPLE), output=str(tmp_path / "x"))


def test_the_web_app_folder_is_refused_in_one_line_and_left_alone(tmp_path):
    make_tree(tmp_path / "x", FOREIGN["web app"])
    result = cli("run", str(SAMPLE), "--output", str(tmp_path / "x"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr[-2000:]
    assert "not an earlier crawlbelt output" in result.stderr
    assert snapshot(tmp_path / "x") == {k: v.encode() for k, v in FOREIGN["web app"].items()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, ray_session) -> Path:
    out = tmp_path_factory.mktemp("finished") / "out"
    run_here(SAMPLE, out, SETTINGS, inputs=INPUTS)
    return out


def test_a_finished_output_is_marked_and_complete(finished_run):
    marker = json.loads((finished_run / ".crawlbelt").read_text())
    assert marker == {"format": "crawlbelt-output", "version": 1, "kind": "run"}
    assert json.loads((finished_run / "manifest.json").read_text())["complete"] is True
    assert not (finished_run / "_work").exists()


@pytest.mark.slow
def test_a_rerun_that_fails_or_is_killed_leaves_the_earlier_output_whole(finished_run, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(finished_run, out)
    before = snapshot(out)
    empty_model = tmp_path / "empty.bin"
    empty_model.write_bytes(b"")
    failed = subprocess.run(
        command(out, SETTINGS + [f"language.model_path={empty_model}"]),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert failed.returncode != 0
    assert snapshot(out) == before
    # another setting, so that the new output differs; killed in the filter pass, after finalize, in packing
    changed = SETTINGS + ["quality.min_words=10"]
    for marker in ("filter pass:", "finalize:", "mixture:"):
        assert run_and_kill(out, marker, 0.0, changed), marker
        assert snapshot(out) == before, marker
    run_here(SAMPLE, out, changed, inputs=INPUTS)
    after = snapshot(out)
    assert after != before and json.loads((out / "manifest.json").read_text())["complete"] is True
    assert not (out / "_work").exists()


def test_a_dry_run_does_not_replace_a_real_run(finished_run):
    before = snapshot(finished_run)
    result = cli("dry-run", "--output", str(finished_run))
    assert result.returncode == 2 and "holds a real run's output" in result.stderr, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1
    assert snapshot(finished_run) == before


@pytest.mark.slow
def test_a_run_cut_after_finalize_is_not_taken_for_a_finished_one(tmp_path):
    out = tmp_path / "out"
    assert run_and_kill(out, "finalize:", 0.3)
    assert not (out / "manifest.json").exists()  # the new output is built aside and never moved in
    built = json.loads((out / "_work" / "output" / "manifest.json").read_text())
    assert built["complete"] is False and "tokens" not in built
    result = cli("report", str(out))
    assert result.returncode == 2 and "did not complete" in result.stderr, result.stderr[-2000:]
    # its own report says so too
    page = cli("report", str(out / "_work" / "output"), "--output", str(tmp_path / "cut.html"))
    assert page.returncode == 0, page.stderr[-2000:]
    assert "This run did not complete" in (tmp_path / "cut.html").read_text()


def build_output(folder: Path, names: list[str], run: str) -> None:
    """A complete output of `run` holding `names` (folders get one part), its manifest last."""
    for name in names:
        path = folder / name / "part-00000.parquet" if "." not in name else folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(run)
    (folder / ".crawlbelt").write_text(storage.marker_text("run"))
    (folder / "manifest.json").write_text(json.dumps({"run": run}))


def listing(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


# (the earlier run's names, the new run's): a rerun that keeps no document, rejects nothing, drops a format
RERUNS = [
    (["docs", "rejects", "tokens", "report.html", "README.md"], ["rejects", "tokens", "report.html"]),
    (["docs", "rejects", "tokens", "report.html", "README.md", "run.log"], ["docs", "tokens", "report.html"]),
    (["docs", "tokens", "report.html"], ["docs", "rejects", "tokens", "report.html", "README.md", "run.log"]),
]


@pytest.mark.parametrize("old, new", RERUNS)
def test_a_rerun_leaves_exactly_the_new_runs_files(tmp_path, old, new):
    out, build = tmp_path / "out", tmp_path / "out" / "_work" / "output"
    build_output(out, old, "old")
    build_output(build, new, "new")
    expected = listing(build)
    storage.commit_local(build, out, out / "_work" / "replaced")
    shutil.rmtree(out / "_work")
    assert listing(out) == expected


def commit_cut_after(moves: int, build: Path, out: Path, monkeypatch) -> bool:
    """commit_local killed before its move number `moves` (from 0); whether it finished first."""
    real_replace = os.replace
    done: list[str] = []

    def cut(source, target):
        if len(done) == moves:
            raise KeyboardInterrupt
        done.append(source)
        real_replace(source, target)

    monkeypatch.setattr(storage.os, "replace", cut)
    try:
        storage.commit_local(build, out, out / "_work" / "replaced")
        return True
    except KeyboardInterrupt:
        return False
    finally:
        monkeypatch.setattr(storage.os, "replace", real_replace)


@pytest.mark.parametrize("old, new", RERUNS)
def test_a_commit_cut_short_is_finished_with_exactly_the_new_runs_files(tmp_path, old, new, monkeypatch):
    """Killed after any number of moves, the commit is finished by calling it again (prepare_output does)."""
    for moves in range(100):
        out = tmp_path / f"cut-{moves}"
        build = out / "_work" / "output"
        build_output(out, old, "old")
        build_output(build, new, "new")
        expected = listing(build)
        finished = commit_cut_after(moves, build, out, monkeypatch)
        if not finished:
            assert listing(out).get("manifest.json", '{"run": "old"}') == '{"run": "old"}'  # never the new one
            storage.commit_local(build, out, out / "_work" / "replaced")
        shutil.rmtree(out / "_work")
        assert listing(out) == expected, moves
        if finished:
            break


def test_a_reused_staging_folder_uploads_exactly_the_new_runs_files(tmp_path, s3_server, monkeypatch):
    """An s3:// output built in a kept storage.staging folder: the second upload holds only its own files."""
    import pyarrow.fs as pafs

    from pipeline.config import StorageConfig

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    settings = StorageConfig(endpoint=s3_server, region="us-east-1")
    fs = storage.s3_filesystem(settings)
    pafs.S3FileSystem(
        access_key="testing",
        secret_key="testing",
        region="us-east-1",
        scheme="http",
        endpoint_override=s3_server.split("://")[1],
        allow_bucket_creation=True,
    ).create_dir("bucket")
    staging = tmp_path / "staging"
    for run, names in (("old", RERUNS[0][0]), ("new", RERUNS[0][1])):
        build = staging / "_work" / "output"
        build_output(build, names, run)
        expected = listing(build)
        storage.commit_local(build, staging, staging / "_work" / "replaced")
        shutil.rmtree(staging / "_work")
        storage.commit_output(staging, "s3://bucket/out", settings)
    uploaded = {
        info.path.removeprefix("bucket/out/"): fs.open_input_stream(info.path).read().decode()
        for info in fs.get_file_info(pafs.FileSelector("bucket/out", recursive=True))
        if info.type == pafs.FileType.File
    }
    assert uploaded == expected


@pytest.mark.parametrize("layout", ["web app", "a _work folder"])
def test_a_staging_folder_that_is_not_a_crawlbelt_output_is_refused(tmp_path, s3_server, layout, monkeypatch):
    """storage.staging is where an s3:// output is built, replacing what is there: never someone's folder."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    make_tree(tmp_path / "staging", FOREIGN[layout])
    sets = [f"storage.endpoint={s3_server}", "storage.region=us-east-1", f"storage.staging={tmp_path / 'staging'}"]
    with pytest.raises(ConfigError, match="storage.staging: .* is not an earlier crawlbelt output"):
        load_config(str(SAMPLE), overrides=sets, output="s3://bucket/out")
    assert listing(tmp_path / "staging") == FOREIGN[layout]
