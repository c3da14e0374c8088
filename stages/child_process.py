"""A worker's helper process for work that no signal can stop in time: C or Rust code (lxml's and trafilatura's
parsing, a tokenizer's regular expressions) that SIGALRM cannot interrupt. One per worker process and settings,
started on first use and reused by every batch: the parent sends a batch, then reads one result at a time, each
by a deadline, and on an overrun kills the child (SIGKILL stops C code). Each message has an 8-byte length;
never a pickle (the child parses hostile bytes). Extraction (stages/extract.py) and a transformers scorer's
tokenizer (stages/tokenizer_child.py) are its two users.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import struct
import subprocess
import sys
import time

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_message(stream, data: bytes) -> None:
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def read_message(stream) -> bytes:
    """The next message from a blocking stream; EOFError at its end."""
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError
    (size,) = struct.unpack("<Q", header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return data


def framed(items: list[bytes]) -> bytes:
    """A batch in one message: each item after its 8-byte length."""
    return b"".join(part for item in items for part in (struct.pack("<Q", len(item)), item))


def unframed(data: bytes) -> list[bytes]:
    items, at = [], 0
    while at < len(data):
        (size,) = struct.unpack_from("<Q", data, at)
        items.append(data[at + 8 : at + 8 + size])
        at += 8 + size
    return items


class ChildProcess:
    """`python -c "from MODULE import FUNCTION; FUNCTION()"`, its stdin and stdout the two pipes; `first` is
    the first message it reads (its settings)."""

    def __init__(self, module: str, function: str, first: bytes):
        path = os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"from {module} import {function}; {function}()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=path),
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.to_child, self.from_child = self.process.stdin, self.process.stdout
        self.parent = os.getpid()  # a forked copy of this process must not share the child
        self.buffer = b""
        write_message(self.to_child, first)

    def usable(self) -> bool:
        return self.parent == os.getpid() and self.process.poll() is None

    def send(self, data: bytes) -> None:
        write_message(self.to_child, data)

    def receive(self, deadline: float) -> bytes | None:
        """The next message, or None if it has not come by `deadline`; EOFError if the child is gone."""
        header = self._take(8, deadline)
        if header is None:
            return None
        data = self._take(struct.unpack("<Q", header)[0], deadline)
        if data is None:
            self.buffer = header + self.buffer  # (the caller stops the child anyway)
        return data

    def _take(self, size: int, deadline: float) -> bytes | None:
        poller = select.poll()  # poll, not select: a worker may hold over 1,024 file descriptors
        poller.register(self.from_child.fileno(), select.POLLIN)
        while len(self.buffer) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                return None
            chunk = os.read(self.from_child.fileno(), max(size - len(self.buffer), 1 << 16))
            if not chunk:
                raise EOFError
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def stop(self) -> int | None:
        """Kill it and wait for it; its exit status."""
        self.process.kill()
        code = self.process.wait()
        for stream in (self.to_child, self.from_child):
            try:
                stream.close()
            except OSError:
                pass  # a pipe the child never read to the end
        return code


def child_streams():
    """In the child: (its input, where its results go). Ctrl-C is the parent's to handle (the child dies with
    it), and whatever a library prints goes to stderr, not into the results."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return sys.stdin.buffer, results


def die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (PR_SET_PDEATHSIG), even by SIGKILL.
    Elsewhere it ends when its input does."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)
