#!/usr/bin/env python3
"""Peak memory of the reader on small hostile files, one of each kind, against the bound docs/design.md states.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_hostile_memory.py [--cap-mb 3000] [--only KIND ...]

Each file is made here (a few KB to a few hundred KB on disk) and read in a fresh process through the filter
pass's reader (`pipeline.passes.filtering.FilterFile._records`, the config's `read` defaults), every batch turned into
the Arrow table the stages get. The process's peak RSS (ru_maxrss) less that of the same process reading a
one-line file is the figure; a child past `--cap-mb` is killed (reported `killed`). Also printed: the rows
read, the largest batch's Arrow bytes and the reject reasons. Run with PYTHONPATH pointing at another tree
(e.g. `git archive ada8fbb | tar -x -C /tmp/before`) to measure that code.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1_000_000
# the code measured: PYTHONPATH's, else this tree's
PYTHONPATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] or [str(Path(__file__).parents[1])]


def parquet_dictionary(path: Path, column: str, value_mb: float, rows: int) -> None:
    """One dictionary value of value_mb MB referenced by `rows` RLE-encoded indices: a file of a few KB."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["a" * int(value_mb * MB)]))
    short = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["a short text"]))
    columns = {"id": big, "text": short} if column == "id" else {"text": big}
    pq.write_table(pa.table(columns), path, compression="zstd", row_group_size=rows, dictionary_pagesize_limit=1 << 30)


def parquet_page(path: Path, value_mb: float) -> None:
    """One plain value of value_mb MB in a zstd data page, then a row group of three short texts: a few KB."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("text", pa.string())])
    with pq.ParquetWriter(path, schema, compression="zstd", use_dictionary=False, data_page_size=1 << 31) as out:
        out.write_table(pa.table({"text": ["x" * int(value_mb * MB)]}, schema=schema))
        out.write_table(pa.table({"text": ["a short text"] * 3}, schema=schema))


def jsonl_near_limit(path: Path, lines: int, line_mb: float) -> None:
    """`lines` lines of line_mb MB each (just under read.max_payload_mb), zstd-compressed: about 100 KB."""
    from backports import zstd

    text = "a" * (int(line_mb * MB) - 20)
    with zstd.open(path, "wb") as out:
        for n in range(lines):
            out.write(json.dumps({"id": f"r{n}", "text": text}).encode() + b"\n")


def jsonl_big_id(path: Path, lines: int, id_mb: float) -> None:
    """Lines of a short text and an id of id_mb MB, gzip-compressed."""
    with gzip.open(path, "wb") as out:
        for n in range(lines):
            out.write(json.dumps({"id": f"{n}" + "i" * int(id_mb * MB), "text": "a short text"}).encode() + b"\n")


def warc_record(headers: list[tuple[str, str]], body: bytes) -> bytes:
    block = "".join(f"{name}: {value}\r\n" for name, value in headers).encode()
    return b"WARC/1.0\r\n" + block + f"Content-Length: {len(body)}\r\n\r\n".encode() + body + b"\r\n\r\n"


def response(url: str, http_headers: bytes = b"") -> bytes:
    body = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
        + http_headers
        + b"\r\n<html><body><p>Hello.</p></body></html>"
    )
    headers = [
        ("WARC-Type", "response"),
        ("WARC-Target-URI", url),
        ("Content-Type", "application/http; msgtype=response"),
    ]
    return warc_record(headers, body)


def warc_long_uri(path: Path, uri_mb: float) -> None:
    """A response whose WARC-Target-URI is uri_mb MB, between two normal records, in one gzip member each."""
    with open(path, "wb") as out:
        for url in ("http://a.example/1", "http://a.example/" + "u" * int(uri_mb * MB), "http://a.example/3"):
            out.write(gzip.compress(response(url)))


def warc_many_headers(path: Path, count: int) -> None:
    """A response with `count` HTTP header lines, between two normal records."""
    with open(path, "wb") as out:
        out.write(gzip.compress(response("http://a.example/1")))
        out.write(gzip.compress(response("http://a.example/2", b"X-A: b\r\n" * count)))
        out.write(gzip.compress(response("http://a.example/3")))


def normal_texts(count: int) -> list[str]:
    """`count` different texts of about 5 KB of words."""
    import random

    rng = random.Random(0)
    words = ["river", "sand", "stones", "mountains", "delta", "farmers", "rice", "soil", "water", "flood", "the", "of"]
    return [f"Document {n}. " + " ".join(rng.choice(words) for _ in range(900)) for n in range(count)]


def normal_parquet(path: Path, row_group_size: int | None = None) -> None:
    """20,000 texts of 5 KB with ids and URLs, as pyarrow writes them (by default one row group): the cost on
    normal files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = normal_texts(20_000)
    ids = [f"doc-{n}" for n in range(len(texts))]
    urls = [f"http://a.example/{n}" for n in range(len(texts))]
    pq.write_table(pa.table({"id": ids, "url": urls, "text": texts}), path, row_group_size=row_group_size)


def normal_jsonl(path: Path) -> None:
    from backports import zstd

    with zstd.open(path, "wb") as out:
        for n, text in enumerate(normal_texts(20_000)):
            out.write(json.dumps({"id": f"doc-{n}", "url": f"http://a.example/{n}", "text": text}).encode() + b"\n")


def baseline(path: Path) -> None:
    path.write_text(json.dumps({"id": "one", "text": "a short text"}) + "\n")


KINDS = {  # kind: (file name, maker)
    "baseline": ("baseline.jsonl", baseline),
    "normal_parquet_id": ("normal.parquet", normal_parquet),
    "normal_parquet_groups_id": ("normal_groups.parquet", lambda p: normal_parquet(p, 2000)),
    "normal_jsonl_zst_id": ("normal.jsonl.zst", normal_jsonl),
    "parquet_dictionary_text": ("dict_text.parquet", lambda p: parquet_dictionary(p, "text", 9, 300)),
    "parquet_dictionary_text_over": ("dict_text_over.parquet", lambda p: parquet_dictionary(p, "text", 30, 100_000)),
    "parquet_dictionary_id": ("dict_id.parquet", lambda p: parquet_dictionary(p, "id", 9, 1_000_000)),
    "parquet_zstd_page": ("zstd_page.parquet", lambda p: parquet_page(p, 500)),
    "jsonl_zst_near_limit": ("near_limit.jsonl.zst", lambda p: jsonl_near_limit(p, 100, 9.9)),
    "jsonl_big_id": ("big_id.jsonl.gz", lambda p: jsonl_big_id(p, 100, 9.0)),
    "warc_long_uri": ("long_uri.warc.gz", lambda p: warc_long_uri(p, 200)),
    "warc_many_headers": ("many_headers.warc.gz", lambda p: warc_many_headers(p, 5_000_000)),
}

CHILD = """
import json, resource, sys, time
from collections import Counter
from pipeline.config import Config, Source
from pipeline.passes.filtering import FilterFile
config = Config()
source = Source(name="web", id_field=sys.argv[3] or None)
reader = FilterFile([], [source], sys.argv[2], config.read, config.storage)
rows, reasons, largest = 0, Counter(), 0
start = time.process_time()
for table in reader._records(sys.argv[1], 0, source):
    rows += table.num_rows
    largest = max(largest, table.nbytes)
    reasons.update(r for r in table["reason"].to_pylist() if r)
    del table
print(json.dumps({"rows": rows, "reasons": reasons, "largest_batch": largest, "cpu_s": time.process_time() - start,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def measure(path: Path, folder: Path, id_field: str, cap_mb: float, timeout: float) -> dict:
    """The reader on `path` in a fresh process, killed past cap_mb of RSS or `timeout` seconds."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(folder), id_field],
        cwd=folder,  # not this tree: the code measured is the one PYTHONPATH names
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(os.path.abspath, PYTHONPATH))},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    start, peak = time.monotonic(), 0.0
    while child.poll() is None:
        peak = max(peak, rss_mb(child.pid))
        if peak > cap_mb or time.monotonic() - start > timeout:
            child.kill()
            child.wait()
            return {"killed": f"at {peak:,.0f} MB RSS after {time.monotonic() - start:.0f} s"}
        time.sleep(0.05)
    out, err = child.communicate()
    if child.returncode != 0:
        return {"failed": err.decode()[-300:]}
    return json.loads(out)


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cap-mb", type=float, default=3000, help="kill a reader past this RSS (default 3000)")
    parser.add_argument("--timeout", type=float, default=120, help="kill a reader after this many seconds")
    parser.add_argument("--only", nargs="*", help="these kinds only (baseline is always run)")
    parser.add_argument("--make", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.make:
        kind, path = args.make
        KINDS[kind][1](Path(path))
        return
    kinds = [k for k in KINDS if k == "baseline" or not args.only or k in args.only]
    with tempfile.TemporaryDirectory() as folder:
        results = {}
        for kind in kinds:
            name, make = KINDS[kind]
            path = Path(folder) / name
            # made in a child: Linux keeps a process's peak RSS across exec, so the parent stays small
            subprocess.run([sys.executable, __file__, "--make", kind, str(path)], check=True)
            id_field = "id" if kind.endswith("_id") else ""  # the id column is read
            result = measure(path, Path(folder), id_field, args.cap_mb, args.timeout)
            results[kind] = result
            base = results["baseline"].get("peak_kb", 0) / 1024
            size = os.path.getsize(path)
            if "peak_kb" in result:
                figure = (
                    f"peak {result['peak_kb'] / 1024:,.0f} MB (+{result['peak_kb'] / 1024 - base:,.0f} over baseline), "
                    f"largest batch {result['largest_batch'] / MB:,.1f} MB, {result['rows']:,} rows, "
                    f"{result['cpu_s']:.1f} CPU-s, {dict(result['reasons'])}"
                )
            else:
                figure = result.get("killed") or result.get("failed", "")
            print(f"{kind:30} {size:>9,} bytes  {figure}", flush=True)


if __name__ == "__main__":
    main()
