"""Inputs and outputs as URIs: local paths and s3:// through pyarrow's filesystems.

S3 settings come from the config's `storage` section, else from the usual environment variables
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION,
AWS_ENDPOINT_URL), which pyarrow's S3 client reads itself.

An s3:// output is written in a local staging folder first and uploaded only after the run and its checks
succeeded, manifest.json last: S3 has no rename, so the manifest is the commit mark, and a reader that
finds it finds the complete output.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import shutil
from pathlib import Path
from collections.abc import Callable

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from stages.file_names import real_path

OUTPUT_NAMES = ("docs", "rejects", "dedup_index", "tokens", "report.html", "run.log", "README.md", "manifest.json")
MARKER = ".crawlbelt"  # in every output crawlbelt writes: {"format": MARKER_FORMAT, "version": ..., "kind": ...}
MARKER_FORMAT, MARKER_VERSION = "crawlbelt-output", 1


def is_s3(uri: str) -> bool:
    return uri.startswith("s3://")


def s3_filesystem(settings) -> pafs.S3FileSystem:
    """An S3 client from the config's `storage` settings (None values: pyarrow reads the environment)."""
    options: dict[str, str] = {}
    endpoint = settings.endpoint or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        options.update(endpoint_override=host or endpoint, scheme=scheme or "https")
    region = settings.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    if settings.access_key_id:
        options.update(access_key=settings.access_key_id, secret_key=settings.secret_access_key)
    return pafs.S3FileSystem(**options)


def _key(uri: str) -> str:
    return uri[len("s3://") :].rstrip("/")


def expand_s3(pattern: str, settings) -> list[str]:
    """Objects matching `s3://bucket/prefix/*.warc.gz`-style patterns (wildcards in the last part only), sorted."""
    fs = s3_filesystem(settings)
    folder, name = posixpath.split(_key(pattern))
    if any(c in folder for c in "*?["):
        raise ValueError(f"{pattern!r}: wildcards only in the last part of an s3:// pattern")
    if not any(c in name for c in "*?["):
        info = fs.get_file_info(_key(pattern))
        return [pattern] if info.type == pafs.FileType.File else []
    try:
        infos = fs.get_file_info(pafs.FileSelector(folder))
    except (FileNotFoundError, OSError):
        return []
    return sorted(
        f"s3://{i.path}"
        for i in infos
        if i.type == pafs.FileType.File and fnmatch.fnmatchcase(posixpath.basename(i.path), name)
    )


def open_input(path: str, settings):
    """A binary file object for a local path or an s3:// URI (random access: the WARC reader seeks)."""
    if is_s3(path):
        return s3_filesystem(settings).open_input_file(_key(path))
    return open(real_path(path), "rb")  # a name that is not UTF-8 comes escaped


def parquet_file(path: str, settings) -> pq.ParquetFile:
    """A Parquet file at a local path or an s3:// URI."""
    local = not is_s3(path) and real_path(path) == path  # Arrow takes only a UTF-8 path; else a Python file
    return pq.ParquetFile(path if local else open_input(path, settings))


def write_atomic(path: Path, content: bytes | str | Callable[[Path], None]) -> None:
    """Write `content` (bytes, UTF-8 text, or a function that writes the file at the path it is given) to a
    temporary name beside `path`, `.NAME.tmp`, then rename it: a reader, or a rerun after a crash, never sees
    half a file under its name. The temporary file is removed if the write fails."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        elif isinstance(content, str):
            tmp.write_text(content, encoding="utf-8")
        else:
            content(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def part_name(index: int, prefix: str = "part", digits: int = 5) -> str:
    """The file name of part `index` of a folder of Parquet parts: part-NNNNN.parquet (docs/, rejects/, tokens/)."""
    return f"{prefix}-{index:0{digits}d}.parquet"


def part_index(name: str) -> int:
    """The index in a part's file name (part_name's inverse)."""
    return int(Path(name).stem.rsplit("-", 1)[1])


def marker_text(kind: str) -> str:
    """The marker crawlbelt writes in every output it makes; only a folder holding it is ever replaced."""
    return json.dumps({"format": MARKER_FORMAT, "version": MARKER_VERSION, "kind": kind}) + "\n"


def parse_marker(text: str) -> str | None:
    """The kind of output ('run' or 'dry-run') a marker names, or None if it is not a marker of ours."""
    try:
        marker = json.loads(text)
    except ValueError:
        return None
    if not isinstance(marker, dict) or marker.get("format") != MARKER_FORMAT or marker.get("version") != MARKER_VERSION:
        return None
    return marker.get("kind") if marker.get("kind") in ("run", "dry-run") else None


def output_kind(uri: str, settings=None) -> str | None:
    """What is at an output location: 'empty' (nothing, or an empty folder), 'run' or 'dry-run' (an earlier
    crawlbelt output, by its marker), or None (anything else, which a run must not touch)."""
    if not is_s3(uri):
        out = Path(uri)
        if not out.exists() or (out.is_dir() and not any(out.iterdir())):
            return "empty"
        marker = out / MARKER
        return parse_marker(marker.read_text(errors="replace")) if out.is_dir() and marker.is_file() else None
    fs, key = s3_filesystem(settings), _key(uri)
    if not fs.get_file_info(pafs.FileSelector(key, allow_not_found=True)):
        return "empty"
    if fs.get_file_info(f"{key}/{MARKER}").type != pafs.FileType.File:
        return None
    with fs.open_input_stream(f"{key}/{MARKER}") as stream:
        return parse_marker(stream.read().decode(errors="replace"))


def write_marker(out: Path, kind: str) -> None:
    write_atomic(out / MARKER, marker_text(kind))


def commit_local(build: Path, out: Path, replaced: Path) -> None:
    """Move the complete new output in `build` into `out`, moving the earlier one aside to `replaced`.

    Every earlier name leaves, also those the new output lacks (a rerun that keeps no document has no docs/):
    the folder then holds exactly the new run's files. The old manifest.json leaves first and the new one
    arrives last, so a folder holding a manifest always holds one whole output. `replaced/.cleared` marks that
    the earlier output is all aside, so a commit cut short by a crash is finished by calling this again
    (pipeline.belt.prepare_output does) without taking the new names already moved in for old ones."""
    cleared = replaced / ".cleared"
    if not cleared.exists():
        replaced.mkdir(parents=True, exist_ok=True)
        for name in ("manifest.json", *OUTPUT_NAMES[:-1]):
            if (out / name).exists():
                if (replaced / name).exists():
                    _remove(replaced / name)
                os.replace(out / name, replaced / name)
        cleared.touch()
    for name in OUTPUT_NAMES[:-1]:
        if (build / name).exists():
            os.replace(build / name, out / name)
    if (build / MARKER).exists():
        os.replace(build / MARKER, out / MARKER)
    os.replace(build / "manifest.json", out / "manifest.json")


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def commit_output(staging: Path, uri: str, settings) -> None:
    """Replace the output at `uri` with the staging folder's: the marker first (a half-uploaded output is
    still recognised as crawlbelt's), the earlier output removed, files uploaded, manifest.json last."""
    fs, key = s3_filesystem(settings), _key(uri)
    local = pafs.LocalFileSystem()
    pafs.copy_files(str(staging / MARKER), f"{key}/{MARKER}", source_filesystem=local, destination_filesystem=fs)
    # The old manifest goes first, so that a half-replaced output never looks complete.
    if fs.get_file_info(f"{key}/manifest.json").type == pafs.FileType.File:
        fs.delete_file(f"{key}/manifest.json")
    for name in OUTPUT_NAMES[:-1]:
        info = fs.get_file_info(f"{key}/{name}")
        if info.type == pafs.FileType.Directory:
            fs.delete_dir(f"{key}/{name}")
        elif info.type == pafs.FileType.File:
            fs.delete_file(f"{key}/{name}")
    for name in OUTPUT_NAMES[:-1]:
        if (staging / name).exists():
            pafs.copy_files(str(staging / name), f"{key}/{name}", source_filesystem=local, destination_filesystem=fs)
    pafs.copy_files(
        str(staging / "manifest.json"), f"{key}/manifest.json", source_filesystem=local, destination_filesystem=fs
    )
