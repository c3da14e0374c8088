"""Read speed of the WARC reader (stages/warc_read.py) by HTTP Content-Encoding and by file compression,
and of the libraries that could do the decompressing. Records per CPU-second, one process, one core.

    python benchmarks/bench_read.py [--pages DIR] [--repeat N]

Pages: the HTML payloads of DIR/warc/*.warc.gz (default ../shared/realhtml: 1,484 real pages), read
once with the reader; each becomes one WARC response record. From them, written here in memory:
- payloads: one uncompressed WARC per Content-Encoding (none, gzip level 6, br quality 6, zstd level 3:
  common server settings), the body encoded, read through `read_warc` (parsing, decoding, sniffing,
  everything the read stage does); and the bodies alone decoded by each library;
- files: the same records (bodies not encoded) as a .warc.gz (one gzip member per record, level 6),
  a .warc.zst (one zstd frame per record, level 3) and a .warc.zst with a dictionary (trained on the
  records, 112 KB, compressed into the file's dictionary frame as Wget-AT writes it), read through
  `read_warc`; and the frames alone decompressed by each library, and FastWARC reading each file
  (parsing and payload reading only) for comparison.

Timing: time.process_time over the whole pass, the best of --repeat passes (default 3).
Exit status 2 when DIR is missing.
"""

from __future__ import annotations

import argparse
import gzip
import io
import struct
import sys
import tempfile
import time
from pathlib import Path

import brotli
import zstandard
from backports import zstd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stages.compressed import decode_body  # noqa: E402
from stages.warc_read import read_warc  # noqa: E402

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "realhtml"


def pages(folder: Path) -> list[tuple[str, bytes]]:
    found = []
    for path in sorted((folder / "warc").glob("*.warc.gz")):
        for table in read_warc(str(path), 0, "bench"):
            found += [(r["url"], r["html"]) for r in table.to_pylist() if r["html"] is not None]
    return found


def record(n: int, url: str, body: bytes, encoding: str | None = None) -> bytes:
    extra = f"Content-Encoding: {encoding}\r\n" if encoding else ""
    http = (
        f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{n:012d}>\r\n"
        f"WARC-Date: 2024-03-11T09:00:00Z\r\nWARC-Target-URI: {url}\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n"
    ).encode()
    return head + http + b"\r\n\r\n"


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def read_all(path: str) -> int:
    return sum(t.num_rows for t in read_warc(path, 0, "bench", batch_size=256, max_payload_bytes=50_000_000))


def fastwarc_read(path: str, dictionary: bytes | None) -> None:
    from fastwarc.stream_io import GzipReader, ZstdReader
    from fastwarc.warc import ArchiveIterator

    stream = GzipReader(path) if path.endswith(".gz") else ZstdReader(path, dictionary=dictionary)
    for rec in ArchiveIterator(stream):
        rec.reader.read()


ENCODERS = {
    "gzip": lambda body: gzip.compress(body, compresslevel=6, mtime=0),
    "br": lambda body: brotli.compress(body, quality=6),
    "zstd": lambda body: zstd.compress(body, level=3),
}
DECODERS = {  # the bodies alone, whole, by each candidate library
    "gzip": [("zlib", lambda b: gzip.decompress(b))],
    "br": [("brotli", brotli.decompress)],
    "zstd": [
        ("backports.zstd", zstd.decompress),
        ("zstandard", lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b)),
    ],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if not (args.pages / "warc").is_dir():
        print(f"no pages: {args.pages / 'warc'} is missing", file=sys.stderr)
        return 2
    found = pages(args.pages)
    n = len(found)
    print(f"{n} pages, {sum(len(b) for _, b in found) / n / 1024:.0f} KiB on average\n")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for encoding in ("identity", *ENCODERS):
            bodies = [ENCODERS[encoding](b) if encoding in ENCODERS else b for _, b in found]
            path = Path(tmp) / f"{encoding}.warc"
            path.write_bytes(
                b"".join(
                    record(i, url, body, encoding if encoding in ENCODERS else None)
                    for i, ((url, _), body) in enumerate(zip(found, bodies))
                )
            )
            assert read_all(str(path)) == n
            rows.append(
                (
                    f"payload {encoding}",
                    "read_warc",
                    n / best(args.repeat, lambda: read_all(str(path))),
                    sum(map(len, bodies)),
                )
            )
            for library, decode in DECODERS.get(encoding, []):
                rows.append(
                    (
                        f"payload {encoding}",
                        f"{library}, body only",
                        n / best(args.repeat, lambda: [decode(b) for b in bodies]),
                        sum(map(len, bodies)),
                    )
                )
            if encoding in ENCODERS:
                rows.append(
                    (
                        f"payload {encoding}",
                        "decode_body, body only",
                        n
                        / best(args.repeat, lambda: [decode_body(io.BytesIO(b), encoding, 50_000_000) for b in bodies]),
                        sum(map(len, bodies)),
                    )
                )

        records = [record(i, url, body) for i, (url, body) in enumerate(found)]
        dictionary = zstd.train_dict(records, 112_640)
        frames = {
            "warc.gz": [gzip.compress(r, compresslevel=6, mtime=0) for r in records],
            "warc.zst": [zstd.compress(r, level=3) for r in records],
            "warc.zst + dictionary": [zstd.compress(r, level=3, zstd_dict=dictionary) for r in records],
        }
        for name, members in frames.items():
            path = Path(tmp) / ("bench." + name.replace(" + dictionary", ".dict"))
            header = b""
            if "dictionary" in name:
                packed = zstd.compress(dictionary.dict_content)
                header = b"\x5d\x2a\x4d\x18" + struct.pack("<I", len(packed)) + packed
            path.write_bytes(header + b"".join(members))
            size = path.stat().st_size
            assert read_all(str(path)) == n
            rows.append((f"file {name}", "read_warc", n / best(args.repeat, lambda: read_all(str(path))), size))
            raw = dictionary.dict_content if "dictionary" in name else None
            rows.append(
                (
                    f"file {name}",
                    "FastWARC, parse and payload only",
                    n / best(args.repeat, lambda: fastwarc_read(str(path), raw)),
                    size,
                )
            )
            if name.startswith("warc.zst"):
                zdict = zstd.ZstdDict(raw) if raw else None
                plain = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(raw) if raw else None)
                rows.append(
                    (
                        f"file {name}",
                        "backports.zstd, frames only",
                        n
                        / best(
                            args.repeat, lambda: [zstd.ZstdDecompressor(zstd_dict=zdict).decompress(f) for f in members]
                        ),
                        size,
                    )
                )
                rows.append(
                    (
                        f"file {name}",
                        "zstandard, frames only",
                        n / best(args.repeat, lambda: [plain.decompressobj().decompress(f) for f in members]),
                        size,
                    )
                )
            else:
                rows.append(
                    (
                        f"file {name}",
                        "zlib, members only",
                        n / best(args.repeat, lambda: [gzip.decompress(f) for f in members]),
                        size,
                    )
                )

    print("| data | reader | records per CPU-second | bytes |")
    print("| --- | --- | ---: | ---: |")
    for data, reader, speed, size in rows:
        print(f"| {data} | {reader} | {speed:,.0f} | {size:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
