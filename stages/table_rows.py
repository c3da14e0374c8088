"""Taking and sorting the rows of a table whose string column may hold more than 2 GiB (a file's part of 300
texts near `read.max_payload_mb`): Arrow's take and sort_by join a column's chunks first, which a `string`
column's 32-bit offsets cannot hold ("offset overflow while concatenating arrays")."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MAX_CHUNK_BYTES = 2**31 - 1  # what a string or binary array's 32-bit offsets reach
PIECE_BYTES = 2**28  # of text in one chunk of a column taken so (a chunk is copied once more while taken)
_LARGE = {pa.string(), pa.binary()}


def sort_rows(table: pa.Table, keys: str | list[tuple[str, str]]) -> pa.Table:
    """table.sort_by(keys), the same rows in the same (stable) order, whatever its columns' sizes."""
    keys = [(keys, "ascending")] if isinstance(keys, str) else keys
    return take_rows(table, pc.sort_indices(table, keys))


def take_rows(table: pa.Table, indices: pa.Array) -> pa.Table:
    """table.take(indices); a string or binary column of more than 2 GiB comes back in chunks of at most
    PIECE_BYTES, of its own type (so the table's schema, and what is written, is the same)."""
    if not any(_too_large(column) for column in table.columns):
        return table.take(indices)
    columns = [_take_large(c, indices) if _too_large(c) else c.take(indices) for c in table.columns]
    return pa.Table.from_arrays(columns, schema=table.schema)


def _too_large(column: pa.ChunkedArray) -> bool:
    return column.type in _LARGE and column.nbytes > MAX_CHUNK_BYTES  # nbytes: offsets and data, an upper bound


def _take_large(column: pa.ChunkedArray, indices: pa.Array) -> pa.ChunkedArray:
    """The rows taken PIECE_BYTES of text at a time, each piece from the chunks its rows are in (no chunk joined
    to another): memory beyond the column and its result is a piece or two."""
    starts = np.cumsum([0] + [len(chunk) for chunk in column.chunks])
    wanted = indices.to_numpy(zero_copy_only=False).astype(np.int64)
    chunk_of = np.searchsorted(starts, wanted, side="right") - 1
    local = wanted - starts[chunk_of]
    lengths = np.concatenate(
        [pc.fill_null(pc.binary_length(c), 0).to_numpy(zero_copy_only=False) for c in column.chunks]
    )
    pieces = []
    for a, b in _runs(lengths[wanted].astype(np.int64)):
        by_chunk = np.argsort(chunk_of[a:b], kind="stable")
        parts = [
            column.chunk(j).take(pa.array(local[a:b][by_chunk][chunk_of[a:b][by_chunk] == j]))
            for j in np.unique(chunk_of[a:b])
        ]
        back = np.empty_like(by_chunk)
        back[by_chunk] = np.arange(len(by_chunk))  # from chunk order back to the order asked for
        pieces.append(pa.concat_arrays(parts).take(pa.array(back)))
    return pa.chunked_array(pieces, column.type)


def _runs(lengths: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) runs of rows, each of at most PIECE_BYTES (or one row), in order."""
    runs, start, size = [], 0, 0
    for row, length in enumerate(lengths.tolist()):
        if size + length > PIECE_BYTES and row > start:
            runs.append((start, row))
            start, size = row, 0
        size += length
    runs.append((start, len(lengths)))
    return runs
