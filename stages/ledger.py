"""The ledger columns every batch carries, and the one helper stages use to reject rows.

A row is *alive* while its `stage` is null. A stage computes only over alive rows and either adds
columns to them or rejects them: it sets `stage` to its own name and `reason` to a short code from a
fixed vocabulary (`language:fr`, `quality:too_short,missing_stop_words`). `detail` is free text for
people (what went wrong and where). Records that are not documents (request, metadata, warcinfo,
revisit) travel as rows with stage `not_document` so that the final counts see every record once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NOT_DOCUMENT = "not_document"
LEDGER_COLUMNS = ("stage", "reason", "detail", "dup_of")


def alive_mask(batch: pa.Table) -> np.ndarray:
    """Boolean numpy mask of the rows no stage has decided on yet."""
    return pc.is_null(batch["stage"]).to_numpy(zero_copy_only=False)


def _scatter(values: pa.Array, positions: np.ndarray, length: int, type_: pa.DataType) -> pa.Array:
    """Spread `values` (one per alive row) over a full-length column, null elsewhere."""
    if len(values) == length:
        return values.cast(type_)
    index = np.full(length, -1, dtype=np.int64)
    index[positions] = np.arange(len(positions))
    return values.cast(type_).take(pa.array(index, mask=index < 0))


def run_on_alive(
    batch: pa.Table,
    stage: str,
    compute: Callable[[pa.Table], tuple[dict[str, pa.Array], list[str | None] | None, list[str | None] | None]],
    new_columns: dict[str, pa.DataType],
    replaces: tuple[str, ...] = (),
) -> pa.Table:
    """Run `compute` on the alive rows of `batch` and write its results back.

    `compute(alive)` returns (columns, reasons, details): `columns` maps each name in `new_columns` to an
    array with one value per alive row; `reasons` holds a reject code (or None to keep) per alive row;
    `details` optional free text per alive row. Rows that were already decided get nulls in new columns
    and keep their verdict. `replaces`: columns of `new_columns` the batch already has, which a stage that
    changes them (a modifier: masking text) writes for the alive rows only; the other rows keep theirs.
    """
    mask = alive_mask(batch)
    positions = np.flatnonzero(mask)
    alive = batch.take(pa.array(positions)) if len(positions) < len(mask) else batch
    if len(positions):
        columns, reasons, details = compute(alive)
    else:
        columns, reasons, details = {name: pa.array([], type_) for name, type_ in new_columns.items()}, None, None

    for name, type_ in new_columns.items():
        column = _scatter(pa.array(columns[name], type_), positions, len(mask), type_)
        if name in replaces:
            column = pc.if_else(pa.array(mask), column, batch[name].cast(type_))
        if name in batch.column_names:
            batch = batch.set_column(batch.schema.get_field_index(name), name, column)
        else:
            batch = batch.append_column(name, column)

    if reasons is not None and any(r is not None for r in reasons):
        batch = _set_verdicts(batch, positions, stage, reasons, details)
    return batch


def _set_verdicts(batch, positions, stage, reasons, details) -> pa.Table:
    stages = batch["stage"].to_pylist()
    codes = batch["reason"].to_pylist()
    texts = batch["detail"].to_pylist()
    for i, position in enumerate(positions):
        if reasons[i] is not None:
            stages[position] = stage
            codes[position] = reasons[i]
            texts[position] = details[i] if details is not None else None
    for name, values in (("stage", stages), ("reason", codes), ("detail", texts)):
        batch = batch.set_column(batch.schema.get_field_index(name), name, pa.array(values, pa.string()))
    return batch
