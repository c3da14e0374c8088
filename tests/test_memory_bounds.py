"""Memory per worker is bounded by the config, whatever the input (issue 25): a reader's batch is bounded in bytes
(`read.batch_mb`), every field is checked against a limit before it is held in bulk (ids, URLs and dates at
MAX_FIELD_BYTES, a WARC record's header lines at MAX_HEADER_BYTES), and a Parquet value is checked as it is
decoded, from its dictionary's lengths. Each hostile file is small and made here; each is read by the real
reader, gives its named reject, and the rest of the file is still read."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from backports import zstd

from helpers import ROOT, SPARK_SETTINGS, assert_complete, needs_spark
from stages.read_text import read_jsonl, read_parquet
from stages.warc_read import MAX_FIELD_BYTES, MAX_HEADER_BYTES, read_warc
from test_read_cases import belt_config

MB = 1_000_000
GOOD = "A short text that stays."


def read_all(batches) -> tuple[list[dict], int]:
    """Every row of the batches, and the largest batch's Arrow bytes."""
    rows, largest = [], 0
    for table in batches:
        largest = max(largest, table.nbytes)
        rows += table.select(["offset", "id", "url", "text", "reason", "detail"]).to_pylist()
    return rows, largest


# A batch is bounded in bytes, not only in rows


def test_a_batch_of_near_limit_jsonl_lines_is_bounded_in_bytes(tmp_path):
    """zstd lines each just under the payload limit: a batch of 64 of them would hold 64 times the limit."""
    path = tmp_path / "near.jsonl.zst"
    text = "a" * (MB - 100)
    with zstd.open(path, "wb") as out:
        for n in range(12):
            out.write(json.dumps({"text": f"{n} {text}"}).encode() + b"\n")
    assert path.stat().st_size < 20_000
    rows, largest = read_all(read_jsonl(str(path), 0, "web", 64, max_payload_bytes=MB, batch_bytes=3 * MB))
    assert [row["text"].split()[0] for row in rows] == [str(n) for n in range(12)]
    assert largest <= 3 * MB + MB  # the budget, or one row past it


def test_a_batch_of_plain_parquet_values_is_decoded_within_the_budget(tmp_path):
    """Large plain-encoded values: rows are decoded a few at a time, as the row group's metadata sizes them."""
    path = tmp_path / "plain.parquet"
    texts = [f"{n} " + random.Random(n).randbytes(MB // 2 - 10).hex() for n in range(12)]  # pages of 12 MB
    pq.write_table(pa.table({"text": texts}), path, use_dictionary=False, compression="zstd")
    rows, largest = read_all(read_parquet(str(path), 0, "web", 64, max_payload_bytes=MB, batch_bytes=3 * MB))
    assert [row["text"] for row in rows] == texts
    assert largest <= 3 * MB + MB


# Parquet: a dictionary value repeated by many rows is checked from its length, never decoded row by row


def dictionary_bomb(path: Path, column: str, value_bytes: int, rows: int) -> None:
    """One large dictionary value referenced by `rows` RLE-encoded indices, then three good rows: a few KB."""
    indices = pa.array(np.r_[np.zeros(rows, dtype=np.int32), np.ones(3, dtype=np.int32)])
    bomb = pa.DictionaryArray.from_arrays(indices, pa.array(["x" * value_bytes, GOOD]))
    texts = bomb if column == "text" else pa.array([f"{GOOD} {n}" for n in range(rows + 3)])
    table = pa.table({"text": texts, **({column: bomb} if column != "text" else {})})
    # without the Arrow schema, as most writers (Spark, DuckDB) write: read back as plain strings unless asked
    pq.write_table(table, path, compression="zstd", dictionary_pagesize_limit=1 << 30, store_schema=False)


# read in a fresh process: Arrow's peak allocation there is this file's alone
PEAK = """
import json, sys, tracemalloc
import pyarrow as pa
import pyarrow.parquet
from stages.read_text import read_parquet
reasons = {}
pa.parquet.write_table(pa.table({"text": ["a"]}), sys.argv[1] + ".small")
list(read_parquet(sys.argv[1] + ".small", 0, "web", 64))  # the imports the reader makes once (pandas)
tracemalloc.start()
limits = dict(zip(["max_payload_bytes", "batch_bytes"], map(int, sys.argv[3:])))
for table in read_parquet(sys.argv[1], 0, "web", 64, id_field=sys.argv[2] or None, **limits):
    for reason in table["reason"].to_pylist():
        reasons[str(reason)] = reasons.get(str(reason), 0) + 1
python_peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"reasons": reasons, "arrow_peak": pa.default_memory_pool().max_memory(), "python_peak": python_peak}))
"""


@pytest.mark.parametrize("column", ["text", "id", "url"])
def test_a_parquet_dictionary_bomb_is_rejected_too_large_without_being_decoded(tmp_path, column):
    path = tmp_path / "bomb.parquet"
    over = 11 * MB if column == "text" else MAX_FIELD_BYTES + 1  # the text limit is read.max_payload_mb's 10 MB
    dictionary_bomb(path, column, over, 2000)
    assert path.stat().st_size < 10_000
    found = subprocess.run(
        [sys.executable, "-c", PEAK, str(path), "id" if column == "id" else ""],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.returncode == 0, found.stderr[-2000:]
    result = json.loads(found.stdout)
    assert result["reasons"] == {"read:too_large": 2000, "None": 3}
    # the large value is held a few times (the page, its dictionary: 6 times measured), not once per row of a
    # 64-row batch
    assert result["arrow_peak"] < 10 * over + 10 * MB, result
    assert result["python_peak"] < 10 * MB, result  # no row's value decoded into a Python string


def test_a_dictionary_bomb_in_a_row_group_larger_than_the_batch_budget_is_not_decoded_row_by_row(tmp_path):
    """Padding in the URL column makes the row group larger than read.batch_mb: its strings are read plainly,
    but the text column, whose dictionary page may hold a value over the limit, still as a dictionary."""
    path = tmp_path / "bomb.parquet"
    rows = 2000
    indices = pa.array(np.r_[np.zeros(rows, dtype=np.int32), np.ones(3, dtype=np.int32)])
    texts = pa.DictionaryArray.from_arrays(indices, pa.array(["x" * 3 * MB, GOOD]))
    urls = [f"http://a.example/{n}/" + "p" * 2000 for n in range(rows + 3)]  # 4 MB, not dictionary-encoded
    table = pa.table({"text": texts, "url": urls})
    pq.write_table(
        table, path, compression="zstd", dictionary_pagesize_limit=1 << 30, store_schema=False, use_dictionary=["text"]
    )
    found = subprocess.run(
        [sys.executable, "-c", PEAK, str(path), "", str(MB), str(4 * MB)], cwd=ROOT, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr[-2000:]
    result = json.loads(found.stdout)
    assert result["reasons"] == {"read:too_large": rows, "None": 3}
    assert result["arrow_peak"] < 10 * 3 * MB + 10 * MB, result  # plainly, 64 rows of it: 192 MB
    assert result["python_peak"] < 10 * MB, result


def test_a_parquet_dictionary_page_over_the_budget_rejects_its_row_group_unread(tmp_path):
    path = tmp_path / "bomb.parquet"
    dictionary_bomb(path, "text", 40 * MB, 10)  # over read.batch_mb's 32 MB: pyarrow would decompress it whole
    rows, _ = read_all(read_parquet(str(path), 0, "web", 64))
    assert [row["reason"] for row in rows] == ["read:too_large"] * 13
    assert "row group 0 holds a page inflating to 40000" in rows[0]["detail"]


def test_a_parquet_data_page_that_inflates_past_the_budget_is_never_decompressed(tmp_path):
    """A zstd page of 40 MB in a few KB: its row group is read:too_large from the page's header, the next one read."""
    path = tmp_path / "page.parquet"
    schema = pa.schema([("text", pa.string())])
    with pq.ParquetWriter(path, schema, compression="zstd", use_dictionary=False, data_page_size=1 << 30) as out:
        out.write_table(pa.table({"text": ["x" * 40 * MB, "y"]}, schema=schema))
        out.write_table(pa.table({"text": [GOOD] * 3}, schema=schema))
    assert path.stat().st_size < 10_000
    found = subprocess.run([sys.executable, "-c", PEAK, str(path), ""], cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr[-2000:]
    result = json.loads(found.stdout)
    assert result["reasons"] == {"read:too_large": 2, "None": 3}
    assert result["arrow_peak"] < 10 * MB, result
    rows, _ = read_all(read_parquet(str(path), 0, "web", 64))
    assert "row group 0 holds a page inflating to 40000" in rows[1]["detail"]
    assert [row["text"] for row in rows[2:]] == [GOOD] * 3


def test_a_parquet_row_over_a_field_limit_names_the_field_and_the_rest_is_read(tmp_path):
    path = tmp_path / "bomb.parquet"
    dictionary_bomb(path, "url", MAX_FIELD_BYTES + 1, 5)
    rows, _ = read_all(read_parquet(str(path), 0, "web", 64))
    assert [row["reason"] for row in rows] == ["read:too_large"] * 5 + [None] * 3
    assert f'"url" of {MAX_FIELD_BYTES + 1} bytes, over the {MAX_FIELD_BYTES}-byte limit' in rows[0]["detail"]
    assert [row["text"] for row in rows[5:]] == [f"{GOOD} {n}" for n in range(5, 8)]
    assert all(row["url"] is None and row["text"] is None for row in rows[:5])


# JSONL: an id, URL or date over its limit


@pytest.mark.parametrize("field", ["id", "url", "date"])
def test_a_jsonl_field_over_its_limit_is_rejected_too_large_and_the_rest_is_read(tmp_path, field):
    path = tmp_path / "fields.jsonl.gz"
    lines = [
        {"id": "a", "text": GOOD},
        {"id": "b", "text": GOOD, field: "z" * (MAX_FIELD_BYTES + 1)},
        {"id": "c", "text": GOOD},
    ]
    path.write_bytes(gzip.compress(b"".join(json.dumps(line).encode() + b"\n" for line in lines)))
    rows, _ = read_all(read_jsonl(str(path), 0, "web", 64, id_field="id"))
    assert [row["reason"] for row in rows] == [None, "read:too_large", None]
    assert [row["id"] for row in rows[::2]] == ["a", "c"]
    assert (
        f'line 2: "{field}" of {MAX_FIELD_BYTES + 1} bytes, over the {MAX_FIELD_BYTES}-byte limit' in rows[1]["detail"]
    )
    assert rows[1]["url"] is None and rows[1]["text"] is None and len(rows[1]["id"]) < 100


# WARC: a header line of megabytes, a header block of many lines, a target URI over the field limit


def warc_record(headers: list[tuple[str, str]], body: bytes) -> bytes:
    block = "".join(f"{name}: {value}\r\n" for name, value in headers).encode()
    return b"WARC/1.0\r\n" + block + f"Content-Length: {len(body)}\r\n\r\n".encode() + body + b"\r\n\r\n"


def response(url: str, http_headers: bytes = b"") -> bytes:
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + http_headers + b"\r\n"
    body = http + f"<html><body><p>Page {url[:40]}</p></body></html>".encode()
    headers = [
        ("WARC-Type", "response"),
        ("WARC-Target-URI", url),
        ("Content-Type", "application/http; msgtype=response"),
    ]
    return warc_record(headers, body)


HOSTILE_RECORDS = {  # what the middle record holds, what its detail says
    "long_header_line": (response("http://a.example/" + "u" * (3 * MAX_HEADER_BYTES)), "header lines over"),
    "many_http_headers": (response("http://a.example/2", b"X-A: b\r\n" * 400_000), "header lines over"),
    "long_target_uri": (response("http://a.example/" + "u" * MAX_FIELD_BYTES), "WARC-Target-URI of"),
}


@pytest.mark.parametrize("compressed", [True, False], ids=["warc.gz", "warc"])
@pytest.mark.parametrize("kind", HOSTILE_RECORDS)
def test_a_warc_record_with_oversized_headers_is_rejected_too_large_and_the_rest_is_read(tmp_path, kind, compressed):
    record, detail = HOSTILE_RECORDS[kind]
    records = [response("http://a.example/1"), record, response("http://a.example/3")]
    path = tmp_path / ("hostile.warc.gz" if compressed else "hostile.warc")
    path.write_bytes(b"".join(gzip.compress(r) if compressed else r for r in records))
    rows, largest = read_all(read_warc(str(path), 0, "web", 64))
    assert [row["reason"] for row in rows] == [None, "read:too_large", None]
    assert detail in rows[1]["detail"]
    assert [row["url"] for row in rows[::2]] == ["http://a.example/1", "http://a.example/3"]
    assert rows[1]["url"] is None
    assert largest < MB


# End to end, on both engines: the rejects are counted and the manifest's counts add up


ENGINES = [
    pytest.param([], id="ray"),
    pytest.param(
        ["engine=spark", "spark.master=local[1]", *SPARK_SETTINGS], id="spark", marks=[needs_spark, pytest.mark.slow]
    ),
]


@pytest.mark.parametrize("settings", ENGINES)
def test_hostile_fields_and_near_limit_lines_through_the_belt(tmp_path, settings, run_here):
    path = tmp_path / "in" / "hostile.jsonl.zst"
    path.parent.mkdir()
    good = [f"Document {n}. The river carries sand and small stones from the mountains to the sea." for n in range(4)]
    lines = [
        {"id": "g0", "text": good[0]},
        {"id": "big-url", "text": good[1], "url": "http://a.example/" + "u" * MAX_FIELD_BYTES},
        {"id": "near-1", "text": "a " * 450_000},
        {"id": "near-2", "text": "b " * 450_000},
        {"id": "g1", "text": good[2]},
        {"id": "i" * (MAX_FIELD_BYTES + 1), "text": good[3]},
    ]
    with zstd.open(path, "wb") as out:
        out.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    config = belt_config(tmp_path, {"input": [str(path)], "id_field": "id"})
    out = tmp_path / "out"
    settings = [*settings, "read.max_payload_mb=1", "read.batch_mb=1"]
    run_here(config, out, settings)
    manifest = assert_complete(out)
    assert manifest["counts"]["records_read"] == 6, manifest["counts"]
    rejects = pa.concat_tables([pq.read_table(p) for p in sorted((out / "rejects").glob("*.parquet"))]).to_pylist()
    too_large = sorted(row["detail"].split(": ", 1)[1] for row in rejects if row["reason"] == "read:too_large")
    assert too_large == [
        f'"id" of {MAX_FIELD_BYTES + 1} bytes, over the {MAX_FIELD_BYTES}-byte limit',
        f'"url" of {MAX_FIELD_BYTES + 17} bytes, over the {MAX_FIELD_BYTES}-byte limit',
    ]
    kept = [
        row["id"]
        for p in sorted((out / "docs").glob("*.parquet"))
        for row in pq.read_table(p, columns=["id"]).to_pylist()
    ]
    assert {"g0", "g1"} <= set(kept)
