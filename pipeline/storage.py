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
import os
import posixpath
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq

OUTPUT_NAMES = ("docs", "rejects", "tokens", "report.html", "manifest.json")


def is_s3(uri: str) -> bool:
    return uri.startswith("s3://")


def s3_filesystem(settings) -> pafs.S3FileSystem:
    """An S3 client from the config's `storage` settings (None values: pyarrow reads the environment)."""
    options = {}
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
    return uri[len("s3://"):].rstrip("/")


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
    return sorted(f"s3://{i.path}" for i in infos
                  if i.type == pafs.FileType.File and fnmatch.fnmatchcase(posixpath.basename(i.path), name))


def open_input(path: str, settings):
    """A binary file object for a local path or an s3:// URI (random access: the WARC reader seeks)."""
    if is_s3(path):
        return s3_filesystem(settings).open_input_file(_key(path))
    return open(path, "rb")


def parquet_file(path: str, settings) -> pq.ParquetFile:
    """A Parquet file at a local path or an s3:// URI."""
    return pq.ParquetFile(open_input(path, settings) if is_s3(path) else path)


def output_state(uri: str, settings) -> str:
    """'absent', 'empty', 'crawlbelt' (an earlier output, with manifest.json) or 'other'."""
    fs, key = s3_filesystem(settings), _key(uri)
    infos = fs.get_file_info(pafs.FileSelector(key, allow_not_found=True))
    if not infos:
        return "empty"
    names = {posixpath.basename(i.path) for i in infos}
    return "crawlbelt" if "manifest.json" in names else "other"


def commit_output(staging: Path, uri: str, settings) -> None:
    """Replace the output at `uri` with the staging folder's: earlier output removed, files uploaded,
    manifest.json last."""
    fs, key = s3_filesystem(settings), _key(uri)
    # The old manifest goes first, so that a half-replaced output never looks complete.
    if fs.get_file_info(f"{key}/manifest.json").type == pafs.FileType.File:
        fs.delete_file(f"{key}/manifest.json")
    for name in OUTPUT_NAMES[:-1]:
        info = fs.get_file_info(f"{key}/{name}")
        if info.type == pafs.FileType.Directory:
            fs.delete_dir(f"{key}/{name}")
        elif info.type == pafs.FileType.File:
            fs.delete_file(f"{key}/{name}")
    local = pafs.LocalFileSystem()
    for name in OUTPUT_NAMES[:-1]:
        path = staging / name
        if path.is_dir():
            pafs.copy_files(str(path), f"{key}/{name}", source_filesystem=local, destination_filesystem=fs)
        elif path.is_file():
            pafs.copy_files(str(path), f"{key}/{name}", source_filesystem=local, destination_filesystem=fs)
    pafs.copy_files(str(staging / "manifest.json"), f"{key}/manifest.json", source_filesystem=local,
                    destination_filesystem=fs)
