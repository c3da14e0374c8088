"""Fuzzing: real WARC/ARC bytes, mutated by hypothesis, through the reader and every per-document stage.
No input may raise, lose a record or break the ledger's rules.

CI runs FUZZ_EXAMPLES (default 300) derandomized examples; `python scripts/fuzz.py N` runs N random ones.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stages.extract import Extract
from stages.langid import LanguageId
from stages.ledger import NOT_DOCUMENT
from stages.quality import GopherQuality, GopherRepetition
from stages.warc_read import DOCUMENT_SCHEMA, ORDER_STRIDE, read_warc

BAD = Path(__file__).resolve().parent / "fixtures" / "bad"
# Seeds: small real files of each shape (WARC, gzip per record, whole-file gzip, ARC, chunked, charsets,
# br and zstd bodies, zstd per record with a dictionary, whole-file zstd, WET).
SEED_NAMES = [
    "content_length_short.warc",
    "bad_chunked_encoding.warc",
    "arc_v1.arc",
    "truncated_gzip_member.warc.gz",
    "gzip_whole_file.warc.gz",
    "charset_gbk.warc",
    "content_encoding_gzip.warc",
    "status_without_reason.warc",
    "content_encoding_br_valid.warc",
    "content_encoding_zstd.warc",
    "zst_dictionary.warc.zst",
    "zst_whole_file.warc.zst",
    "wet.warc.wet.gz",
]
SEEDS = [(BAD / name).read_bytes() for name in SEED_NAMES]
SEEDS.append(gzip.compress(SEEDS[0], mtime=0))  # one more whole-file gzip, of a damaged WARC
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "300"))
RANDOM = os.environ.get("FUZZ_RANDOM") == "1"

STAGES = [
    Extract(timeout_s=2),
    LanguageId(method="fasttext+stopwords", languages=("en",), short_text_chars=100),
    GopherQuality(),
    GopherRepetition(),
]


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "delete", "insert", "duplicate", "truncate", "digits"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        span = draw(st.integers(1, 64))
        if kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "delete":
            del data[at : at + span]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=span))
        elif kind == "duplicate":
            data[at:at] = data[at : at + span * 8]
        elif kind == "truncate":
            del data[at:]
        elif kind == "digits":  # lengths and chunk sizes are where parsers trust their input
            data[at : at + 2] = draw(st.sampled_from([b"0", b"9999999", b"-1", b"ff", b"\r\n", b" "]))
    return bytes(data)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=mutated())
def test_mutated_warc_bytes_never_break_the_reader_or_the_stages(data, tmp_path, capsys):
    path = tmp_path / "fuzz.warc"
    path.write_bytes(data)
    tables = list(read_warc(str(path), 3, "fuzz", batch_size=3, max_payload_bytes=200_000))
    rows = [row for table in tables for row in table.to_pylist()]
    assert all(table.schema.equals(DOCUMENT_SCHEMA) for table in tables)
    orders = [row["order"] for row in rows]
    assert orders == sorted(set(orders)), "every record once, in file order"
    assert all(
        0 <= row["offset"] < max(1, len(data)) and row["order"] == 3 * ORDER_STRIDE + row["offset"] for row in rows
    )
    for row in rows:
        # an alive row carries its HTML, or (a WET record) its text, never both
        assert (row["html"] is not None) + (row["text"] is not None) == (row["stage"] is None)
        assert row["stage"] is None or row["reason"], row
        if row["reason"] == "read:malformed":
            assert row["detail"].startswith(f"{path} at offset {row['offset']}: ")
    if not tables:
        return
    batch = pa.concat_tables(tables)
    decided = {row["order"]: row["reason"] for row in rows if row["stage"] is not None}
    for stage in STAGES:
        out = stage(batch)
        assert out.num_rows == batch.num_rows, stage.name
        batch = out
    final = batch.to_pylist()
    assert [row["order"] for row in final] == orders
    for row in final:
        if row["order"] in decided:  # a verdict is never overwritten
            assert row["reason"] == decided[row["order"]]
        elif row["stage"] is None:
            assert row["text"] and row["text"].strip()
        else:
            assert row["stage"] in ("extract", "language", "quality", "repetition") and row["reason"], row
    assert not [row for row in final if row["stage"] == NOT_DOCUMENT and row["order"] not in decided]
    assert capsys.readouterr().err == "", "warcio's warnings belong in detail, not on stderr"
