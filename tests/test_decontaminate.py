"""The contamination stage (stages/decontaminate.py): what its detectors find and miss, reject and mask, eval
set files and their config errors, the resume fingerprint, and one run of the belt with it."""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import CONFIGS, assert_same_output, cli, needs_spark
from pipeline import belt, report, spec
from pipeline.passes import filtering
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from stages.decontaminate import (
    Decontaminate,
    EvalSet,
    EvalSetError,
    HashIndex,
    match_text,
    read_items,
    word_counts,
    word_spans,
)
from stages.dedup import MinHasher, normalize
from stages.warc_read import DOCUMENT_SCHEMA

QUESTION = "Which planet of the solar system has the largest number of known moons orbiting it today"
ANSWER = "Saturn has more known moons than any other planet"
FILLER = (
    "The weather was mild for the season and the market in the old town square opened early as usual. "
    "Traders set out bread, cheese and vegetables while the first customers arrived with baskets. "
)
# From the fixture crawl's page https://www.fieldnotebook.example/earth/2023/06/how-slot-canyons-are-carved
CANYON = (
    "Because the flash floods are short and violent, they cut downward much faster than they widen the "
    "channel. Over many centuries the crack deepens into a passage that can be more than thirty metres deep"
)
# From https://www.fieldnotebook.example/space/2023/11/watching-jupiters-moons-with-binoculars
JUPITER = "Galileo first saw these moons in January 1610, and he noticed that their positions changed from one night"


def batch(texts: list[str]) -> pa.Table:
    rows: dict[str, list] = {name: [None] * len(texts) for name in DOCUMENT_SCHEMA.names}
    rows.update(order=list(range(len(texts))), id=[f"doc-{i}" for i in range(len(texts))], text=texts)
    return pa.Table.from_pydict(rows, schema=DOCUMENT_SCHEMA)


def jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def stage(tmp_path, rows, action="reject", fields=("question", "answer"), **settings) -> Decontaminate:
    path = jsonl(tmp_path / f"eval-{action}.jsonl", rows)
    return Decontaminate([EvalSet("quiz", path, fields, action)], **settings)


def run(decontaminate: Decontaminate, texts: list[str]) -> list[dict]:
    columns = ["text", "stage", "reason", "detail", "contamination_masked", "contamination_items"]
    return decontaminate(batch(texts)).select(columns).to_pylist()


QUIZ = [{"id": "q7", "question": QUESTION, "answer": ANSWER}, {"question": "Name the red planet", "answer": "Mars"}]


def test_both_sides_are_normalized_alike(tmp_path):
    shouted = f"{FILLER}WHICH planet, of the Solar-System, has the largest   number of known\nmoons orbiting it today?"
    assert match_text([shouted]).to_pylist()[0].endswith(match_text([QUESTION]).to_pylist()[0])
    rows = run(stage(tmp_path, QUIZ), [shouted, FILLER])
    assert rows[0]["reason"] == "contamination:quiz" and rows[1]["stage"] is None


def test_a_13_word_span_hits_and_12_words_do_not(tmp_path):
    words = (QUESTION + " " + ANSWER).split()
    span13 = " ".join(words[3:16])
    span12 = " ".join(words[3:15])
    rows = run(stage(tmp_path, QUIZ), [FILLER + span13 + ". " + FILLER, FILLER + span12 + ". " + FILLER])
    assert rows[0]["reason"] == "contamination:quiz"
    assert rows[1]["stage"] is None  # a near miss: no 13-gram in common


def test_an_item_shorter_than_n_is_one_ngram(tmp_path):
    decontaminate = stage(tmp_path, QUIZ)
    rows = run(decontaminate, [FILLER + "Quiz: name the red planet: mars! " + FILLER, FILLER + "name the red planet"])
    assert rows[0]["reason"] == "contamination:quiz"
    assert rows[0]["detail"] == 'quiz item 1 (the whole item): "name the red planet: mars!"'  # its line number
    assert rows[1]["stage"] is None  # four of its five words


def test_reject_detail_names_the_item_and_the_span(tmp_path):
    text = FILLER + QUESTION + "? " + ANSWER + ". " + FILLER
    (row,) = run(stage(tmp_path, QUIZ), [text])
    assert row["detail"] == f'quiz item q7 (13-gram): "{QUESTION}? {ANSWER}."'
    assert row["text"] == text and row["contamination_masked"] == 0


def test_mask_replaces_exactly_the_spans_and_counts_them(tmp_path):
    text = f"{FILLER}{QUESTION}? In between. {ANSWER} and {FILLER}Then: name the red planet mars."
    (row,) = run(stage(tmp_path, QUIZ, action="mask", fields=("question",)), [text])
    assert row["stage"] is None
    # the item's text is its question only: the answer and the short item's answer stay
    assert row["text"] == f"{FILLER}[contaminated] In between. {ANSWER} and {FILLER}Then: [contaminated] mars."
    assert row["contamination_masked"] == 2 and row["contamination_items"] == "quiz:1,quiz:q7"


def test_several_eval_sets_reject_wins_and_mask_elsewhere(tmp_path):
    reject = EvalSet("quiz", jsonl(tmp_path / "quiz.jsonl", QUIZ), ("question", "answer"), "reject")
    other = [{"text": "The committee approved the new bridge design after three years of public debate and study"}]
    mask = EvalSet("news", jsonl(tmp_path / "news.jsonl", other), ("text",), "mask")
    decontaminate = Decontaminate([reject, mask], placeholder="<eval>")
    both = f"{FILLER}{other[0]['text']}. {QUESTION}"
    masked_only = f"{FILLER}{other[0]['text']}. {FILLER}"
    rows = run(decontaminate, [both, masked_only])
    assert rows[0]["reason"] == "contamination:quiz"
    assert rows[1]["stage"] is None and rows[1]["text"] == f"{FILLER}<eval> {FILLER}"
    assert rows[1]["contamination_items"] == "news:0"


def test_jsonl_fields_and_parquet_items(tmp_path):
    rows = [{"id": 3, "question": "Q one", "answer": ["a", "b"]}, {"question": "Q two", "answer": None}]
    path = jsonl(tmp_path / "items.jsonl", rows)
    assert read_items(EvalSet("x", path, ("question", "answer"))) == (["3", "1"], ["Q one a b", "Q two "])
    pq.write_table(
        pa.Table.from_pylist([{"id": "p1", "text": "first"}, {"id": None, "text": "second"}]), tmp_path / "t.parquet"
    )
    assert read_items(EvalSet("x", str(tmp_path / "t.parquet"))) == (["p1", "1"], ["first", "second"])


def config_with(tmp_path, eval_sets: str, *more: str, output="out"):
    stages = "stages=[extract, language, quality, repetition, contamination, classifier]"
    return load_config(
        str(CONFIGS / "local.yaml"),
        output=str(tmp_path / output),
        overrides=[stages, f"decontamination.eval_sets={eval_sets}", *more],
    )


@pytest.mark.parametrize(
    "eval_sets, message",
    [
        ("[{name: quiz, path: nowhere.jsonl}]", "decontamination.eval_sets[0].path: cannot read"),
        ("[{name: quiz, path: EVAL, fields: [question, solution]}]", "line 1 has no field 'solution'"),
        ("[{name: quiz, path: EVAL, action: drop}]", "eval_sets[0].action: expected one of reject, mask"),
        ("[{name: Quiz, path: EVAL}]", "eval_sets[0].name: expected a unique lower-case name"),
        ("[]", "the contamination stage needs at least one eval set"),
    ],
)
def test_a_bad_eval_set_is_one_config_line(tmp_path, eval_sets, message):
    path = jsonl(tmp_path / "quiz.jsonl", QUIZ)
    with pytest.raises(ConfigError) as error:
        config_with(tmp_path, eval_sets.replace("EVAL", path), "decontamination.ngram_detector=true")
    assert message in str(error.value), str(error.value)


def test_an_unreadable_eval_file_exits_2_naming_the_key(tmp_path):
    (tmp_path / "broken.parquet").write_bytes(b"not parquet at all")
    result = cli(
        "validate",
        str(CONFIGS / "local.yaml"),
        "--output",
        str(tmp_path / "out"),
        "--set",
        "stages=[extract, language, quality, repetition, contamination, classifier]",
        "--set",
        f"decontamination.eval_sets=[{{name: quiz, path: '{tmp_path / 'broken.parquet'}'}}]",
    )
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if "decontamination" in line]
    assert lines and "decontamination.eval_sets[0].path:" in lines[0] and "is not a Parquet file" in lines[0]


def test_eval_sets_without_the_stage_are_refused(tmp_path):
    path = jsonl(tmp_path / "quiz.jsonl", QUIZ)
    with pytest.raises(ConfigError, match="`contamination` is not in `stages:`"):
        load_config(
            str(CONFIGS / "local.yaml"),
            output=str(tmp_path / "out"),
            overrides=[f"decontamination.eval_sets=[{{name: quiz, path: '{path}'}}]"],
        )


def test_the_eval_file_changes_the_fingerprint(tmp_path):
    path = tmp_path / "quiz.jsonl"
    jsonl(path, QUIZ)
    eval_sets = f"[{{name: quiz, path: '{path}', fields: [question, answer]}}]"
    config = config_with(tmp_path, eval_sets)
    files = filtering.input_files(config)
    before = filtering.fingerprint(config, files)
    assert filtering.fingerprint(config_with(tmp_path, eval_sets), files) == before
    jsonl(path, QUIZ + [{"question": "One more question", "answer": "and its answer"}])
    assert filtering.fingerprint(config_with(tmp_path, eval_sets), files) != before
    assert filtering.fingerprint(config_with(tmp_path, eval_sets, "dedup.num_perm=64"), files) != before


def test_an_eval_set_on_s3(s3_server, tmp_path, monkeypatch):
    import pyarrow.fs as pafs

    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    s3 = pafs.S3FileSystem(scheme="http", endpoint_override=s3_server.split("://")[1], allow_bucket_creation=True)
    s3.create_dir("evals")
    with s3.open_output_stream("evals/quiz.jsonl") as stream:
        stream.write("".join(json.dumps(row) + "\n" for row in QUIZ).encode())
    config = config_with(
        tmp_path, "[{name: quiz, path: 's3://evals/quiz.jsonl', fields: [question]}]", f"storage.endpoint={s3_server}"
    )
    (decontaminate,) = [s for s in spec.document_stages(config) if isinstance(s, Decontaminate)]
    assert run(decontaminate, [FILLER + QUESTION])[0]["reason"] == "contamination:quiz"


def test_near_detector_finds_an_edited_item_and_not_a_stranger(tmp_path):
    item = (
        "The committee approved the new bridge design after three years of public debate, two studies of "
        "river traffic and a long argument about the cost of steel against the cost of concrete"
    )
    edited = item.replace("three years", "four years").replace("long argument", "heated quarrel").upper()
    stranger = "Bridges of steel and concrete are debated in many towns, but this committee met only once."
    near = stage(tmp_path, [{"text": item}], fields=("text",), near_detector=True)
    ngram_only = stage(tmp_path, [{"text": item}], fields=("text",))
    texts = [FILLER * 3 + edited + ". " + FILLER * 3, FILLER * 3 + stranger + FILLER]
    rows = run(near, texts)
    assert rows[0]["reason"] == "contamination:quiz" and "near copy, containment" in rows[0]["detail"]
    assert rows[1]["stage"] is None
    assert run(ngram_only, texts)[0]["stage"] is None  # every 13-gram of it has an edit
    near_only = stage(tmp_path, [{"text": item}], fields=("text",), ngram_detector=False, near_detector=True)
    assert [row["stage"] for row in run(near_only, texts)] == ["contamination", None]


def test_the_stage_travels_as_settings(tmp_path):
    decontaminate = stage(tmp_path, QUIZ, near_detector=True)
    run(decontaminate, [FILLER + QUESTION])  # builds its index, kept in this process
    shipped = pickle.dumps(decontaminate)  # as Ray and Spark send it to their workers
    assert len(shipped) < 2000
    assert run(pickle.loads(shipped), [FILLER + QUESTION])[0]["reason"] == "contamination:quiz"


def test_word_spans_follow_the_normalized_words():
    texts = ["Ça va? Très bien—merci!", "tab\tand\u00a0nbsp\u2028line", "zero\u200bwidth", "ﬁne ＡＢＣ ¨x", "  ...  "]
    for text, spans in zip(texts, word_spans(texts)):
        assert len(spans) == word_counts(match_text([text]))[0], text


def test_the_hash_index_finds_every_owner_of_every_key():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    keys = np.concatenate([keys, keys[:100]])  # keys shared by two items
    owners = np.arange(len(keys), dtype=np.int32)
    queries = np.concatenate([keys[::7], rng.integers(0, 2**63, 3000, dtype=np.uint64)])
    query, owner = HashIndex(keys, owners).lookup(queries)
    expected = {(q, o) for q, key in enumerate(queries.tolist()) for o in np.flatnonzero(keys == key).tolist()}
    assert set(zip(query.tolist(), owner.tolist())) == expected and len(query) == len(expected)


def test_run_signatures_are_the_text_signatures():
    hasher = MinHasher(64, 5, 3)
    normalized = normalize(["one two three four five six seven", "tiny", "", FILLER])
    flat, counts = hasher.shingle_hashes(normalized)
    ends = np.cumsum(counts)
    assert (hasher.run_signatures(flat, ends - counts, ends) == hasher.signatures_of_normalized(normalized)).all()


def test_the_report_table_counts_documents_items_and_domains():
    manifest = {
        "stages": {"contamination": {"rows_in": 9}},
        "config": {
            "decontamination": {"eval_sets": [{"name": "quiz", "action": "reject"}, {"name": "news", "action": "mask"}]}
        },
    }
    rejects = pa.table(
        {
            "stage": ["contamination", "contamination", "quality"],
            "reason": ["contamination:quiz", "contamination:quiz,news", "quality:too_short"],
            "detail": ['quiz item q7 (13-gram): "..."', 'quiz item 1 (the whole item): "..."', None],
            "url": ["https://a.org/1", "https://www.b.co.uk/2", "https://a.org/3"],
        }
    )
    docs = pa.table(
        {
            "url": ["https://a.org/4", "https://c.org/5", "https://a.org/6"],
            "contamination_items": ["news:0,news:3", None, "news:0"],
        }
    )
    table = report._contamination(manifest, docs, rejects)
    assert '<td>quiz</td><td>reject</td><td class="n">2</td><td class="n">2</td><td>1, q7</td>' in table
    # news: two masked documents and one rejected by both sets (its detail names quiz's item only)
    assert '<td>news</td><td>mask</td><td class="n">3</td><td class="n">2</td><td>0, 3</td>' in table
    assert "<td>a.org (1), b.co.uk (1)</td>" in table and "<td>a.org (2), b.co.uk (1)</td>" in table


@pytest.mark.usefixtures("embedded_ray")
def test_the_belt_with_the_contamination_stage(tmp_path):
    quiz = jsonl(tmp_path / "quiz.jsonl", [{"id": "canyon-1", "question": CANYON, "answer": "downward"}])
    moons = jsonl(tmp_path / "moons.jsonl", [{"text": JUPITER}])
    eval_sets = (
        f"[{{name: quiz, path: '{quiz}', fields: [question, answer]}}, {{name: moons, path: '{moons}', action: mask}}]"
    )
    manifest = belt.run(config_with(tmp_path, eval_sets, "decontamination.near_detector=true"))
    assert manifest["invariants"] and all(manifest["invariants"].values()), manifest["invariants"]
    # the page and the fixture's copy of it on another site
    assert manifest["counts"]["rejected"]["contamination"] == 2
    assert manifest["stages"]["contamination"]["rejected"] == 2
    assert manifest["counts"]["rejected_by_reason"]["contamination:quiz"] == 2
    rejects = read_folder(tmp_path / "out" / "rejects")
    found = sorted((r["url"], r["detail"]) for r in rejects.to_pylist() if r["stage"] == "contamination")
    assert [url.rsplit("/", 1)[1] for url, _ in found] == [
        "slot-canyons-carved-by-floods",
        "how-slot-canyons-are-carved",
    ]
    assert all(detail.startswith('quiz item canyon-1 (13-gram): "Because the flash floods') for _, detail in found)
    docs = read_folder(tmp_path / "out" / "docs").to_pylist()
    masked = [row for row in docs if row["contamination_masked"]]
    assert masked and all(row["contamination_items"] == "moons:0" for row in masked)
    assert all("[contaminated]" in row["text"] and "January 1610" not in row["text"] for row in masked)
    assert not any("January 1610" in row["text"] for row in docs)
    report = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Contamination</h2>" in report and "canyon-1" in report


@needs_spark
@pytest.mark.usefixtures("embedded_ray")
@pytest.mark.slow
def test_the_same_bytes_on_spark(tmp_path):
    """The stage travels to Spark's Python workers as settings and builds its index there: reject, mask and the
    near detector give Ray's bytes."""
    quiz = jsonl(tmp_path / "quiz.jsonl", [{"id": "canyon-1", "question": CANYON}])
    moons = jsonl(tmp_path / "moons.jsonl", [{"text": JUPITER}])
    eval_sets = f"[{{name: quiz, path: '{quiz}', fields: [question]}}, {{name: moons, path: '{moons}', action: mask}}]"
    settings = ("decontamination.near_detector=true", "spark.master=local[2]")
    belt.run(config_with(tmp_path, eval_sets, *settings, output="ray"))
    manifest = belt.run(config_with(tmp_path, eval_sets, *settings, "engine=spark", output="spark"))
    assert manifest["counts"]["rejected"]["contamination"] == 2
    assert_same_output(tmp_path / "ray", tmp_path / "spark")


def read_folder(folder: Path) -> pa.Table:
    return pa.concat_tables([pq.read_table(p) for p in sorted(folder.glob("*.parquet"))])


def test_an_eval_set_with_a_bom_or_compressed_is_read(tmp_path):
    """A UTF-8 BOM (Windows tools write one) is no part of the first line; gzip and zstd are read as the
    readers read them; a cut zstd file is one line naming it."""
    from backports import zstd

    lines = "".join(json.dumps(row) + "\n" for row in QUIZ).encode()
    files = {
        "bom.jsonl": b"\xef\xbb\xbf" + lines,
        "quiz.jsonl.gz": gzip.compress(lines),
        "quiz.jsonl.zst": zstd.compress(b"\xef\xbb\xbf" + lines),
    }
    expected = read_items(EvalSet("x", jsonl(tmp_path / "plain.jsonl", QUIZ), ("question", "answer")))
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        assert read_items(EvalSet("x", str(tmp_path / name), ("question", "answer"))) == expected, name
    (tmp_path / "cut.jsonl.zst").write_bytes(files["quiz.jsonl.zst"][:-5])
    with pytest.raises(EvalSetError, match=r"cut.jsonl.zst' is not whole compressed data"):
        read_items(EvalSet("x", str(tmp_path / "cut.jsonl.zst"), ("question", "answer")))


def test_near_detector_with_items_shorter_than_its_window(tmp_path):
    """Questions of a few words are normal: with only short items the near detector runs (it crashed), and
    with the n-gram detector off a short item is still found, whole."""
    short = [{"text": "What is the capital of Mongolia?"}]
    page = FILLER + " What is the capital of Mongolia? " + FILLER
    both = stage(tmp_path, short, fields=("text",), near_detector=True)
    assert [row["reason"] for row in run(both, [page, FILLER])] == ["contamination:quiz", None]
    near_only = stage(tmp_path, short, fields=("text",), ngram_detector=False, near_detector=True)
    rows = run(near_only, [page, FILLER, "the capital of Mongolia is Ulaanbaatar"])
    assert [row["reason"] for row in rows] == ["contamination:quiz", None, None]
    assert "(the whole item)" in rows[0]["detail"], rows[0]["detail"]
