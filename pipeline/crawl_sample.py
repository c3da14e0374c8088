"""CRAWL_SAMPLE: seven pages whose verdicts are known, for the dry run and for tests.

`testdata/make_crawl_sample.py` writes them as configs/crawl_sample.warc; the dry run reads that file
through the whole belt and prints the verdict table below.
"""

from __future__ import annotations

import html
import io
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PAGES = [
    "The river carries sand and small stones from the mountains to the sea. Over thousands of years that sand settles at the mouth of the river and builds a wide, flat delta. Farmers have grown rice on these deltas for centuries, because the soil is rich and the water is close. When the river floods, it brings new soil with it, which is why the land stays fertile.",
    "Le fleuve transporte le sable et les pierres des montagnes vers la mer. Avec le temps, le sable se dépose à l'embouchure et forme un delta. Les paysans cultivent le riz dans les deltas depuis des siècles, car la terre est riche et l'eau est proche.",
    "Home | About us | Contact | Privacy policy | Log in",
    "the river carries sand and small stones from the mountains to the sea. Over thousands of years that sand settles at the mouth of the river and builds a wide, flat delta. Farmers have grown rice on these deltas for centuries, because the soil is rich and the water is close. When the river floods, it brings new soil with it, which is why the land stays fertile.",
    "#deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today #deal #sale #win the best price today",
    "The river carries sand and small stones from the mountains to the sea. Over thousands of years that sand settles at the mouth of the river and builds a wide, flat delta. Farmers have grown rice on these deltas for hundreds of years, because the soil is rich and the water is close. When the river floods, it brings new soil with it, which is why the land stays fertile. Read more on our site.",
    "Stars are born inside cold clouds of gas and dust. When part of a cloud becomes dense enough, gravity pulls it together faster than the gas can push back. The centre heats up as it shrinks, and once it reaches about ten million degrees, hydrogen begins to fuse into helium. That is the moment a star switches on, and it will shine with that fuel for millions or billions of years.",
]

EXPECTED = [
    "kept",
    "language: fr",
    "quality: too_short, too_few_alphabetic_words, missing_stop_words",
    "exact duplicate of 0",
    "quality: too_many_symbols, missing_stop_words",
    "near duplicate of 0",
    "kept",
]

LANGS = ["en", "fr", "en", "en", "en", "en", "en"]
LINKED_SENTENCE = "Read more on our site."  # page 5's added link


def url_of(page: int) -> str:
    return f"http://crawl-sample.example/page/{page}"


def page_html(page: int) -> bytes:
    text = html.escape(PAGES[page])
    if text.endswith(LINKED_SENTENCE):
        text = text[: -len(LINKED_SENTENCE)] + f'<a href="/more">{LINKED_SENTENCE}</a>'
    return (
        f'<!DOCTYPE html>\n<html lang="{LANGS[page]}"><head><meta charset="utf-8">'
        f"<title>Page {page}</title></head>\n<body><article><p>{text}</p></article></body></html>\n"
    ).encode()


def write_warc(path: Path) -> None:
    """The seven pages as an uncompressed WARC of response records, byte for byte reproducible."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=False)
    for page in range(len(PAGES)):
        body = page_html(page)
        http_headers = StatusAndHeaders(
            "200 OK",
            [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
            protocol="HTTP/1.1",
        )
        record = writer.create_warc_record(
            url_of(page),
            "response",
            payload=io.BytesIO(body),
            http_headers=http_headers,
            warc_headers_dict={
                "WARC-Record-ID": f"<urn:uuid:{uuid.UUID(int=page + 1)}>",
                "WARC-Date": f"2026-01-01T00:00:0{page}Z",
            },
        )
        writer.write_record(record)
    path.write_bytes(buffer.getvalue())


def verdicts(out: Path) -> list[str]:
    """Each page's verdict, read from a finished run's docs/ and rejects/, worded as in EXPECTED."""
    by_url, page_of_id = {}, {}
    for row in _rows(out / "docs", ["id", "url"]):
        by_url[row["url"]] = "kept"
        page_of_id[row["id"]] = _page(row["url"])
    rejects = _rows(out / "rejects", ["id", "url", "stage", "reason", "dup_of"])
    for row in rejects:
        page_of_id[row["id"]] = _page(row["url"])
    for row in rejects:
        code = row["reason"]
        if row["stage"] == "exact_dedup":
            text = f"exact duplicate of {page_of_id[row['dup_of']]}"
        elif row["stage"] == "near_dedup":
            text = f"near duplicate of {page_of_id[row['dup_of']]}"
        elif ":" in code:
            kind, detail = code.split(":", 1)
            text = f"{kind}: {', '.join(detail.split(','))}"
        else:
            text = code
        by_url[row["url"]] = text
    return [by_url.get(url_of(page), "missing") for page in range(len(PAGES))]


def verdict_table(found: list[str]) -> str:
    lines = ["| page | verdict |", "|---|---|"]
    lines += [f"| {page} | {verdict} |" for page, verdict in enumerate(found)]
    return "\n".join(lines)


def _page(url: str) -> int:
    return int(url.rsplit("/", 1)[1])


def _rows(folder: Path, columns: list[str]) -> list[dict]:
    paths = sorted(folder.glob("*.parquet"))
    return pa.concat_tables([pq.read_table(p, columns=columns) for p in paths]).to_pylist() if paths else []
