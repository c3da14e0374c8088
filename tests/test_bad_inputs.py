"""The catalogue of bad input (testdata/make_bad_inputs.py, tests/fixtures/bad): every kind gives its
named outcome, the records around the bad one get through, nothing raises, and one belt run over the
whole catalogue keeps the ledger's invariants."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from warcio.archiveiterator import ArchiveIterator

from helpers import ROOT
from pipeline import belt
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from stages.extract import METHODS, Extract
from stages.ledger import NOT_DOCUMENT
from stages.warc_read import read_warc
from testdata import make_bad_inputs

BAD = ROOT / "tests" / "fixtures" / "bad"

EXPECTED = json.loads((BAD / "expected.json").read_text())


def outcomes(
    path: Path, file_index: int = 0, max_payload_bytes: int = 10_000_000, extract: Extract | None = None
) -> list[dict]:
    """Reader and extract stage over one file: one dict per record, in file order."""
    tables = list(read_warc(str(path), file_index, "bad", batch_size=4, max_payload_bytes=max_payload_bytes))
    if not tables:
        return []
    rows = (extract or Extract(timeout_s=5))(pa.concat_tables(tables)).to_pylist()
    for row in rows:
        if row["stage"] == NOT_DOCUMENT:
            row["outcome"] = row["reason"]  # the record type
        else:
            row["outcome"] = row["reason"] or ("kept" if row["text"] else "no text")
    return rows


def assert_outcomes(rows: list[dict], expected: list[list], path: Path) -> None:
    assert [row["outcome"] for row in rows] == [e[0] for e in expected], [(r["outcome"], r["detail"]) for r in rows]
    orders = [row["order"] for row in rows]
    assert orders == sorted(set(orders)), "each record once, in file order"
    for row, (outcome, *needle) in zip(rows, expected):
        if outcome == "kept":
            assert row["text"].strip() and row["reason"] is None
            if needle:
                assert needle[0] in row["text"], (needle[0], row["text"][:200])
        elif outcome.startswith(("read:", "extract:")):
            assert row["detail"], f"{outcome} without a detail"
            if needle:
                assert needle[0] in row["detail"], row["detail"]
        if outcome == "read:malformed":  # says where: the file and the byte offset
            assert str(path) in row["detail"] and f"offset {row['offset']}" in row["detail"], row["detail"]


def test_catalogue_is_reproducible_and_committed(tmp_path):
    written = make_bad_inputs.write_all(tmp_path)
    assert written == EXPECTED
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in BAD.iterdir())
    for path in tmp_path.iterdir():
        assert path.read_bytes() == (BAD / path.name).read_bytes(), path.name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_bad_input_gives_its_named_outcome(name):
    path = BAD / name
    assert_outcomes(outcomes(path), EXPECTED[name], path)


def test_limits_name_the_big_inputs(tmp_path):
    """The 50 MB page and the gzip, brotli and zstd bombs, written here: read:too_large under the default
    payload limit (a bomb is stopped after max_payload_mb of decompressed bytes); with a payload limit
    that lets the page through, extract's HTML limit rejects it before parsing."""
    expected = make_bad_inputs.big_files(tmp_path)
    for name, outcome in expected.items():
        assert_outcomes(outcomes(tmp_path / name), outcome, tmp_path / name)
    rows = outcomes(tmp_path / "html_50mb.warc", max_payload_bytes=60_000_000)
    assert [r["outcome"] for r in rows] == ["kept", "extract:too_large", "kept"]
    assert "over the 5000000-byte limit" in rows[1]["detail"]


@pytest.mark.parametrize("method", METHODS)
def test_wet_text_passes_extraction_untouched(method):
    """A WET conversion record's payload is the document's text (UTF-8, a bad byte replaced), whatever
    extraction method runs; WAT metadata records stay non-documents."""
    path = BAD / "wet.warc.wet.gz"
    rows = outcomes(path, extract=Extract(timeout_s=5, method=method))
    with open(path, "rb") as handle:
        payloads = [r.content_stream().read() for r in ArchiveIterator(handle) if r.rec_type == "conversion"]
    *pages, blank = [row for row in rows if row["record_type"] == "conversion"]
    assert [row["text"] for row in pages] == [p.decode("utf-8", errors="replace") for p in payloads[:-1]]
    assert all(row["charset"] == "utf-8" and row["content_type"] == "text/plain" for row in pages)
    assert "\ufffd" in pages[1]["text"]
    assert blank["reason"] == "extract:empty" and blank["text"] is None
    wat = outcomes(BAD / "wat.warc.wat.gz")
    assert [(row["stage"], row["reason"]) for row in wat] == [
        (NOT_DOCUMENT, "warcinfo"),
        *[(NOT_DOCUMENT, "metadata")] * 2,
    ]


def test_deeply_nested_html_does_not_stop_the_file(tmp_path):
    nested = make_bad_inputs.page("<div>" * 50_000 + make_bad_inputs.GOOD_TEXT + "</div>" * 50_000)
    path = tmp_path / "nested.warc"
    path.write_bytes(make_bad_inputs.around(make_bad_inputs.response(nested.encode())))
    rows = outcomes(path, extract=Extract(timeout_s=0))  # no time limit: this is about depth, not time
    # deeper than resiliparse can parse in time: rejected before parsing
    assert [r["outcome"] for r in rows] == ["kept", "extract:too_complex", "kept"]
    assert rows[1]["detail"].startswith("tags nested 500") and rows[1]["detail"].endswith(" deep, over 5000")


def test_a_page_past_the_time_limit_does_not_stop_the_file(tmp_path):
    # ~22 MB of paragraphs: trafilatura needs many seconds for it, a small page a few milliseconds
    slow = make_bad_inputs.page("</p><p>".join([make_bad_inputs.GOOD_TEXT] * 80_000))
    path = tmp_path / "slow.warc"
    path.write_bytes(make_bad_inputs.around(make_bad_inputs.response(slow.encode())))
    warm = tmp_path / "warm.warc"  # trafilatura's first call in a process loads much: not part of any page's time
    warm.write_bytes(make_bad_inputs.good(1))
    assert [r["outcome"] for r in outcomes(warm)] == ["kept"]
    rows = outcomes(path, max_payload_bytes=30_000_000, extract=Extract(timeout_s=1, max_html_bytes=None))
    assert [r["outcome"] for r in rows] == ["kept", "extract:timeout", "kept"]
    assert rows[1]["detail"].startswith("over 1 s")


def test_the_users_own_mistakes_are_one_line_errors(tmp_path):
    config = ROOT / "configs" / "local.yaml"
    with pytest.raises(ConfigError, match="matches no file"):
        load_config(str(config), inputs=[str(tmp_path / "missing.warc")], output=str(tmp_path / "out"))
    with pytest.raises(ConfigError, match="not found"):
        load_config(str(tmp_path / "missing.yaml"))
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(belt.OutputError, match="cannot be written"):
        belt.prepare_output(blocker / "out")  # its parent is a file
    with pytest.raises(belt.OutputError, match="cannot be written"):
        belt.prepare_output(Path("/proc/crawlbelt-out"))  # a read-only file system, even for root


@pytest.mark.slow  # about 15 s or more side by side: out of the quick loop
def test_one_belt_run_over_the_whole_catalogue_keeps_the_ledger(embedded_ray, tmp_path):
    files = sorted(str(BAD / name) for name in EXPECTED)
    config = load_config(
        str(ROOT / "configs" / "local.yaml"),
        inputs=files,
        output=str(tmp_path / "out"),
        overrides=["dedup.near=false", "packing.seq_len=32"],
    )
    manifest = belt.run(config)
    counts = manifest["counts"]
    assert all(manifest["invariants"].values()), manifest["invariants"]
    assert counts["records_read"] == sum(len(rows) for rows in EXPECTED.values())
    planted = Counter(row[0] for rows in EXPECTED.values() for row in rows if row[0].startswith(("read:", "extract:")))
    found = {
        reason: n for reason, n in counts["rejected_by_reason"].items() if reason.startswith(("read:", "extract:"))
    }
    assert found == dict(planted)
    not_documents = Counter(row[0] for rows in EXPECTED.values() for row in rows if row[0] in ("warcinfo", "metadata"))
    assert counts["kept"] > 0 and counts["not_documents"] == dict(not_documents)
    assert len(manifest["inputs"]) == len(EXPECTED)  # every file read, those with no records too
