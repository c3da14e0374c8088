"""What a Parquet column chunk's page headers declare, read before pyarrow decompresses anything: pyarrow
decompresses each page whole before any of its rows can be checked, so a small page made to inflate to
gigabytes is found here first (stages/read_text.py; docs/design.md, "Memory per worker")."""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO

import pyarrow.parquet as pq


def page_sizes(handle: BinaryIO, chunk: pq.ColumnChunkMetaData) -> tuple[int, int]:
    """(the dictionary page's uncompressed size, the largest of a bomb's: a page over _BOMB_RATIO times its
    compressed size), as a column chunk's page headers declare them: pyarrow decompresses each page whole at that
    size before any row can be checked. Where a header cannot be read, what came before it: pyarrow names it."""
    dictionary = chunk.has_dictionary_page and chunk.dictionary_page_offset is not None
    position = chunk.dictionary_page_offset if dictionary else chunk.data_page_offset
    end = position + chunk.total_compressed_size
    first, bomb = 0, 0
    while position < end:
        handle.seek(position)
        try:
            try:
                uncompressed, compressed, length = _page_header(handle.read(1024))
            except IndexError:  # a header with long statistics
                handle.seek(position)
                uncompressed, compressed, length = _page_header(handle.read(1 << 16))
        except (IndexError, ValueError):
            break
        if position == chunk.dictionary_page_offset and dictionary:
            first = uncompressed
        if uncompressed > _BOMB_RATIO * compressed:
            bomb = max(bomb, uncompressed)
        position += length + compressed
    return first, bomb


# Text compresses 3 to 10 times, and values repeated are dictionary-encoded; a page a thousand times smaller than
# it inflates to is made to inflate (pyarrow's writer puts about 1,024 values in a page, so a legitimate page of
# large documents can be 100 MB: its size alone says nothing).
_BOMB_RATIO = 1000


def _page_header(data: bytes) -> tuple[int, int, int]:
    """(uncompressed_page_size, compressed_page_size, the header's length) of the Thrift compact PageHeader that
    `data` starts with (fields 2 and 3)."""
    header = _Thrift(data)
    sizes: dict[int, int] = {}

    def field(number: int, kind: int) -> None:
        if number in (2, 3) and kind == 5:
            sizes[number] = header.zigzag()
        else:
            header.skip(kind)

    header.struct(field)
    if len(sizes) < 2 or min(sizes.values()) < 0:
        raise ValueError("not a page header")
    return sizes[2], sizes[3], header.position


class _Thrift:
    """Just enough of Thrift's compact protocol to read a Parquet page header and skip what it does not need.
    Raises IndexError when the data ends first, ValueError on a type no header holds."""

    def __init__(self, data: bytes):
        self.data, self.position = data, 0

    def byte(self) -> int:
        self.position += 1
        return self.data[self.position - 1]

    def varint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def struct(self, on_field: Callable[[int, int], None]) -> None:
        number = 0
        while (head := self.byte()) != 0:
            number = number + (head >> 4) if head >> 4 else self.zigzag()
            on_field(number, head & 0x0F)

    def skip(self, kind: int) -> None:
        if kind in (1, 2):  # a boolean field: its value is its type
            return
        if kind == 3:
            self.position += 1
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.position += 8
        elif kind == 8:
            length = self.varint()  # read before position is: `+=` would add to the old one
            self.position += length
        elif kind in (9, 10):  # list, set
            head = self.byte()
            count = self.varint() if head >> 4 == 15 else head >> 4
            for _ in range(count):
                self.position += 1 if head & 0x0F in (1, 2) else 0
                if head & 0x0F not in (1, 2):
                    self.skip(head & 0x0F)
        elif kind == 11:  # map
            count = self.varint()
            types = self.byte() if count else 0
            for _ in range(count):
                self.skip(types >> 4)
                self.skip(types & 0x0F)
        elif kind == 12:
            self.struct(lambda number, kind: self.skip(kind))
        else:
            raise ValueError(f"Thrift type {kind}")
        if self.position > len(self.data):
            raise IndexError("cut short")
