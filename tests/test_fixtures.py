"""The committed fixture crawl is exactly what testdata/make_fixtures.py writes, and reads as expected.json says.

Regenerate with:  .venv/bin/python -m testdata.make_fixtures   (writes tests/fixtures/)
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from helpers import FIXTURES, ROOT

WARC_DIR = FIXTURES / "warc"
KINDS = {
    "clean",
    "exact_duplicate",
    "near_duplicate",
    "non_english",
    "junk",
    "not_html",
    "http_error",
    "malformed",
    "not_document",
}


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fixtures")
    subprocess.run(
        [sys.executable, "-m", "testdata.make_fixtures", str(out)], check=True, cwd=ROOT, capture_output=True, text=True
    )
    return out


def _generated_files(base: Path) -> list[str]:
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def test_committed_fixtures_are_byte_identical_to_regenerated(regenerated: Path):
    names = _generated_files(regenerated)
    assert "expected.json" in names and len(names) == 4, names
    committed_warcs = sorted(f"warc/{p.name}" for p in WARC_DIR.iterdir() if p.is_file())
    assert committed_warcs == [n for n in names if n.startswith("warc/")]
    for name in names:
        assert _sha1(FIXTURES / name) == _sha1(regenerated / name), (
            f"{name} differs from a fresh run of testdata/make_fixtures.py; regenerate and commit it"
        )


def test_fixture_crawl_is_small(expected: dict):
    total = sum((WARC_DIR / f["name"]).stat().st_size for f in expected["files"])
    assert total < 1_000_000
    for f in expected["files"]:
        assert (WARC_DIR / f["name"]).stat().st_size == f["bytes"]


def test_expected_json_is_consistent(expected: dict):
    records = expected["records"]
    keys = [(r["file"], r["offset"]) for r in records]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert {r["kind"] for r in records} == KINDS
    counts = Counter(r["kind"] for r in records)
    assert expected["summary"] == {k: counts.get(k, 0) for k in KINDS}
    by_url: dict[str, dict] = {}
    for r in records:
        if r["record_type"] == "response":
            by_url.setdefault(r["url"], r)
    for r in records:
        if r["kind"] in ("exact_duplicate", "near_duplicate"):
            orig = by_url[r["duplicate_of"]]
            assert orig["kind"] == "clean"
            assert (orig["file"], orig["offset"]) < (r["file"], r["offset"])  # survivor comes first
        if r["kind"] == "near_duplicate":
            assert 0.75 <= r["jaccard"] <= 0.95
        if r["kind"] == "non_english":
            assert r["lang"] != "en"
        if r["kind"] == "junk":
            assert r["junk_kind"] in {"nav", "spam", "bullets", "repetition", "short"}
    assert [r["record_type"] for r in records if r["offset"] == 0] == ["warcinfo"] * len(expected["files"])
    malformed = [r for r in records if r["kind"] == "malformed"]
    assert len(malformed) == 1 and malformed[0]["file"] == "crawl-00001.warc.gz"


def _read(path: Path, start: int = 0, bodies: dict | None = None):
    """(offset, record type, target URI) for each record warcio yields, reading from `start`."""
    with open(path, "rb") as fh:
        fh.seek(start)
        it = ArchiveIterator(fh)
        for rec in it:
            url = rec.rec_headers.get_header("WARC-Target-URI")
            body = rec.content_stream().read()
            if bodies is not None and rec.rec_type == "response":
                bodies[url] = (rec.http_headers, body)
            yield it.get_record_offset(), rec.rec_type, url  # absolute: warcio starts at fh.tell()


def _triples(records):
    return [(r["offset"], r["record_type"], r["url"]) for r in records]


def test_warcio_reads_records_as_expected(expected: dict):
    for f in expected["files"]:
        path = WARC_DIR / f["name"]
        exp = [r for r in expected["records"] if r["file"] == f["name"]]
        bad = [i for i, r in enumerate(exp) if r["kind"] == "malformed"]
        if not bad:
            assert list(_read(path)) == _triples(exp), f["name"]
            continue
        (i,) = bad
        got = []
        with pytest.raises(ArchiveLoadFailed):
            for triple in _read(path):
                got.append(triple)
        assert got == _triples(exp[:i]), "records before the corrupted member"
        # the records after it are intact: reading from the next member's offset works
        assert list(_read(path, start=exp[i + 1]["offset"])) == _triples(exp[i + 1 :])


def test_corrupted_member_does_not_inflate(expected: dict):
    (r,) = [r for r in expected["records"] if r["kind"] == "malformed"]
    data = (WARC_DIR / r["file"]).read_bytes()
    member = data[r["offset"] : r["offset"] + r["length"]]
    assert member[:3] == b"\x1f\x8b\x08"  # the gzip header is intact, the deflate data is not
    assert r["offset"] < r["corrupt_bytes_at"] < r["offset"] + r["length"]
    with pytest.raises(zlib.error):
        zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(member)


class _ArticleText(HTMLParser):
    """The <h1> and <p> texts inside <article>, the fixture's definition of article text."""

    def __init__(self) -> None:
        super().__init__()
        self.in_article = False
        self.current: list[str] | None = None
        self.blocks: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.in_article = True
        elif self.in_article and tag in ("h1", "p"):
            self.current = []

    def handle_endtag(self, tag):
        if tag == "article":
            self.in_article = False
        elif tag in ("h1", "p") and self.current is not None:
            self.blocks.append("".join(self.current))
            self.current = None

    def handle_data(self, data):
        if self.current is not None:
            self.current.append(data)


def _article_text(html_text: str) -> str:
    p = _ArticleText()
    p.feed(html_text)
    return "\n\n".join(p.blocks)


def _jaccard(a: str, b: str) -> float:
    def sh(t):
        w = t.lower().split()
        return {tuple(w[i : i + 5]) for i in range(len(w) - 4)}

    sa, sb = sh(a), sh(b)
    return len(sa & sb) / len(sa | sb)


def test_payloads_match_their_labels(expected: dict):
    bodies: dict = {}
    for f in expected["files"]:
        try:
            for _ in _read(WARC_DIR / f["name"], bodies=bodies):
                pass
        except ArchiveLoadFailed:
            exp = [r for r in expected["records"] if r["file"] == f["name"]]
            (i,) = [i for i, r in enumerate(exp) if r["kind"] == "malformed"]
            for _ in _read(WARC_DIR / f["name"], start=exp[i + 1]["offset"], bodies=bodies):
                pass
    texts = {}
    for r in expected["records"]:
        if r["record_type"] != "response" or r["kind"] == "malformed":
            continue
        http, body = bodies[r["url"]]
        assert int(http.get_statuscode()) == r["http_status"]
        assert http.get_header("Content-Type") == r["content_type"]
        assert int(http.get_header("Content-Length")) == len(body)
        if r["content_type"] == "application/pdf":
            assert body.startswith(b"%PDF-1.4")
        elif r["content_type"] == "image/png":
            assert body.startswith(b"\x89PNG\r\n\x1a\n")
        else:
            charset = r["charset"]
            assert f'<meta charset="{charset}">'.encode() in body
            if charset != "utf-8":  # declared only in the document, not in the HTTP header
                assert "charset" not in r["content_type"]
            texts[r["url"]] = _article_text(body.decode(charset))
    for r in expected["records"]:
        if r["kind"] == "exact_duplicate":
            a, b = texts[r["url"]], texts[r["duplicate_of"]]
            assert " ".join(a.lower().split()) == " ".join(b.lower().split())
        if r["kind"] == "near_duplicate":
            j = _jaccard(texts[r["url"]], texts[r["duplicate_of"]])
            assert abs(j - r["jaccard"]) < 1e-4
        if r["kind"] in ("clean", "exact_duplicate", "near_duplicate"):
            words = texts[r["url"]].split()
            assert len(words) == r["words"] and 150 <= len(words) <= 400
