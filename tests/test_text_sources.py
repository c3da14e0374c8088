"""Every input format through the whole belt: JSONL (plain, gzip, zstd), Parquet text and a Common Crawl WET
file, all made by testdata/make_text_inputs.py from ../shared/realhtml's real main texts, with the ledger
holding, the same filter verdicts for the same texts whatever the format, and malformed JSONL lines as
named rejects."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helpers import ROOT, cli
from testdata import make_text_inputs

FORMATS = ["realhtml.jsonl", "realhtml.jsonl.gz", "realhtml.jsonl.zst", "realhtml.parquet", "realhtml.warc.wet.gz"]


@pytest.mark.slow
def test_every_input_format_goes_through_the_belt_with_the_ledger_holding(tmp_path, run_here):
    if not make_text_inputs.GROUND_TRUTH.is_file():
        pytest.skip(f"../shared/realhtml not found: {make_text_inputs.GROUND_TRUTH} is missing (real main texts)")
    inputs = tmp_path / "inputs"
    make_text_inputs.write_all(inputs)
    documents = len(make_text_inputs.documents())
    config = {
        "sources": [
            {"name": name.replace(".", "_"), "input": [str(inputs / name)], "id_field": "id"} for name in FORMATS
        ]
        + [{"name": "broken", "input": [str(inputs / "broken.jsonl")]}],
        "output": str(tmp_path / "out"),
        "ray": {"num_cpus": 2},
        "classifier": {"kind": "none"},
        "language": {"languages": []},
        "dedup": {"near": False},
        "tokenizer": {"vocab_size": 1000},
        "packing": {"seq_len": 256},
        "mixture": {"budget_tokens": 100000},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    run_here(tmp_path / "c.yaml", out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and all(manifest["invariants"].values()), manifest["invariants"]
    by_file = {Path(part["file"]).name: part for part in manifest["inputs"]}
    for name in FORMATS:
        assert by_file[name]["documents"] == documents, name
    assert by_file["broken.jsonl"]["records"] == 15

    rejects = pa.concat_tables(
        [
            pq.read_table(p, columns=["file", "offset", "stage", "reason", "detail"])
            for p in sorted((out / "rejects").glob("*.parquet"))
        ]
    ).to_pylist()
    # The same texts get the same verdicts from the per-document stages, whatever the format they came in.
    filtered = {
        name: Counter(
            r["reason"]
            for r in rejects
            if Path(r["file"]).name == name and r["stage"] not in ("exact_dedup", "near_dedup")
        )
        for name in FORMATS
    }
    assert all(filtered[name] == filtered[FORMATS[0]] for name in FORMATS), filtered
    assert sum(filtered[FORMATS[0]].values()) > 0  # the rules did reject some real texts
    # Dedup sees the five copies: the first file in path order keeps each text, the other four are duplicates.
    kept = Counter(Path(f).name for f in pq.read_table(out / "docs", columns=["file"])["file"].to_pylist())
    assert set(kept) - {"broken.jsonl"} == {sorted(FORMATS)[0]}
    malformed = [r for r in rejects if Path(r["file"]).name == "broken.jsonl" and r["reason"] == "read:malformed"]
    assert len(malformed) == len(make_text_inputs.BROKEN_LINES) - sum(
        reason != "read:malformed" for _, _, reason, _ in make_text_inputs.BROKEN_LINES
    )
    assert all(" line " in r["detail"] for r in malformed)


def test_a_wet_belt_may_leave_out_extract(tmp_path, run_here):
    """docs/stages.md: a WET file gives the text, so its belt needs no `extract`; an HTML page a WET-named file
    holds is `read:not_text`, not judged as empty; a WARC of pages without `extract` is one line naming it."""
    fixtures = ROOT / "tests" / "fixtures"
    (tmp_path / "CC-1.warc.wet.gz").write_bytes((fixtures / "bad" / "wet.warc.wet.gz").read_bytes())
    (tmp_path / "pages.wet.gz").write_bytes((fixtures / "warc" / "crawl-00000.warc.gz").read_bytes())
    config = {
        "sources": [{"name": "web", "input": ["CC-1.warc.wet.gz", "pages.wet.gz"]}],
        "stages": ["language", "quality", "repetition"],
        "ray": {"num_cpus": 1},
        "language": {"languages": []},
        "dedup": {"near": False},
        "tokenizer": {"vocab_size": 300},
        "packing": {"seq_len": 16},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    run_here(tmp_path / "c.yaml", tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["complete"] and all(manifest["invariants"].values()), manifest["invariants"]
    by_file = {Path(part["file"]).name: part for part in manifest["inputs"]}
    assert by_file["CC-1.warc.wet.gz"]["documents"] == 4 and by_file["CC-1.warc.wet.gz"]["kept"] == 3
    rejects = pq.read_table(tmp_path / "out" / "rejects", columns=["file", "reason"]).to_pylist()
    pages = Counter(r["reason"] for r in rejects if Path(r["file"]).name == "pages.wet.gz")
    assert pages == {"read:not_text": 13, "read:not_html": 1}, pages

    config["sources"][0]["input"] = [str(fixtures / "warc" / "crawl-00000.warc.gz")]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    refused = cli("run", str(tmp_path / "c.yaml"), "--output", str(tmp_path / "refused"), timeout=120)
    assert refused.returncode == 2 and not (tmp_path / "refused").exists()
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: stages: WARC/ARC sources need `extract`"), lines
    assert "crawl-00000.warc.gz' is not a WET file" in lines[0]
