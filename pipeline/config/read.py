"""Reading a config: the YAML file, `--set` overrides, each key checked against its type as the Config is built,
and the paths it names (relative to the config's folder, input patterns expanded to files).

A problem is one ConfigError line naming the key path or file; building goes on after a problem, so that one
ConfigError holds every problem the keys and types have.
"""

from __future__ import annotations

import dataclasses
import glob
import math
import os
import re
import types
import typing
from collections.abc import Sequence
from pathlib import Path

import yaml

from pipeline import redact
from pipeline.config import Config, ConfigError, Problems, StorageConfig
from stages.file_names import ambiguous, escaped_name, real_path


def _type_name(tp) -> str:
    return getattr(tp, "__name__", str(tp)).replace("NoneType", "null")


def build(tp, value, path: str, problems: Problems):
    """Check `value` against the annotation `tp` and build it (dataclasses recursively). A key of a
    dataclass that is unknown or of the wrong type goes to `problems` and keeps its default."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return build(option, value, path, problems)
            except ConfigError:
                if len(options) > 2:
                    continue
                raise
        raise ConfigError(f"{path}: expected {' or '.join(map(_type_name, options))}, got {value!r}")
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(value, list):  # a lone string is not taken for a list of one: [english] is no code
            raise ConfigError(f"{path}: expected a list, got {type(value).__name__} {value!r}")
        return [build(item, v, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    if origin is dict:  # spark.conf: Spark takes every setting as a string; YAML's true and 4 are "true" and "4"
        if not isinstance(value, dict) or not all(isinstance(v, str | int | float | bool) for v in value.values()):
            raise ConfigError(f"{path}: expected a mapping of names to single values, got {value!r}")
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{path or 'config'}: expected a mapping, got {type(value).__name__} {value!r}")
        hints = {
            name: hint for name, hint in typing.get_type_hints(tp).items() if tp.__dataclass_fields__[name].init
        }  # the others are filled by validation
        fields = {}
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in hints:
                problems.found.append(f"unknown key {where!r} (known here: {', '.join(hints)})")
                continue
            try:
                fields[key] = build(hints[key], item, where, problems)
            except ConfigError as error:
                problems.found.extend(error.problems)
        return tp(**fields)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
        raise ConfigError(f"{path}: expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    if tp is float and not math.isfinite(value):
        raise ConfigError(f"{path}: expected a finite number, got {value!r}")
    return value


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice in one mapping (plain YAML silently keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, typing.Hashable):
                continue  # SafeLoader itself refuses it
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


# YAML 1.2's floats: PyYAML follows YAML 1.1, where an exponent needs a dot (1.0e-4), so 1e-4 would be the
# string '1e-4'. The resolver is added to this loader's own copy of the table, not to SafeLoader's.
_UniqueKeyLoader.yaml_implicit_resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _parse_yaml(text: str):
    """The YAML text's value (safe tags only, each key once); a YAMLError's mark says where."""
    loader = _UniqueKeyLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def apply_override(raw: dict, assignment: str) -> None:
    """Apply one `--set key.path=value` (value parsed as YAML) to the raw config mapping."""
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r}: expected key.path=value")
    key, text = assignment.split("=", 1)
    parts = key.strip().split(".")
    node = raw
    for i, part in enumerate(parts[:-1]):
        node = _override_child(node, part, key, ".".join(parts[:i]))
        if not isinstance(node, dict | list):
            raise ConfigError(f"--set {key}: {'.'.join(parts[: i + 1])!r} is not a mapping or a list")
    try:
        value = _parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {key}: value is not valid YAML ({_yaml_problem(exc)})") from None
    if isinstance(node, list):
        node[_list_index(node, parts[-1], key, ".".join(parts[:-1]))] = value
    else:
        node[parts[-1]] = value


def _override_child(node: dict | list, part: str, key: str, parent: str):
    """The item `part` of a mapping (made empty when missing) or of a list (by its number) on a --set path."""
    if isinstance(node, list):
        return node[_list_index(node, part, key, parent)]
    return node.setdefault(part, {})


def _list_index(items: list, part: str, key: str, parent: str) -> int:
    """`part` as an index of the list `parent` (sources.0.weight: the first source), or ConfigError."""
    if not part.isdigit():
        raise ConfigError(f"--set {key}: {parent!r} is a list; address an item by its number (e.g. {parent}.0)")
    if int(part) >= len(items):
        raise ConfigError(f"--set {key}: {parent!r} has {len(items)} items, so no item {part} (they count from 0)")
    return int(part)


def resolve_path(path: str, base: Path) -> str:
    return path if "://" in path else os.path.normpath(os.path.join(base, path))


def expand_inputs(patterns: list[str], storage: StorageConfig | None = None) -> list[str]:
    """Paths (or s3:// URIs) matched by each pattern, sorted per pattern. A local pattern is an existing file's
    exact path (glob characters in its name are its own), a folder (every file under it, names starting with
    `.` or `_` aside, as Spark and Arrow read a folder) or a glob. A pattern that matches nothing, or a broken
    symbolic link, is a config error."""
    files = []
    for pattern in patterns:
        if pattern.startswith("s3://"):
            from pipeline.storage import expand_s3

            try:
                matched = expand_s3(pattern, storage or StorageConfig())
            except (OSError, ValueError) as exc:
                raise ConfigError(f"input {pattern!r}: {exc}") from None
        else:
            matched = _local_files(pattern)
        if not matched:
            raise ConfigError(f"input {pattern!r} matches no file")
        files.extend(matched)
    # a file reached twice (two patterns, a symbolic or hard link to it) is read once, under its first path
    first_paths: dict[str | tuple[int, int], str] = {}
    for f in files:
        first_paths.setdefault(file_key(f), f)
    return list(first_paths.values())


def file_key(path: str) -> str | tuple[int, int]:
    """What a file is, however it is reached: its device and inode locally, its URI on object storage."""
    if "://" in path:
        return path
    status = os.stat(real_path(path))
    return status.st_dev, status.st_ino


def _local_files(pattern: str) -> list[str]:
    if os.path.isfile(pattern):
        _check_names(pattern, [pattern])
        return [escaped_name(os.path.abspath(pattern))]
    folder = os.path.isdir(pattern)
    found = _glob(os.path.join(glob.escape(pattern), "**", "*") if folder else pattern)
    _check_names(pattern, found)
    if folder:  # as Spark and Arrow read a folder: `_SUCCESS`, `_metadata`, `_temporary/` are the writer's
        found = [p for p in found if not any(part.startswith("_") for part in Path(p).relative_to(pattern).parts)]
    broken = sorted(p for p in found if not os.path.exists(p))  # glob lists a link whose target is gone
    if broken:
        more = f" and {len(broken) - 1} more" if len(broken) > 1 else ""
        raise ConfigError(
            f"input {pattern!r}: '{escaped_name(broken[0])}' is a broken symbolic link (to "
            f"{os.readlink(broken[0])!r}){more}; remove it or fix its target"
        )
    files = sorted(escaped_name(os.path.abspath(p)) for p in found if os.path.isfile(p))
    if folder and not files:
        raise ConfigError(f"input {pattern!r} is a folder with no file in it")
    return files


def _check_names(pattern: str, found: list[str]) -> None:
    """A name that is not UTF-8 goes on escaped (`caf\\xe9.jsonl`), as the output's text columns hold it; so a
    name holding such an escape as text could not be told from it."""
    if unclear := sorted(p for p in found if ambiguous(p)):
        name = escaped_name(unclear[0])
        escape = re.findall(r"\\x[89a-f][0-9a-f]", name)[-1]
        raise ConfigError(
            f"input {pattern!r}: the file name '{name}' holds '{escape}' as text, which the belt writes for a "
            "byte of a name that is not UTF-8; rename it"
        )


def _glob(pattern: str) -> list[str]:
    """glob.glob(pattern, recursive=True), but a `**` reaches each directory once however many symbolic links
    lead to it: a link to a folder above it (a loop) would make glob's walk endless."""
    head, star, tail = pattern.partition(os.sep + "**")
    if not star or (tail and not tail.startswith(os.sep)):  # no `**` as a whole part: glob walks no tree
        return glob.glob(pattern, recursive=True)
    tail = tail.removeprefix(os.sep)
    bases = glob.glob(head) if glob.has_magic(head) else [head]
    found = []
    for base in bases:
        for folder in _folders(base):
            if tail:
                found += _glob(os.path.join(glob.escape(folder), tail))
            else:  # `x/**`: every folder and file under x
                found += [folder, *(os.path.join(folder, n) for n in _visible(folder) if not _is_dir(folder, n))]
    return sorted(set(found))


def _folders(base: str) -> list[str]:
    """`base` and every folder under it whose name does not start with `.` (as glob's `**`), following
    symbolic links, each real folder once (by device and inode)."""
    seen: set[tuple[int, int]] = set()
    found = []
    pending = [base]
    while pending:
        folder = pending.pop()
        try:
            status = os.stat(folder)
        except OSError:
            continue
        if (status.st_dev, status.st_ino) in seen:
            continue
        seen.add((status.st_dev, status.st_ino))
        found.append(folder)
        pending += reversed([os.path.join(folder, n) for n in _visible(folder) if _is_dir(folder, n)])
    return found


def _visible(folder: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(folder) if not n.startswith("."))
    except OSError:
        return []


def _is_dir(folder: str, name: str) -> bool:
    return os.path.isdir(os.path.join(folder, name))


def read_config(path: str | None, overrides: Sequence[str] = (), problems: Problems | None = None) -> Config:
    """Parse the YAML file (if any), apply `--set` overrides, and check every key and type. Keys with a
    problem keep their defaults and the problem goes to `problems` (raised here when none is given)."""
    raw: dict = {}
    if path is not None:
        raw = _read_yaml_file(path)
    for assignment in overrides:
        apply_override(raw, assignment)
    found = Problems() if problems is None else problems
    config = build(Config, raw, "", found)
    redact.remember(config.secrets())
    if problems is None:
        found.raise_any()
    return config


def _read_yaml_file(path: str) -> dict:
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path!r} not found")
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # a WARC, a gzip file, a Latin-1 file: not a config
        raise ConfigError(
            f"config file {path!r} is not UTF-8 text (byte {data[exc.start]:#04x} at offset "
            f"{exc.start}): expected a YAML config"
        ) from None
    try:
        raw = _parse_yaml(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path!r} is not valid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path!r}: expected a mapping at the top level")
    return raw
