"""Read WARC and ARC files into document rows: one row per record, in file order, never raising.

Every record becomes exactly one row, so that the final counts see the whole file. HTML responses (and
resource/conversion records) are alive rows carrying their decoded HTTP body in `html`; WET conversion
records (text/plain) are alive rows carrying their `text`, which skip extraction; everything else is
rejected or marked `not_document` right here. Files may be plain, gzip (.warc.gz) or zstd (.warc.zst,
with or without a dictionary), told apart by their first bytes. A record warcio cannot parse, or one
whose length does not match its data, becomes a `read:malformed` row, and reading resumes at the next
record boundary found in the raw bytes (next gzip member or zstd frame, or next `WARC/1.` / ARC header
line).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

import pyarrow as pa
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.recordloader import ARC2WARCHeadersParser

from stages.compressed import ENCODINGS, ZSTD_MAGIC, BodyError, ZstdFrames, decode_body, is_zstd_file, read_dictionary
from stages.file_names import real_path
from stages.ledger import NOT_DOCUMENT

DOCUMENT_SCHEMA = pa.schema(
    [
        ("order", pa.int64()),
        ("id", pa.string()),
        ("url", pa.string()),
        ("source", pa.string()),
        ("file", pa.string()),
        ("offset", pa.int64()),
        ("date", pa.string()),
        ("record_type", pa.string()),
        ("content_type", pa.string()),
        ("http_charset", pa.string()),
        ("html", pa.binary()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("dup_of", pa.string()),
        # set here only for records whose payload is already text (WET); the extract stage fills the rest
        ("text", pa.string()),
        ("charset", pa.string()),
    ]
)

STAGE = "read"
DOCUMENT_TYPES = ("response", "resource", "conversion")
HTML_TYPES = ("text/html", "application/xhtml+xml")
ORDER_STRIDE = 2**40  # offsets stay below 1 TiB, so file_index * 2**40 + offset is a total order
BATCH_BYTES = 32_000_000  # read.batch_mb's default

_GZIP_MAGIC = b"\x1f\x8b\x08"
# A record boundary in an uncompressed file: a WARC version line (anywhere: a truncated record's last
# line has no newline), or at a line start an ARC v1 header line "<url> <ip> <date> <mime> <length>"
# (the URL must have a scheme and the date be digits; the length is not checked, so that a record with a
# broken length is still found and reported).
_RECORD_START = re.compile(rb"WARC/1\.\d\r?\n|(?m:^)[A-Za-z][A-Za-z0-9+.-]*:\S* \S+ \d{8,} \S+ \S+\r?\n")
_SEARCH_CHUNK = 1 << 20
_SNIFF_BYTES = 1024
_MAX_DETAIL = 600
# A record's id, URL and date, in every format, are at most this many bytes (a URL past 64 KiB is no page a
# browser opens); a record's WARC and HTTP header lines together at most MAX_HEADER_BYTES. Both bound what a
# record holds besides its payload (read.max_payload_mb), so that a batch's bytes (read.batch_mb) bound a worker.
MAX_FIELD_BYTES = 1 << 16
MAX_HEADER_BYTES = 1 << 20


# warcio warnings that describe a problem it repaired, not a broken record.
_REPAIRED = re.compile(r"Replacing spaces in invalid WARC-Target-URI: [^\n]*\n?")


class _Iterator(ArchiveIterator):
    """warcio refuses a gzip file holding several records in one member (a whole file gzipped at once)
    because such a file cannot be seeked into; it reads fine from the start, so read it."""

    def _raise_invalid_gzip_err(self):
        pass


class HeadersTooLarge(Exception):
    """A record's header lines run past MAX_HEADER_BYTES."""


class _HeaderBudget:
    """warcio reads header lines with an unbounded readline, so one line of gigabytes (or millions of short
    ones) would be held whole. While armed (around the parsing of one record's headers), lines are read at
    most to what is left of MAX_HEADER_BYTES and running past it raises HeadersTooLarge."""

    def __init__(self, reader) -> None:
        self._readline = reader.readline
        self.left: int | None = None  # None: disarmed (a chunked body's size lines are no headers)
        reader.readline = self.readline

    def arm(self) -> None:
        self.left = MAX_HEADER_BYTES

    def disarm(self) -> None:
        self.left = None

    def readline(self, length=None):
        if self.left is None:
            return self._readline(length)
        cap = self.left + 1
        line = self._readline(cap if length is None else min(length, cap))
        self.left -= len(line)
        if self.left < 0:
            raise HeadersTooLarge(f"header lines over {MAX_HEADER_BYTES} bytes")
        return line


class RecordProblem(Exception):
    """A record warcio would stumble on, named in our words."""


def _named_problems(loader) -> None:
    """warcio's loader with a response, request or revisit record lacking WARC-Target-URI named (it raised
    AttributeError on it)."""
    load = loader.load_http_headers

    def load_http_headers(rec_type, uri, stream, length):
        if uri is None and rec_type in loader.HTTP_RECORDS:
            raise RecordProblem(f"a {rec_type} record without WARC-Target-URI")
        return load(rec_type, uri, stream, length)

    loader.load_http_headers = load_http_headers


class _StableIdArcParser(ARC2WARCHeadersParser):
    """warcio's ARC-to-WARC conversion invents a random WARC-Record-ID per read; drop it so that the
    reader derives a stable id from file and offset instead."""

    def _get_protocol_and_headers(self, headerline, parts):
        protocol, headers = super()._get_protocol_and_headers(headerline, parts)
        return protocol, [(name, value) for name, value in headers if name != "WARC-Record-ID"]


def stable_id(path: str, offset: int) -> str:
    """The id of a record that has no WARC-Record-ID (ARC records, malformed records)."""
    digest = hashlib.sha1(f"{os.path.basename(path)}:{offset}".encode()).hexdigest()
    return f"urn:crawlbelt:{digest[:32]}"


def read_warc(
    path: str,
    file_index: int,
    source: str,
    batch_size: int = 64,
    max_payload_bytes: int = 10_000_000,
    open_file: Callable[[str], BinaryIO] | None = None,
    batch_bytes: int = BATCH_BYTES,
) -> Iterator[pa.Table]:
    """Yield tables of DOCUMENT_SCHEMA holding every record of the file exactly once, in file order.
    `open_file` opens `path` as a seekable binary file (default: the local file system), e.g. from S3."""
    yield from document_batches(
        _rows(str(path), max_payload_bytes, open_file or open_local), path, file_index, source, batch_size, batch_bytes
    )


def document_batches(
    rows: Iterable[dict], path: str, file_index: int, source: str, batch_size: int, batch_bytes: int = BATCH_BYTES
) -> Iterator[pa.Table]:
    """Tables of DOCUMENT_SCHEMA from one file's rows (each with its `offset`), adding order, source and file:
    `batch_size` rows, fewer where they would hold more than `batch_bytes` (a batch holds at least one row)."""
    batch: list[dict] = []
    size = 0
    for row in rows:
        row.update(order=file_index * ORDER_STRIDE + row["offset"], source=source, file=str(path))
        row_size = row_bytes(row)
        if batch and size + row_size > batch_bytes:
            yield _table(batch)
            batch, size = [], 0
        batch.append(row)
        size += row_size
        if len(batch) >= batch_size:
            yield _table(batch)
            batch, size = [], 0
    if batch:
        yield _table(batch)


def row_bytes(row: dict) -> int:
    """The bytes of a row's values, as Arrow holds them (UTF-8 for strings)."""
    return sum(value_bytes(value) for value in row.values() if isinstance(value, str | bytes))


def value_bytes(value: str | bytes) -> int:
    # an ASCII str is as long in UTF-8 (isascii is a flag, no scan); others are encoded to count
    return len(value) if isinstance(value, bytes) or value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def oversized_field(fields: dict) -> str | None:
    """What is too large among a record's id, URL and date (name: value), or None."""
    for name, value in fields.items():
        if isinstance(value, str | bytes) and (size := value_bytes(value)) > MAX_FIELD_BYTES:
            return f"{name} of {size} bytes, over the {MAX_FIELD_BYTES}-byte limit"
    return None


def _table(rows: list[dict]) -> pa.Table:
    columns = {name: [row.get(name) for row in rows] for name in DOCUMENT_SCHEMA.names}
    return pa.Table.from_pydict(columns, schema=DOCUMENT_SCHEMA)


def _malformed(path: str, offset: int, what: str, reason: str = "read:malformed") -> dict:
    detail = f"{path} at offset {offset}: {_printable(what)}"
    if len(detail) > _MAX_DETAIL:
        detail = detail[: _MAX_DETAIL - 3] + "..."
    return dict(id=stable_id(path, offset), offset=offset, stage=STAGE, reason=reason, detail=detail)


def _describe(error: BaseException, stderr: str = "") -> str:
    said = " ".join(str(error).split())
    text = said if isinstance(error, RecordProblem) else f"{type(error).__name__}: {said}"
    if stderr.strip():
        text += f" (warcio: {' '.join(stderr.split())})"
    return text


def _printable(text: str) -> str:
    """`text` with what is not printable ASCII escaped (\\x97): an error may quote a junk file's bytes."""
    return "".join(c if c.isascii() and c.isprintable() else ascii(c)[1:-1] for c in text)


def open_local(path: str) -> BinaryIO:
    return open(real_path(path), "rb")  # a name that is not UTF-8 comes escaped


def _rows(path: str, max_payload_bytes: int, open_file: Callable[[str], BinaryIO]) -> Iterator[dict]:
    try:
        handle = open_file(path)
    except OSError as error:
        yield _malformed(path, 0, _describe(error))
        return
    with handle:
        head = handle.read(4)
        kind = "zstd" if is_zstd_file(head) else "gzip" if head.startswith(_GZIP_MAGIC[:2]) else "plain"
        start: int | None  # where the next records begin; None: no more to read
        dictionary, start = None, 0
        if kind == "zstd":
            dictionary, start, problem = read_dictionary(handle)
            if problem is not None:  # frames made with the dictionary will not decompress: each is named
                yield _malformed(path, 0, problem)
        last_offset = -1
        while start is not None:
            handle.seek(start)
            frames = ZstdFrames(handle, start, dictionary) if kind == "zstd" else None
            iterator = _Iterator(frames or handle, arc2warc=True)
            iterator.loader.arc_parser = _StableIdArcParser()
            _named_problems(iterator.loader)
            headers = _HeaderBudget(iterator.reader)
            file_offset = frames.frame_offset if frames else int  # a decompressed position's place in the file
            fresh = True
            bad_offset = None
            while bad_offset is None:
                # warcio reports problems by writing to stderr; capture that text for `detail`.
                # Redirecting stderr is process-wide, so it is held only around warcio calls, never across a yield.
                with contextlib.redirect_stderr(io.StringIO()) as stderr:
                    try:
                        headers.arm()
                        if fresh:
                            _skip_leading_blank_lines(iterator)
                            fresh = False
                        record = next(iterator)
                    except StopIteration:
                        break
                    except HeadersTooLarge as error:  # not held whole: named, and reading resumes after it
                        bad_offset = _next_offset(file_offset(iterator.offset), last_offset)
                        row = _malformed(path, bad_offset, str(error), "read:too_large")
                    except Exception as error:  # anything warcio raises on a bad record
                        found = file_offset(iterator.offset)
                        if not frames and found > 0 and _zeros_to_end(handle, found):
                            break  # padding after the last record or gzip member, as gzip reads it: no record
                        bad_offset = _next_offset(found, last_offset)
                        what = _frame_error(frames, found) or _describe(error, stderr.getvalue())
                        if bad_offset != found:
                            member = "zstd frame" if frames else "gzip member"
                            what = f"(in the same {member} as the record at offset {last_offset}) {what}"
                        row = _malformed(path, bad_offset, what)
                    else:
                        headers.disarm()
                        found = file_offset(iterator.offset)
                        offset = _next_offset(found, last_offset)
                        row = {}
                        try:
                            row, problem = _record_row(record, path, offset, max_payload_bytes)
                            iterator.read_to_end()  # consume the blank lines after it: a wrong length shows here
                        except Exception as error:
                            problem = _describe(error)
                        warnings = _REPAIRED.sub("", stderr.getvalue())
                        if problem is None and warnings.strip():
                            problem = " ".join(warnings.split())
                        # a zstd frame that fails at its checksum fails after its record was read; a frame cut short
                        # (a stream flushed after each record) spoils only the record its cut falls in, which its
                        # length shows
                        if not (frames and frames.cut and problem is None):
                            problem = _frame_error(frames, found) or problem
                        if problem is not None:
                            bad_offset = offset
                            known = {k: row.get(k) for k in ("url", "date", "record_type", "content_type")}
                            row = {**known, **_malformed(path, offset, problem)}
                last_offset = row["offset"]
                yield row
            iterator.close()
            if frames and frames.error and bad_offset is None:
                # the records before it were whole; the frame that failed is named on its own
                bad_offset = frames.error[0]
                last_offset = _next_offset(bad_offset, last_offset)  # after the whole records of its frame
                yield _malformed(path, last_offset, frames.error[1])
            start = None if bad_offset is None else _resync(handle, bad_offset + 1, kind)


def _zeros_to_end(handle: BinaryIO, position: int) -> bool:
    """Whether the file holds only zero bytes from `position` on (and at least one)."""
    handle.seek(position)
    chunk = handle.read(_SEARCH_CHUNK)
    if not chunk:
        return False
    while chunk:
        if chunk.strip(b"\x00"):
            return False
        chunk = handle.read(_SEARCH_CHUNK)
    return True


def _frame_error(frames: ZstdFrames | None, offset: int) -> str | None:
    """The zstd problem that made the record at `offset` unreadable, if that is what happened."""
    if frames is not None and frames.error is not None and frames.error[0] == offset:
        return frames.error[1]
    return None


def _next_offset(offset: int, last_offset: int) -> int:
    # warcio's offset is meaningless inside a gzip member that holds several records (a non-chunked
    # gzip file); keep the order strict anyway.
    return offset if offset > last_offset else last_offset + 1


def _skip_leading_blank_lines(iterator: ArchiveIterator) -> None:
    """warcio expects a record header on the first line; after a resync a member may begin with the
    blank lines that end the previous record."""
    while True:
        line = iterator.reader.readline()
        if not line or line.strip():
            iterator.next_line = line or None
            return


def _resync(handle, position: int, kind: str) -> int | None:
    """The file offset of the next record boundary at or after `position`, or None at the end."""
    overlap = 8192  # a boundary split between two chunks is found in the next one
    while True:
        try:
            handle.seek(position)
            chunk = handle.read(_SEARCH_CHUNK)
        except OSError:  # the bad record's row already says where reading stopped
            return None
        if not chunk:
            return None
        if kind != "plain":
            found = chunk.find(_GZIP_MAGIC if kind == "gzip" else ZSTD_MAGIC)
        else:
            match = _RECORD_START.search(chunk)
            # `^` also matches at the chunk start, which is a line start only right after a newline
            if match and match.start() == 0 and not chunk.startswith(b"WARC/") and not _after_newline(handle, position):
                # (position is never 0 here: resyncing starts after a bad record)
                match = _RECORD_START.search(chunk, 1)
            found = match.start() if match else -1
        if found >= 0:
            return position + found
        if len(chunk) < _SEARCH_CHUNK:
            return None
        position += len(chunk) - overlap


def _after_newline(handle, position: int) -> bool:
    handle.seek(position - 1)
    return handle.read(1) == b"\n"


def _record_row(record, path: str, offset: int, max_payload_bytes: int) -> tuple[dict, str | None]:
    """The row for one parsed record, plus a description of what is wrong with it (None if nothing)."""
    headers = record.rec_headers
    record_id = headers.get_header("WARC-Record-ID") or stable_id(path, offset)
    row = dict(
        id=record_id,
        url=headers.get_header("WARC-Target-URI"),
        offset=offset,
        date=headers.get_header("WARC-Date"),
        record_type=record.rec_type,
    )
    oversized = oversized_field({"WARC-Record-ID": record_id, "WARC-Target-URI": row["url"], "WARC-Date": row["date"]})
    if oversized is not None:  # not carried on: the row names it by file and offset
        row.update(id=stable_id(path, offset), url=None, date=None)
    mime, charset = _content_type(record)
    row.update(content_type=mime, http_charset=charset)

    problem = _length_problem(headers.get_header("Content-Length"))
    if problem is None and not record.rec_type:
        problem = "record has no WARC-Type"
    http = record.http_headers
    if problem is None and record.rec_type == "response" and http is not None:
        if not http.protocol.upper().startswith("HTTP/") or not http.get_statuscode().isdigit():
            problem = f"invalid HTTP status line {(http.protocol + ' ' + http.statusline).strip()!r}"

    if (
        problem is None
        and record.rec_type == "response"
        and http is None
        and (record.content_type or "").lower().startswith("application/http")
    ):
        problem = "response record has no HTTP block (empty or missing status line and headers)"

    payload = None
    encoding = (http.get_header("Content-Encoding") or "").strip().lower() if http is not None else ""
    if problem is None and record.rec_type in DOCUMENT_TYPES:
        status = http.get_statuscode() if (http is not None and record.rec_type == "response") else None
        is_text = record.rec_type == "conversion" and mime == "text/plain"  # a WET record: text, no HTML
        if oversized is not None:
            row.update(stage=STAGE, reason="read:too_large", detail=oversized)
        elif status is not None and not status.startswith("2"):
            row.update(stage=STAGE, reason="read:http_status", detail=f"HTTP status {status}")
        elif encoding not in ("", "identity", *ENCODINGS):
            row.update(
                stage=STAGE,
                reason="read:content_encoding",
                detail=f"HTTP Content-Encoding {encoding!r} cannot be decoded ({', '.join(ENCODINGS)} can)",
            )
        elif mime and not is_text and mime not in HTML_TYPES:
            row.update(stage=STAGE, reason="read:not_html", detail=f"content type {mime}")
        else:
            try:
                payload = decode_body(_encoded_body(record), encoding, max_payload_bytes)
            except BodyError as error:
                row.update(
                    stage=STAGE,
                    reason="read:content_encoding",
                    detail=f"HTTP Content-Encoding {encoding!r}: the body is {error}",
                )
            else:
                if len(payload) > max_payload_bytes:
                    row.update(stage=STAGE, reason="read:too_large", detail=f"payload over {max_payload_bytes} bytes")
                elif not (is_text or _is_html(mime, payload[:_SNIFF_BYTES])):
                    row.update(stage=STAGE, reason="read:not_html", detail="content type missing")
                elif is_text:
                    text, used = _wet_text(payload, charset, headers.get_header("WARC-Identified-Content-Charset"))
                    row.update(text=text, charset=used)
            if row.get("stage") is not None or is_text:
                payload = None
    elif problem is None:
        row.update(stage=NOT_DOCUMENT, reason=record.rec_type)

    # Drain the record: a Content-Length longer than the data shows as bytes left unread.
    while record.raw_stream.read(1 << 16):
        pass
    missing = getattr(record.raw_stream, "limit", 0)
    if problem is None and missing > 0:
        problem = f"record truncated: Content-Length {headers.get_header('Content-Length')}, {missing} bytes missing"
    if problem is not None:
        return row, problem
    if payload is not None:
        row["html"] = payload
    return row, None


def _wet_text(payload: bytes, declared: str | None, identified: str | None) -> tuple[str, str]:
    """(text, the charset it was decoded with) of a WET record's payload. A charset its Content-Type declares
    decodes it; without one it is UTF-8, as WET writers convert text, unless it is not UTF-8 and the charset a
    crawler identified (WARC-Identified-Content-Charset) is known. Bytes that do not decode become U+FFFD."""
    from stages.extract import _codec  # the web's reading of charset labels (iso-8859-1 is windows-1252)

    codec = _codec(declared)
    if codec is None:
        try:
            return payload.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            codec = _codec(identified) or "utf-8"
    return payload.decode(codec, errors="replace"), codec


def _encoded_body(record) -> BinaryIO:
    """The record's HTTP body with any chunked Transfer-Encoding removed, still in its Content-Encoding."""
    if record.http_headers is not None and record.http_headers.get_header("Transfer-Encoding") == "chunked":
        return ChunkedDataReader(record.raw_stream)
    return record.raw_stream


def _length_problem(value: str | None) -> str | None:
    if value is None:
        return "record has no Content-Length"
    if not value.strip().isdigit():
        return f"invalid Content-Length {value!r}"
    return None


def _content_type(record) -> tuple[str | None, str | None]:
    """(mime, charset) from the HTTP Content-Type, else from the record's own Content-Type."""
    if record.http_headers is not None:
        value = record.http_headers.get_header("Content-Type")
    else:
        value = record.content_type
    if not value:
        return None, None
    parts = value.split(";")
    mime = parts[0].strip().lower() or None
    charset = None
    for param in parts[1:]:
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset":
            charset = val.strip().strip("\"'").strip().lower() or None
    return mime, charset


def _is_html(mime: str | None, head: bytes) -> bool:
    if mime:
        return mime in HTML_TYPES
    sniff = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return sniff.startswith((b"<!doctype html", b"<html"))
