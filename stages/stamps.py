"""What tells a worker that a file it loaded once has changed since: its stamp."""

from __future__ import annotations

import os


def file_stamp(path: str) -> tuple:
    """A local file's path, size and modification time; a remote (`s3://`) or missing one's path alone."""
    if "://" in path or not os.path.exists(path):
        return (path,)
    stat = os.stat(path)
    return path, stat.st_size, stat.st_mtime_ns
