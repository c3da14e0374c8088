"""Issue 46: concatenations of large texts never overflow 32-bit offsets. A file's part of 300 texts near
`read.max_payload_mb` holds more than 2 GiB of text; Arrow's take and sort_by join a string column's chunks
first, which stopped a run with "offset overflow while concatenating arrays"."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.passes import finalize
from stages import table_rows
from stages.warc_read import DOCUMENT_SCHEMA

TEXT_MB, ROWS_A_CHUNK, CHUNKS = 8, 30, 9  # 2.16 GB of text, over 2**31 bytes: a chunk shared 9 times costs 240 MB


def big_part() -> pa.Table:
    """One file's rows from the filter pass (out of order, as the engines give them), 2.16 GB of text."""
    text = pa.array([f"{n:04d}" + "x" * (TEXT_MB * 1_000_000 - 4) for n in range(ROWS_A_CHUNK)])
    n = ROWS_A_CHUNK * CHUNKS
    columns = {field.name: pa.chunked_array([pa.nulls(n, field.type)]) for field in DOCUMENT_SCHEMA}
    columns["order"] = pa.chunked_array([pa.array(range(n - 1, -1, -1), pa.int64())])
    columns["text"] = pa.chunked_array([text] * CHUNKS)
    columns["file"] = pa.chunked_array([pa.array(["big.jsonl"] * n)])
    return pa.Table.from_pydict(columns, schema=DOCUMENT_SCHEMA)


@pytest.mark.slow
def test_sort_rows_of_more_than_2_gib_of_text():  # Table.sort_by: offset overflow
    rows = big_part()
    got = table_rows.sort_rows(rows, "order")
    assert got.schema == rows.schema and got["order"].to_pylist() == sorted(rows["order"].to_pylist())
    firsts = [chunk[:4] for chunk in pc.utf8_slice_codeunits(got["text"], 0, 4).to_pylist()]
    assert firsts == [f"{n % ROWS_A_CHUNK:04d}" for n in range(rows.num_rows - 1, -1, -1)]


def test_finalize_writes_a_part_sorted_in_pieces_as_it_writes_it_whole(tmp_path, monkeypatch):
    texts = [f"Document {n}. " * (n % 9 + 1) for n in range(60)]
    rows = pa.table({field.name: pa.nulls(60, field.type) for field in DOCUMENT_SCHEMA}, schema=DOCUMENT_SCHEMA)
    rows = rows.set_column(0, "order", pa.array([(n * 7) % 60 for n in range(60)], pa.int64()))
    rows = rows.set_column(rows.schema.get_field_index("text"), "text", pa.array(texts))
    rows = pa.concat_tables([rows.slice(0, 25), rows.slice(25)])
    verdicts = pa.table(
        {"order": pa.array([], pa.int64()), **{c: pa.array([], pa.string()) for c in ("stage", "reason", "dup_of")}}
    )
    finalize.write_part(rows, verdicts, str(tmp_path / "whole"), "snippet")
    monkeypatch.setattr(table_rows, "MAX_CHUNK_BYTES", 200)
    monkeypatch.setattr(table_rows, "PIECE_BYTES", 200)
    finalize.write_part(rows, verdicts, str(tmp_path / "pieces"), "snippet")
    name = finalize.part_name(0)
    whole, pieces = (
        (tmp_path / "whole" / "docs" / name).read_bytes(),
        (tmp_path / "pieces" / "docs" / name).read_bytes(),
    )
    assert pq.read_table(tmp_path / "pieces" / "docs" / name)["text"].to_pylist() == [
        texts[o * 43 % 60] for o in range(60)
    ]
    assert whole == pieces


def test_sort_rows_over_the_bound_gives_sort_bys_rows_in_chunks_under_it(monkeypatch):
    monkeypatch.setattr(table_rows, "MAX_CHUNK_BYTES", 100)
    monkeypatch.setattr(table_rows, "PIECE_BYTES", 100)
    texts = [f"text {n} " * (n % 7) if n % 5 else None for n in range(40)]
    table = pa.table(
        {"order": pa.array([(n * 17) % 40 for n in range(40)]), "text": texts, "raw": pa.array([b"ab"] * 40)}
    )
    table = pa.concat_tables([table.slice(0, 15), table.slice(15)])
    got = table_rows.sort_rows(table, "order")
    assert got.equals(table.sort_by("order")) and got.schema == table.schema
    assert got["text"].num_chunks > 1 and all(
        len(c) == 1 or pc.sum(pc.binary_length(c)).as_py() <= 100 for c in got["text"].chunks
    )
    keys = [("raw", "ascending"), ("order", "descending")]
    assert table_rows.sort_rows(table, keys).equals(table.sort_by(keys))
