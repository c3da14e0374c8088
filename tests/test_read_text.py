"""stages.read_text on real text: ../shared/realhtml's main texts as testdata/make_text_inputs.py writes
them (JSONL plain, gzip and zstd, Parquet, and a WET file for stages.warc_read), and on broken files."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stages.extract import Extract
from stages.ledger import NOT_DOCUMENT
from stages.read_text import read_jsonl, read_parquet
from stages.warc_read import DOCUMENT_SCHEMA, ORDER_STRIDE, read_warc, stable_id
from testdata import make_text_inputs
from testdata.make_text_inputs import BROKEN_LINES

ROOT = Path(__file__).resolve().parents[1]

FILE_INDEX = 2
FORMATS = [
    ("realhtml.jsonl", read_jsonl),
    ("realhtml.jsonl.gz", read_jsonl),
    ("realhtml.jsonl.zst", read_jsonl),
    ("realhtml.parquet", read_parquet),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    if not make_text_inputs.GROUND_TRUTH.is_file():
        pytest.skip(f"../shared/realhtml not found: {make_text_inputs.GROUND_TRUTH} is missing (real main texts)")
    out = tmp_path_factory.mktemp("text_inputs")
    make_text_inputs.write_all(out)
    return out


@pytest.fixture(scope="module")
def documents(inputs) -> list[dict]:
    return make_text_inputs.documents()


def read_rows(reader, path: Path, **kwargs) -> list[dict]:
    tables = list(reader(str(path), FILE_INDEX, "test", **kwargs))
    for table in tables:
        assert table.schema.equals(DOCUMENT_SCHEMA)
    rows = [row for table in tables for row in table.to_pylist()]
    orders = [row["order"] for row in rows]
    assert orders == sorted(set(orders)), "order strictly increasing"
    assert all(order == FILE_INDEX * ORDER_STRIDE + row["offset"] for order, row in zip(orders, rows))
    return rows


def line_offsets(data: bytes) -> list[int]:
    """The byte offset of each line's start."""
    offsets, start = [], 0
    for line in data.split(b"\n")[:-1]:
        offsets.append(start)
        start += len(line) + 1
    return offsets


@pytest.mark.parametrize("name, reader", FORMATS, ids=[name for name, _ in FORMATS])
def test_every_format_gives_the_same_documents_in_order(inputs, documents, name, reader):
    rows = read_rows(reader, inputs / name, id_field="id")
    assert [(row["id"], row["text"], row["url"]) for row in rows] == [(d["id"], d["text"], d["url"]) for d in documents]
    assert all(
        row["stage"] is None
        and row["html"] is None
        and row["content_type"] == "text/plain"
        and row["charset"] == "utf-8"
        and row["file"] == str(inputs / name)
        for row in rows
    )
    if reader is read_jsonl:  # offsets are the lines' in the decompressed stream
        assert [row["offset"] for row in rows] == line_offsets((inputs / "realhtml.jsonl").read_bytes())
        assert {row["record_type"] for row in rows} == {"jsonl"}
    else:
        assert [row["offset"] for row in rows] == list(range(len(documents)))
    # without an id field, ids come from file and offset
    plain = read_rows(reader, inputs / name)
    assert [row["id"] for row in plain] == [stable_id(str(inputs / name), row["offset"]) for row in rows]


def test_the_wet_file_gives_the_same_texts_through_read_warc(inputs, documents):
    rows = read_rows(read_warc, inputs / make_text_inputs.WET_NAME)
    assert (rows[0]["stage"], rows[0]["reason"]) == (NOT_DOCUMENT, "warcinfo")
    conversions = rows[1:]
    assert [(row["text"], row["url"]) for row in conversions] == [(d["text"], d["url"]) for d in documents]
    assert all(
        row["record_type"] == "conversion" and row["stage"] is None and row["html"] is None for row in conversions
    )


def test_dotted_fields_and_given_text_through_the_extract_stage(tmp_path):
    path = tmp_path / "nested.jsonl"
    lines = [
        {
            "meta": {"text": "Kept exactly as it is.\n  Second line.", "id": 7},
            "url": "http://a.example/",
            "date": "2024-01-02",
        },
        {"meta": {"text": "   "}, "url": 5},
        {"meta": {"text": "No id here."}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows = read_rows(read_jsonl, path, text_field="meta.text", id_field="meta.id")
    assert [row["id"] for row in rows] == [
        "7",
        stable_id(str(path), rows[1]["offset"]),
        stable_id(str(path), rows[2]["offset"]),
    ]
    assert [(row["url"], row["date"]) for row in rows] == [
        ("http://a.example/", "2024-01-02"),
        (None, None),
        (None, None),
    ]
    extracted = Extract(timeout_s=5)(pa.Table.from_pylist(rows, schema=DOCUMENT_SCHEMA)).to_pylist()
    assert [(row["text"], row["reason"]) for row in extracted] == [
        (lines[0]["meta"]["text"], None),
        (None, "extract:empty"),
        ("No id here.", None),
    ]


@pytest.fixture(scope="module")
def broken(inputs) -> tuple[list[bytes], list[dict]]:
    """broken.jsonl's lines and its rows."""
    path = inputs / "broken.jsonl"
    return path.read_bytes().split(b"\n"), read_rows(read_jsonl, path, id_field="id")


def test_broken_jsonl_gives_one_row_per_non_blank_line(broken):
    lines, rows = broken
    assert len(rows) == sum(1 for line in lines if line.strip()) == 2 * len(BROKEN_LINES) + 1


@pytest.mark.parametrize("case, bad, reason, detail", BROKEN_LINES, ids=[case[0] for case in BROKEN_LINES])
def test_a_malformed_line_is_a_reject_naming_file_and_line(inputs, broken, case, bad, reason, detail):
    lines, rows = broken
    number = lines.index(bad) + 1
    offset = sum(len(line) + 1 for line in lines[: number - 1])
    index = next(i for i, row in enumerate(rows) if row["offset"] == offset)
    row = rows[index]
    assert (row["stage"], row["reason"]) == ("read", reason)
    assert row["detail"].startswith(f"{inputs / 'broken.jsonl'} line {number}: ") and detail in row["detail"], row[
        "detail"
    ]
    # the good lines around it still come through
    assert rows[index - 1]["stage"] is None and rows[index - 1]["text"] == json.loads(lines[number - 2])["text"]
    if number < len(lines):
        assert rows[index + 1]["stage"] is None and rows[index + 1]["text"] == json.loads(lines[number])["text"]


def cut(data: bytes) -> bytes:
    return data[: len(data) // 7]


def flipped(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(byte ^ 0x55 for byte in data[middle : middle + 64]) + data[middle + 64 :]


BROKEN_STREAMS = [
    ("gzip cut short", "realhtml.jsonl.gz", cut, "gzip stream broken (EOFError"),
    ("zstd cut short", "realhtml.jsonl.zst", cut, "zstd stream broken (EOFError"),
    ("gzip corrupt", "realhtml.jsonl.gz", flipped, "gzip stream broken (BadGzipFile: CRC check failed"),
]


@pytest.mark.parametrize("case, name, damage, detail", BROKEN_STREAMS, ids=[case[0] for case in BROKEN_STREAMS])
def test_a_stream_broken_mid_file_ends_it_with_one_reject(inputs, documents, tmp_path, case, name, damage, detail):
    path = tmp_path / name
    path.write_bytes(damage((inputs / name).read_bytes()))
    rows = read_rows(read_jsonl, path, id_field="id")
    good = [row for row in rows if row["stage"] is None]
    assert 100 < len(good) < len(documents)
    assert [row["text"] for row in good[:100]] == [d["text"] for d in documents[:100]]
    last = rows[-1]
    assert last["reason"] == "read:malformed" and detail in last["detail"], last["detail"]
    number = int(re.search(r" line (\d+): ", last["detail"]).group(1))
    if "cut short" in case:  # in the line after the last whole one
        assert len(good) == len(rows) - 1 and number == len(rows)
    else:  # the bytes garbled before the checksum fails come as lines of their own, some parse
        assert number >= len(rows)


def test_a_line_over_the_limit_is_too_large_and_never_held_whole(tmp_path):
    short = tmp_path / "short.jsonl"
    short.write_bytes(b'{"text": "before"}\n')
    read_rows(read_jsonl, short)  # the first read's imports are not the reader's memory
    path = tmp_path / "long.jsonl"
    long_line = json.dumps({"text": "word " * 6_000_000}).encode()  # 30 MB: many read chunks
    path.write_bytes(short.read_bytes() + long_line + b'\n{"text": "after"}\n')
    del long_line
    tracemalloc.start()
    try:
        rows = read_rows(read_jsonl, path, max_payload_bytes=1_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(row["reason"], row["text"]) for row in rows] == [
        (None, "before"),
        ("read:too_large", None),
        (None, "after"),
    ]
    assert rows[1]["offset"] == 19 and "line 2: 30000012 bytes, over the 1000000-byte limit" in rows[1]["detail"]
    assert peak < 8_000_000, f"{peak} bytes held reading a 30 MB line"


def parquet_file(path: Path, columns: dict) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def json_file(path: Path) -> Path:
    path.write_bytes(b'{"text": "a JSON line"}\n')
    return path


PARQUET_CASES = [
    ("not Parquet", json_file, ["read:malformed"], "not a Parquet file"),
    (
        "no text column",
        lambda p: parquet_file(p, {"body": ["x"]}),
        ["read:malformed"],
        'no column "text" (columns: body)',
    ),
    (
        "text not a string",
        lambda p: parquet_file(p, {"text": [1, 2]}),
        ["read:malformed"],
        'column "text" is int64, not a string',
    ),
    (
        "null text",
        lambda p: parquet_file(p, {"text": ["first", None, "third"]}),
        [None, "read:malformed", None],
        'row index 1: "text" is null',
    ),
]


@pytest.mark.parametrize("case, make, reasons, detail", PARQUET_CASES, ids=[case[0] for case in PARQUET_CASES])
def test_a_malformed_parquet_file_or_row_is_a_reject_naming_it(tmp_path, case, make, reasons, detail):
    path = make(tmp_path / "input.parquet")
    rows = read_rows(read_parquet, path)
    assert [row["reason"] for row in rows] == reasons
    bad = next(row for row in rows if row["reason"])
    assert bad["detail"].startswith(str(path)) and detail in bad["detail"], bad["detail"]
    assert [row["text"] for row in rows if not row["reason"]] == (["first", "third"] if case == "null text" else [])
