"""Read JSONL and Parquet files of documents into document rows, as stages/warc_read reads WARC files:
every record exactly one row, in file order, never raising for bad content.

A record's text travels in the `text` column, as a WET record's does, so the extract stage keeps it as
it is. JSONL files may be plain, gzip or zstd, told apart by their first bytes; a record's offset is
its line's byte offset in the decompressed stream. A line that is not a JSON object with a string text
field is a `read:malformed` row naming the file and line, and reading goes on with the next line; a
stream that breaks mid-file (a truncated or corrupt gzip or zstd) ends the file with one such row.
Lines are read in bounded chunks, so a line over the size limit is counted (`read:too_large`) without
ever being held whole. A Parquet file is read in batches of the needed columns; a record's offset is
its row index. A row group that breaks (a corrupt page, a page checksum that fails) makes each of its rows
not yet read a `read:malformed` row, and reading goes on with the next row group.
"""

from __future__ import annotations

import gzip
import json
from typing import BinaryIO, NamedTuple
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from backports import zstd

from stages.compressed import DICTIONARY_FRAME, first_bytes, is_zstd_file
from stages.parquet_pages import page_sizes
from stages.warc_read import (
    BATCH_BYTES,
    MAX_FIELD_BYTES,
    STAGE,
    document_batches,
    open_local,
    oversized_field,
    stable_id,
)

_CHUNK = 1 << 20
_MISSING = object()
_JSON_TYPES = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
    dict: "an object",
}


class Fields(NamedTuple):
    """Where a record keeps its text, id and URL (JSONL: a key, or a dotted path like `meta.text`)."""

    text: str = "text"
    id: str | None = None  # None: ids are derived from file and offset
    url: str = "url"


class _Line(NamedTuple):
    offset: int  # of its first byte in the decompressed stream
    number: int  # 1-based
    data: bytes | None  # without its newline; None when over the size limit
    size: int
    ended: bool  # by a newline (else by the end of the stream)
    broken: str | None = None  # the stream broke inside this line: what happened


def read_jsonl(
    path: str,
    file_index: int,
    source: str,
    batch_size: int = 64,
    max_payload_bytes: int = 10_000_000,
    open_file: Callable[[str], BinaryIO] | None = None,
    batch_bytes: int = BATCH_BYTES,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    url_field: str = "url",
) -> Iterator[pa.Table]:
    """Yield tables of DOCUMENT_SCHEMA holding every non-blank line of the file exactly once, in order.
    `open_file` opens `path` as a seekable binary file (default: the local file system), e.g. from S3."""
    rows = _jsonl_rows(str(path), max_payload_bytes, open_file or open_local, Fields(text_field, id_field, url_field))
    yield from document_batches(rows, path, file_index, source, batch_size, batch_bytes)


def read_parquet(
    path: str,
    file_index: int,
    source: str,
    batch_size: int = 64,
    max_payload_bytes: int = 10_000_000,
    open_file: Callable[[str], BinaryIO] | None = None,
    batch_bytes: int = BATCH_BYTES,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    url_field: str = "url",
) -> Iterator[pa.Table]:
    """Yield tables of DOCUMENT_SCHEMA holding every row of the file exactly once, in order; a file
    without a string text column (or not Parquet at all) is one `read:malformed` row."""
    fields = Fields(text_field, id_field, url_field)
    rows = _parquet_rows(str(path), batch_size, batch_bytes, max_payload_bytes, open_file or open_local, fields)
    yield from document_batches(rows, path, file_index, source, batch_size, batch_bytes)


def text_column_problem(schema: pa.Schema, text_field: str) -> str | None:
    """What keeps a Parquet file of this schema from giving its text column, or None."""
    if (count := schema.names.count(text_field)) > 1:  # which one holds the text is not ours to guess
        return f'{count} columns named "{text_field}" (columns: {", ".join(schema.names)})'
    found = column_type(schema, text_field)
    if found is None:
        return f'no column "{text_field}" (columns: {", ".join(schema.names)})'
    type_ = found.value_type if pa.types.is_dictionary(found) else found  # pandas' category: its strings
    if not any(is_type(type_) for is_type in _TEXT_TYPES):
        return f'column "{text_field}" is {found}, not a string'
    return None


# string types, and binary ones read as UTF-8 (Hive, Impala and Spark before 1.5 write strings as binary)
_TEXT_TYPES = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_string_view,
    pa.types.is_binary,
    pa.types.is_large_binary,
)


def column_type(schema: pa.Schema, name: str) -> pa.DataType | None:
    """The type of the column `name`, or for a dotted name such as `meta.text` of a struct column's field,
    as JSONL's dotted fields; None if there is none. Of columns named alike (a join's), the first."""
    if name in schema.names:
        return schema.field(schema.names.index(name)).type
    top, *parts = name.split(".")
    type_ = schema.field(schema.names.index(top)).type if top in schema.names else None
    for part in parts:
        if type_ is None or not pa.types.is_struct(type_) or type_.get_field_index(part) < 0:
            return None
        type_ = type_.field(part).type
    return type_


FORMAT_NAMES = {"warc": "a WARC file", "jsonl": "JSON lines", "parquet": "a Parquet file", "utf-16": "UTF-16 text"}


def plain_format(handle: BinaryIO) -> str | None:
    """The format a file plainly is by its first bytes (decompressed): "warc" (WARC or ARC), "jsonl" (a JSON
    object first), "parquet", or "utf-16" text (a byte order mark, or `{` in UTF-16, as Windows tools write
    JSON lines: none of the three); None when they do not say (text, HTML, a stream broken at its start)."""
    raw = handle.read(1 << 16)
    if raw.startswith(b"PAR1"):
        return "parquet"
    if raw.startswith(DICTIONARY_FRAME):  # a zstd dictionary first: the .warc.zst layout
        return "warc"
    head = first_bytes(raw, 64)
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"{\x00", b"\x00{")):
        return "utf-16"
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if head.startswith((b"WARC/", b"filedesc://")):
        return "warc"
    if head.startswith(b"{"):
        return "jsonl"
    return None


def _malformed(path: str, offset: int, detail: str) -> dict:
    return dict(id=stable_id(path, offset), offset=offset, stage=STAGE, reason="read:malformed", detail=detail)


def _too_large(path: str, offset: int, detail: str) -> dict:
    return dict(id=stable_id(path, offset), offset=offset, stage=STAGE, reason="read:too_large", detail=detail)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


def _text_row(path: str, offset: int, text: str, record_id, url, date, record_type: str) -> dict:
    return dict(
        id=stable_id(path, offset) if record_id is None else str(record_id),
        url=url if isinstance(url, str) else None,
        offset=offset,
        date=date if isinstance(date, str) else None,
        record_type=record_type,
        content_type="text/plain",
        text=text,
        charset="utf-8",
    )


# JSONL


def _jsonl_rows(path: str, limit: int, open_file: Callable[[str], BinaryIO], fields: Fields) -> Iterator[dict]:
    try:
        handle = open_file(path)
    except OSError as error:
        yield _malformed(path, 0, f"{path}: cannot be opened ({_describe(error)})")
        return
    with handle:
        head = handle.read(4)
        handle.seek(0)
        # read1: what the decompressor has decoded so far, so that a stream that breaks loses no decoded
        # byte before the break (read() gathers a whole chunk first and drops it when the stream fails)
        read: Callable[[int], bytes]
        if head.startswith(b"\x1f\x8b"):
            kind, read = "gzip", gzip.GzipFile(fileobj=handle).read1
        elif is_zstd_file(head):
            kind, read = "zstd", zstd.ZstdFile(handle).read1
        else:
            kind, read = "file", handle.read
        for line in _lines(read, limit, kind):
            row = _jsonl_row(line, path, limit, fields)
            if row is not None:
                yield row


def _lines(read: Callable[[int], bytes], limit: int, kind: str) -> Iterator[_Line]:
    """The stream's lines, read a chunk at a time; a line's bytes are kept only while within `limit`."""
    start, number, size = 0, 1, 0  # the current line's offset, number and length so far
    held = bytearray()
    while True:
        try:
            chunk = read(_CHUNK)
        except Exception as error:  # anything a decompressor raises on bad or missing bytes
            yield _Line(start, number, None, size, False, f"{kind} stream broken ({_describe(error)})")
            return
        if not chunk:
            break
        position = 0
        while (end := chunk.find(b"\n", position)) >= 0:
            size += end - position
            if size <= limit:
                held += chunk[position:end]
            yield _Line(start, number, bytes(held) if size <= limit else None, size, True)
            start, number, size, position = start + size + 1, number + 1, 0, end + 1
            held.clear()
        size += len(chunk) - position
        if size <= limit:
            held += chunk[position:]
        else:
            held.clear()
    if size:
        yield _Line(start, number, bytes(held) if size <= limit else None, size, False)


def _jsonl_row(line: _Line, path: str, limit: int, fields: Fields) -> dict | None:
    """The row for one line; None for a blank line (no record)."""
    where = f"{path} line {line.number}"
    if line.broken is not None:
        return _malformed(path, line.offset, f"{where}: {line.broken}")
    if line.data is None:
        return _too_large(path, line.offset, f"{where}: {line.size} bytes, over the {limit}-byte limit")
    if not line.data.strip():
        return None
    record, problem = _json_object(line.data, first=line.number == 1)
    if record is None:
        cut_short = "" if line.ended else "last line cut short: "
        return _malformed(path, line.offset, f"{where}: {cut_short}{problem}")
    text = _field(record, fields.text)
    if text is _MISSING:
        return _malformed(path, line.offset, f'{where}: no "{fields.text}" field')
    if not isinstance(text, str):
        found = _JSON_TYPES.get(type(text), type(text).__name__)
        return _malformed(path, line.offset, f'{where}: "{fields.text}" is {found}, not a string')
    record_id = None if fields.id is None else _field(record, fields.id)
    record_id = None if record_id is _MISSING else record_id
    url, date = _field(record, fields.url), record.get("date")
    shown_id = None if record_id is None else str(record_id)  # as _text_row makes it
    oversized = oversized_field({f'"{fields.id}"': shown_id, f'"{fields.url}"': url, '"date"': date})
    if oversized is not None:
        return _too_large(path, line.offset, f"{where}: {oversized}")
    if b"\\ud" in line.data or b"\\uD" in line.data:  # a \uD800-\uDFFF escape: a surrogate, alone no character
        for name, value in ((fields.text, text), (fields.id, record_id), (fields.url, url), ("date", date)):
            problem = _lone_surrogate(value)
            if problem is not None:
                return _malformed(path, line.offset, f'{where}: "{name}" {problem}')
    return _text_row(path, line.offset, text, record_id, url, date, "jsonl")


def _lone_surrogate(value) -> str | None:
    """What is wrong with a string holding a lone surrogate (json.loads lets `"\\ud800"` through), or None."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"holds a lone surrogate (\\u{ord(value[error.start]):04x} at character {error.start + 1}), not Unicode"
    return None


def _json_object(data: bytes, first: bool) -> tuple[dict | None, str | None]:
    """(the line's JSON object, None) or (None, what is wrong with it)."""
    try:
        text = data.decode("utf-8-sig" if first else "utf-8")  # a file may start with a byte order mark
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 (byte 0x{data[error.start]:02x} at byte {error.start + 1})"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"not JSON ({error.msg}: column {error.colno})"
    except (ValueError, RecursionError) as error:  # nested too deep, a number with too many digits
        return None, f"not JSON ({_describe(error)})"
    if not isinstance(value, dict):
        return None, f"not a JSON object ({_JSON_TYPES[type(value)]})"
    return value, None


def _field(record: dict, name: str):
    """record[name]; for a dotted name absent as a key, e.g. `meta.text`, the nested value. _MISSING if none."""
    if name in record:
        return record[name]
    value = record
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


# Parquet


def _parquet_rows(
    path: str, batch_size: int, batch_bytes: int, limit: int, open_file: Callable[[str], BinaryIO], fields: Fields
) -> Iterator[dict]:
    try:
        handle = open_file(path)
    except OSError as error:
        yield _malformed(path, 0, f"{path}: cannot be opened ({_describe(error)})")
        return
    with handle:
        try:
            footer = pq.ParquetFile(handle)  # read once: the readers below reuse its metadata
            schema, metadata = footer.schema_arrow, footer.metadata
        except Exception as error:  # pyarrow's ArrowInvalid for bytes that are not Parquet, or an OSError
            yield _malformed(path, 0, f"{path}: not a Parquet file ({_describe(error)})")
            return
        problem = text_column_problem(schema, fields.text)
        if problem is not None:
            yield _malformed(path, 0, f"{path}: {problem}")
            return
        # the column each role reads, when the file has it
        wanted = {"text": fields.text, "id": fields.id, "url": fields.url, "date": "date"}
        columns = {
            role: name for role, name in wanted.items() if name is not None and column_type(schema, name) is not None
        }
        read = sorted({name if name in schema.names else name.split(".")[0] for name in columns.values()})
        # A small row group's strings are read dictionary-encoded, so that a value repeated by many rows (a
        # dictionary page holding one huge value, a few KB on disk) is held once, and each row's size is known from
        # the dictionary's lengths before any row is decoded. A large one's only where its dictionary page may hold
        # a value over the limit: pyarrow builds one dictionary of all the row group's values, about 4 times their
        # size, for a column that is not dictionary-encoded throughout, where plain decoding holds a batch.
        strings = [name for name in columns.values() if _is_string(column_type(schema, name))]
        readers: dict[tuple[str, ...], pq.ParquetFile] = {}
        limits = {role: limit if role == "text" else MAX_FIELD_BYTES for role in columns}
        name_limits = {columns[role]: limits[role] for role in columns}
        offset = 0
        for group in range(metadata.num_row_groups):
            chunks = [metadata.row_group(group).column(i) for i in range(metadata.num_columns)]
            end = offset + metadata.row_group(group).num_rows
            size = sum(chunk.total_uncompressed_size for chunk in chunks if chunk.path_in_schema.split(".")[0] in read)
            declared = {
                chunk.path_in_schema: page_sizes(handle, chunk)
                for chunk in chunks
                if chunk.path_in_schema.split(".")[0] in read
            }
            pages = {name: first for name, (first, _) in declared.items() if name in strings}  # dictionary pages
            largest = max((page for _, page in declared.values()), default=0)
            if largest > max(batch_bytes, limit):  # decompressed whole by pyarrow before any row is read
                what = (
                    f"row group {group} holds a page inflating to {largest} bytes, over the {max(batch_bytes, limit)}"
                )
                for lost in range(offset, end):
                    yield _too_large(path, lost, f"{path} row index {lost}: {what}-byte limit")
                offset = end
                continue
            small = size <= batch_bytes
            as_dictionary = tuple(name for name in strings if small or pages.get(name, 0) > name_limits[name])
            if as_dictionary not in readers:
                readers[as_dictionary] = pq.ParquetFile(
                    handle, metadata=metadata, page_checksum_verification=True, read_dictionary=list(as_dictionary)
                )
            parquet = readers[as_dictionary]
            # a value decoded plainly may be as large as its column's dictionary page: fewer rows at a time
            dense_page = max((page for name, page in pages.items() if name not in as_dictionary), default=0)
            per_row = max(size / max(1, metadata.row_group(group).num_rows), dense_page, 1)
            rows = max(1, min(batch_size, int(batch_bytes // per_row)))
            try:
                for batch in parquet.iter_batches(batch_size=rows, row_groups=[group], columns=read):
                    arrays = {role: _column(batch, name) for role, name in columns.items()}
                    sizes = {role: _sizes(array) for role, array in arrays.items()}
                    for first, stop in _pieces(sizes, limits, batch_bytes):
                        values = {
                            role: _values_within(array[first:stop], sizes[role][first:stop], limits[role])
                            for role, array in arrays.items()
                        }
                        for i in range(stop - first):
                            row_values = {role: values[role][i] for role in values}
                            row_sizes = {role: sizes[role][first + i] for role in sizes}
                            yield _parquet_row(path, offset, limits, fields, row_values, row_sizes)
                            offset += 1
            except Exception as error:  # a corrupt page: the rest of its row group is lost, not the next ones
                what = f"unreadable (row group {group}, row indexes {offset} to {end - 1}: {_describe(error)})"
                for lost in range(offset, end):
                    yield _malformed(path, lost, f"{path} row index {lost}: {what}")
                offset = end


def _is_string(type_: pa.DataType | None) -> bool:
    return type_ is not None and any(is_type(type_) for is_type in _TEXT_TYPES)


def _column(batch: pa.RecordBatch, name: str) -> pa.Array:
    """Column `name` (a dotted name: a struct column's field) of the batch; of columns named alike, the first."""
    names = batch.schema.names
    if name in names:
        return batch.column(names.index(name))
    top, *parts = name.split(".")
    array = batch.column(names.index(top))
    for part in parts:
        array = pc.struct_field(array, part)
    return array


def _sizes(array: pa.Array) -> list[int | None]:
    """Each row's bytes (None for a null), from the dictionary's value lengths for a dictionary-encoded
    column: no value is decoded. A value of another type (a number, a timestamp) counts 0."""
    if pa.types.is_dictionary(array.type):
        if not _is_string(array.type.value_type):
            return [None if v is None else 0 for v in array.indices.to_pylist()]
        return pc.binary_length(array.dictionary).take(array.indices).to_pylist()
    if not _is_string(array.type):
        return [None if valid is False else 0 for valid in array.is_valid().to_pylist()]
    return pc.binary_length(array).to_pylist()


def _pieces(sizes: dict[str, list[int | None]], limits: dict[str, int], batch_bytes: int) -> Iterator[tuple[int, int]]:
    """(first, stop) row ranges of a batch whose values within their limits hold at most `batch_bytes` (a range
    holds at least one row): each range is decoded at once."""
    first, held = 0, 0
    count = len(next(iter(sizes.values())))
    for i in range(count):
        row = sum(size for role, column in sizes.items() if (size := column[i]) and size <= limits[role])
        if i > first and held + row > batch_bytes:
            yield first, i
            first, held = i, 0
        held += row
    if count:
        yield first, count


def _values_within(array: pa.Array, sizes: list[int | None], limit: int) -> list:
    """The array's values as Python objects, None for those over `limit` bytes (never decoded)."""
    within = [size is None or size <= limit for size in sizes]
    kept = array if all(within) else array.filter(pa.array(within))
    if pa.types.is_dictionary(kept.type):  # only these rows' values (to_pylist would decode all the dictionary)
        kept = kept.dictionary_decode()
    values = iter(kept.to_pylist())
    return [next(values) if keep else None for keep in within]


def _parquet_row(path: str, offset: int, limits: dict, fields: Fields, values: dict, sizes: dict) -> dict:
    where = f"{path} row index {offset}"
    text = values["text"]
    if sizes["text"] is not None and sizes["text"] > limits["text"]:
        return _too_large(path, offset, f"{where}: text of {sizes['text']} bytes, over the {limits['text']}-byte limit")
    if text is None:
        return _malformed(path, offset, f'{where}: "{fields.text}" is null')
    names = {"id": fields.id, "url": fields.url, "date": "date"}
    for role, name in names.items():
        if role in sizes and sizes[role] is not None and sizes[role] > limits[role]:
            return _too_large(
                path, offset, f'{where}: "{name}" of {sizes[role]} bytes, over the {limits[role]}-byte limit'
            )
    if isinstance(text, bytes):  # a binary column: Hive, Impala and old Spark write strings so
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            at = f"byte 0x{text[error.start]:02x} at byte {error.start + 1}"
            return _malformed(path, offset, f'{where}: "{fields.text}" is not UTF-8 ({at})')
    record_id, url = (
        v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in (values.get("id"), values.get("url"))
    )
    return _text_row(path, offset, text, record_id, url, values.get("date"), "parquet")
