"""A transformers scorer's tokenizer in a child process, under a time limit per text (issue 46).

A model folder's tokenizer.json can hold a regular expression that backtracks for tens of seconds on one
document; it runs in Rust, which SIGALRM cannot interrupt. So the scorer tokenizes in a child, one per worker
process and model, started on first use and reused by every batch (stages/child_process.py, as extraction): the
parent sends a batch of texts, then reads one result per text, each within the limit; on an overrun it kills the
child (SIGKILL) and a fresh one takes the rest. Each message has an 8-byte length; a text is its UTF-8, a result
b"I" and the token ids as int32, or b"E" and the error. Never a pickle.
"""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np

from stages.child_process import (
    ChildProcess,
    child_streams,
    die_with_parent,
    framed,
    read_message,
    unframed,
    write_message,
)

_STARTUP_S = 300.0  # imports and the tokenizer's loading, on a loaded machine
_GRACE_S = 0.5
_children: dict[tuple, _Child] = {}
_lock = threading.Lock()


class _Child(ChildProcess):
    def __init__(self, settings: dict):
        super().__init__("stages.tokenizer_child", "serve", json.dumps({"parent": os.getpid(), **settings}).encode())
        ready = self.receive(time.monotonic() + _STARTUP_S)
        if ready is None or ready[:1] != b"I":
            self.stop()
            why = "did not start" if ready is None else ready[1:].decode(errors="replace")
            raise RuntimeError(f"the tokenizer process failed: {why}")

    def send_texts(self, texts: list[str]) -> None:
        self.send(framed([text.encode("utf-8", "surrogatepass") for text in texts]))


def tokenize_in_child(settings: dict, texts: list[str], timeout_s: float) -> list[list[int] | tuple[str, str]]:
    """Each text's token ids, or (reason, detail): `timeout` past `timeout_s`, `tokenizer_error` when the
    tokenizer raised or its process died. `settings`: the model folder and max_length."""
    key = tuple(sorted(settings.items()))
    results: list[list[int] | tuple[str, str]] = []
    with _lock:
        while len(results) < len(texts):  # a child per round; a new round after one was stopped
            child = _children.get(key)
            if child is None or not child.usable():
                _stop_older(settings)
                child = _children[key] = _Child(settings)
            child.send_texts(texts[len(results) :])
            while len(results) < len(texts):
                started = time.monotonic()
                try:
                    result = child.receive(started + timeout_s + _GRACE_S)
                except EOFError:
                    code = child.stop()
                    results.append(("tokenizer_error", f"the tokenizer process died (exit status {code})"))
                    break
                if result is None:
                    child.stop()
                    results.append(("timeout", f"tokenizing took over {timeout_s} s"))
                    break
                if result[:1] == b"E":
                    results.append(("tokenizer_error", result[1:].decode(errors="replace")[:300]))
                else:
                    results.append(np.frombuffer(result[1:], dtype=np.int32).tolist())
    return results


def _stop_older(settings: dict) -> None:
    """Stop this process's children of the same folder (its files changed since: their stamp); forget those of a
    process this one was forked from (theirs to stop)."""
    for key in [key for key in _children if dict(key)["folder"] == settings["folder"]]:
        child = _children.pop(key)
        if child.parent == os.getpid():
            child.stop()


def serve() -> None:
    """The child's loop: settings, then batches of texts; a result per text as it is done."""
    texts_in, results = child_streams()
    settings = json.loads(read_message(texts_in))
    die_with_parent(settings["parent"])
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(settings["folder"], local_files_only=True, trust_remote_code=False)
    except BaseException as error:  # noqa: BLE001 (a Rust panic is a BaseException): the parent names it
        write_message(results, b"E" + f"{type(error).__name__}: {error}".encode())
        return
    write_message(results, b"I")
    while True:
        try:
            texts = unframed(read_message(texts_in))
        except EOFError:
            return
        for text in texts:
            try:
                ids = tokenizer(
                    text.decode("utf-8", "surrogatepass"), truncation=True, max_length=settings["max_length"]
                )
                write_message(results, b"I" + np.asarray(ids["input_ids"], dtype=np.int32).tobytes())
            except BaseException as error:  # noqa: BLE001
                first = str(error).splitlines()[0] if str(error) else ""
                write_message(results, b"E" + f"{type(error).__name__}: {first}".encode())
