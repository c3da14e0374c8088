"""The text readers on what real files hold (issue 24): a lone surrogate escape in a JSONL line, a file that is
plainly not the format it is read as, a Parquet source naming a column its files lack, dictionary-encoded
Parquet text; and testdata/make_hostile_inputs.py's compressed streams, Parquet files and file names as tools and disks
have them. Each through the reader, and through the whole belt on Ray and on Spark (in this process; the runs that must
stop in one line as real subprocesses)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from backports import zstd

from helpers import CRAWL_SAMPLE, ROOT, SPARK_SETTINGS, assert_complete, cli, needs_spark
from pipeline.passes import filtering
from pipeline.config.load import load_config
from pipeline.config.read import expand_inputs
from stages.file_names import escaped_name
from stages.read_text import read_jsonl, read_parquet
from stages.warc_read import read_warc
from testdata import make_hostile_inputs


ENGINES = [
    pytest.param([], id="ray"),
    pytest.param(
        ["engine=spark", "spark.master=local[1]", *SPARK_SETTINGS], id="spark", marks=[needs_spark, pytest.mark.slow]
    ),
]


def belt_config(tmp_path: Path, source: dict) -> Path:
    """A belt that keeps every readable document (no language, quality or repetition rule), over one source."""
    config = {
        "sources": [{"name": "web", **source}],
        "classifier": {"kind": "none"},
        "language": {"languages": []},
        "quality": {"enabled": False},
        "repetition": {"enabled": False},
        "dedup": {"near": False},
        "tokenizer": {"vocab_size": 1000},
        "packing": {"seq_len": 64},
        "mixture": {"budget_tokens": 100000},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_belt(config: Path, out: Path, settings: list[str]):
    sets = [arg for s in settings for arg in ("--set", s)]
    return cli("run", str(config), "--output", str(out), *sets, timeout=600)


def rows_of(folder: Path, columns: list[str]) -> list[dict]:
    return pa.concat_tables([pq.read_table(p, columns=columns) for p in sorted(folder.glob("*.parquet"))]).to_pylist()


def texts(n: int) -> list[str]:
    """n different documents of real sentences."""
    return [f"Document {i}. {CRAWL_SAMPLE[i % 2 * 6]}" for i in range(n)]


# A lone surrogate escape: json.loads gives a str that no UTF-8 writer (Arrow, Parquet) takes.

SURROGATE_LINES = [  # (field, the line's JSON, what its detail says)
    ("text", '{"id": "s1", "text": "bad \\ud800 text", "url": "http://a.example/1"}', '"text" holds a lone surrogate'),
    ("url", '{"id": "s2", "text": "a text", "url": "http://a.example/\\udc00"}', '"url" holds a lone surrogate'),
    ("id", '{"id": "s3\\uDBFF", "text": "a text", "url": "http://a.example/3"}', '"id" holds a lone surrogate'),
]
PAIR = (
    '{"id": "pair", "text": "an emoji \\ud83d\\ude00 is a surrogate pair, one character", "url": "http://a.example/p"}'
)


def surrogate_file(path: Path) -> list[str]:
    """Good lines around each lone-surrogate line; returns the good texts in order."""
    good = texts(4)
    lines = [json.dumps({"id": f"g{i}", "text": t, "url": f"http://a.example/g{i}"}) for i, t in enumerate(good)]
    for n, (_, bad, _) in enumerate(SURROGATE_LINES):
        lines.insert(2 * n + 1, bad)
    path.write_text("\n".join([*lines, PAIR]) + "\n")
    return [*good, "an emoji \U0001f600 is a surrogate pair, one character"]


def test_a_lone_surrogate_is_a_malformed_line_and_the_rest_of_the_file_is_read(tmp_path):
    path = tmp_path / "scraped.jsonl"
    good = surrogate_file(path)
    rows = [row for table in read_jsonl(str(path), 0, "web", id_field="id") for row in table.to_pylist()]
    assert [row["text"] for row in rows if row["reason"] is None] == good
    bad = [row for row in rows if row["reason"] is not None]
    assert [row["reason"] for row in bad] == ["read:malformed"] * 3
    for row, (_, _, detail), number in zip(bad, SURROGATE_LINES, (2, 4, 6)):
        assert row["detail"].startswith(f"{path} line {number}: {detail} (\\u"), row["detail"]


@pytest.mark.parametrize("settings", ENGINES)
def test_a_lone_surrogate_is_rejected_by_the_belt_and_the_run_ends(tmp_path, settings, run_here):
    data = tmp_path / "scraped.jsonl"
    good = surrogate_file(data)
    out = tmp_path / "out"
    run_here(belt_config(tmp_path, {"input": [str(data)], "id_field": "id"}), out, settings)
    manifest = assert_complete(out)
    assert manifest["inputs"][0]["records"] == len(good) + len(SURROGATE_LINES)
    assert sorted(row["text"] for row in rows_of(out / "docs", ["text"])) == sorted(good)
    rejects = rows_of(out / "rejects", ["reason", "detail"])
    assert [row["reason"] for row in rejects] == ["read:malformed"] * 3
    assert all("holds a lone surrogate" in row["detail"] for row in rejects)


# A file that is plainly another format than it is read as: one line naming it, before any work.

FIXTURE_WARC = ROOT / "tests" / "fixtures" / "warc" / "crawl-00000.warc.gz"


def jsonl_bytes(n: int) -> bytes:
    return "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts(n))).encode()


def parquet_bytes(tmp_path: Path) -> bytes:
    pq.write_table(pa.table({"text": texts(2)}), tmp_path / "made.parquet")
    return (tmp_path / "made.parquet").read_bytes()


MISREAD = [  # (file name, its bytes, the source's format, what the line says)
    ("crawl.warc.gz", lambda tmp: FIXTURE_WARC.read_bytes(), "jsonl", "is a WARC file, not JSON lines as sources[0]"),
    ("docs.jsonl", lambda tmp: jsonl_bytes(3), "warc", "is JSON lines, not a WARC file as sources[0].format says"),
    (
        "docs.warc.gz",
        lambda tmp: gzip.compress(jsonl_bytes(3)),
        "auto",
        "is JSON lines, not a WARC file as its name says (sources[0].format: auto)",
    ),
    ("docs.jsonl.zst", lambda tmp: parquet_bytes(tmp), "auto", "is a Parquet file, not JSON lines as its name says"),
    (
        "windows.jsonl",
        lambda tmp: jsonl_bytes(3).decode().encode("utf-16"),
        "auto",
        "is UTF-16 text, not JSON lines as its name says (sources[0].format: auto); convert it to UTF-8",
    ),
]


@pytest.mark.parametrize("name, make, fmt, message", MISREAD, ids=[f"{m[0]} as {m[2]}" for m in MISREAD])
def test_a_file_plainly_of_another_format_stops_the_run_in_one_line(tmp_path, name, make, fmt, message):
    path = tmp_path / name
    path.write_bytes(make(tmp_path))
    out = tmp_path / "out"
    result = run_belt(belt_config(tmp_path, {"input": [str(path)], "format": fmt}), out, ["ray.num_cpus=1"])
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"config error: sources[0].input: {str(path)!r} {message}"), lines
    assert not out.exists()


def test_json_ndjson_files_compressed_or_not_are_json_lines_by_their_names(tmp_path, run_here):
    lines = jsonl_bytes(3)
    files = {"a.json": lines, "b.ndjson.gz": gzip.compress(lines), "c.json.zst": zstd.compress(lines)}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    out = tmp_path / "out"
    run_here(belt_config(tmp_path, {"input": [str(tmp_path / name) for name in files]}), out)
    manifest = assert_complete(out)
    assert [part["records"] for part in manifest["inputs"]] == [3, 3, 3]
    assert len(rows_of(out / "docs", ["id"])) == 3  # the other two files' copies are exact duplicates


# A Parquet source's id_field or url_field naming a column its file lacks.


@pytest.mark.parametrize("key, column", [("id_field", "doc_id"), ("url_field", "link")])
def test_a_parquet_id_or_url_field_its_file_lacks_stops_the_run_in_one_line(tmp_path, key, column):
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"text": texts(2), "id": ["a", "b"], "url": ["http://a.example/", None]}), path)
    out = tmp_path / "out"
    result = run_belt(belt_config(tmp_path, {"input": [str(path)], key: column}), out, ["ray.num_cpus=1"])
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip() == (
        f"config error: sources[0].input: {str(path)!r} has no column {column!r} (sources[0].{key}; "
        "it has text, id, url)"
    )
    assert not out.exists()


def test_a_parquet_id_and_url_field_it_has_are_read(tmp_path, run_here):
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"body": texts(2), "doc_id": [7, 8], "link": ["http://a.example/", None]}), path)
    out = tmp_path / "out"
    source = {"input": [str(path)], "text_field": "body", "id_field": "doc_id", "url_field": "link"}
    run_here(belt_config(tmp_path, source), out)
    assert sorted(map(tuple, (r.values() for r in rows_of(out / "docs", ["id", "url"])))) == [
        ("7", "http://a.example/"),
        ("8", None),
    ]


def test_a_dictionary_encoded_parquet_text_column_is_read(tmp_path, run_here):
    path = tmp_path / "category.parquet"
    text = pa.array([*texts(3), texts(1)[0]]).dictionary_encode()  # as pandas writes a category column
    pq.write_table(pa.table({"text": text, "id": pa.array(["a", "b", "c", "d"]).dictionary_encode()}), path)
    assert pa.types.is_dictionary(pq.ParquetFile(path).schema_arrow.field("text").type)
    out = tmp_path / "out"
    run_here(belt_config(tmp_path, {"input": [str(path)], "id_field": "id"}), out)
    assert sorted(row["text"] for row in rows_of(out / "docs", ["text"])) == sorted(texts(3))
    assert [row["reason"] for row in rows_of(out / "rejects", ["reason"])] == ["exact_duplicate"]


def test_a_binary_parquet_text_column_is_read_as_utf8(tmp_path, run_here):
    path = tmp_path / "hive.parquet"
    text = pa.array([t.encode() for t in texts(2)] + ["café in latin-1".encode("latin-1")], pa.binary())
    pq.write_table(pa.table({"text": text, "id": pa.array([b"a", b"b", b"c"])}), path)  # as Hive writes strings
    out = tmp_path / "out"
    run_here(belt_config(tmp_path, {"input": [str(path)], "id_field": "id"}), out)
    assert sorted((r["id"], r["text"]) for r in rows_of(out / "docs", ["id", "text"])) == list(zip("ab", texts(2)))
    (reject,) = rows_of(out / "rejects", ["reason", "detail"])
    assert reject["reason"] == "read:malformed" and reject["detail"].endswith(
        '"text" is not UTF-8 (byte 0xe9 at byte 4)'
    )


def test_a_nested_parquet_text_is_read_by_its_dotted_name_as_in_jsonl(tmp_path, run_here):
    path = tmp_path / "nested.parquet"
    fields = pa.struct([("text", pa.large_string()), ("id", pa.int64())])
    meta = [{"text": texts(2)[0], "id": 7}, {"text": None, "id": 8}, None, {"text": texts(2)[1], "id": None}]
    pq.write_table(pa.table({"meta": pa.array(meta, fields), "url": ["http://a.example/", None, None, None]}), path)
    out = tmp_path / "out"
    source = {"input": [str(path)], "text_field": "meta.text", "id_field": "meta.id"}
    run_here(belt_config(tmp_path, source), out)
    docs = sorted((row["text"], row["id"], row["url"]) for row in rows_of(out / "docs", ["text", "id", "url"]))
    assert [d[0] for d in docs] == sorted(texts(2)) and ("7", "http://a.example/") in [d[1:] for d in docs]
    rejects = rows_of(out / "rejects", ["reason", "detail"])
    assert [row["reason"] for row in rejects] == ["read:malformed"] * 2
    assert all(row["detail"].endswith('"meta.text" is null') for row in rejects)


# Beyond the listed cases: testdata/make_hostile_inputs.py's files, as tools and disks have them.


@pytest.mark.parametrize("settings", ENGINES)
def test_hostile_inputs_keep_what_standard_tools_recover_and_each_file_is_read_once(tmp_path, settings, run_here):
    inputs = tmp_path / "in put #1"
    paths = make_hostile_inputs.write_all(inputs)
    paths = {kind: path for kind, path in paths.items() if kind not in make_hostile_inputs.LINKS}
    files = {kind: escaped_name(str(path)) for kind, path in paths.items()}  # the Latin-1 name as the output has it
    patterns = [str(inputs), str(inputs / "dir with space" / "*.gz"), files["bad_lines"]]  # most files twice
    out = tmp_path / "out"
    run_here(belt_config(tmp_path, {"input": patterns, "id_field": "id"}), out, settings)
    manifest = assert_complete(out)
    read = [part["file"] for part in manifest["inputs"]]
    assert sorted(read) == sorted(set(files.values()))  # the links' targets once, under their own names
    assert all(
        part["records"] == 0
        for part in manifest["inputs"]
        if part["file"] in (files["zero_bytes"], files["empty_gzip"])
    )
    docs = rows_of(out / "docs", ["file", "text"])
    rejects = rows_of(out / "rejects", ["file", "reason", "detail", "text"])
    records = {part["file"]: part["records"] for part in manifest["inputs"]}
    for kind, path in files.items():
        kept = [row["text"] for row in docs if row["file"] == path]
        rejected = [row for row in rejects if row["file"] == path]
        unread = [row for row in rejected if row["reason"] != "exact_duplicate"]  # garbled gzip copies texts
        assert all(row["reason"] == "read:malformed" and row["detail"].startswith(path) for row in unread), kind
        read_whole = kept + [row["text"] for row in rejected if row["reason"] == "exact_duplicate"]
        assert sorted(read_whole) == sorted(make_hostile_inputs.recoverable(paths[kind])), kind
        assert records[path] == len(kept) + len(rejected), kind


def test_a_spark_output_folder_is_read_without_its_writers_files(tmp_path, run_here):
    folder = tmp_path / "spark output"
    (folder / "_temporary" / "0").mkdir(parents=True)
    for n, text in enumerate(texts(2)):
        pq.write_table(pa.table({"text": [text]}), folder / f"part-0000{n}.snappy.parquet")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "_temporary" / "0" / "part-00002.snappy.parquet").write_bytes(b"PAR1 a task still writing")
    (folder / ".part-00000.snappy.parquet.crc").write_bytes(b"crc")
    out = tmp_path / "out"
    run_here(belt_config(tmp_path, {"input": [str(folder)], "format": "parquet"}), out)
    assert [Path(part["file"]).name for part in assert_complete(out)["inputs"]] == [
        "part-00000.snappy.parquet",
        "part-00001.snappy.parquet",
    ]


def test_a_warc_zst_written_by_pzstd_is_read_as_its_plain_warc(tmp_path):
    plain = ROOT / "tests" / "fixtures" / "warc" / "crawl-00002.warc"
    data = plain.read_bytes()
    half = data.index(b"WARC/1.0", len(data) // 2)  # a record boundary: pzstd frames hold whole records here
    frames = [zstd.compress(part) for part in (data[:half], data[half:])]
    path = tmp_path / "crawl.warc.zst"  # pzstd: a skippable frame holding each frame's size before it
    path.write_bytes(b"".join(make_hostile_inputs.skippable(len(f).to_bytes(4, "little")) + f for f in frames))
    expected = [(r["reason"], r["url"], r["text"]) for t in read_warc(str(plain), 0, "web") for r in t.to_pylist()]
    found = [(r["reason"], r["url"], r["text"]) for t in read_warc(str(path), 0, "web") for r in t.to_pylist()]
    assert found == expected and len(found) > 10


@pytest.mark.parametrize("name", ["crawl-00000.warc.gz", "crawl-00002.warc"])
def test_zero_padding_after_a_warc_is_no_record_as_gzip_reads_it(tmp_path, name):
    source = ROOT / "tests" / "fixtures" / "warc" / name
    padded, zeros = tmp_path / name, tmp_path / f"zeros-{name}"
    padded.write_bytes(source.read_bytes() + bytes(10_000))  # as tape and block devices pad a file
    zeros.write_bytes(bytes(10_000))

    def rows(path: Path) -> list[tuple]:
        return [(r["offset"], r["reason"], r["text"]) for t in read_warc(str(path), 0, "web") for r in t.to_pylist()]

    assert rows(padded) == rows(source)
    assert [reason for _, reason, _ in rows(zeros)] == ["read:malformed"]  # only zeros: no WARC at all


# Issue 46: one odd file in a folder of inputs never stops the run, nor hangs `validate`.


def validate(tmp_path: Path, source: dict):
    return cli("validate", str(belt_config(tmp_path, source)), timeout=60)


def test_a_parquet_column_named_twice_besides_the_text_is_read_from_its_first(tmp_path):
    path = tmp_path / "joined.parquet"
    columns = [pa.array(texts(3)), pa.array(["http://a.example/1", None, "http://a.example/3"]), pa.array(["x"] * 3)]
    columns += [pa.array([1, 2, 3]), pa.array([4, 5, 6])]
    pq.write_table(pa.Table.from_arrays(columns, names=["text", "url", "url", "n", "n"]), path)
    rows = [row for table in read_parquet(str(path), 0, "web") for row in table.to_pylist()]
    assert [(row["reason"], row["text"], row["url"]) for row in rows] == [
        (None, texts(3)[0], "http://a.example/1"),
        (None, texts(3)[1], None),
        (None, texts(3)[2], "http://a.example/3"),
    ]
    assert validate(tmp_path, {"input": [str(path)]}).returncode == 0


def test_two_text_columns_are_one_named_reject_and_the_folder_is_read(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "two texts.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(texts(2)), pa.array(["b", "c"])], names=["text", "text"]), path)
    (folder / "good.jsonl").write_bytes(jsonl_bytes(2))
    result = validate(tmp_path, {"input": [str(folder)]})
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [row for table in read_parquet(str(path), 0, "web") for row in table.to_pylist()]
    assert [(row["reason"], row["detail"]) for row in rows] == [
        ("read:malformed", f'{path}: 2 columns named "text" (columns: text, text)')
    ]


def test_a_file_name_that_is_not_utf8_is_read_and_named_escaped(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.jsonl").write_bytes(jsonl_bytes(2))
    with open(os.fsencode(folder) + b"/caf\xe9.jsonl", "wb") as handle:  # a Latin-1 name
        handle.write(jsonl_bytes(2))
    assert validate(tmp_path, {"input": [str(folder)]}).returncode == 0
    escaped = f"{folder}/caf\\xe9.jsonl"  # as os.fsdecode, then backslashreplace, writes it
    assert expand_inputs([str(folder)]) == [escaped, str(folder / "good.jsonl")]
    rows = [row for table in read_jsonl(escaped, 0, "web") for row in table.to_pylist()]
    assert [(row["reason"], row["file"], row["text"]) for row in rows] == [(None, escaped, t) for t in texts(2)]


def test_a_file_name_that_is_not_utf8_changed_on_disk_changes_the_filter_fingerprint(tmp_path):
    # a rerun keeps the filter pass's parts only if its inputs are unchanged: the escaped name is stat'ed as the file
    folder = tmp_path / "in"
    folder.mkdir()
    latin1 = os.fsencode(folder) + b"/caf\xe9.jsonl"
    with open(latin1, "wb") as handle:
        handle.write(jsonl_bytes(2))
    config = load_config(str(belt_config(tmp_path, {"input": [str(folder)]})), output=str(tmp_path / "out"))
    files = filtering.input_files(config)
    before = filtering.fingerprint(config, files)
    with open(latin1, "ab") as handle:
        handle.write(jsonl_bytes(1))
    assert filtering.fingerprint(config, files) != before


def test_a_utf8_file_name_holding_an_escape_as_text_is_one_line(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "caf\\xe9.jsonl").write_bytes(jsonl_bytes(2))  # the text an escaped Latin-1 name is written as
    result = validate(tmp_path, {"input": [str(folder)]})
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip() == (
        f"config error: input {str(folder)!r}: the file name '{folder}/caf\\xe9.jsonl' holds '\\xe9' as text, "
        "which the belt writes for a byte of a name that is not UTF-8; rename it"
    )


def test_a_folder_with_links_to_itself_is_listed_once_without_hanging(tmp_path):
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.jsonl").write_bytes(jsonl_bytes(2))
    for name in ("up", "up again"):
        (folder / "sub" / name).symlink_to("..")
    (folder / "loop").symlink_to(".")
    (folder / "b.jsonl").write_bytes(jsonl_bytes(3))
    assert expand_inputs([str(folder)]) == [str(folder / "b.jsonl"), str(folder / "sub" / "a.jsonl")]
    assert expand_inputs([str(folder / "**" / "a.jsonl")]) == [str(folder / "sub" / "a.jsonl")]
    assert validate(tmp_path, {"input": [str(folder)]}).returncode == 0


def wet_record(text: bytes, content_type: str, identified: str | None = None) -> bytes:
    headers = [
        "WARC-Type: conversion",
        "WARC-Target-URI: http://a.example/",
        "WARC-Date: 2024-01-01T00:00:00Z",
        "WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>",
        f"Content-Type: {content_type}",
        *([f"WARC-Identified-Content-Charset: {identified}"] if identified else []),
        f"Content-Length: {len(text)}",
    ]
    return ("WARC/1.0\r\n" + "\r\n".join(headers) + "\r\n\r\n").encode() + text + b"\r\n\r\n"


@pytest.mark.parametrize(
    "content_type, identified",
    [("text/plain; charset=iso-8859-1", None), ("text/plain", "windows-1252"), ("text/plain; charset=bogus", None)],
)
def test_a_wet_records_declared_charset_decodes_its_text(tmp_path, content_type, identified):
    text = "Café, naïve, señor: a page in Latin-1."
    path = tmp_path / "latin.warc.wet"
    path.write_bytes(wet_record(text.encode("latin-1"), content_type, identified))
    rows = [row for table in read_warc(str(path), 0, "web") for row in table.to_pylist()]
    expected = text if "bogus" not in content_type else text.encode("latin-1").decode("utf-8", "replace")
    assert [(row["reason"], row["text"]) for row in rows] == [(None, expected)]


def test_a_warc_zst_frame_flushed_per_record_and_cut_keeps_every_whole_record(tmp_path):
    data = (ROOT / "tests" / "fixtures" / "warc" / "crawl-00002.warc").read_bytes()
    starts = [at for at in range(len(data)) if data.startswith(b"WARC/1.0\r\n", at)] + [len(data)]
    compressor = zstd.ZstdCompressor()  # one frame, a block flushed after each record, as a streaming writer does
    frame = b"".join(
        compressor.compress(data[a:b], zstd.ZstdCompressor.FLUSH_BLOCK) for a, b in zip(starts, starts[1:])
    )
    frame += compressor.flush()
    plain, cut = tmp_path / "crawl.warc", tmp_path / "cut.warc.zst"
    plain.write_bytes(data[: starts[-2]])  # every record but the last
    cut.write_bytes(frame[:-30])  # the end of the last record's block and of the frame
    whole = [(r["reason"], r["url"], r["text"]) for t in read_warc(str(plain), 0, "web") for r in t.to_pylist()]
    rows = [r for t in read_warc(str(cut), 0, "web") for r in t.to_pylist()]
    assert [(r["reason"], r["url"], r["text"]) for r in rows[:-1]] == whole
    assert rows[-1]["reason"] == "read:malformed" and "zstd frame cut short" in rows[-1]["detail"]
    assert [r["offset"] for r in rows] == sorted(set(r["offset"] for r in rows))


def test_a_parquet_file_cut_short_in_a_folder_is_one_named_reject_not_a_stop(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.jsonl").write_bytes(jsonl_bytes(2))
    whole = parquet_bytes(tmp_path)
    (folder / "cut.parquet").write_bytes(whole[: len(whole) // 2])  # its footer, the schema, is gone
    assert validate(tmp_path, {"input": [str(folder)]}).returncode == 0
    rows = [row for table in read_parquet(str(folder / "cut.parquet"), 0, "web") for row in table.to_pylist()]
    assert [row["reason"] for row in rows] == ["read:malformed"]
    assert rows[0]["detail"].startswith(f"{folder / 'cut.parquet'}: not a Parquet file")


def test_a_warc_records_detail_names_its_problem_and_holds_no_raw_bytes(tmp_path):
    liar = tmp_path / "liar.warc"  # no WARC-Target-URI, and 99999999 bytes declared before 5
    liar.write_bytes(b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 99999999\r\n\r\nshort")
    junk = tmp_path / "junk.warc.zst"
    junk.write_bytes(zstd.compress(b'"\x97s\xd2\t\xb3\x00b\xe5\xb0\xd7\x1b[31m\r\n' * 3))
    details = {}
    for path in (liar, junk):
        (row,) = [r for t in read_warc(str(path), 0, "web") for r in t.to_pylist()]
        assert row["reason"] == "read:malformed"
        details[path.name] = row["detail"]
    assert details["liar.warc"] == f"{liar} at offset 0: a response record without WARC-Target-URI"
    assert details["junk.warc.zst"].isascii() and details["junk.warc.zst"].isprintable(), details["junk.warc.zst"]
    assert "\\x97" in details["junk.warc.zst"]
