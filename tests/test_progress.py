"""Progress and metrics while a run goes on (pipeline/progress.py, pipeline/metrics.py, pipeline/status.py): the
progress line, `metrics.port` scraped over HTTP during a real run and checked against the manifest at the end,
OUT/_work/progress.json and `status`, and that none of it changes an output byte."""

from __future__ import annotations

import json
import re
import socket
import threading
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from helpers import CONFIGS, FIXTURES, SPARK_SETTINGS, assert_same_output, cli
from pipeline import progress
from ray_cluster import free_ports


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """One real HTTP scrape of /metrics, parsed by the client library's own parser: (sample, labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


class Scraper:
    """Scrapes `port` and reads OUT/_work/progress.json every 0.1 s until stopped: what a monitoring system and
    `status` see while the run goes on."""

    def __init__(self, port: int, out: Path):
        self.port, self.out = port, out
        self.scrapes: list[dict] = []
        self.progress_files: list[dict] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.1):
            try:
                self.scrapes.append(scrape(self.port))
            except OSError:  # not yet serving, or done
                pass
            try:
                self.progress_files.append(json.loads((self.out / "_work" / progress.PROGRESS_FILE).read_text()))
            except (OSError, ValueError):
                pass

    def __enter__(self) -> Scraper:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def value(found: dict, name: str, **labels) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


def in_pass(found: dict) -> str | None:
    passes = [dict(labels)["pass"] for (name, labels), v in found.items() if name == "crawlbelt_pass" and v == 1]
    return passes[0] if passes else None


def check_against_manifest(scrapes: list[dict], manifest: dict) -> None:
    """The run was scraped while a pass went on, and, once finalize had counted, every count the manifest has."""
    assert any(in_pass(found) in ("filter", "dedup") for found in scrapes), [in_pass(s) for s in scrapes]
    counts = manifest["counts"]
    finalized = [found for found in scrapes if in_pass(found) == "tokens"]
    assert finalized, [in_pass(s) for s in scrapes]
    found = finalized[-1]
    assert value(found, "crawlbelt_records_read_total") == counts["records_read"]
    assert value(found, "crawlbelt_documents_kept") == counts["kept"]
    for reason, n in counts["rejected_by_reason"].items():
        assert value(found, "crawlbelt_documents_rejected_total", reason=reason) == n, reason
    for reason, n in counts["not_documents"].items():
        assert value(found, "crawlbelt_not_documents_total", reason=reason) == n, reason
    for stage, row in manifest["stages"].items():
        if "rows_in" in row:
            assert value(found, "crawlbelt_stage_documents_in_total", stage=stage) == row["rows_in"], stage
            assert value(found, "crawlbelt_stage_documents_rejected_total", stage=stage) == row["rejected"], stage
            if row["seconds"] is not None:  # CPU-seconds as the manifest rounds them
                cpu = value(found, "crawlbelt_stage_cpu_seconds_total", stage=stage)
                assert cpu == pytest.approx(row["seconds"], abs=2e-3), stage
    # counts taken from the filter pass's finished parts never pass the final ones
    for earlier in scrapes:
        assert (value(earlier, "crawlbelt_records_read_total") or 0) <= counts["records_read"]


@pytest.mark.slow  # one belt run over the fixture crawl (about 30 s here)
def test_metrics_are_scraped_during_a_run_on_ray_and_change_no_byte(tmp_path, run_here, fixture_crawl_on_ray, caplog):
    """The fixture crawl with metrics.port, scraped over HTTP while it runs: the final counts are the manifest's;
    progress.json is there while it runs and `status` reads it; progress lines are logged where stderr is not a
    terminal; and the output is the same, byte for byte, as the same run without metrics (conftest)."""
    (port,) = free_ports(1)
    out = tmp_path / "out"
    inputs = sorted(str(p) for p in (FIXTURES / "warc").iterdir())
    settings = [*SPARK_SETTINGS, f"metrics.port={port}", "progress.log_every_s=0.5"]
    with caplog.at_level("INFO", logger="crawlbelt"), Scraper(port, out) as scraper:
        manifest = run_here(CONFIGS / "local.yaml", out, settings, inputs=inputs)
    check_against_manifest(scraper.scrapes, manifest)
    # progress.json while it ran, as `status` prints it; gone with _work once the run completed
    running = [p for p in scraper.progress_files if p["pass"] is not None]
    assert running and all(p["state"] == "running" for p in running)
    assert any(p["pass"]["name"] == "filter" and p["pass"]["bytes_total"] == sum(map(_size, inputs)) for p in running)
    assert not (out / "_work").exists()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("progress: ")]
    pattern = r"progress: \w+( \(step \d+\))?: ([\d,]+ of [\d,]+ files, )?[\d,]+ (of ~?[\d,]+ )?documents"
    assert lines and all(re.match(pattern, line) for line in lines), lines
    # nothing here changes an output byte: the manifest's file lists and shard digests, and every file
    reference = json.loads((fixture_crawl_on_ray / "manifest.json").read_text())
    assert manifest["outputs"] == reference["outputs"]
    assert [s["sha256"] for s in manifest["tokens"]["shards"]] == [s["sha256"] for s in reference["tokens"]["shards"]]
    assert_same_output(fixture_crawl_on_ray, out)
    # a finished run's status: the manifest's counts
    shown = cli("status", str(out))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("run complete in ") and "from manifest.json" in shown.stdout
    assert f"kept: {manifest['counts']['kept']:,}" in shown.stdout
    as_json = json.loads(cli("status", str(out), "--json").stdout)
    assert as_json["counts"] == manifest["counts"] and as_json["run"] == "finished"


def _size(path: str) -> int:
    return Path(path).stat().st_size


def test_a_metrics_port_in_use_is_one_line_before_any_work(tmp_path):
    """validate and run both say it in one line, exit 2; the run writes nothing."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for command in ("validate", "run"):
            result = cli(
                command, str(CONFIGS / "local.yaml"), "--output", str(tmp_path / "out"), "--set", f"metrics.port={port}"
            )
            assert result.returncode == 2, result.stderr
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"config error: metrics.port {port}: in use on this machine")
    assert not (tmp_path / "out").exists()
    result = cli("validate", str(CONFIGS / "local.yaml"), "--set", "metrics.port=70000")
    assert result.returncode == 2 and "metrics.port: expected a port number in [1, 65535], got 70000" in result.stderr


def test_status_of_a_folder_without_a_run_is_one_line(tmp_path):
    result = cli("status", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip() == f"status: {tmp_path}: no run there (neither _work/progress.json nor manifest.json)"


def test_the_progress_line_counts_finished_parts_and_extrapolates_by_bytes(tmp_path):
    """The filter pass's documents done come from its finished parts, the total from their records per byte;
    another pass's from the engine's tasks finished; the time left from the rate since the step began."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    now = [1000.0]
    tracker = progress.Tracker(["read", "language"], clock=lambda: now[0])
    parts = progress.FinishedParts(tmp_path, [300, 100])
    tracker.begin_pass("filter", None, 400, parts)
    rows = {"stage": [None, "language", "not_document"], "reason": [None, "language:fr", "request"]}
    pq.write_table(
        pa.table(rows, pa.schema([("stage", pa.string()), ("reason", pa.string())])), tmp_path / "file-000000.parquet"
    )
    now[0] += 10
    tracker.poll()
    shown = tracker.snapshot()
    assert shown["pass"]["documents_done"] == 3 and shown["pass"]["documents_total"] == 4  # 3 per 300 bytes, of 400
    assert shown["pass"]["seconds_left"] == round(100 / 30, 1)  # 100 bytes left at 30 bytes/s
    assert shown["counts"]["stages"] == {
        "read": {"rows_in": 2, "rejected": 0},
        "language": {"rows_in": 2, "rejected": 1},
    }
    assert progress.line(shown) == (
        "filter: 1 of 2 files, 3 of ~4 documents (75%), 0.0 of 0.0 MB, 0 documents/s, 0.0 MB/s, 0:00:03 left"
    )
    tracker.begin_pass("dedup", 40, 4000)
    tracker.step_started()
    tracker.step_started()
    tracker.tasks(1, 4)
    now[0] += 5
    shown = tracker.snapshot()["pass"]
    assert (shown["step"], shown["documents_done"], shown["bytes_done"], shown["seconds_left"]) == (2, 10, 1000, 15.0)
