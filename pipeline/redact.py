"""Credentials never reach manifest.json, run.log, the report or an error line.

Three kinds are masked wherever they appear: a URL's userinfo (`https://user:pw@host`, `https://TOKEN@host`), the
values of settings whose names say they are secrets (`storage.secret_access_key`, a `spark.conf` key such as
`spark.hadoop.fs.s3a.secret.key`), and the values of environment variables whose names say so
(`AWS_SECRET_ACCESS_KEY`, `HF_TOKEN`, ...), which a library may echo in a message.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

HIDDEN = "(not shown)"
_SECRET_WORDS = {"secret", "password", "passwd", "token", "credential", "credentials", "apikey"}
# scheme://userinfo@host: a user and password, or a token alone (`https://TOKEN@github.com`); a password may
# hold an unescaped @, so the userinfo runs to the last @ before the path.
_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<userinfo>[^/\s@:]*(?::[^/\s]*)?)@", re.I)
_SHORTEST = 6  # shorter values (true, 1, none) would mask ordinary words
_known: set[str] = set()


def is_secret_name(name: str) -> bool:
    """Whether a setting's or variable's name says its value is a secret: a word of it (split at `._-` and
    camelCase) is secret, password, token, ... or it ends in key (`fs.s3a.secret.key`, `HF_TOKEN`,
    `spark.ssl.keyPassword`; not `tokens` or `AWS_ACCESS_KEY_ID`)."""
    words = [word.lower() for word in re.split(r"[._\-\s]+|(?<=[a-z0-9])(?=[A-Z])", name) if word]
    return bool(words) and (words[-1] == "key" or not _SECRET_WORDS.isdisjoint(words))


def remember(values: Iterable[str | None]) -> None:
    """Add secret values (a config's) to those masked in every later line of this process."""
    _known.update(value for value in values if isinstance(value, str) and len(value) >= _SHORTEST)


def userinfo_in(value: Any) -> Iterator[str]:
    """The userinfo of every URL in a JSON-like value: a library may quote it without its scheme (`bucket
    'user:password@name'`), so it is masked as a value too."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            yield from userinfo_in(item)
    elif isinstance(value, str):
        yield from (match["userinfo"] for match in _USERINFO.finditer(value) if match["userinfo"])


def _values() -> list[str]:
    from_env = (value for name, value in os.environ.items() if is_secret_name(name) and len(value) >= _SHORTEST)
    return sorted({*_known, *from_env}, key=len, reverse=True)  # the longest first: one may contain another


def text(line: str) -> str:
    """`line` with every credential masked."""
    line = _USERINFO.sub(lambda match: match["scheme"] + HIDDEN + "@", line)
    for value in _values():
        if value in line:
            line = line.replace(value, HIDDEN)
    return line


def tree(value: Any) -> Any:
    """A JSON-like value (the manifest) with every string in it masked."""
    if isinstance(value, dict):
        return {key: tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [tree(item) for item in value]
    if isinstance(value, str):
        return text(value)
    return value


class _Masked:
    """A text stream that masks what is written through it."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, line: str) -> int:
        return self.stream.write(text(line))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextmanager
def masked_console() -> Iterator[None]:
    """stdout and stderr masked while a command runs: its one-line errors, its log lines, the lines Ray relays
    from its workers and any traceback."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Masked(out), _Masked(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
