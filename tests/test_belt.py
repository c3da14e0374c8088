"""The whole belt on a real embedded Ray: the dry run, the fixture crawl, the real WARC files, determinism."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import CONFIGS, FIXTURES, ROOT, SHARED
from pipeline import belt
from pipeline.passes import filtering
from pipeline.config.load import load_config
from pipeline.crawl_sample import EXPECTED, verdicts, write_warc

REALDATA = SHARED / "realdata" / "warc"


pytestmark = pytest.mark.usefixtures("embedded_ray")  # conftest.py


def read_rows(folder: Path) -> list[dict]:
    paths = sorted(folder.glob("*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in paths]).to_pylist() if paths else []


def run_fixture(tmp_path, name="out", overrides=(), inputs=None):
    config = load_config(
        str(CONFIGS / "local.yaml"), output=str(tmp_path / name), overrides=list(overrides), inputs=inputs
    )
    return belt.run(config), tmp_path / name


def test_crawl_sample_warc_is_reproducible(tmp_path):
    write_warc(tmp_path / "crawl_sample.warc")
    assert (tmp_path / "crawl_sample.warc").read_bytes() == (CONFIGS / "crawl_sample.warc").read_bytes()


@pytest.mark.slow  # about 15 s or more side by side: out of the quick loop
def test_dry_run_gives_the_expected_table(tmp_path):
    config = load_config(str(CONFIGS / "crawl_sample.yaml"), output=str(tmp_path / "dry"))
    manifest = belt.run(config)
    assert verdicts(tmp_path / "dry") == EXPECTED
    counts = manifest["counts"]
    assert counts["documents"] == 7 and counts["kept"] == 2
    assert counts["rejected"] == {"language": 1, "quality": 2, "exact_dedup": 1, "near_dedup": 1}
    assert all(manifest["invariants"].values())
    assert manifest["tokens"]["sequences"] > 0 and (tmp_path / "dry" / "report.html").is_file()
    rejects = {r["url"].rsplit("/", 1)[1]: r for r in read_rows(tmp_path / "dry" / "rejects")}
    kept_ids = {r["url"].rsplit("/", 1)[1]: r["id"] for r in read_rows(tmp_path / "dry" / "docs")}
    assert rejects["3"]["dup_of"] == rejects["5"]["dup_of"] == kept_ids["0"]


@pytest.mark.slow
def test_dry_run_command_prints_the_table(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "dry-run", "--output", str(tmp_path / "dry")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    table = "\n".join(["| page | verdict |", "|---|---|"] + [f"| {i} | {v} |" for i, v in enumerate(EXPECTED)])
    assert table in result.stdout


def test_fixture_crawl_verdicts_match_what_was_planted(tmp_path):
    manifest, out = run_fixture(tmp_path)
    expected = json.loads((FIXTURES / "expected.json").read_text())["records"]
    docs = {r["url"]: r for r in read_rows(out / "docs")}
    rejects = read_rows(out / "rejects")
    by_url = {r["url"]: r for r in rejects if r["url"]}
    id_of = {**{u: r["id"] for u, r in docs.items()}, **{u: r["id"] for u, r in by_url.items()}}

    for record in expected:
        kind, url = record["kind"], record["url"]
        if kind == "clean":
            assert url in docs, f"clean page rejected: {url} {by_url.get(url)}"
        elif kind == "exact_duplicate":
            assert by_url[url]["reason"] == "exact_duplicate" and by_url[url]["dup_of"] == id_of[record["duplicate_of"]]
        elif kind == "near_duplicate":
            assert by_url[url]["reason"] == "near_duplicate" and by_url[url]["dup_of"] == id_of[record["duplicate_of"]]
        elif kind == "non_english":
            assert by_url[url]["reason"] == f"language:{record['lang']}", by_url[url]
        elif kind == "junk":
            assert by_url[url]["stage"] in ("language", "quality", "repetition"), by_url[url]
        elif kind == "not_html":
            assert by_url[url]["reason"] == "read:not_html"
        elif kind == "http_error":
            assert by_url[url]["reason"] == "read:http_status"
    malformed = [r for r in rejects if r["reason"] == "read:malformed"]
    planted = [r for r in expected if r["kind"] == "malformed"]
    assert [(Path(r["file"]).name, r["offset"]) for r in malformed] == [(r["file"], r["offset"]) for r in planted]
    assert f"offset {planted[0]['offset']}" in malformed[0]["detail"]

    counts = manifest["counts"]
    assert counts["records_read"] == len(expected)
    assert counts["not_documents"] == dict(Counter(r["record_type"] for r in expected if r["kind"] == "not_document"))
    assert counts["kept"] == sum(r["kind"] == "clean" for r in expected) == len(docs)
    assert counts["documents"] == counts["kept"] + sum(counts["rejected"].values()) == len(docs) + len(rejects)
    assert all(manifest["invariants"].values())
    # the manifest on disk says the same
    assert json.loads((out / "manifest.json").read_text())["counts"] == counts
    assert not (out / "_work").exists()
    assert_training_outputs(manifest, out)


def assert_training_outputs(manifest, out):
    """A run ends with token shards, the tokenizer beside them, the mixture table and the report."""
    tokens = manifest["tokens"]
    assert tokens["sequences"] > 0 and (out / "tokens" / "tokenizer.json").is_file()
    assert (out / "report.html").is_file()
    assert [s["path"] for s in tokens["shards"]] == sorted(str(p.relative_to(out)) for p in out.glob("tokens/part-*"))
    assert [row["source"] for row in manifest["mixture"]["table"]] == ["web"]
    assert manifest["mixture"]["table"][0]["passes"] == 1.0 and manifest["mixture"]["warnings"] == []
    assert tokens["sequences"] * (tokens["seq_len"] + 1) == sum(tokens["tokens_per_source"].values())


def test_kept_documents_carry_their_columns(tmp_path):
    _, out = run_fixture(tmp_path, overrides=["dedup.near=false"])
    docs = read_rows(out / "docs")
    assert docs and all(d["lang"] == "en" and d["lang_score"] > 0.65 and len(d["text"].split()) >= 50 for d in docs)
    assert all(isinstance(d["quality_score"], float) and d["id"].startswith("<urn:uuid:") for d in docs)
    orders = [(d["file"], d["offset"]) for d in docs]
    assert orders == sorted(orders)


def test_same_bytes_whatever_the_partitioning(tmp_path):
    tokens = ["packing.seq_len=32", "packing.sequences_per_shard=40"]
    _, first = run_fixture(tmp_path, "a", overrides=tokens)
    files = sorted(str(p) for p in (FIXTURES / "warc").iterdir())
    _, second = run_fixture(
        tmp_path,
        "b",
        overrides=tokens + ["dedup.shards=3", "read.batch_size=5", "tokenizer.batch_size=7"],
        inputs=list(reversed(files)),
    )
    parts = sorted(p.relative_to(first) for p in first.rglob("*.parquet"))
    assert parts and parts == sorted(p.relative_to(second) for p in second.rglob("*.parquet"))
    assert Path("dedup_index/shard-00000.parquet") in parts  # its files too: their count is not dedup.shards
    assert len(list((first / "tokens").glob("part-*.parquet"))) >= 3
    for part in parts + [Path("tokens/tokenizer.json")]:
        assert (first / part).read_bytes() == (second / part).read_bytes(), part


@pytest.mark.skipif(
    not REALDATA.is_dir(), reason=f"../shared/realdata not found at {REALDATA}: real WARC tests skipped"
)
@pytest.mark.slow
def test_every_real_warc_file_goes_through(tmp_path):
    manifest, out = run_fixture(tmp_path, inputs=[str(REALDATA / "*")])
    counts = manifest["counts"]
    assert all(manifest["invariants"].values())
    assert counts["records_read"] == counts["documents"] + sum(counts["not_documents"].values())
    assert counts["kept"] > 0 and counts["not_documents"]["revisit"] > 100
    malformed = Counter(Path(r["file"]).name for r in read_rows(out / "rejects") if r["reason"] == "read:malformed")
    for name in (
        "resiliparse__clipped.warc.gz",
        "warcio__bad.arc",
        "warcio__example-trunc.warc",
        "warcio__example-wrong-chunks.warc.gz",
    ):
        assert malformed[name] >= 1, name
    parts = {p["file"].rsplit("/", 1)[1]: p for p in manifest["inputs"]}
    assert len(parts) == len(list(REALDATA.iterdir()))
    assert_training_outputs(manifest, out)


def test_extraction_time_limit_holds_inside_ray_workers(tmp_path):
    manifest, out = run_fixture(tmp_path, overrides=["extract.timeout_s=0.00001", "dedup.near=false"])
    reasons = manifest["counts"]["rejected_by_reason"]
    assert reasons.get("extract:timeout", 0) >= 30 and manifest["counts"]["kept"] == 0, reasons
    assert all(manifest["invariants"].values())
    # nothing kept: a tokenizer of bytes alone, no sequences, and still a report
    assert manifest["tokens"]["sequences"] == 0 and manifest["tokens"]["shards"] == []
    assert manifest["mixture"]["table"][0]["tokens_available"] == 0 and (out / "report.html").is_file()


def test_a_rerun_redoes_only_the_files_the_filter_pass_had_not_finished(tmp_path):
    config = load_config(str(CONFIGS / "local.yaml"), output=str(tmp_path / "out"))
    files = filtering.input_files(config)
    out = tmp_path / "out"
    fingerprint = filtering.fingerprint(config, files)
    folder = out / "_work" / "filtered"
    belt.prepare_output(out, fingerprint)
    filtering.run(config, files, folder)
    parts = sorted(folder.glob("*.parquet"))
    assert [p.name for p in parts] == [f"file-{i:06d}.parquet" for i in range(len(files))] and len(files) >= 3
    whole = {p.name: p.read_bytes() for p in parts}
    untouched = {p.name: p.stat().st_mtime_ns for p in parts}

    # as if the run was killed while writing the second file, then started again with the same config
    parts[1].unlink()
    (folder / ".file-000001.parquet.tmp").write_bytes(b"half a file")
    belt.prepare_output(out, fingerprint)
    filtering.run(config, files, folder)
    assert {p.name: p.read_bytes() for p in folder.glob("*.parquet")} == whole
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("*.parquet") if p != parts[1]} == {
        n: t for n, t in untouched.items() if n != parts[1].name
    }
    assert not list(folder.glob(".*"))

    # a setting that shapes the parts changed: nothing of the earlier run is kept
    changed = load_config(str(CONFIGS / "local.yaml"), output=str(out), overrides=["quality.min_words=10"])
    assert filtering.fingerprint(changed, files) != fingerprint
    belt.prepare_output(out, filtering.fingerprint(changed, files))
    assert not folder.exists()
