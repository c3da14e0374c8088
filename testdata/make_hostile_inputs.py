"""Write a set of hostile text inputs, JSONL and Parquet files as real tools and disks have them, deterministically.

    python -m testdata.make_hostile_inputs OUT_DIR

Every record is `{"id": "<file's kind>-<n>", "text": ...}` with a text of its own (no two records are
duplicates). The files (HOSTILE: kind -> file name, under OUT_DIR):
- gzip as tools write it: several members (`cat a.gz b.gz`), bgzip's blocks (an extra field, an empty last
  member), pigz-style sync-flushed blocks with a file name in the header, zero padding after the end;
- gzip that breaks: cut inside a member, bytes garbled in a member, junk after the last member;
- zstd as tools write it: several frames with checksums, pzstd's skippable frame before each frame;
- zstd that breaks: cut inside a frame, a frame garbled, junk after the last frame;
- JSONL lines of every bad kind in one file (a lone surrogate, not UTF-8, NUL bytes, an array, no text),
  a byte order mark and CRLF line ends, a zero-byte file and an empty gzip file;
- Parquet: a large_string text column with int ids and null texts and ids; three row groups with page
  checksums, the second one's text page garbled; two `url` columns, as a join writes;
- names with spaces, `#`, `?`, `*` and non-ASCII letters, in nested folders with such names, and one that is
  not UTF-8 (Latin-1 `caf\\xe9.jsonl`, written escaped so in the output); a symbolic
  link and a hard link to files of the set (each file is to be read once, however it is reached).

`recoverable(path)` gives the texts of the records a standard tool gets back from a file: the lines of
`gzip -dc` or `zstd -dc` (Python's gzip and zstd modules where the tools are missing) that are whole JSON
objects with a text, or the rows of the Parquet row groups pyarrow reads. tests/test_read_cases.py runs the
belt over the set on Ray and on Spark and checks it against them.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from backports import zstd

SENTENCES = [
    "The river carries sand and small stones from the mountains to the sea.",
    "Farmers have grown rice on these deltas for centuries, because the soil is rich.",
    "Stars are born inside cold clouds of gas and dust.",
    "When part of a cloud becomes dense enough, gravity pulls it together.",
]
HOSTILE = {
    "gzip_members": "dir with space/données #1.jsonl.gz",
    "bgzip": "dir with space/bgzip?.jsonl.gz",
    "pigz": "dir with space/pigz*.jsonl.gz",
    "gzip_padded": "padded.jsonl.gz",
    "gzip_cut": "cut.jsonl.gz",
    "gzip_garbled": "garbled.jsonl.gz",
    "gzip_junk": "junk after.jsonl.gz",
    "zstd_frames": "ünï/frames.jsonl.zst",
    "pzstd": "ünï/pzstd.jsonl.zst",
    "zstd_cut": "ünï/cut.jsonl.zst",
    "zstd_garbled": "ünï/garbled frame.jsonl.zst",
    "zstd_junk": "ünï/junk after.jsonl.zst",
    "bad_lines": "bad lines.jsonl",
    "latin1_name": "caf\udce9.jsonl",  # the bytes caf\xe9: a Latin-1 disk's name, not UTF-8 (os.fsdecode's str)
    "bom_crlf": "bom crlf.ndjson",
    "zero_bytes": "zero bytes.jsonl",
    "empty_gzip": "empty.jsonl.gz",
    "parquet_odd": "parquet/large string, int ids.parquet",
    "parquet_damaged": "parquet/damaged page.parquet",
    "parquet_joined": "parquet/joined, url twice.parquet",
}
LINKS = {"symlink": ("ünï/link to frames.jsonl.zst", "zstd_frames"), "hardlink": ("hard link.jsonl.gz", "pigz")}


def text(kind: str, n: int) -> str:
    return f"Record {n} of {kind}. " + " ".join(SENTENCES[(n + i) % len(SENTENCES)] for i in range(3))


def lines(kind: str, count: int, start: int = 0) -> bytes:
    records = [{"id": f"{kind}-{n}", "text": text(kind, n)} for n in range(start, start + count)]
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def bgzip(data: bytes) -> bytes:
    """bgzip's layout: members of at most 64 KiB input, each with a `BC` extra field (its size), and an
    empty member last."""
    out = b""
    for at in [*range(0, len(data), 0xFF00), len(data)]:
        block = data[at : at + 0xFF00] if at < len(data) else b""
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        deflated = compressor.compress(block) + compressor.flush()
        size = 12 + 6 + len(deflated) + 8  # header with XLEN, the extra field, the data, CRC32 and ISIZE
        header = b"\x1f\x8b\x08\x04" + bytes(4) + b"\x00\xff" + struct.pack("<HBBHH", 6, 66, 67, 2, size - 1)
        out += header + deflated + struct.pack("<II", zlib.crc32(block), len(block))
    return out


def pigz(data: bytes, name: bytes) -> bytes:
    """One member with the file's name in its header and blocks ended by sync flushes, as pigz writes."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    deflated = b"".join(
        compressor.compress(data[at : at + 32768]) + compressor.flush(zlib.Z_SYNC_FLUSH)
        for at in range(0, len(data), 32768)
    )
    deflated += compressor.flush()
    header = b"\x1f\x8b\x08\x08" + bytes(4) + b"\x00\x03" + name + b"\x00"
    return header + deflated + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def zstd_frame(data: bytes) -> bytes:
    return zstd.compress(data, options={zstd.CompressionParameter.checksum_flag: 1})


def skippable(payload: bytes, magic: int = 0x184D2A50) -> bytes:
    return struct.pack("<II", magic, len(payload)) + payload


def garble(data: bytes, at: int, count: int = 32) -> bytes:
    return data[:at] + bytes(b ^ 0x5A for b in data[at : at + count]) + data[at + count :]


def bad_lines() -> bytes:
    kind = "bad_lines"
    good = lines(kind, 8).split(b"\n")
    bad = [
        b'{"id": "bad_lines-x1", "text": "a lone \\ud800 surrogate"}',
        b'{"id": "bad_lines-x2", "text": "caf\xe9 in latin-1"}',
        b'{"id": "bad_lines-x3", "text": "NUL \x00 bytes in the raw line"}',
        b'["bad_lines-x4", "an array"]',
        b'{"id": "bad_lines-x5", "body": "no text field"}',
        b"   ",
        b'{"id": "bad_lines-x6", "text": "cut sh',
    ]
    mixed = [line for pair in zip(good, bad) for line in pair]
    return b"\n".join(mixed[:-1]) + b"\n" + good[7] + b"\n" + mixed[-1]


def parquet_bytes(table: pa.Table, **options) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    return sink.getvalue()


def damaged_parquet() -> bytes:
    kind = "parquet_damaged"
    table = pa.table({"id": [f"{kind}-{n}" for n in range(300)], "text": [text(kind, n) for n in range(300)]})
    # one plain data page per column chunk with a small header (no statistics): its middle is page data
    options = dict(row_group_size=100, use_dictionary=False, write_statistics=False, compression="zstd")
    data = parquet_bytes(table, write_page_checksum=True, **options)
    column = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(1).column(1)
    return garble(data, column.data_page_offset + column.total_compressed_size // 2)


def joined_parquet() -> bytes:
    """A join's output: columns named alike besides the text (the reader takes the first)."""
    kind, n = "parquet_joined", 6
    columns = [[f"{kind}-{i}" for i in range(n)], [text(kind, i) for i in range(n)]]
    columns += [[f"http://a.example/{i}" for i in range(n)], [f"http://b.example/{i}" for i in range(n)]]
    return parquet_bytes(pa.Table.from_arrays([pa.array(c) for c in columns], names=["id", "text", "url", "url"]))


def contents() -> dict[str, bytes]:
    """Kind -> the file's bytes."""
    members = gz(lines("gzip_members", 30)) + gz(lines("gzip_members", 30, 30))
    frames = b"".join(zstd_frame(lines("zstd_frames", 30, start)) for start in (0, 30, 60))
    pz = b"".join(skippable(struct.pack("<I", 0)) + zstd_frame(lines("pzstd", 40, start)) for start in (0, 40))
    three = [zstd_frame(lines("zstd_garbled", 40, start)) for start in (0, 40, 80)]
    big = lines("gzip_cut", 400)
    odd = pa.table(
        {
            "id": pa.array([n if n % 5 else None for n in range(20)], pa.int64()),
            "text": pa.array([text("parquet_odd", n) if n % 7 != 3 else None for n in range(20)], pa.large_string()),
        }
    )
    return {
        "gzip_members": members,
        "bgzip": bgzip(lines("bgzip", 400)),
        "pigz": pigz(lines("pigz", 300), b"pigz.jsonl"),
        "gzip_padded": gz(lines("gzip_padded", 20)) + bytes(4096),
        "gzip_cut": gz(big)[: len(gz(big)) * 2 // 3],
        "gzip_garbled": garble(gz(lines("gzip_garbled", 400)), len(gz(lines("gzip_garbled", 400))) // 2),
        "gzip_junk": gz(lines("gzip_junk", 20)) + b"this is no gzip member\n" * 4,
        "zstd_frames": frames,
        "pzstd": pz + skippable(b"trailing metadata", 0x184D2A5E),
        "zstd_cut": b"".join(zstd_frame(lines("zstd_cut", 40, start)) for start in (0, 40))[:-40],
        "zstd_garbled": three[0] + garble(three[1], 6) + three[2],
        "zstd_junk": zstd_frame(lines("zstd_junk", 20)) + b"\x00junk after the frame" * 3,
        "bad_lines": bad_lines(),
        "latin1_name": lines("latin1_name", 5),
        "bom_crlf": b"\xef\xbb\xbf" + lines("bom_crlf", 10).replace(b"\n", b"\r\n"),
        "zero_bytes": b"",
        "empty_gzip": gz(b""),
        "parquet_odd": parquet_bytes(odd, row_group_size=8),
        "parquet_damaged": damaged_parquet(),
        "parquet_joined": joined_parquet(),
    }


def write_all(out: Path) -> dict[str, Path]:
    """Write the set into `out`; kind -> path (the links too, by their kind)."""
    paths = {}
    for kind, data in contents().items():
        path = out / HOSTILE[kind]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths[kind] = path
    for kind, (name, target) in LINKS.items():
        path = out / name
        path.unlink(missing_ok=True)
        if kind == "symlink":
            path.symlink_to(os.path.relpath(paths[target], path.parent))
        else:
            os.link(paths[target], path)
        paths[kind] = path
    return paths


def _decompressed(path: Path) -> bytes:
    data = path.read_bytes()
    tool = (
        ["gzip", "-dc"]
        if data[:2] == b"\x1f\x8b"
        else ["zstd", "-dcq"]
        if data[:4] in (b"\x28\xb5\x2f\xfd", b"\x50\x2a\x4d\x18")
        else None
    )
    if tool is None:
        return data
    if shutil.which(tool[0]):
        return subprocess.run(tool, input=data, capture_output=True, timeout=60).stdout  # up to where it stops
    reader = gzip.GzipFile(fileobj=io.BytesIO(data)) if tool[0] == "gzip" else zstd.ZstdFile(io.BytesIO(data))
    out = b""
    try:
        while chunk := reader.read(1024):
            out += chunk
    except Exception:  # what it decoded before the problem is what it recovers
        pass
    return out


def recoverable(path: Path) -> list[str]:
    """The texts of the records a standard tool gets back from the file, in order."""
    if path.suffix == ".parquet":
        parquet = pq.ParquetFile(path, page_checksum_verification=True)
        texts: list[str] = []
        for group in range(parquet.num_row_groups):
            try:
                texts += [t for t in parquet.read_row_group(group, columns=["text"])["text"].to_pylist() if t]
            except OSError:
                continue
        return texts
    found = []
    for line in _decompressed(path).split(b"\n"):
        try:
            record = json.loads(line.decode("utf-8-sig"))
            record["text"].encode("utf-8")
        except (ValueError, KeyError, TypeError, UnicodeEncodeError):
            continue
        found.append(record["text"])
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: make_hostile_inputs.py OUT_DIR", file=sys.stderr)
        return 2
    for kind, path in write_all(Path(argv[0])).items():
        print(f"{path}: {kind}, {len(recoverable(path))} records recoverable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
