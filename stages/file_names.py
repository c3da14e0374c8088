"""Input file names that are not UTF-8 (a Latin-1 disk's `caf\\xe9.jsonl`). The belt carries and writes such a
name as text, each byte that is not UTF-8 escaped as `\\xe9` (os.fsdecode, then backslashreplace): the output's
file columns, ids, manifest and report stay UTF-8, and Spark (whose strings are Java's) carries it as it is.
Whatever opens or stats an input file first turns the name back into the real path."""

from __future__ import annotations

import os
import re

_ESCAPE = re.compile(rb"\\x([89a-f][0-9a-f])")  # backslashreplace escapes only bytes >= 0x80, in lower case


def escaped_name(path: str) -> str:
    """The name of a path from os (a byte that is not UTF-8 as a lone surrogate) as UTF-8 text."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def real_path(name: str) -> str:
    """The path whose escaped name is `name` (itself for a UTF-8 name without such an escape)."""
    if "\\x" not in name:
        return name
    return os.fsdecode(_ESCAPE.sub(lambda m: bytes([int(m[1], 16)]), name.encode("utf-8")))


def ambiguous(path: str) -> bool:
    """A name holding `\\xe9` as text would be read back as the byte: such a file cannot be named both ways."""
    return real_path(escaped_name(path)) != path
