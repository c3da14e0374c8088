"""A transformers scorer's tokenizer in a child process, under a time limit per text (issue 46).

A model folder's tokenizer.json can hold a regular expression that backtracks for tens of seconds on one
document; it runs in Rust, which SIGALRM cannot interrupt. So the scorer tokenizes in a child, one per worker
process and model, started on first use and reused by every batch, as extraction does (stages/extract.py): the
parent sends a batch of texts, then reads one result per text, each within the limit; on an overrun it kills the
child (SIGKILL) and a fresh one takes the rest. Each message has an 8-byte length; a text is its UTF-8, a result
b"I" and the token ids as int32, or b"E" and the error. Never a pickle.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time

import numpy as np

_STARTUP_S = 300.0  # imports and the tokenizer's loading, on a loaded machine
_GRACE_S = 0.5
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_children: dict[tuple, _Child] = {}
_lock = threading.Lock()


def _write(stream, data: bytes) -> None:
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _read(stream) -> bytes:
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError
    (size,) = struct.unpack("<Q", header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return data


class _Child:
    def __init__(self, settings: dict):
        path = os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from stages.tokenizer_child import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=path),
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.texts_out, self.results_in = self.process.stdin, self.process.stdout
        self.parent = os.getpid()  # a forked copy of this process must not share the child
        self.buffer = b""
        _write(self.texts_out, json.dumps({"parent": os.getpid(), **settings}).encode())
        ready = self.receive(time.monotonic() + _STARTUP_S)
        if ready is None or ready[:1] != b"I":
            self.stop()
            why = "did not start" if ready is None else ready[1:].decode(errors="replace")
            raise RuntimeError(f"the tokenizer process failed: {why}")

    def usable(self) -> bool:
        return self.parent == os.getpid() and self.process.poll() is None

    def send(self, texts: list[str]) -> None:
        parts = [part for text in texts for part in _framed(text.encode("utf-8", "surrogatepass"))]
        self.texts_out.write(struct.pack("<Q", sum(map(len, parts))) + b"".join(parts))
        self.texts_out.flush()

    def receive(self, deadline: float) -> bytes | None:
        """The next result, or None if it has not come by `deadline`; EOFError if the child is gone."""
        header = self._take(8, deadline)
        if header is None:
            return None
        return self._take(struct.unpack("<Q", header)[0], deadline)

    def _take(self, size: int, deadline: float) -> bytes | None:
        poller = select.poll()  # poll, not select: a worker may hold over 1,024 file descriptors
        poller.register(self.results_in.fileno(), select.POLLIN)
        while len(self.buffer) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                return None
            chunk = os.read(self.results_in.fileno(), max(size - len(self.buffer), 1 << 16))
            if not chunk:
                raise EOFError
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def stop(self) -> int | None:
        self.process.kill()
        code = self.process.wait()
        for stream in (self.texts_out, self.results_in):
            try:
                stream.close()
            except OSError:
                pass
        return code


def _framed(data: bytes) -> tuple[bytes, bytes]:
    return struct.pack("<Q", len(data)), data


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
            child.send(texts[len(results) :])
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


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(0)


def serve() -> None:
    """The child's loop: settings, then batches of texts; a result per text as it is done."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the results
    texts_in = sys.stdin.buffer
    settings = json.loads(_read(texts_in))
    _die_with_parent(settings["parent"])
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(settings["folder"], local_files_only=True, trust_remote_code=False)
    except BaseException as error:  # noqa: BLE001 (a Rust panic is a BaseException): the parent names it
        _write(results, b"E" + f"{type(error).__name__}: {error}".encode())
        return
    _write(results, b"I")
    while True:
        try:
            data = _read(texts_in)
        except EOFError:
            return
        at = 0
        while at < len(data):
            (size,) = struct.unpack_from("<Q", data, at)
            text = data[at + 8 : at + 8 + size].decode("utf-8", "surrogatepass")
            at += 8 + size
            try:
                ids = tokenizer(text, truncation=True, max_length=settings["max_length"])["input_ids"]
                _write(results, b"I" + np.asarray(ids, dtype=np.int32).tobytes())
            except BaseException as error:  # noqa: BLE001
                _write(
                    results,
                    b"E" + f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".encode(),
                )
