"""stages/ledger.run_on_alive: what a stage writes reaches the alive rows only."""

from __future__ import annotations

import pyarrow as pa

from stages.ledger import run_on_alive


def batch() -> pa.Table:
    return pa.table(
        {
            "text": ["keep me", "mask me", None, "mask me too"],
            "stage": [None, None, "read", None],
            "reason": [None, None, "read:malformed", None],
            "detail": [None, None, "line 3", None],
            "dup_of": pa.array([None] * 4, pa.string()),
        }
    )


def test_a_new_column_is_null_on_decided_rows_and_a_replaced_one_keeps_their_values():
    def compute(alive):
        texts = alive["text"].to_pylist()
        reasons = ["mask:none" if t == "keep me" else None for t in texts]
        return {"text": [t.upper() for t in texts], "n": [len(t) for t in texts]}, reasons, None

    decided_first = batch().set_column(0, "text", pa.array(["keep me", "mask me", "rejected text", "mask me too"]))
    out = run_on_alive(decided_first, "mask", compute, {"text": pa.string(), "n": pa.int64()}, replaces=("text",))
    assert out["text"].to_pylist() == ["KEEP ME", "MASK ME", "rejected text", "MASK ME TOO"]
    assert out["n"].to_pylist() == [7, 7, None, 11]
    assert out["stage"].to_pylist() == ["mask", None, "read", None]
    # without `replaces`, an existing column is written as a new one: null on the decided row
    out = run_on_alive(decided_first, "mask", compute, {"text": pa.string(), "n": pa.int64()})
    assert out["text"].to_pylist()[2] is None
