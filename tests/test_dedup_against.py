"""dedup.against (pipeline/passes/dedup_index.py): a crawl deduplicated against an earlier output's index keeps the
documents one run over both crawls keeps; dup_count; an `against` folder that cannot be read is one line."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import cli, needs_spark
from pipeline.passes import dedup
from pipeline.passes import dedup_index
from pipeline.config import ConfigError, DedupConfig
from pipeline.config.load import load_config
from pipeline.storage import marker_text

pytestmark = pytest.mark.usefixtures("embedded_ray")  # conftest.py

CRAWL_A = 200  # the first crawl's documents; the second crawl's come after them


def corpus(seed=3, n=360):
    """Random 120-word documents; a third are near copies of an earlier one (some of a copy: chains), and
    every tenth of the second crawl an exact copy of one of the first crawl's copies or survivors."""
    rng = np.random.default_rng(seed)
    docs = [list(rng.integers(0, 5000, 120)) for _ in range(n)]
    for i in range(n // 10, n, 3):
        copy = list(docs[int(rng.integers(0, i))])
        span, start = int(rng.integers(0, 40)), int(rng.integers(0, 80))
        copy[start : start + span] = list(rng.integers(5000, 10000, span))
        docs[i] = copy
    for i in range(CRAWL_A + 5, n, 10):
        docs[i] = list(docs[int(rng.integers(0, CRAWL_A))])
    return docs


def as_filtered(docs, folder, first_order=0, blocks=3):
    texts = [" ".join(f"w{w}" for w in d) for d in docs]
    orders = range(first_order, first_order + len(docs))
    table = pa.table(
        {
            "order": pa.array(orders, pa.int64()),
            "id": [f"d{i}" for i in orders],
            "text": texts,
            "stage": pa.nulls(len(docs), pa.string()),
        }
    )
    folder.mkdir(parents=True)
    for i, part in enumerate(np.array_split(np.arange(len(docs)), blocks)):
        pq.write_table(table.take(part), folder / f"file-{i:06d}.parquet")
    return folder


def output_of(docs, out, first_order=0, **settings):
    """A run's dedup pass over `docs` as an output folder (marker, complete manifest, dedup_index), and its
    result."""
    out.mkdir(parents=True)
    (out / ".crawlbelt").write_text(marker_text("run"))
    (out / "manifest.json").write_text(json.dumps({"complete": True}))
    work = out.parent / (out.name + "-work")
    filtered = as_filtered(docs, work / "filtered", first_order)
    config = DedupConfig(**settings)
    return dedup.run_pass(filtered, config, work, out / dedup_index.INDEX)


def index_rows(out):
    tables = [pq.read_table(p) for p in sorted((out / dedup_index.INDEX).glob("shard-*.parquet"))]
    return pa.concat_tables(tables).sort_by("rank").drop_columns(["output"]).to_pylist()


@pytest.mark.parametrize("verify", ["exact", "estimated"])
def test_a_crawl_against_an_earlier_one_keeps_what_one_run_over_both_keeps(tmp_path, verify):
    docs = corpus()
    together = output_of(docs, tmp_path / "together", verify=verify)
    output_of(docs[:CRAWL_A], tmp_path / "a", verify=verify)
    against = output_of(docs[CRAWL_A:], tmp_path / "b", against=[str(tmp_path / "a")], verify=verify)

    removed_together = dict(zip(together.verdicts["order"].to_pylist(), together.verdicts["dup_of"].to_pylist()))
    removed = dict(zip(against.verdicts["order"].to_pylist(), against.verdicts["dup_of"].to_pylist()))
    later = {order - CRAWL_A: dup_of for order, dup_of in removed_together.items() if order >= CRAWL_A}
    assert later and set(removed) == set(later)  # the same documents of the second crawl removed
    reasons = set(against.verdicts["reason"].to_pylist())
    assert reasons == {"exact_duplicate", "near_duplicate"}
    for order, dup_of in later.items():  # an earlier document named with its output, a later one by its id
        earlier = int(dup_of[1:]) < CRAWL_A
        assert removed[order] == (f"{tmp_path / 'a'}#{dup_of}" if earlier else f"d{int(dup_of[1:]) - CRAWL_A}")
    assert any(v.startswith(str(tmp_path / "a")) for v in removed.values())

    counts = dict(zip(*(together.dup_counts[c].to_pylist() for c in ("order", "dup_count"))))
    assert dict(zip(*(against.dup_counts[c].to_pylist() for c in ("order", "dup_count")))) == {
        order - CRAWL_A: n for order, n in counts.items() if order >= CRAWL_A
    }
    # the second output's index covers everything read so far, with the clusters one run over both finds
    rows, rows_together = index_rows(tmp_path / "b"), index_rows(tmp_path / "together")
    renamed = [{**row, "id": f"d{row['rank']}"} for row in rows]
    assert renamed == rows_together and len(rows) == len(docs)


def test_a_chain_through_an_earlier_removed_copy_is_found(tmp_path):
    rng = np.random.default_rng(1)
    a = list(rng.integers(0, 5000, 200))
    b = a[:150] + list(rng.integers(5000, 6000, 20)) + a[170:]  # near a
    c = b[:40] + list(rng.integers(6000, 7000, 22)) + b[62:]  # near b, not near a
    other = list(rng.integers(10_000, 20_000, 200))
    first = output_of([a, b], tmp_path / "a", exact=False)
    assert first.verdicts["order"].to_pylist() == [1]  # b removed in the first crawl; its entry stays
    second = output_of([other, c], tmp_path / "b", against=[str(tmp_path / "a")], exact=False)
    assert second.verdicts.to_pylist() == [
        {"order": 1, "stage": "near_dedup", "reason": "near_duplicate", "dup_of": f"{tmp_path / 'a'}#d0"}
    ]
    assert second.dup_counts.num_rows == 0  # `other` has no copy: dup_count 1 (the default)
    third = output_of([c], tmp_path / "c", against=[str(tmp_path / "b")], exact=False)
    assert third.verdicts["dup_of"].to_pylist() == [f"{tmp_path / 'a'}#d0"]  # one folder names all before it


def write_config(tmp_path, **dedup):
    (tmp_path / "in.jsonl").write_text('{"text": "one two three"}\n')
    config = {"sources": [{"name": "web", "input": ["in.jsonl"], "format": "jsonl"}], "output": str(tmp_path / "out")}
    config["classifier"] = {"kind": "none"}
    config["dedup"] = dedup
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    return str(path)


def refusal(tmp_path, **dedup):
    with pytest.raises(ConfigError) as error:
        load_config(write_config(tmp_path, **dedup))
    assert len(error.value.problems) == 1
    return error.value.problems[0]


def test_against_folders_that_cannot_be_read_are_one_line_each(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `against` is taken from the working directory, as the output is
    output_of([list(range(50)), list(range(50, 100))], tmp_path / "a")
    good = str(tmp_path / "a")
    assert load_config(write_config(tmp_path, against=["a"])).dedup.against == [good]
    lines = {
        "no such folder": dict(against=["missing"]),
        "is not a crawlbelt output": dict(against=["a-work"]),
        "was deduplicated with dedup.shingle_words 5, this config has 7": dict(against=["a"], shingle_words=7),
        "was deduplicated with dedup.num_perm 128, this config has 64": dict(against=["a"], num_perm=64),
        "was deduplicated with dedup.seed 1, this config has 2": dict(against=["a"], seed=2),
        "dedup.exact and dedup.near are both off": dict(against=["a"], exact=False, near=False),
        "paragraph dedup does not read earlier outputs": dict(against=["a"], paragraphs={"enabled": True}),
        "is this run's output": dict(against=["out"]),
    }
    for said, settings in lines.items():
        assert said in refusal(tmp_path, **settings), said
    before = {p: p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}

    (tmp_path / "a" / "_work").mkdir()  # a run writing it
    assert f"dedup.against[0] {good!r} is being written by a run" in refusal(tmp_path, against=["a"])
    (tmp_path / "a" / "_work").rmdir()
    shard = tmp_path / "a" / dedup_index.INDEX / dedup_index.shard_name(0)
    shard.write_bytes(shard.read_bytes()[:-9] + b"x" * 9)  # damaged
    assert "does not match its header.json's digest" in refusal(tmp_path, against=["a"])
    (tmp_path / "a" / dedup_index.INDEX / "header.json").unlink()
    assert "has no dedup index" in refusal(tmp_path, against=["a"])
    before.pop(tmp_path / "a" / dedup_index.INDEX / "header.json")
    before.pop(shard)
    assert all(p.read_bytes() == content for p, content in before.items())  # nothing earlier modified


def test_an_index_without_shingle_sets_needs_estimated_verification(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    output_of([list(range(50))], tmp_path / "a", verify="estimated")
    assert "its index has no shingle sets" in refusal(tmp_path, against=["a"])
    assert load_config(write_config(tmp_path, against=["a"], verify="estimated"))


def test_validate_refuses_in_one_line_and_exit_2(tmp_path):
    result = cli("validate", write_config(tmp_path, against=[str(tmp_path / "nowhere")]))
    assert result.returncode == 2, result.stderr
    line = f"dedup.against[0] {str(tmp_path / 'nowhere')!r}: no such folder"
    assert result.stderr.strip().splitlines() == [f"config error: {line}"]


@needs_spark
@pytest.mark.slow  # three belt runs, one on an embedded Spark
def test_a_crawl_against_an_earlier_one_gives_the_same_bytes_on_ray_and_spark(tmp_path, run_here):
    from helpers import CONFIGS, FIXTURES, SPARK_SETTINGS, assert_same_output  # noqa: PLC0415

    files = sorted(str(p) for p in (FIXTURES / "warc").iterdir())
    run_here(CONFIGS / "local.yaml", tmp_path / "a", SPARK_SETTINGS, inputs=files[:1])
    against = [*SPARK_SETTINGS, f"dedup.against=[{tmp_path / 'a'}]"]
    run_here(CONFIGS / "local.yaml", tmp_path / "ray", against, inputs=files[1:])
    spark = [*against, "engine=spark", "spark.master=local[2]"]
    run_here(CONFIGS / "local.yaml", tmp_path / "spark", spark, inputs=files[1:])
    assert_same_output(tmp_path / "ray", tmp_path / "spark")  # docs/, rejects/, dedup_index/ and tokens/
    assert (tmp_path / "spark" / dedup_index.INDEX / "header.json").is_file()
