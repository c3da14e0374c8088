"""Write crawlbelt's own small fixture crawl, deterministically.

    .venv/bin/python -m testdata.make_fixtures [OUT_DIR]        (default: tests/fixtures)

Writes OUT_DIR/warc/crawl-00000.warc.gz, crawl-00001.warc.gz (gzip, one member per record),
crawl-00002.warc (uncompressed) and OUT_DIR/expected.json, which describes every record in
(file name, offset) order: its type, URL and what the pipeline should conclude about it.

Nothing depends on the clock, the host or randomness: WARC-Date values are fixed, WARC-Record-IDs
are uuid5 values derived from a counter, and running the script twice gives byte-identical files.
(The gzip members come from zlib via warcio's writer, so a different zlib build could in principle
compress differently; the uncompressed content is identical regardless.)

Ground-truth definitions used in expected.json:
  * article text  = the <h1> title and the <p> paragraphs of the <article>, joined by blank lines;
  * exact duplicate = same article text after lower-casing and collapsing whitespace;
  * jaccard       = |A & B| / |A | B| over the sets of 5-word shingles, words being the
                    lower-cased whitespace tokens of the article text;
  * survivor      = the first page of a duplicate group in (file name, offset) order; every other
                    member names it in `duplicate_of`.

The crawl's contents are in testdata/fixture_plan.py (the text in fixture_pages.yaml, the sites around it in
fixture_sites.py); the ground truth in fixture_truth.py.
"""

from __future__ import annotations

import io
import json
import sys
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from testdata.fixture_plan import plan
from testdata.fixture_truth import label_documents

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures"

BASE_DATE = datetime(2024, 3, 11, 9, 0, 0, tzinfo=UTC)
ID_NAMESPACE = uuid.UUID("6f1c2d3e-4a5b-5c6d-8e7f-0123456789ab")
USER_AGENT = "crawlbelt-fixture-bot/0.1 (+https://crawlbelt.example/bot)"
KINDS = (
    "clean",
    "exact_duplicate",
    "near_duplicate",
    "non_english",
    "junk",
    "not_html",
    "http_error",
    "malformed",
    "not_document",
)


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------
class Counters:
    def __init__(self):
        self.n = 0

    def next(self) -> tuple[str, str]:
        """A fixed (WARC-Record-ID, WARC-Date) pair for the next record."""
        self.n += 1
        rid = f"<urn:uuid:{uuid.uuid5(ID_NAMESPACE, f'crawlbelt-fixture-record-{self.n}')}>"
        return rid, self.warc_date(self.n)

    @staticmethod
    def warc_date(n: int) -> str:
        return (BASE_DATE + timedelta(seconds=17 * n)).strftime("%Y-%m-%dT%H:%M:%SZ")


def http_date(warc_date: str) -> str:
    dt = datetime.strptime(warc_date, "%Y-%m-%dT%H:%M:%SZ")
    return dt.strftime("%a, %d %b %Y %H:%M:%S GMT")


def split_url(url: str) -> tuple[str, str]:
    rest = url.split("://", 1)[1]
    host, _, path = rest.partition("/")
    return host, "/" + path


def ip_for(host: str) -> str:
    return f"192.0.2.{sum(host.encode()) % 250 + 1}"


def write_all(out_dir: Path) -> dict:
    warc_dir = out_dir / "warc"
    warc_dir.mkdir(parents=True, exist_ok=True)
    ids = Counters()
    records: list[dict] = []
    files_meta = []
    seen_responses: dict[str, dict] = {}  # url -> {"id","date","digest","http"}
    malformed_at = None

    for fname, gz, items in plan():
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=gz)
        file_records: list[dict] = []

        def emit(rec, entry):
            start = buf.tell()
            writer.write_record(rec)
            entry = dict(file=fname, offset=start, length=buf.tell() - start, **entry)
            file_records.append(entry)
            return entry

        info_id, info_date = ids.next()
        info = (
            b"software: crawlbelt scripts/make_fixtures.py\r\n"
            b"format: WARC File Format 1.0\r\n"
            b"conformsTo: http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf\r\n"
            b"isPartOf: crawlbelt-fixture-crawl\r\n"
            b"description: Small hand-built crawl used by crawlbelt's tests\r\n"
            b"robots: obey\r\n" + f"http-header-user-agent: {USER_AGENT}\r\n".encode()
        )
        rec = writer.create_warc_record(
            "",
            "warcinfo",
            payload=io.BytesIO(info),
            length=len(info),
            warc_headers_dict={"WARC-Record-ID": info_id, "WARC-Date": info_date, "WARC-Filename": fname},
        )
        emit(rec, dict(record_type="warcinfo", url=None, kind="not_document"))

        page_ids: list[tuple[str, str, str]] = []  # (response id, date, url) per page, for metadata
        for item in items:
            itype = item.get("type", "page")
            if itype == "metadata":
                resp_id, resp_date, url = page_ids[item["of"]]
                mid, _ = ids.next()
                host, _ = split_url(url)
                payload = (
                    f"via: https://{host}/\r\nhopsFromSeed: L\r\n"
                    f"fetchTimeMs: {180 + 37 * len(records) % 400}\r\n"
                    f"outlink: https://{host}/about L a/@href\r\n"
                    f"outlink: https://{host}/privacy L a/@href\r\n"
                ).encode()
                rec = writer.create_warc_record(
                    url,
                    "metadata",
                    payload=io.BytesIO(payload),
                    length=len(payload),
                    warc_headers_dict={
                        "WARC-Record-ID": mid,
                        "WARC-Date": resp_date,
                        "WARC-Concurrent-To": resp_id,
                        "WARC-Warcinfo-ID": info_id,
                    },
                )
                emit(rec, dict(record_type="metadata", url=url, kind="not_document"))
                continue

            url = item["url"]
            host, path = split_url(url)
            req_id, date = ids.next()
            resp_id, _ = ids.next()
            req_http = StatusAndHeaders(
                f"GET {path} HTTP/1.1",
                [
                    ("Host", host),
                    ("User-Agent", USER_AGENT),
                    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
                    ("Accept-Language", "en-US,en;q=0.5"),
                    ("Accept-Encoding", "identity"),
                    ("Connection", "close"),
                ],
                is_http_request=True,
            )
            req = writer.create_warc_record(
                url,
                "request",
                http_headers=req_http,
                warc_headers_dict={
                    "WARC-Record-ID": req_id,
                    "WARC-Date": date,
                    "WARC-Concurrent-To": resp_id,
                    "WARC-Warcinfo-ID": info_id,
                },
            )
            emit(req, dict(record_type="request", url=url, kind="not_document"))

            if itype == "revisit":
                orig = seen_responses[url]
                rec = writer.create_revisit_record(
                    url,
                    orig["digest"],
                    url,
                    orig["date"],
                    http_headers=StatusAndHeaders("200 OK", orig["http"], protocol="HTTP/1.1"),
                    warc_headers_dict={
                        "WARC-Record-ID": resp_id,
                        "WARC-Date": date,
                        "WARC-IP-Address": ip_for(host),
                        "WARC-Warcinfo-ID": info_id,
                        "WARC-Refers-To": orig["id"],
                    },
                )
                rec.http_headers.replace_header("Date", http_date(date))
                emit(
                    rec,
                    dict(
                        record_type="revisit",
                        url=url,
                        kind="not_document",
                        http_status=200,
                        refers_to_url=url,
                        refers_to_date=orig["date"],
                    ),
                )
                continue

            body = item["body"]
            code, reason = item.get("status", (200, "OK"))
            http_headers = [
                ("Date", http_date(date)),
                ("Server", "nginx"),
                ("Content-Type", item["content_type"]),
                ("Content-Length", str(len(body))),
                ("Last-Modified", "Fri, 01 Mar 2024 12:00:00 GMT"),
                ("Cache-Control", "max-age=600"),
                ("Connection", "close"),
            ]
            rec = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=StatusAndHeaders(f"{code} {reason}", list(http_headers), protocol="HTTP/1.1"),
                warc_headers_dict={
                    "WARC-Record-ID": resp_id,
                    "WARC-Date": date,
                    "WARC-IP-Address": ip_for(host),
                    "WARC-Warcinfo-ID": info_id,
                },
            )
            entry = dict(
                record_type="response",
                url=url,
                kind=item.get("kind"),
                http_status=code,
                content_type=item["content_type"],
            )
            if item.get("malformed"):
                entry["kind"] = "malformed"
            for k in ("lang", "junk_kind"):
                if k in item and entry["kind"] not in ("malformed",):
                    entry[k] = item[k]
            if "charset" in item and entry["kind"] != "malformed":
                entry["charset"] = item["charset"]
            entry = emit(rec, entry)
            entry["_item"] = item
            page_ids.append((resp_id, date, url))
            seen_responses[url] = dict(
                id=resp_id, date=date, http=http_headers, digest=rec.rec_headers.get_header("WARC-Payload-Digest")
            )

        data = bytearray(buf.getvalue())
        bad = [r for r in file_records if r.get("kind") == "malformed"]
        if bad:
            assert gz and len(bad) == 1
            r = bad[0]
            before = [(x["offset"], x["record_type"], x["url"]) for x in file_records if x["offset"] < r["offset"]]
            pos = corrupt_member(data, r["offset"], r["length"], before)
            r["corrupt_bytes_at"] = pos
            r["readable"] = False
            malformed_at = (fname, r["offset"])
        (warc_dir / fname).write_bytes(bytes(data))
        verify_members(bytes(data), file_records, gz)
        if not bad:
            assert warcio_reading(bytes(data)) == (
                [(x["offset"], x["record_type"], x["url"]) for x in file_records],
                None,
            )
        files_meta.append(dict(name=fname, gzip=gz, records=len(file_records), bytes=len(data)))
        records.extend(file_records)

    assert malformed_at is not None
    label_documents(records)
    for r in records:
        r.pop("_item", None)
    summary = {k: sum(r["kind"] == k for r in records) for k in KINDS}
    assert sum(summary.values()) == len(records)
    expected = dict(
        notes={
            "order": "records are listed in (file name, offset) order; offsets are the byte offset "
            "of the record (for .warc.gz, of its gzip member); length is its size in the file",
            "article_text": "the <h1> and <p> texts of the page's <article>, joined by blank lines",
            "exact_duplicate": "same article text after lower-casing and collapsing whitespace; "
            "duplicate_of names the first page of the group in (file, offset) order",
            "near_duplicate": "an edited copy of an earlier page; jaccard is the 5-word-shingle Jaccard "
            "of the lower-cased whitespace tokens of the two article texts",
            "malformed": "the gzip member at this offset is corrupted (corrupt_bytes_at is the absolute "
            "offset of the overwritten bytes) so inflating it fails; plain warcio "
            "ArchiveIterator yields the records before it and then raises "
            "ArchiveLoadFailed; the records after it are intact and can be read by "
            "starting at their own offsets",
            "not_document": "warcinfo, request, metadata and revisit records",
        },
        files=files_meta,
        records=records,
        summary=summary,
    )
    (out_dir / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return expected


def corrupt_member(data: bytearray, start: int, length: int, before: list[tuple]) -> int:
    """Overwrite 24 bytes of the member's deflate data, a little way past its 10-byte gzip header,
    so that inflating the member fails. The position is the first one (deterministic search) at
    which zlib fails on the member AND plain warcio's ArchiveIterator, reading the whole file,
    yields exactly the records before the member and then raises ArchiveLoadFailed.

    (Where the bad bytes sit matters to warcio: if the failing inflate call is not the first call
    for the member, e.g. when corruption lies past warcio's 16 KiB read block, warcio writes the
    zlib error to stderr and ends the iteration silently, dropping every later record.)"""
    pattern = bytes((0xFF, 0x00, 0xA5, 0x5A) * 6)
    for pos in range(start + 32, start + length - 32):
        trial = bytearray(data)
        trial[pos : pos + len(pattern)] = pattern
        try:
            zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(bytes(trial[start : start + length]))
            continue
        except zlib.error:
            pass
        if warcio_reading(bytes(trial)) == (before, "ArchiveLoadFailed"):
            data[pos : pos + len(pattern)] = pattern
            return pos
    raise RuntimeError("could not corrupt the member")


def warcio_reading(data: bytes) -> tuple[list[tuple], str | None]:
    """(offset, type, url) of each record plain warcio yields, and the exception that ended it."""
    from warcio.archiveiterator import ArchiveIterator

    got, err = [], None
    it = ArchiveIterator(io.BytesIO(data))
    try:
        for rec in it:
            rec.content_stream().read()
            got.append((it.get_record_offset(), rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI")))
    except Exception as e:  # noqa: BLE001 - we report which one
        err = type(e).__name__
    return got, err


def verify_members(data: bytes, file_records: list[dict], gz: bool) -> None:
    """Every record other than the malformed one must parse on its own from its offset."""
    for r in file_records:
        chunk = data[r["offset"] : r["offset"] + r["length"]]
        if not gz:
            assert chunk.startswith(b"WARC/1.0\r\n")
            continue
        assert chunk[:3] == b"\x1f\x8b\x08"
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        if r["kind"] == "malformed":
            try:
                d.decompress(chunk)
            except zlib.error:
                continue
            raise AssertionError("corrupt member inflated")
        plain = d.decompress(chunk)
        assert d.eof and not d.unused_data and plain.startswith(b"WARC/1.0\r\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 or (argv and argv[0] in ("-h", "--help")):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    out_dir = Path(argv[0]) if argv else DEFAULT_OUT
    expected = write_all(out_dir)
    total = sum(f["bytes"] for f in expected["files"])
    print(f"wrote {len(expected['records'])} records in {len(expected['files'])} files ({total} bytes) to {out_dir}")
    print(json.dumps(expected["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
