"""stages.warc_read on the real (and really broken) WARC/ARC files in ../shared/realdata, and on WARCs
written here with warcio and then damaged."""

from __future__ import annotations

import io
import os
import re
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from helpers import SHARED
from stages.ledger import NOT_DOCUMENT
from stages.warc_read import DOCUMENT_SCHEMA, ORDER_STRIDE, read_warc, stable_id

REALDATA = SHARED / "realdata"
MALFORMED = [
    "resiliparse__clipped.warc.gz",
    "warcio__example-trunc.warc",
    "warcio__example-wrong-chunks.warc.gz",
    "warcio__bad.arc",
]


def realdata() -> Path:
    folder = REALDATA / "warc"
    if not folder.is_dir():
        pytest.skip(f"../shared/realdata not found: {folder} is missing (real WARC test files)")
    return folder


def readme_table() -> dict[str, tuple[str, str]]:
    """file -> (records, HTML responses) as README.md gives them (strings: '1 ERR' is possible)."""
    table = {}
    for line in (REALDATA / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].endswith((".gz", ".warc", ".arc", ".bad")):
            table[cells[0]] = (cells[3], cells[4])
    return table


def read_rows(path, file_index=0, **kwargs) -> list[dict]:
    tables = list(read_warc(str(path), file_index, "test", **kwargs))
    for table in tables:
        assert table.schema.equals(DOCUMENT_SCHEMA)
    return [row for table in tables for row in table.to_pylist()]


def warcio_counts(path) -> tuple[int, int]:
    """(records, HTML responses with a 2xx status) as plain warcio sees them, for a well-formed file."""
    records = html_ok = 0
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle, arc2warc=True):
            records += 1
            if record.rec_type == "response" and record.http_headers is not None:
                mime = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
                status = record.http_headers.get_statuscode()
                html_ok += mime in ("text/html", "application/xhtml+xml") and status.startswith("2")
    return records, html_ok


# --- the real files ---------------------------------------------------------------------------------


def test_schema_columns_in_order():
    assert DOCUMENT_SCHEMA.names == [
        "order",
        "id",
        "url",
        "source",
        "file",
        "offset",
        "date",
        "record_type",
        "content_type",
        "http_charset",
        "html",
        "stage",
        "reason",
        "detail",
        "dup_of",
        "text",
        "charset",
    ]
    assert DOCUMENT_SCHEMA.field("html").type == pa.binary()
    assert DOCUMENT_SCHEMA.field("order").type == pa.int64()


def test_every_realdata_file_reads_through_in_order(capsys):
    files = sorted(realdata().iterdir())
    assert len(files) >= 13
    for index, path in enumerate(files):
        rows = read_rows(path, file_index=index)
        assert rows, path.name
        orders = [row["order"] for row in rows]
        assert all(a < b for a, b in zip(orders, orders[1:])), f"{path.name}: order not strictly increasing"
        assert all(row["order"] == index * ORDER_STRIDE + row["offset"] for row in rows)
        assert all(0 <= row["offset"] < path.stat().st_size for row in rows)
        assert all(row["file"] == str(path) and row["source"] == "test" for row in rows)
        for row in rows:
            alive = row["stage"] is None
            # html is there exactly for alive rows
            assert (row["html"] is not None) == alive, (path.name, row["offset"])
            assert alive or row["reason"], (path.name, row["offset"])
    # warcio's own warnings ("Record not followed by newline", zlib errors) became `detail`, not noise
    assert capsys.readouterr().err == ""


def test_record_counts_match_readme_and_warcio():
    folder = realdata()
    table = readme_table()
    assert len(table) >= 13
    for name, (records, html) in table.items():
        rows = read_rows(folder / name)
        if "ERR" in records:
            continue  # warcio itself cannot read these through; see test_malformed_files
        # one row per record, malformed or not
        assert len(rows) == int(records), name
        # README counts HTML responses of any status; ours are alive rows, non-2xx rejects and records
        # that turned out truncated (which keep their content type)
        html_like = [
            row
            for row in rows
            if row["stage"] is None
            or (row["reason"] in ("read:http_status", "read:malformed") and row["content_type"] == "text/html")
        ]
        assert len(html_like) == int(html), name
        if name not in MALFORMED:
            warcio_records, warcio_html_ok = warcio_counts(folder / name)
            assert len(rows) == warcio_records, name
            assert sum(row["stage"] is None for row in rows) == warcio_html_ok, name


def test_aut_example_verdicts():
    rows = read_rows(realdata() / "aut__example.warc.gz")
    reasons = {}
    for row in rows:
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    # 822 records: 261 request + 261 metadata + 1 warcinfo + 299 responses (94 HTML 200, 46 HTML 3xx/4xx,
    # 1 text/plain 301, 158 other types incl. 38 dns: records)
    assert reasons == {
        None: 94,
        "request": 261,
        "metadata": 261,
        "warcinfo": 1,
        "read:http_status": 47,
        "read:not_html": 158,
    }
    assert {row["stage"] for row in rows if row["reason"] in ("request", "metadata")} == {NOT_DOCUMENT}
    alive = [row for row in rows if row["stage"] is None]
    assert all(row["content_type"] == "text/html" and row["url"].startswith("http") for row in alive)
    assert any(b"<html" in row["html"].lower() for row in alive)
    statuses = {row["detail"] for row in rows if row["reason"] == "read:http_status"}
    assert "HTTP status 404" in statuses


def test_revisits_are_not_documents():
    rows = read_rows(realdata() / "pywb__iana.warc.gz")
    revisits = [row for row in rows if row["record_type"] == "revisit"]
    assert len(revisits) == 123
    assert all(row["stage"] == NOT_DOCUMENT and row["reason"] == "revisit" and row["html"] is None for row in revisits)


def test_warc_fields_are_filled():
    rows = read_rows(realdata() / "dolma__sample-0000.warc.gz")
    response = next(row for row in rows if row["stage"] is None)
    assert re.fullmatch(r"<urn:uuid:[0-9A-Fa-f-]{36}>", response["id"])
    assert response["url"] == "https://www.semanticscholar.org/research/research-team"
    assert response["date"] == "2024-04-25T16:24:44Z"
    assert response["record_type"] == "response"
    assert response["content_type"] == "text/html"
    assert response["http_charset"] == "utf-8"
    assert response["offset"] == 865
    assert len(response["html"]) == 87229
    assert len({row["id"] for row in rows}) == len(rows)


def test_chunked_payload_is_dechunked():
    rows = read_rows(realdata() / "warcio__example-iana.org-chunked.warc")
    (page,) = [row for row in rows if row["stage"] is None]
    # the raw body has chunk-size lines; the decoded one is plain HTML from its first byte
    assert page["html"].lstrip().lower().startswith(b"<!doctype html")
    assert page["html"].rstrip().endswith(b"</html>")


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_files(name):
    path = realdata() / name
    rows = read_rows(path)
    bad = [row for row in rows if row["reason"] == "read:malformed"]
    assert bad, name
    for row in bad:
        assert row["stage"] == "read"
        assert row["detail"].startswith(f"{path} at offset {row['offset']}: ")
        assert row["id"] == stable_id(str(path), row["offset"])
        assert row["html"] is None


def test_malformed_details_say_what_is_wrong():
    folder = realdata()

    def details(name):
        return [row["detail"] for row in read_rows(folder / name) if row["reason"] == "read:malformed"]

    assert any("record truncated" in d for d in details("resiliparse__clipped.warc.gz"))
    assert any("Content-Length is invalid" in d for d in details("warcio__example-trunc.warc"))
    wrong_chunks = details("warcio__example-wrong-chunks.warc.gz")
    assert any("record truncated" in d for d in wrong_chunks)
    assert any("Unknown archive format" in d for d in wrong_chunks)
    assert sum("invalid Content-Length" in d for d in details("warcio__bad.arc")) == 3


def test_a_gzip_member_holding_several_records_is_read_through():
    # warcio refuses such a file ("non-chunked gzip"); it is readable from the start, so nothing is lost
    rows = read_rows(realdata() / "warcio__example-bad.warc.gz.bad")
    assert [row["record_type"] for row in rows] == ["warcinfo", "response", "request", "revisit", "request", "response"]
    assert not [row for row in rows if row["reason"] == "read:malformed"]
    assert rows[1]["stage"] is None and rows[1]["html"].lstrip().lower().startswith(b"<!doctype html")


def test_reading_resumes_after_bad_records():
    folder = realdata()
    # example-trunc: the response is cut short, the request after it is still read
    rows = read_rows(folder / "warcio__example-trunc.warc")
    assert [row["record_type"] for row in rows] == ["warcinfo", "warcinfo", "response", "request"]
    assert [row["reason"] for row in rows] == ["warcinfo", "warcinfo", "read:malformed", "request"]
    # wrong-chunks: a record spread over three gzip members; the request in the last member survives
    rows = read_rows(folder / "warcio__example-wrong-chunks.warc.gz")
    assert [(row["offset"], row["reason"]) for row in rows] == [
        (0, "read:malformed"),
        (516, "read:malformed"),
        (1130, "request"),
    ]


def test_arc_ids_are_stable():
    path = realdata() / "warcio__example.arc.gz"
    first, second = read_rows(path), read_rows(path)
    assert [row["id"] for row in first] == [row["id"] for row in second]
    assert [row["id"] for row in first] == [stable_id(str(path), row["offset"]) for row in first]
    assert all(row["id"].startswith("urn:crawlbelt:") and len(row["id"]) == len("urn:crawlbelt:") + 32 for row in first)
    assert [row["record_type"] for row in first] == ["warcinfo", "response"]
    page = first[1]
    assert page["stage"] is None and page["url"] == "http://example.com/"
    assert page["html"].startswith(b"<!doctype html>")
    assert page["date"] == "2014-02-16T05:02:21Z"
    # the id depends on the file's base name and the offset only
    assert stable_id("/a/x.arc.gz", 171) == stable_id("/b/x.arc.gz", 171) != stable_id("/a/x.arc.gz", 172)


def test_batches_hold_the_same_rows():
    path = realdata() / "resiliparse__warcfile.warc.gz"
    tables = list(read_warc(str(path), 2, "cc", batch_size=7))
    assert [t.num_rows for t in tables] == [7] * 7 + [1]
    assert pa.concat_tables(tables).equals(pa.concat_tables(list(read_warc(str(path), 2, "cc"))))


# --- files written here -----------------------------------------------------------------------------


def html_record(writer, url, body, content_type="text/html; charset=utf-8", status="200 OK", record_type="response"):
    http = StatusAndHeaders(status, [("Content-Type", content_type)] if content_type else [], protocol="HTTP/1.1")
    return writer.create_warc_record(url, record_type, payload=io.BytesIO(body), http_headers=http)


def page(i: int) -> bytes:
    return f"<html><body><h1>Page {i}</h1><p>{'Rivers carry sand to the sea. ' * 60}</p></body></html>".encode()


def write_three(path: Path, gzip: bool) -> list[int]:
    """Three HTML responses; returns their offsets (and the file size last)."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=gzip)
    offsets = []
    for i in range(3):
        offsets.append(buffer.tell())
        writer.write_record(html_record(writer, f"http://example.com/{i}", page(i)))
    path.write_bytes(buffer.getvalue())
    return offsets + [buffer.tell()]


@pytest.mark.parametrize("where", ["member header", "deflate data", "gzip trailer"])
def test_corrupt_middle_gzip_member(tmp_path, where, capsys):
    path = tmp_path / "three.warc.gz"
    offsets = write_three(path, gzip=True)
    data = bytearray(path.read_bytes())
    position = {
        "member header": offsets[1] + 1,
        "deflate data": (offsets[1] + offsets[2]) // 2,
        "gzip trailer": offsets[2] - 6,
    }[where]
    for i in range(6):
        data[position + i] ^= 0x5A
    path.write_bytes(bytes(data))

    rows = read_rows(path)
    assert [row["offset"] for row in rows] == offsets[:3]
    first, middle, last = rows
    assert first["stage"] is None and first["url"] == "http://example.com/0" and first["html"] == page(0)
    assert last["stage"] is None and last["url"] == "http://example.com/2" and last["html"] == page(2)
    assert middle["reason"] == "read:malformed" and middle["html"] is None
    assert middle["detail"].startswith(f"{path} at offset {offsets[1]}: ")
    assert capsys.readouterr().err == ""


def test_truncated_record_in_plain_warc(tmp_path):
    path = tmp_path / "three.warc"
    offsets = write_three(path, gzip=False)
    data = path.read_bytes()
    cut = offsets[1] + 1000  # inside the second record's body
    path.write_bytes(data[:cut] + data[offsets[2] :])
    rows = read_rows(path)
    assert [row["url"] for row in rows] == [f"http://example.com/{i}" for i in range(3)]
    assert [row["reason"] for row in rows] == [None, "read:malformed", None]
    assert rows[2]["offset"] == cut and rows[2]["html"] == page(2)


def test_garbage_before_the_first_record(tmp_path):
    path = tmp_path / "junk.warc"
    write_three(path, gzip=False)
    junk = b"not a warc\n" * 3  # (five words would parse as an ARC header line)
    path.write_bytes(junk + path.read_bytes())
    rows = read_rows(path)
    assert [row["reason"] for row in rows] == ["read:malformed", None, None, None]
    assert rows[0]["offset"] == 0 and "Unknown archive format" in rows[0]["detail"]
    assert rows[1]["offset"] == len(junk)


def test_truncated_gzip_file_keeps_earlier_records(tmp_path):
    path = tmp_path / "cut.warc.gz"
    offsets = write_three(path, gzip=True)
    path.write_bytes(path.read_bytes()[: offsets[2] + 100])
    rows = read_rows(path)
    assert [row["reason"] for row in rows] == [None, None, "read:malformed"]
    assert rows[2]["offset"] == offsets[2]


def test_missing_unreadable_and_empty_files(tmp_path):
    missing = tmp_path / "nope.warc.gz"
    (row,) = read_rows(missing)
    assert row["reason"] == "read:malformed" and row["offset"] == 0
    assert "FileNotFoundError" in row["detail"] and str(missing) in row["detail"]
    (row,) = read_rows(tmp_path)  # a directory cannot be opened as a file
    assert row["reason"] == "read:malformed" and "IsADirectoryError" in row["detail"]
    empty = tmp_path / "empty.warc.gz"
    empty.write_bytes(b"")
    assert list(read_warc(str(empty), 0, "test")) == []
    if os.geteuid() != 0:  # root reads files whatever their mode
        locked = tmp_path / "locked.warc"
        locked.write_bytes(b"WARC/1.0\r\n")
        locked.chmod(0)
        (row,) = read_rows(locked)
        assert "PermissionError" in row["detail"]


def test_document_verdicts(tmp_path):
    path = tmp_path / "mixed.warc.gz"
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    big = b"<html><body>" + b"x" * 5000 + b"</body></html>"
    writer.write_record(html_record(writer, "http://a/ok", page(1), "text/html; charset=Windows-1251"))
    writer.write_record(html_record(writer, "http://a/missing", page(2), "Not Found", status="404 Not Found"))
    writer.write_record(html_record(writer, "http://a/img", b"\x89PNG\r\n", "image/png"))
    writer.write_record(html_record(writer, "http://a/sniffed", b"  <!DOCTYPE html><p>hi</p>", None))
    writer.write_record(html_record(writer, "http://a/text", b"plain words", None))
    writer.write_record(html_record(writer, "http://a/big", big))
    writer.write_record(html_record(writer, "http://a/xhtml", page(3), "application/xhtml+xml"))
    writer.write_record(
        writer.create_warc_record(
            "http://a/res", "resource", payload=io.BytesIO(page(4)), warc_content_type="text/html; charset=UTF-8"
        )
    )
    writer.write_record(
        writer.create_warc_record(
            "http://a/meta", "metadata", payload=io.BytesIO(b"via: x\r\n"), warc_content_type="application/warc-fields"
        )
    )
    path.write_bytes(buffer.getvalue())

    rows = {row["url"]: row for row in read_rows(path, max_payload_bytes=4000)}
    assert rows["http://a/ok"]["stage"] is None and rows["http://a/ok"]["http_charset"] == "windows-1251"
    assert rows["http://a/missing"]["reason"] == "read:http_status" and "404" in rows["http://a/missing"]["detail"]
    assert rows["http://a/img"]["reason"] == "read:not_html" and "image/png" in rows["http://a/img"]["detail"]
    assert rows["http://a/sniffed"]["stage"] is None and rows["http://a/sniffed"]["content_type"] is None
    assert rows["http://a/text"]["reason"] == "read:not_html"
    assert rows["http://a/big"]["reason"] == "read:too_large" and rows["http://a/big"]["html"] is None
    assert rows["http://a/xhtml"]["stage"] is None
    resource = rows["http://a/res"]
    assert resource["stage"] is None and resource["record_type"] == "resource" and resource["html"] == page(4)
    assert resource["content_type"] == "text/html" and resource["http_charset"] == "utf-8"
    assert rows["http://a/meta"]["stage"] == NOT_DOCUMENT and rows["http://a/meta"]["reason"] == "metadata"
    assert all(row["stage"] != "read" or row["html"] is None for row in rows.values())


@pytest.mark.parametrize("dictionary", [False, True], ids=["no dictionary", "dictionary"])
def test_a_warc_zst_reads_as_its_warc_gz(tmp_path, dictionary):
    """A real .warc.gz recompressed as .warc.zst (a frame per record, as Wget-AT writes; with its dictionary
    frame or without) gives the same rows, each at the offset of its frame, and a frame damaged in the
    middle costs only its own record."""
    from backports import zstd

    from testdata.make_bad_inputs import flip, zstd_frame

    source = realdata() / "dolma__sample-0000.warc.gz"
    records, data = [], source.read_bytes()
    while data:  # one gzip member per record
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        records.append(member.decompress(data))
        data = member.unused_data
    trained = zstd.train_dict(records, 8192) if dictionary else None
    header = b""
    if trained is not None:
        packed = zstd.compress(trained.dict_content)
        header = b"\x5d\x2a\x4d\x18" + len(packed).to_bytes(4, "little") + packed
    frames = [zstd_frame(record, trained) for record in records]
    offsets = [len(header) + sum(map(len, frames[:i])) for i in range(len(frames))]
    path = tmp_path / "sample.warc.zst"
    path.write_bytes(header + b"".join(frames))

    expected = read_rows(source)
    rows = read_rows(path)
    assert len(rows) == len(records) > 10
    assert [row["offset"] for row in rows] == offsets
    same = ("id", "url", "record_type", "content_type", "html", "stage", "reason")
    assert [{k: row[k] for k in same} for row in rows] == [{k: row[k] for k in same} for row in expected]

    bad = 5
    frames[bad] = flip(frames[bad], len(frames[bad]) // 2, 4)
    path.write_bytes(header + b"".join(frames))
    rows = read_rows(path)
    assert [row["offset"] for row in rows] == offsets
    assert [row["reason"] == "read:malformed" for row in rows] == [i == bad for i in range(len(frames))]
    assert rows[bad]["detail"].startswith(f"{path} at offset {offsets[bad]}: corrupt zstd frame")
