"""Write the same real documents in every text input format crawlbelt reads, deterministically.

    python -m testdata.make_text_inputs OUT_DIR

From ../shared/realhtml/ground_truth.jsonl, the records with a non-empty `main_text`, in file order:
- realhtml.jsonl, realhtml.jsonl.gz, realhtml.jsonl.zst: one JSON object a line with `id` (the
  WARC-Record-ID), `text` (the main text), `url`, `dataset` and `lang`;
- realhtml.parquet: the same columns, in row groups of 256 rows;
- realhtml.warc.wet.gz: Common Crawl's WET layout, a warcinfo record then one `conversion` record
  (text/plain) per document, referring to the page's record, one gzip member per record;
- broken.jsonl: the catalogue of malformed lines (BROKEN_LINES), each after a good line, with a good
  line after each but the last, which is a line cut short at the end of the file.
Fixed dates, gzip mtime 0, no randomness: two runs give identical bytes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from backports import zstd

GROUND_TRUTH = Path(__file__).resolve().parents[2] / "shared" / "realhtml" / "ground_truth.jsonl"
DATE = "2024-03-11T09:00:00Z"
WET_NAME = "realhtml.warc.wet.gz"
COLUMNS = ("id", "text", "url", "dataset", "lang")

# (case, the bad line, its reject reason, a part of its detail); the last one ends the file without a newline
BROKEN_LINES = [
    ("not JSON", b'{"id": "bad-1", "text": "two" "strings"}', "read:malformed", "not JSON (Expecting ',' delimiter"),
    ("not an object", b'["an", "array"]', "read:malformed", "not a JSON object (an array)"),
    ("not UTF-8", b'{"id": "bad-3", "text": "caf\xe9 au lait"}', "read:malformed", "not UTF-8 (byte 0xe9"),
    ("no text field", b'{"id": "bad-4", "body": "the text is elsewhere"}', "read:malformed", 'no "text" field'),
    ("text not a string", b'{"id": "bad-5", "text": 42}', "read:malformed", '"text" is a number, not a string'),
    ("text null", b'{"id": "bad-6", "text": null}', "read:malformed", '"text" is null, not a string'),
    (
        "last line cut short",
        b'{"id": "bad-7", "text": "the crawl was cut sh',
        "read:malformed",
        "last line cut short: not JSON",
    ),
]


def documents(ground_truth: Path = GROUND_TRUTH) -> list[dict]:
    """The ground truth's records with a main text, as the text formats hold them."""
    docs = []
    with open(ground_truth, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record.get("main_text"):
                docs.append(
                    dict(
                        id=record["warc_record_id"],
                        text=record["main_text"],
                        url=record["target_uri"],
                        dataset=record["dataset"],
                        lang=record["lang"],
                    )
                )
    return docs


def jsonl(docs: list[dict]) -> bytes:
    return b"".join(json.dumps(doc, ensure_ascii=False).encode("utf-8") + b"\n" for doc in docs)


def broken_jsonl(docs: list[dict]) -> bytes:
    """Good, bad, good, bad, ... good, cut-short bad; a blank line after the first good line (no record)."""
    good = [json.dumps(doc, ensure_ascii=False).encode("utf-8") for doc in docs]
    lines = [good[0], b"", good[1]]
    for n, (_, bad, _, _) in enumerate(BROKEN_LINES[:-1]):
        lines += [bad, good[n + 2]]
    return b"\n".join(lines) + b"\n" + BROKEN_LINES[-1][1]


def warc_record(headers: list[tuple[str, str]], block: bytes) -> bytes:
    digest = base64.b32encode(hashlib.sha1(block).digest()).decode()
    head = "WARC/1.0\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers)
    head += f"WARC-Block-Digest: sha1:{digest}\r\nContent-Length: {len(block)}\r\n\r\n"
    return gzip.compress(head.encode("utf-8") + block + b"\r\n\r\n", compresslevel=6, mtime=0)


def record_id(name: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, name)}>"


def wet(docs: list[dict]) -> bytes:
    info = (
        b"Software-Info: crawlbelt scripts/make_text_inputs.py\r\nExtracted-Date: Mon, 11 Mar 2024 09:00:00 GMT\r\n"
        b"isPartOf: realhtml\r\ndescription: main texts of ../shared/realhtml's pages\r\n"
    )
    records = [
        warc_record(
            [
                ("WARC-Type", "warcinfo"),
                ("WARC-Date", DATE),
                ("WARC-Filename", WET_NAME),
                ("WARC-Record-ID", record_id(WET_NAME)),
                ("Content-Type", "application/warc-fields"),
            ],
            info,
        )
    ]
    for doc in docs:
        records.append(
            warc_record(
                [
                    ("WARC-Type", "conversion"),
                    ("WARC-Target-URI", doc["url"]),
                    ("WARC-Date", DATE),
                    ("WARC-Record-ID", record_id(f"conversion:{doc['id']}")),
                    ("WARC-Refers-To", doc["id"]),
                    ("Content-Type", "text/plain"),
                ],
                doc["text"].encode("utf-8"),
            )
        )
    return b"".join(records)


def write_all(out: Path, ground_truth: Path = GROUND_TRUTH) -> dict[str, int]:
    """Write every file into `out`; file name -> documents in it."""
    docs = documents(ground_truth)
    out.mkdir(parents=True, exist_ok=True)
    lines = jsonl(docs)
    (out / "realhtml.jsonl").write_bytes(lines)
    (out / "realhtml.jsonl.gz").write_bytes(gzip.compress(lines, compresslevel=6, mtime=0))
    (out / "realhtml.jsonl.zst").write_bytes(zstd.compress(lines))
    table = pa.table({name: [doc[name] for doc in docs] for name in COLUMNS})
    pq.write_table(table, out / "realhtml.parquet", row_group_size=256)
    (out / WET_NAME).write_bytes(wet(docs))
    broken = broken_jsonl(docs)
    (out / "broken.jsonl").write_bytes(broken)
    written = {
        name: len(docs)
        for name in ("realhtml.jsonl", "realhtml.jsonl.gz", "realhtml.jsonl.zst", "realhtml.parquet", WET_NAME)
    }
    written["broken.jsonl"] = sum(1 for line in broken.split(b"\n") if line.strip())
    return written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: make_text_inputs.py OUT_DIR", file=sys.stderr)
        return 2
    if not GROUND_TRUTH.is_file():
        print(f"make_text_inputs: {GROUND_TRUTH} not found (../shared/realhtml)", file=sys.stderr)
        return 2
    out = Path(argv[0])
    for name, count in write_all(out).items():
        print(f"{out / name}: {count} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
