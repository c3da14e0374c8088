"""Rejects a person can inspect (rejects.text), OUTPUT/run.log, and a console free of warnings: real runs of
the crawl sample through the command line, one per rejects.text choice, with one fixture WARC whose rejected
pages are longer than a snippet."""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray
import yaml
from ray.data.datasource import FilenameProvider
from ray.util.annotations import RayDeprecationWarning

from helpers import CRAWL_SAMPLE, ROOT, cli, run_here
from pipeline import belt
from pipeline.passes import filtering
from pipeline.config import PassResources
from pipeline.config.load import load_config
from pipeline.engines.engine_ray import task_options, write_options
from pipeline.passes.finalize import SNIPPET_CHARS

CONFIG = ROOT / "configs" / "crawl_sample.yaml"
INPUTS = [ROOT / "configs" / "crawl_sample.warc", ROOT / "tests" / "fixtures" / "warc" / "crawl-00002.warc"]
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d ")  # each run.log line starts so


@pytest.fixture(scope="module")
def runs(tmp_path_factory, ray_session):
    """`runs(choice)`: (output folder, finished process) of a run with rejects.text: choice, run when first asked
    for: on the command line for `snippet` (the console's lines are checked), else in this process (no process)."""
    done = {}

    def run(choice: str):
        if choice not in done:
            out = tmp_path_factory.mktemp(choice) / "out"
            inputs = [str(path) for path in INPUTS]
            settings = [f"rejects.text={choice}"]
            if choice == "snippet":
                result = cli("run", str(CONFIG), "--input", *inputs, "--output", str(out), "--set", settings[0])
                assert result.returncode == 0, result.stderr[-3000:]
                done[choice] = out, result
            else:
                run_here(CONFIG, out, settings, inputs=inputs)
                done[choice] = out, None
        return done[choice]

    return run


def rows(folder: Path) -> list[dict]:
    return pa.concat_tables([pq.read_table(p) for p in sorted(folder.glob("*.parquet"))]).to_pylist()


@pytest.mark.parametrize(
    "choice, expected",
    [
        ("full", lambda text: text),
        ("snippet", lambda text: None if text is None else text[:SNIPPET_CHARS]),
        ("none", lambda text: None),
    ],
)
@pytest.mark.slow
def test_rejects_hold_the_text_rejects_text_asks_for(runs, choice, expected):
    full = rows(runs("full")[0] / "rejects")
    rejects = rows(runs(choice)[0] / "rejects")
    assert [r["id"] for r in rejects] == [r["id"] for r in full]
    assert [r["text"] for r in rejects] == [expected(r["text"]) for r in full]


def test_full_reject_text_is_the_extracted_text(runs):
    rejects = rows(runs("full")[0] / "rejects")
    assert max(len(r["text"]) for r in rejects) > SNIPPET_CHARS  # so that the snippet's cut is checked
    sample = [r["text"] for r in rejects if r["file"] == str(INPUTS[0])]
    assert len(sample) == 5 and set(sample) <= set(CRAWL_SAMPLE)  # the sample's pages extract to these texts


def test_rejects_text_is_not_part_of_the_filter_fingerprint():
    configs = [load_config(str(CONFIG), overrides=[f"rejects.text={choice}"]) for choice in ("snippet", "full", "none")]
    files = filtering.input_files(configs[0])
    assert len({filtering.fingerprint(config, files) for config in configs}) == 1


@pytest.mark.slow
def test_the_console_has_no_warning_and_run_log_has_every_line_and_the_config(runs):
    out, result = runs("snippet")
    console = result.stderr.splitlines()
    assert "Warning:" not in result.stderr and "py.warnings" not in result.stderr, result.stderr[-3000:]
    log = (out / "run.log").read_text().splitlines()
    assert log and all(STAMP.match(line) for line in log), [line for line in log if not STAMP.match(line)][:3]
    logged = [STAMP.sub("", line, count=1) for line in log]
    assert logged[0] == "INFO crawlbelt: config (resolved):"
    config = [line for line in logged[1:] if line.startswith("  ")]
    manifest = yaml.safe_load((out / "manifest.json").read_text())
    assert yaml.safe_load("\n".join(line[2:] for line in config)) == manifest["config"]
    assert [line.split(" ", 1)[1] for line in logged[1 + len(config) :]] == console  # every line, the last too
    assert any(line.startswith("crawlbelt: filter pass: ") for line in console)
    assert not (out / "_work").exists()


def test_a_failed_run_leaves_its_log_in_work_and_the_error_says_where(embedded_ray, tmp_path):
    good = tmp_path / "good.txt"
    shutil.copy(ROOT / "configs" / "classifier" / "good.txt", good)
    config = load_config(str(CONFIG), overrides=[f"classifier.good_examples=[{good}]"], output=str(tmp_path / "out"))
    good.unlink()  # gone once the config was checked: the run fails after it started writing its output
    with pytest.raises(FileNotFoundError) as failed:
        belt.run(config)
    log = tmp_path / "out" / "_work" / "run.log"
    assert failed.value.__notes__ == [f"log: {log}"]
    text = log.read_text()
    assert all(STAMP.match(line) for line in text.splitlines())
    assert "ERROR Traceback" in text and f"FileNotFoundError: [Errno 2] No such file or directory: '{good}'" in text
    assert not (tmp_path / "out" / "run.log").exists()


@pytest.mark.parametrize("settings", [PassResources(), PassResources(num_cpus=0.5, memory_mb=64, concurrency=2)])
def test_a_pass_and_its_write_are_one_task_and_ray_warns_nothing(embedded_ray, tmp_path, settings):
    # Defined here so that Ray sends them by value: its workers cannot import this test module.
    def with_task(batch: pa.Table) -> pa.Table:
        return batch.append_column("task", pa.array([ray.get_runtime_context().get_task_id()] * batch.num_rows))

    class TaskNames(FilenameProvider):  # each written file named after the Ray task that writes it
        def get_filename_for_task(self, write_uuid, task_index):
            return f"{write_uuid}-{ray.get_runtime_context().get_task_id()}.parquet"

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (
            ray.data.from_items([{"x": i} for i in range(8)], override_num_blocks=4)
            .map_batches(with_task, batch_format="pyarrow", **task_options(settings))
            .write_parquet(str(tmp_path), filename_provider=TaskNames(), **write_options(settings))
        )
    assert not [w for w in caught if issubclass(w.category, RayDeprecationWarning)], [str(w.message) for w in caught]
    written = sorted(tmp_path.glob("*.parquet"))
    assert written and all(set(pq.read_table(p)["task"].to_pylist()) == {p.stem.split("-")[1]} for p in written)


def test_every_input_file_is_in_the_manifests_inputs_an_empty_one_too(tmp_path):
    """A 0-byte input has no rows in the filter pass, so no counts of its own: it is still an input read."""
    import json

    from pipeline.passes import finalize
    from pipeline.config import Config

    counts = json.dumps(
        {"not_documents": {}, "rejected_by_stage": {}, "rejected_by_reason": {}, "documents": 0, "kept": 0}
    )
    part_counts = pa.table({"file_index": [1], "records": [0], "counts": [counts]}, schema=finalize.COUNT_SCHEMA)
    files = [("/in/a.warc.gz", "web"), ("/in/b.jsonl", "web"), ("/in/c.jsonl", "other")]
    result = finalize.manifest(
        config=Config(),
        out=tmp_path,
        files=files,
        records_read=0,
        part_counts=part_counts,
        stage_seconds={},
        pass_seconds={},
        wall_seconds=0.0,
    )
    zero = {"records": 0, "documents": 0, "kept": 0}
    assert result["inputs"] == [{"file": path, "source": source, **zero} for path, source in files]
