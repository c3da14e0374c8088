"""Write crawlbelt's catalogue of bad input, deterministically.

    python -m testdata.make_bad_inputs [OUT_DIR]        (default: tests/fixtures/bad)

Each kind of bad input is one small file, `OUT_DIR/<kind>.<ext>`, and (except for whole-file kinds)
the bad record sits between two good English pages, so a test can see that the records before and
after it still get through. `OUT_DIR/expected.json` gives, per file, the outcome of each record in
file order: `kept` (through extraction with text), or the reject reason the reader or the extract
stage must give (`read:malformed`, `extract:empty`, ...), plus, for some, a string the detail or the
text must contain.

Four kinds are too big to commit, and `big_files(folder)` writes them at test time: a 50 MB HTML page
and gzip, brotli and zstd decompression bombs. Kinds about the user's own mistakes (a missing input path, an output
folder that cannot be written) have no file: tests/test_bad_inputs.py checks their one-line errors.

Everything is built from fixed bytes (no clock, no randomness), so two runs give identical files.
"""

from __future__ import annotations

import gzip
import json
import struct
import sys
import zlib
from pathlib import Path
from collections.abc import Sequence

import brotli
from backports import zstd

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures" / "bad"
DATE = "2024-03-11T09:00:00Z"

GOOD_TEXT = (
    "The river carries sand and small stones from the mountains to the sea. Over thousands of years "
    "that sand settles at the mouth of the river and builds a wide, flat delta. Farmers have grown "
    "rice on these deltas for centuries, because the soil is rich and the water is close."
)
# One sentence per language, with characters the wrong codec would garble.
JAPANESE = "川は山から海へ砂と小石を運びます。何千年もの間に、その砂は河口に積もって広い三角州を作ります。"
CHINESE = "河流把沙子和小石头从山上带到大海。几千年来，这些沙子在河口沉积，形成宽阔平坦的三角洲。"
RUSSIAN = "Река несёт песок и мелкие камни с гор к морю. За тысячи лет песок оседает в устье реки."


def page(body: str, charset_meta: str | None = None) -> str:
    meta = f'<meta charset="{charset_meta}">' if charset_meta else ""
    return (
        f"<!DOCTYPE html><html><head>{meta}<title>t</title></head><body><article><p>{body}</p></article></body></html>"
    )


def http_block(
    body: bytes,
    content_type: str = "text/html; charset=utf-8",
    status: str = "200 OK",
    extra: Sequence[tuple[str, str]] = (),
    length: bool = True,
) -> bytes:
    headers = [("Content-Type", content_type), *extra]
    if length:
        headers.append(("Content-Length", str(len(body))))
    head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + body


def warc_record(
    block: bytes,
    url: str,
    n: int,
    *,
    rec_type: str = "response",
    version: str = "WARC/1.0",
    date: str = DATE,
    content_length: int | None = None,
    content_type: str = "application/http; msgtype=response",
) -> bytes:
    length = len(block) if content_length is None else content_length
    head = (
        f"{version}\r\nWARC-Type: {rec_type}\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{n:012d}>\r\n"
        f"WARC-Date: {date}\r\nWARC-Target-URI: {url}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    )
    return head.encode("utf-8") + block + b"\r\n\r\n"


def good(n: int) -> bytes:
    return warc_record(http_block(page(f"{GOOD_TEXT} Page {n}.").encode()), f"http://good.example/{n}", n)


def around(bad: bytes) -> bytes:
    """A good page, the bad record, a good page."""
    return good(1) + bad + good(3)


def good_arc(n: int) -> bytes:
    body = http_block(page(f"{GOOD_TEXT} Page {n}.").encode())
    return b"http://good.example/%d 192.0.2.1 20240311090000 text/html %d\n" % (n, len(body)) + body + b"\n"


def gz(data: bytes) -> bytes:
    # mtime fixed: the same bytes every time
    return gzip.compress(data, mtime=0)


def response(body: bytes, n: int = 2, url: str = "http://bad.example/2", **http) -> bytes:
    return warc_record(http_block(body, **http), url, n)


def kinds() -> dict[str, tuple[bytes, str, list]]:
    """kind -> (file bytes, file extension, expected outcome per record)."""
    K = "kept"
    M = "read:malformed"
    html = page(GOOD_TEXT + " Bad but fine.").encode()
    cases: dict[str, tuple[bytes, str, list]] = {}

    members = [gz(good(1)), gz(response(html)), gz(good(3))]
    cases["truncated_gzip_member"] = (
        members[0] + members[1][: len(members[1]) // 2] + members[2],
        "warc.gz",
        [K, [M, "offset"], K],
    )
    cases["gzip_whole_file"] = (gz(around(response(html))), "warc.gz", [K, K, K])
    block = http_block(html)
    cases["content_length_short"] = (
        around(warc_record(block, "http://bad.example/2", 2, content_length=len(block) - 40)),
        "warc",
        [K, [M, "offset"], K],
    )
    cases["content_length_long"] = (
        around(warc_record(block, "http://bad.example/2", 2, content_length=len(block) + 100)),
        "warc",
        [K, [M, "offset"], K],
    )
    cases["content_length_past_end"] = (
        good(1) + warc_record(block, "http://bad.example/2", 2, content_length=len(block) + 5000),
        "warc",
        [K, [M, "bytes missing"]],
    )
    chunked = b"5\r\nHello\r\nZZZ\r\n" + html + b"\r\n0\r\n\r\n"  # "ZZZ" is not a hex chunk size
    cases["bad_chunked_encoding"] = (
        around(response(chunked, extra=[("Transfer-Encoding", "chunked")], length=False)),
        "warc",
        [K, K, K],
    )
    cases["content_encoding_gzip"] = (
        around(response(gz(html), extra=[("Content-Encoding", "gzip")])),
        "warc",
        [K, K, K],
    )
    # bytes that are not brotli at all, labelled br: the reader cannot decode them either way
    cases["content_encoding_br"] = (
        around(response(b"\x1b\x2f\x00\xf8" + zlib.compress(html), extra=[("Content-Encoding", "br")])),
        "warc",
        [K, ["read:content_encoding", "'br'"], K],
    )
    cases["content_encoding_br_valid"] = (
        around(response(brotli.compress(html), extra=[("Content-Encoding", "br")])),
        "warc",
        [K, K, K],
    )
    cases["content_encoding_zstd"] = (
        around(response(zstd.compress(html), extra=[("Content-Encoding", "zstd")])),
        "warc",
        [K, K, K],
    )
    # real compressed bodies with bytes damaged in the middle: named, not passed on as garbage
    for encoding, body in (("gzip", gz(html)), ("br", brotli.compress(html)), ("zstd", zstd_frame(html))):
        cases[f"content_encoding_{encoding}_corrupt"] = (
            around(response(flip(body, len(body) // 2, 16), extra=[("Content-Encoding", encoding)])),
            "warc",
            [K, ["read:content_encoding", f"'{encoding}': the body is not valid {encoding} data"], K],
        )
    # the body stored decoded under its original header, as some crawlers do: taken as it is
    for encoding in ("gzip", "br", "zstd"):
        cases[f"content_encoding_{encoding}_label_only"] = (
            around(response(html, extra=[("Content-Encoding", encoding)])),
            "warc",
            [K, K, K],
        )
    cases.update(zstd_kinds())
    cases["wet"] = (
        wet(),
        "warc.wet.gz",
        ["warcinfo", [K, "river carries sand"], [K, "\ufffd"], [K, "Page 3"], ["extract:empty", "no text"]],
    )
    cases["wat"] = (wat(), "warc.wat.gz", ["warcinfo", "metadata", "metadata"])
    cases["missing_http_block"] = (
        around(warc_record(b"", "http://bad.example/2", 2)),
        "warc",
        [K, [M, "no HTTP block"], K],
    )
    cases["status_without_reason"] = (around(response(html, status="200")), "warc", [K, K, K])
    cases["warc_0_18"] = (
        around(warc_record(http_block(html), "http://bad.example/2", 2, version="WARC/0.18")),
        "warc",
        [K, K, K],
    )
    version_block = b"1 0 crawlbelt\nURL IP-address Archive-date Content-type Archive-length\n"
    arc_head = b"filedesc://bad.arc 0.0.0.0 20240311090000 text/plain %d\n" % len(version_block) + version_block
    arc_body = http_block(html)
    arc = (
        arc_head
        + b"\n"
        + good_arc(1)
        + b"http://arc.example/1 192.0.2.1 20240311090000 text/html %d\n" % len(arc_body)
        + arc_body
        + b"\n"
    )
    cases["arc_v1"] = (arc + good_arc(3), "arc", ["warcinfo", K, K, K])
    cases["invalid_warc_date"] = (
        around(warc_record(http_block(html), "http://bad.example/2", 2, date="yesterday")),
        "warc",
        [K, K, K],
    )
    cases["uri_with_space_and_brackets"] = (around(response(html, url="<http://bad.example/a b>")), "warc", [K, K, K])
    cases["empty_payload"] = (around(response(b"")), "warc", [K, "extract:empty", K])
    binary = bytes((i * 151 + 7) % 256 for i in range(4000))
    cases["binary_labelled_html"] = (around(response(binary)), "warc", [K, "extract:empty", K])
    cases["invalid_utf8"] = (around(response(html.replace(b"Bad", b"B\xff\xfe\xc3d"))), "warc", [K, [K, "B"], K])

    for name, codec, text in (
        ("shift_jis", "shift_jis", JAPANESE),
        ("euc_jp", "euc_jp", JAPANESE),
        ("gbk", "gbk", CHINESE),
        ("windows_1251", "windows-1251", RUSSIAN),
    ):
        # declared in HTTP; declared only in <meta>; not declared; declared wrongly (as another charset)
        wrong = "iso-8859-1" if name != "windows_1251" else "koi8-r"
        records = [
            good(1),
            response(page(text).encode(codec), 2, content_type=f"text/html; charset={codec}"),
            response(page(text, codec).encode(codec), 3, content_type="text/html"),
            response(page(text * 4).encode(codec), 4, content_type="text/html"),
            response(page(text).encode(codec), 5, content_type=f"text/html; charset={wrong}"),
            good(6),
        ]
        first = text.split("。")[0].split("，")[0].split(".")[0][:8]
        cases[f"charset_{name}"] = (b"".join(records), "warc", [K, [K, first], [K, first], [K, first], K, K])
    cases["zero_byte_file"] = (b"", "warc", [])
    cases["not_a_warc"] = (
        b"This is a plain text file.\nIt has lines, but no WARC header anywhere.\n" * 20,
        "warc",
        [[M, "offset 0"]],
    )
    return cases


def flip(data: bytes, at: int, count: int) -> bytes:
    """`data` with `count` bytes from `at` on inverted."""
    return data[:at] + bytes(b ^ 0xFF for b in data[at : at + count]) + data[at + count :]


def zstd_frame(record: bytes, dictionary: zstd.ZstdDict | None = None) -> bytes:
    # a checksum in every frame, as the zstd command line writes it: damage in a frame cannot go unseen
    options: dict[int, int] = {
        zstd.CompressionParameter.compression_level: 3,
        zstd.CompressionParameter.checksum_flag: 1,
    }
    return zstd.compress(record, options=options, zstd_dict=dictionary)


def zstd_dictionary() -> tuple[bytes, zstd.ZstdDict]:
    """A dictionary trained on pages like the fixture's, and the skippable frame that carries it, written
    as Wget-AT writes it: magic 0x184D2A5D, the little-endian length, the dictionary zstd-compressed."""
    samples = [good(n) for n in range(100, 400)]
    dictionary = zstd.train_dict(samples, 4096)
    compressed = zstd.compress(dictionary.dict_content)
    return b"\x5d\x2a\x4d\x18" + struct.pack("<I", len(compressed)) + compressed, dictionary


def zstd_kinds() -> dict[str, tuple[bytes, str, list]]:
    """.warc.zst files, one zstd frame per record: with a dictionary and without, and damaged."""
    K, M = "kept", "read:malformed"
    records = [good(1), good(2), good(3)]
    header, dictionary = zstd_dictionary()
    with_dictionary = [zstd_frame(r, dictionary) for r in records]
    plain = [zstd_frame(r) for r in records]
    middle = with_dictionary[1]
    return {
        "zst_dictionary": (header + b"".join(with_dictionary), "warc.zst", [K, K, K]),
        "zst_no_dictionary": (b"".join(plain), "warc.zst", [K, K, K]),
        "zst_whole_file": (zstd_frame(b"".join(records)), "warc.zst", [K, K, K]),
        "zst_cut_frame": (
            header + with_dictionary[0] + middle[: len(middle) // 2] + with_dictionary[2],
            "warc.zst",
            [K, [M, "corrupt zstd frame"], K],
        ),
        "zst_flipped_bits": (
            header + with_dictionary[0] + flip(middle, len(middle) // 2, 4) + with_dictionary[2],
            "warc.zst",
            [K, [M, "corrupt zstd frame"], K],
        ),
        "zst_cut_file": (b"".join(plain)[:-20], "warc.zst", [K, K, [M, "cut short by the end of the file"]]),
        # the compressed dictionary is damaged: the frame is named, and so is each frame that needs it
        "zst_bad_dictionary": (
            flip(header, 20, 16) + b"".join(with_dictionary),
            "warc.zst",
            [[M, "dictionary frame unreadable"], *[[M, "Dictionary mismatch"]] * 3],
        ),
    }


def warc_fields(fields: dict[str, str]) -> bytes:
    return "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode()


def wet() -> bytes:
    """A Common Crawl WET file: warcinfo, then one `conversion` record of text/plain per page, one gzip
    member each; the second page's text has a byte that is not UTF-8, the last has no text."""
    info = warc_record(
        warc_fields({"software": "crawlbelt fixture", "format": "WARC File Format 1.0"}),
        "",
        0,
        rec_type="warcinfo",
        content_type="application/warc-fields",
    )
    texts = [
        GOOD_TEXT.encode(),
        GOOD_TEXT.encode().replace(b"delta", b"delt\xe9"),
        f"{GOOD_TEXT} Page 3.".encode(),
        b" \n",
    ]
    return b"".join(
        gz(r)
        for r in [info]
        + [
            warc_record(t, f"http://good.example/{n}", n, rec_type="conversion", content_type="text/plain")
            for n, t in enumerate(texts, 1)
        ]
    )


def wat() -> bytes:
    """A Common Crawl WAT file: warcinfo, then `metadata` records of JSON about each page: no documents."""
    info = warc_record(
        warc_fields({"software": "crawlbelt fixture"}),
        "",
        0,
        rec_type="warcinfo",
        content_type="application/warc-fields",
    )
    metadata = [
        warc_record(
            json.dumps(
                {"Envelope": {"WARC-Header-Metadata": {"WARC-Target-URI": f"http://good.example/{n}"}}}
            ).encode(),
            f"http://good.example/{n}",
            n,
            rec_type="metadata",
            content_type="application/json",
        )
        for n in (1, 2)
    ]
    return b"".join(gz(r) for r in [info, *metadata])


def write_all(out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    expected = {}
    for kind, (data, ext, outcomes) in kinds().items():
        name = f"{kind}.{ext}"
        (out / name).write_bytes(data)
        expected[name] = [o if isinstance(o, list) else [o] for o in outcomes]
    (out / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    return expected


def big_files(out: Path) -> dict:
    """The kinds too big to commit: a 50 MB HTML page and gzip, brotli and zstd bombs (1 GB of zeros in
    an HTTP payload of about 1 MB, 1 KB and 32 KB). Expected outcomes with the default limits."""
    out.mkdir(parents=True, exist_ok=True)
    huge = page("<p>".join([GOOD_TEXT] * (50_000_000 // len(GOOD_TEXT)))).encode()
    (out / "html_50mb.warc").write_bytes(around(response(huge)))
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(deflate.compress(bytes(1 << 20)) for _ in range(1024)) + deflate.flush()
    (out / "decompression_bomb.warc").write_bytes(around(response(bomb, extra=[("Content-Encoding", "gzip")])))
    zeros = bytes(1 << 30)
    (out / "brotli_bomb.warc").write_bytes(
        around(response(brotli.compress(zeros, quality=1), extra=[("Content-Encoding", "br")]))
    )
    (out / "zstd_bomb.warc").write_bytes(
        around(response(zstd.compress(zeros, level=1), extra=[("Content-Encoding", "zstd")]))
    )
    too_large = [["kept"], ["read:too_large", "payload over"], ["kept"]]
    return {
        "html_50mb.warc": too_large,
        "decompression_bomb.warc": too_large,
        "brotli_bomb.warc": too_large,
        "zstd_bomb.warc": too_large,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else DEFAULT_OUT
    expected = write_all(out)
    print(f"{len(expected)} bad-input files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
