"""Decompression the WARC reader needs beyond warcio's: HTTP bodies in every Content-Encoding crawlers
store (gzip, deflate, br, zstd), decoded under a size limit, and `.warc.zst` files read frame by frame.

Zstandard comes from backports.zstd, Python 3.14's `compression.zstd` for older Pythons (chosen by
measurement, docs/design.md "Compressed payloads and .warc.zst").
"""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO

import brotli
from backports import zstd

ENCODINGS = ("gzip", "x-gzip", "deflate", "br", "zstd")  # besides "" and "identity": no encoding

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Skippable frames have magics 0x184D2A50 to 0x184D2A5F; 0x184D2A5D holds a .warc.zst's dictionary.
_SKIPPABLE_TAIL = b"\x2a\x4d\x18"
DICTIONARY_FRAME = b"\x5d" + _SKIPPABLE_TAIL
_CHUNK = 1 << 16


class BodyError(Exception):
    """The HTTP body is not valid data in its Content-Encoding."""


def _decompressor(encoding: str, first: bytes):
    """An object with `decompress(data, max_length)` for the encoding."""
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        # "deflate" should be zlib-wrapped, but servers often send raw deflate
        wrapped = len(first) >= 2 and first[0] & 0x0F == 8 and (first[0] << 8 | first[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
    if encoding == "br":
        return _Brotli()
    return zstd.ZstdDecompressor()


class _Brotli:
    def __init__(self):
        self._decompressor = brotli.Decompressor()

    def decompress(self, data: bytes, max_length: int) -> bytes:
        return self._decompressor.process(data, output_buffer_limit=max_length)

    @property
    def eof(self) -> bool:
        return self._decompressor.is_finished()


def decode_body(stream: BinaryIO, encoding: str, limit: int) -> bytes:
    """The body read from `stream`, decoded from `encoding`, cut at `limit` + 1 bytes (so that a caller
    sees it is over `limit` without a decompression bomb ever being expanded further).

    A body cut short keeps what it decoded (crawlers truncate long records). A body that fails at its
    first bytes but starts like markup was stored decoded under its original header, as some crawlers do,
    and is returned as it is. Any other failure raises BodyError."""
    first = stream.read(_CHUNK)
    if encoding in ("", "identity"):
        return _as_is(first, stream, limit)
    decompressor = _decompressor(encoding, first)
    out = bytearray()
    data = first
    while data and len(out) <= limit:
        try:
            out += decompressor.decompress(data, limit + 1 - len(out))
        except (zlib.error, brotli.error, zstd.ZstdError) as error:
            if not out and first.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
                return _as_is(first, stream, limit)
            where = f" after {len(out)} decoded bytes" if out else ""
            raise BodyError(f"not valid {encoding} data{where} ({type(error).__name__}: {error})") from None
        if decompressor.eof:
            break  # one gzip member or zstd frame, as browsers read it; anything after it is ignored
        data = stream.read(_CHUNK)
    return bytes(out[: limit + 1])


def _as_is(first: bytes, stream: BinaryIO, limit: int) -> bytes:
    return (first + stream.read(max(0, limit + 1 - len(first))))[: limit + 1]


def is_zstd_file(head: bytes) -> bool:
    """Whether a file starting with `head` (4 bytes) is zstd: a zstd frame first, or a skippable one (a
    .warc.zst's dictionary; pzstd writes one before each frame)."""
    return head == ZSTD_MAGIC or _is_skippable(head)


def _is_skippable(magic: bytes) -> bool:
    return len(magic) >= 4 and magic[1:4] == _SKIPPABLE_TAIL and 0x50 <= magic[0] <= 0x5F


def first_bytes(data: bytes, size: int) -> bytes:
    """Up to `size` bytes of what a file starting with `data` holds: decompressed when it is gzip or zstd
    (skippable frames first, as pzstd writes, are passed over), as it is otherwise. b"" if it does not
    decompress."""
    try:
        if data.startswith(b"\x1f\x8b"):
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, size)
        while _is_skippable(data) and len(data) >= 8:
            data = data[8 + struct.unpack("<I", data[4:8])[0] :]
        if data.startswith(ZSTD_MAGIC):
            return zstd.ZstdDecompressor().decompress(data, size)
    except (zlib.error, zstd.ZstdError):
        return b""
    return data[:size]


class ZstdFrames:
    """The decompressed content of a .warc.zst's frames from `start` on, as one readable stream.

    Reading stops quietly at the first problem (a corrupt frame, bytes that are no frame) and records
    it in `error` as (compressed offset of the frame, what is wrong), so that the reader can name the
    record it costs and resynchronise after it. `frame_offset(position)` maps a decompressed position to
    the compressed offset of the frame it came from: a record's offset in the file."""

    def __init__(self, handle: BinaryIO, start: int, dictionary: zstd.ZstdDict | None):
        self._handle = handle
        self._dictionary = dictionary
        self._next_frame = start  # compressed offset of the next frame (of the current one while it starts)
        self._decompressor: zstd.ZstdDecompressor | None = None
        self._pending = b""  # compressed bytes read for the current frame, not yet fed to it
        self._fed = 0  # compressed bytes fed to the current frame's decompressor
        self._frames: list[tuple[int, int]] = []  # (decompressed start, compressed start), in order
        self._position = 0
        self.error: tuple[int, str] | None = None
        self.cut = False  # the error is the file's end inside a frame: what came before it was whole

    def tell(self) -> int:
        return self._position

    def frame_offset(self, position: int) -> int:
        offset = self._frames[0][1] if self._frames else self._next_frame
        for decompressed, compressed in self._frames:
            if decompressed > position:
                break
            offset = compressed
        return offset

    def read(self, size: int = -1) -> bytes:
        want = _CHUNK if size is None or size < 0 else size
        out = b""
        while not out and self.error is None:
            if self._decompressor is None and not self._start_frame():
                break
            out = self._decompress(want)
        self._position += len(out)
        return out

    def _start_frame(self) -> bool:
        """Begin decompressing the next zstd frame, skipping skippable frames; False at the end."""
        while True:
            self._handle.seek(self._next_frame)
            head = self._handle.read(8)
            if not head:
                return False
            magic = head[:4]
            if _is_skippable(magic) and len(head) == 8:
                self._next_frame += 8 + struct.unpack("<I", head[4:])[0]
                continue
            if magic != ZSTD_MAGIC:
                self.error = (self._next_frame, f"no zstd frame here (found {magic!r})")
                return False
            self._decompressor = zstd.ZstdDecompressor(zstd_dict=self._dictionary)
            self._pending, self._fed = head, 0
            self._frames.append((self._position, self._next_frame))
            return True

    def _decompress(self, size: int) -> bytes:
        """Up to `size` bytes of the current frame (b"" only at its end or on a problem)."""
        decompressor = self._decompressor
        assert decompressor is not None  # read() starts a frame first
        frame = self._frames[-1][1]
        try:
            while True:
                data = b""
                if self._pending or decompressor.needs_input:
                    data, self._pending = self._pending or self._handle.read(_CHUNK), b""
                    if not data:
                        self.error, self.cut = (frame, "zstd frame cut short by the end of the file"), True
                        return b""
                    self._fed += len(data)
                out = decompressor.decompress(data, size)
                if decompressor.eof:
                    self._next_frame = frame + self._fed - len(decompressor.unused_data)
                    self._decompressor = None
                    return out
                if out:
                    return out
        except zstd.ZstdError as error:
            self.error = (frame, f"corrupt zstd frame (ZstdError: {error})")
            return b""


def read_dictionary(handle: BinaryIO) -> tuple[zstd.ZstdDict | None, int, str | None]:
    """(dictionary, offset of the first frame after it, problem) for a .warc.zst at its start.

    The dictionary frame (spec "Zstandard Compression for WARC Files") holds a zstd dictionary, itself
    zstd-compressed in files from Wget-AT. A file without one starts with a zstd frame: (None, 0, None)."""
    handle.seek(0)
    head = handle.read(8)
    if head[:4] != DICTIONARY_FRAME:
        return None, 0, None
    if len(head) < 8:
        return None, len(head), "dictionary frame cut short (no size)"
    size = struct.unpack("<I", head[4:8])[0]
    data = handle.read(size)
    end = 8 + size
    if len(data) < size:
        return None, end, f"dictionary frame cut short: {len(data)} of {size} bytes"
    try:
        if data.startswith(ZSTD_MAGIC):
            data = zstd.decompress(data)
        return zstd.ZstdDict(data, is_raw=not data.startswith(b"\x37\xa4\x30\xec")), end, None
    except (zstd.ZstdError, ValueError) as error:
        return None, end, f"dictionary frame unreadable ({type(error).__name__}: {error})"
