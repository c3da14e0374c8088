"""The transformers scorer (stages/model_scorer.py): batched, sorted and padded inference gives each document's
own forward pass; in a belt it runs on a pool of actors, with the same output on 1 and 2 actors and on Spark."""

from __future__ import annotations

import functools
import json
import math
import re
from html import escape
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helpers import CONFIGS, FIXTURES, SPARK_SETTINGS, assert_complete, assert_same_output, ledger_table, spark_missing
from test_user_stages import base_config, output_bytes, run_cli, run_killed, slow_stage_files
from tiny_models import bert_scorer, examples, gpt2_scorer, rescaled_head

pytest.importorskip("transformers", reason="the classify extra (transformers) is not installed")

import torch  # noqa: E402  (after the skip)

from pipeline.config import ConfigError, RayConfig, ResourcesConfig, TransformersScorerConfig  # noqa: E402
from pipeline.config.load import load_config  # noqa: E402
from stages.classifier import CombineScores  # noqa: E402
from stages.model_scorer import TransformerScore, TransformerScorer, int_score, load_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def classifier(tmp_path_factory) -> Path:
    return bert_scorer(tmp_path_factory.mktemp("bert") / "model")


@pytest.fixture(scope="module")
def regression(tmp_path_factory) -> Path:
    return bert_scorer(tmp_path_factory.mktemp("bert") / "model", regression=True)


@pytest.fixture(scope="module")
def decoder(tmp_path_factory) -> Path:
    """A GPT-2 regression head whose tokenizer and config name no pad token."""
    return gpt2_scorer(tmp_path_factory.mktemp("gpt2") / "model")


def texts() -> list[str]:
    """Texts of many lengths: single examples, runs of them, one past max_tokens and one past max_chars."""
    good, bad = examples()
    lines = good + bad
    runs = [" ".join(lines[i : i + n]) for n, i in ((2, 0), (5, 3), (9, 1), (3, 7))]
    return [*lines, *runs, " ".join(lines * 3), "x" * 50 + " " + " ".join(lines * 10), ""]


@functools.cache
def plain_model(folder: Path) -> tuple:
    """The folder's tokenizer and model as transformers loads them, once per test session."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return tokenizer, AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).train(False)


def alone(folder: Path, text: str, max_chars: int, max_tokens: int) -> torch.Tensor:
    """The plain transformers forward pass of one text, with no batch and no padding."""
    tokenizer, model = plain_model(folder)
    with torch.inference_mode():
        encoded = tokenizer(text[:max_chars], truncation=True, max_length=max_tokens, return_tensors="pt")
        return model(**encoded).logits[0]


def test_batched_sorted_inference_gives_each_documents_own_forward_pass(classifier):
    scorer = TransformerScorer(str(classifier), max_chars=300, max_tokens=48, batch_size=3)
    scores, labels = scorer.score(texts())
    for text, score, label in zip(texts(), scores, labels):
        probabilities = torch.softmax(alone(classifier, text, 300, 48), dim=0)
        assert score == pytest.approx(float(probabilities[1]), abs=1e-5)
        assert label == ("high" if probabilities[1] > probabilities[0] else "low")
    assert len(set(scorer.tokenize(texts())[-2])) > 3 and len(scorer.tokenize(texts())[-2]) == 48  # cut at max_tokens


def test_the_trained_head_tells_good_from_bad_and_the_threshold_rejects(classifier):
    good, bad = examples()
    stage = TransformerScore(TransformerScorer(str(classifier)), "hq", threshold=0.5)
    out = stage(ledger_table(good + bad))
    scores = out["score_hq"].to_pylist()
    assert min(scores[: len(good)]) > 0.5 > max(scores[len(good) :])
    assert out["stage"].to_pylist() == [None] * len(good) + ["hq"] * len(bad)
    assert out["reason"].to_pylist()[-1] == "hq:below_threshold"
    assert set(out["label_hq"].to_pylist()) == {"high", "low"}


def test_a_regression_head_gives_its_output_and_the_rounded_score(regression):
    stage = TransformerScore(TransformerScorer(str(regression), label=None), "edu")
    out = stage(ledger_table(texts()))
    for text, score, rounded in zip(texts(), out["score_edu"].to_pylist(), out["int_score_edu"].to_pylist()):
        assert score == pytest.approx(float(alone(regression, text, 10_000, 128)[0]), abs=1e-5)  # its positions
        assert rounded == round(score)
    assert out.schema.field("int_score_edu").type.id != out.schema.field("score_edu").type.id


def padded_on(folder: Path, side: str, out: Path) -> Path:
    """A copy of a model folder whose tokenizer is saved with this padding side."""
    import shutil

    shutil.copytree(folder, out)
    settings = json.loads((out / "tokenizer_config.json").read_text())
    (out / "tokenizer_config.json").write_text(json.dumps({**settings, "padding_side": side}))
    assert load_tokenizer(str(out)).padding_side == side
    return out


@pytest.mark.parametrize("model", ["regression", "decoder"])
def test_scores_do_not_depend_on_the_batch_the_order_or_the_padding_side(model, request, tmp_path):
    """The same texts in batches of 1, of 3 and all at once, in their order and reversed, with the tokenizer
    saved with left and with right padding: the same scores, to 1e-5 (fp32 sums over batches of other widths
    differ in their last bits: 1.2e-7 measured), each the model's own forward pass of the text alone. Left
    padding used to shift BERT's positions (0.34 apart on this head); GPT-2's head reads the last token that is
    not its pad token, here its end token (its tokenizer has no pad token)."""
    folder = request.getfixturevalue(model)
    every = [text for text in texts() if text]  # the empty text: the next test
    reference = [float(alone(folder, text, 10_000, 128)[0]) for text in every]
    for side in ("left", "right"):
        saved = padded_on(folder, side, tmp_path / side)
        for batch_size in (1, 3, len(every)):
            scorer = TransformerScorer(str(saved), max_tokens=128, batch_size=batch_size)
            for order in (every, every[::-1]):
                scores = dict(zip(order, scorer.score(order)[0]))
                assert [scores[text] for text in every] == pytest.approx(reference, abs=1e-5), (side, batch_size)
    assert max(reference) - min(reference) > 0.5  # a head whose scores differ: the comparisons can fail


def test_a_decoder_without_a_pad_token_pads_with_its_end_token_and_an_empty_text_is_not_scored(decoder):
    """A text with no token (GPT-2's tokenizer gives "" none) has nothing to score: `NAME:no_tokens`."""
    assert load_tokenizer(str(decoder)).pad_token == "<|endoftext|>"
    assert json.loads((decoder / "config.json").read_text()).get("pad_token_id") is None
    out = TransformerScore(TransformerScorer(str(decoder), batch_size=4), "edu")(ledger_table(texts()))
    scores = out["score_edu"].to_pylist()
    assert texts()[-1] == "" and scores[-1] is None and out["reason"].to_pylist()[-1] == "edu:no_tokens"
    assert all(isinstance(score, float) for score in scores[:-1]) and set(out["reason"].to_pylist()[:-1]) == {None}
    assert out["int_score_edu"].to_pylist()[:-1] == [round(score) for score in scores[:-1]]
    good, bad = examples()
    assert min(scores[: len(good)]) > 0.5 > max(scores[len(good) : len(good) + len(bad)])  # it learnt


def fineweb_edu_int_score(score) -> int:
    """FineWeb-Edu's expression, from huggingface/cosmopedia classification/run_edu_bert.py (the scores of the
    fineweb-edu-classifier), over float32 logits as there."""
    return int(round(max(0, min(score, 5))))


BOUNDARY = [2.49, 2.5, 2.51, 5.7, -1.0, 3.5, 4.5, 0.5]


def test_int_score_is_fineweb_edus_and_int_threshold_keeps_what_fineweb_edu_keeps(regression, tmp_path):
    """int_range [0, 5]: FineWeb-Edu's int_score to the value (Python and numpy round half to even: 2.5 is 2),
    and int_threshold 3 keeps exactly its `int_score >= 3`, i.e. a score above 2.5, which `threshold: 2.5`
    (score >= 2.5) is not. A head whose every score is exactly 2.5 shows it through the model."""
    import numpy as np

    logits = np.array(BOUNDARY, dtype=np.float32)
    expected = [fineweb_edu_int_score(score) for score in logits]
    assert expected == [2, 2, 3, 5, 0, 4, 4, 0]
    scorer = TransformerScorer(str(regression), int_range=(0, 5))
    _, ints = scorer.scores_of(torch.tensor(logits).reshape(-1, 1))
    assert ints == expected
    assert [int_score(float(v)) for v in logits] == [2, 2, 3, 6, -1, 4, 4, 0]  # no int_range: not clamped
    # no whole number (or none an int64 column holds) without a range: null, as for NaN; clamped with one
    assert [int_score(v) for v in (math.inf, -math.inf, 1e30)] == [None, None, None]
    assert [int_score(v, (0, 5)) for v in (math.inf, -math.inf, 1e30)] == [5, 0, 5]
    stage = TransformerScore(scorer, "edu", int_threshold=3)
    kept = [stage.below(float(score), whole) is None for score, whole in zip(logits, ints)]
    assert kept == [whole >= 3 for whole in expected]
    assert stage.below(float("nan"), None) == "score NaN has no int_score (int_threshold 3)"

    half = rescaled_head(regression, tmp_path / "half", scale=0.0, shift=2.5)
    out = TransformerScore(TransformerScorer(str(half), int_range=(0, 5)), "edu", int_threshold=3)(
        ledger_table(["a b"])
    )
    assert out["score_edu"].to_pylist() == [2.5] and out["int_score_edu"].to_pylist() == [2]
    assert out["reason"].to_pylist() == ["edu:below_threshold"] and fineweb_edu_int_score(np.float32(2.5)) == 2
    assert out["detail"].to_pylist() == ["int_score 2 < 3 (score 2.500)"]


def entry(folder: Path, **settings) -> str:
    """A `stages` setting: the default belt with the transformers scorer last."""
    scorer = {"scorer": "hq", "kind": "transformers", "model": str(folder), "max_tokens": 64, **settings}
    return "stages=[extract, language, quality, repetition, " + json.dumps(scorer) + "]"


BELT = ["classifier.kind=none", *SPARK_SETTINGS]
NO_DEDUP = ["dedup.exact=false", "dedup.near=false"]  # every document the scorer keeps is in docs/
CRAWL = sorted(str(p) for p in (FIXTURES / "warc").iterdir())


@pytest.mark.slow
def test_the_belt_scores_on_a_pool_of_actors_the_same_on_1_and_2_actors(tmp_path, run_here, classifier):
    """One actor scores every document; two actors, with the median score as threshold, keep exactly the
    documents at or above it, with the same scores to the bit."""
    run_here(CONFIGS / "local.yaml", tmp_path / "one", [*BELT, *NO_DEDUP, entry(classifier)], CRAWL)
    docs = pq.read_table(tmp_path / "one" / "docs").to_pylist()
    assert docs and all(doc["label_hq"] in ("low", "high") for doc in docs)
    for doc in docs[:5]:  # the score of the text kept: the scorer is the belt's last per-document stage
        own = torch.softmax(alone(classifier, doc["text"], 10_000, 64), dim=0)[1]
        assert doc["score_hq"] == pytest.approx(float(own), abs=1e-5)
    median = sorted(doc["score_hq"] for doc in docs)[len(docs) // 2]
    two = [*BELT, *NO_DEDUP, entry(classifier, threshold=median, concurrency=2)]
    run_here(CONFIGS / "local.yaml", tmp_path / "two", two, CRAWL)
    manifest = assert_complete(tmp_path / "two")
    kept = pq.read_table(tmp_path / "two" / "docs").to_pylist()
    assert [(d["id"], d["score_hq"]) for d in kept] == [
        (d["id"], d["score_hq"]) for d in docs if d["score_hq"] >= median
    ]
    below = sum(doc["score_hq"] < median for doc in docs)
    assert below and manifest["counts"]["rejected_by_reason"]["hq:below_threshold"] == below
    assert manifest["stages"]["hq"]["rows_in"] == len(docs) and manifest["stages"]["hq"]["seconds"] > 0

    # What the scorer dropped (pipeline/passes/scores.py), in the manifest and the report: every scored document
    # counted once per source, language and domain; the nearest kept and rejected documents are the ones
    # with the lowest score at or above the threshold and the highest below it.
    seen = manifest["scorers"]["hq"]
    assert seen["scored"] == len(docs) and seen["rejected"] == below and seen["threshold"] == median
    assert sum(sum(source["counts"]) for source in seen["by_source"].values()) == len(docs)
    assert sum(n for n, _ in seen["by_language"].values()) == len(docs)
    assert sum(out for _, out in seen["by_language"].values()) == below
    scores = sorted(doc["score_hq"] for doc in docs)
    near = seen["near_threshold"]
    # the manifest keeps 6 decimals
    assert [doc["score_hq"] for doc in near["above"]] == pytest.approx([s for s in scores if s >= median][:3], abs=1e-6)
    assert [doc["score_hq"] for doc in near["below"]] == pytest.approx(
        [s for s in scores if s < median][::-1][:3], abs=1e-6
    )
    page = (tmp_path / "two" / "report.html").read_text()
    assert "<h2>Scorers</h2>" in page and all(escape(doc["url"]) in page for doc in near["above"] + near["below"])


@pytest.mark.slow
def test_the_documented_scorer_runs_as_written_and_its_gpu_is_refused_here(tmp_path, run_here, regression):
    """docs/stages.md's transformers scorer, its model folder replaced by a small regression head on FineWeb-Edu's
    0 to 5 scale: on this machine (no GPU) its `num_gpus: 1` is refused in one line before any work; with
    `num_gpus: 0` the belt runs it on a pool of four CPU actors (Ray Data starts the two that this machine's two
    CPUs hold), and it keeps what FineWeb-Edu keeps: int_score >= 3 by FineWeb-Edu's own expression."""
    import numpy as np

    from test_user_stages import doc_blocks

    (documented,) = [block for block in doc_blocks("yaml") if "kind: transformers" in block]
    # the head scores the crawl's pages 0.25 to 0.47; on FineWeb-Edu's scale, about 0.3 to 4.7
    edu = rescaled_head(regression, tmp_path / "edu", scale=20.0, shift=-4.7)
    stages = yaml.safe_load(documented.replace("models/edu-bert", str(edu)))["stages"]
    assert stages[-1]["int_range"] == [0, 5] and stages[-1]["int_threshold"] == 3
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the refusal is for one without")
    settings = [*BELT, f"stages={json.dumps(stages)}"]
    with pytest.raises(ConfigError, match=r"^stages\[4\]\.num_gpus: a task asks for 1 GPU, which no node"):
        run_here(CONFIGS / "local.yaml", tmp_path / "gpu", settings, CRAWL)
    assert not (tmp_path / "gpu" / "docs").exists()
    stages[-1].update(num_gpus=0)
    run_here(CONFIGS / "local.yaml", tmp_path / "cpu", [*BELT, f"stages={json.dumps(stages)}"], CRAWL)
    manifest = assert_complete(tmp_path / "cpu")
    docs = pq.read_table(tmp_path / "cpu" / "docs").to_pylist()
    assert docs and all(
        doc["int_score_edu"] == fineweb_edu_int_score(np.float32(doc["score_edu"])) >= 3 for doc in docs
    )
    seen = manifest["scorers"]["edu"]  # what it rejected, and the documents each side of int_score 3
    assert seen["column"] == "int_score_edu" and seen["threshold"] == 3
    assert seen["rejected"] == manifest["counts"]["rejected_by_reason"]["edu:below_threshold"] > 0
    assert [doc["int_score_edu"] >= 3 for side in ("above", "below") for doc in seen["near_threshold"][side]] == [
        True
    ] * len(seen["near_threshold"]["above"]) + [False] * len(seen["near_threshold"]["below"])
    assert manifest["stages"]["edu"]["rows_in"] >= len(docs) > 0


@pytest.mark.slow  # about 15 s or more side by side: out of the quick loop
def test_a_rerun_redoes_only_the_files_without_a_part_of_the_scorer_step(tmp_path, embedded_ray, classifier):
    """What a run killed in the scorer's step leaves: every file through the other stages, some through the
    scorer. The rerun scores only the others, and their parts are the ones an unbroken run writes."""
    from pipeline.passes import filtering

    config = load_config(str(CONFIGS / "local.yaml"), overrides=[*BELT, entry(classifier)], inputs=CRAWL, output="o")
    files = filtering.input_files(config)
    folder = tmp_path / "filtered"
    filtering.run(config, files, folder)
    parts = sorted(folder.glob("*.parquet"))
    assert len(parts) == len(files) > 1 and len(list(filtering.step_folder(folder, 0).glob("*.parquet"))) == len(files)
    written = {part.name: (part.read_bytes(), part.stat().st_mtime_ns) for part in parts}
    parts[0].unlink()
    seconds = filtering.run(config, files, folder)
    assert set(seconds["stages"]) == {"hq"}  # the first step had every file: only the scorer ran
    for part in parts:
        assert part.read_bytes() == written[part.name][0]
        assert (part.stat().st_mtime_ns == written[part.name][1]) == (part != parts[0])


@pytest.mark.slow
def test_a_run_killed_in_the_scorer_step_resumes_with_the_bytes_of_an_unbroken_one(tmp_path, classifier):
    """Killed -9 while the actors score (a slow user stage listed after the scorer runs in its step), then run
    again: the files already through the step are kept, and the output is the unbroken run's, byte for byte."""
    outside, inputs = slow_stage_files(tmp_path)
    scorer = {"scorer": "hq", "kind": "transformers", "model": str(classifier), "threshold": 0.5}

    def config(name: str, wait_s: float) -> Path:
        slow = {"use": "my_slow_stage:Slow", "with": {"wait_s": wait_s}}
        raw = base_config([str(inputs)], tmp_path / name, stages=["language", scorer, slow, "quality"])
        raw["read"] = {"batch_size": 5}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(raw))
        return tmp_path / f"{name}.yaml"

    whole = run_cli(["run", str(config("whole", 0.0))], tmp_path, outside)
    assert whole.returncode == 0, whole.stderr[-3000:]
    scored = tmp_path / "killed" / "_work" / "filtered"
    run_killed(config("killed", 0.3), tmp_path, outside, scored)
    assert len(list(scored.glob("file-*.parquet"))) < 6, "the kill came too late to test resume"
    again = run_cli(["run", str(config("killed", 0.3))], tmp_path, outside)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = re.search(
        r"resume: (\d+) of 6 files already through the filter pass \(step 2 of 2, from hq\)", again.stderr
    )
    assert resumed and 2 <= int(resumed[1]) < 6, again.stderr[-3000:]
    assert "resume: 6 of 6 files already through the filter pass (step 1 of 2, from language)" in again.stderr
    assert output_bytes(tmp_path / "killed") == output_bytes(tmp_path / "whole")
    manifest = json.loads((tmp_path / "killed" / "manifest.json").read_text())
    assert manifest["counts"]["rejected_by_reason"].get("slow:odd") and all(manifest["invariants"].values())


EXITS = """
import os


class Exits:
    \"\"\"Ends its process on the crawl's pages (not on the probe batch a config check runs it on).\"\"\"

    def __call__(self, batch):
        if any("river" in text for text in batch["text"].to_pylist()):
            os._exit(1)
        return {}
"""


@pytest.mark.slow
def test_a_stage_that_kills_its_actor_every_time_stops_the_run_in_one_line(tmp_path, classifier):
    """Ray Data would restart the actor and retry for ever; the run stops after a bounded number of tries."""
    outside, inputs = slow_stage_files(tmp_path)
    (outside / "my_exit_stage.py").write_text(EXITS)
    scorer = {"scorer": "hq", "kind": "transformers", "model": str(classifier)}
    raw = base_config([str(inputs)], tmp_path / "out", stages=["language", scorer, {"use": "my_exit_stage:Exits"}])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    done = run_cli(["run", str(tmp_path / "c.yaml")], tmp_path, outside)
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("stage error: a stage of the step hq, exits ended its actor process"), last
    assert "Traceback" not in done.stderr and not (tmp_path / "out" / "docs").exists()


@pytest.mark.slow
def test_a_model_whose_weights_do_not_load_stops_the_run_in_one_line(tmp_path, classifier):
    import shutil

    broken = shutil.copytree(classifier, tmp_path / "broken")
    (broken / "model.safetensors").write_bytes((broken / "model.safetensors").read_bytes()[:1000])  # cut short
    scorer = {"scorer": "hq", "kind": "transformers", "model": str(broken)}
    crawl = sorted(str(p) for p in (FIXTURES / "warc").iterdir())[:1]
    raw = base_config(crawl, tmp_path / "out", stages=["extract", "language", scorer])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    done = run_cli(["run", str(tmp_path / "c.yaml")], tmp_path, tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == (  # refused before any work (stages/model_files.py)
        f"config error: stages[2].model: the model in {broken} may not load: model.safetensors: not a safetensors "
        "file (its header's length does not fit the file)"
    ), last
    assert "Traceback" not in done.stderr and not (tmp_path / "out" / "docs").exists()


@pytest.mark.slow
def test_the_same_output_on_spark(tmp_path, run_here, classifier, decoder):
    """A classifier, then a GPT-2 head without a pad token judged by its int score: the same bytes on both."""
    if reason := spark_missing():
        pytest.skip(reason)
    gpt2 = {"scorer": "edu", "kind": "transformers", "model": str(decoder), "int_range": [0, 5], "int_threshold": 1}
    stages = entry(classifier).removesuffix("]") + ", " + json.dumps(gpt2) + "]"
    manifest = run_here(CONFIGS / "local.yaml", tmp_path / "ray", [*BELT, stages], CRAWL)
    run_here(CONFIGS / "local.yaml", tmp_path / "spark", [*BELT, stages, "engine=spark"], CRAWL)
    assert_same_output(tmp_path / "ray", tmp_path / "spark")
    assert manifest["counts"]["rejected_by_reason"].get("edu:below_threshold")  # it judged some


def test_a_gpu_no_node_has_is_refused_in_one_line_before_any_work(embedded_ray):
    from pipeline.engines.engine_ray import check_resources

    pool = {"stages[4]": TransformersScorerConfig(model="m", num_gpus=1)}
    with pytest.raises(ConfigError) as error:
        check_resources(ResourcesConfig(), RayConfig(), pool)
    assert re.fullmatch(
        r"stages\[4\]\.num_gpus: a task asks for 1 GPU, which no node of the cluster has \(cluster: 1 node of 2 CPUs "
        r"and [\d,]+ MB of memory\)",
        str(error.value),
    ), str(error.value)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"model": "nowhere"}, r"stages\[4\]\.model: '.*nowhere' is not a model folder \(no config\.json in it\)"),
        (
            {"model": str(CONFIGS / "local.yaml")},
            r"stages\[4\]\.model: '.*local\.yaml' is not a model folder \(a file: give its folder\)",
        ),
        ({"label": "best"}, r"stages\[4\]\.label: 'best' is not a label of '.*' \(it has the labels low, high\)"),
        ({"batch_size": 0}, r"stages\[4\]\.batch_size: expected a whole number above 0, got 0"),
        ({"num_gpus": -1}, r"stages\[4\]\.num_gpus: expected GPUs, 0 or more, got -1"),
        ({"max_token": 5}, r"unknown key 'stages\[4\]\.max_token' \(known here: kind, model, label, threshold, "),
    ],
)
def test_a_bad_scorer_entry_is_refused_naming_its_key(classifier, settings, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        load_config(str(CONFIGS / "local.yaml"), overrides=[entry(classifier, **settings)], output=str(tmp_path / "o"))


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"int_range": [5, 0]}, r"stages\[4\]\.int_range: expected \[LOW, HIGH\], two whole numbers with LOW <= HIGH, each within ±2\*\*62, got \[5, 0\]$"),
        ({"int_range": [0]}, r"stages\[4\]\.int_range: expected \[LOW, HIGH\], two whole numbers with LOW <= HIGH, each within ±2\*\*62, got \[0\]$"),
        ({"int_range": [0, 10**23]}, r"stages\[4\]\.int_range: expected \[LOW, HIGH\], two whole numbers with LOW <= HIGH, each within ±2\*\*62, got \[0, 100000000000000000000000\]$"),
        ({"int_range": [0, 5.5]}, r"stages\[4\]\.int_range\[1\]: expected int, got float 5\.5"),
        ({"int_range": "0..5"}, r"stages\[4\]\.int_range: expected a list, got str '0\.\.5'"),
        ({"int_threshold": 2.5}, r"stages\[4\]\.int_threshold: expected int, got float 2\.5"),
        ({"int_threshold": 3, "threshold": 2.5}, r"stages\[4\]\.int_threshold: give threshold \(on score_hq\) or int_threshold \(on int_score_hq\), not both$"),
        ({"int_range": [0, 5], "int_threshold": 6}, r"stages\[4\]\.int_threshold: 6 is outside int_range \[0, 5\] \(every int_score_hq is in it, so it would keep every document or none\)$"),
    ],
)  # fmt: skip
def test_a_bad_int_range_or_int_threshold_is_refused_naming_its_key(regression, settings, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        load_config(str(CONFIGS / "local.yaml"), overrides=[entry(regression, **settings)], output=str(tmp_path / "o"))


def test_int_range_on_a_classifier_is_refused_in_one_line(classifier, tmp_path):
    with pytest.raises(
        ConfigError, match=r"^stages\[4\]\.int_range: '.*' is a classifier, which adds label_hq, no int "
    ):
        load_config(str(CONFIGS / "local.yaml"), overrides=[entry(classifier, int_range=[0, 5])], output=str(tmp_path))


def test_gpus_on_spark_are_refused_in_one_line(classifier, tmp_path):
    with pytest.raises(ConfigError, match=r"^stages\[4\]\.num_gpus: on engine: spark the transformers scorer runs"):
        load_config(
            str(CONFIGS / "local.yaml"), overrides=["engine=spark", entry(classifier, num_gpus=1)], output=str(tmp_path)
        )


def test_combine_takes_the_max_mean_or_min_and_its_threshold_rejects():
    batch = ledger_table(["a", "b", "c"], score_x=[0.2, 0.9, float("nan")], int_score_y=pa.array([1, 0, 1], pa.int64()))
    for how, expected in (("max", [1.0, 0.9]), ("mean", [0.6, 0.45]), ("min", [0.2, 0.0])):
        out = CombineScores("best", ["score_x", "int_score_y"], how, threshold=0.5)(batch)
        assert out["score_best"].to_pylist()[:2] == pytest.approx(expected)
        assert out["stage"].to_pylist() == [None if e >= 0.5 else "best" for e in expected] + ["best"]  # NaN: out


@pytest.mark.slow
def test_two_transformers_scorers_their_ensemble_and_the_stages_after_them(tmp_path, run_here, classifier, regression):
    """Nemotron-CC's ensemble: two model scorers, each on its pool, their max as one score; with the median of
    that score as its threshold, the rule stages listed after them run, in the last scorer's step, on what
    the ensemble kept, and the documents kept are the score-only run's at or above the median."""
    a = {"scorer": "a", "kind": "transformers", "model": str(classifier)}
    b = {"scorer": "b", "kind": "transformers", "model": str(regression), "concurrency": 2}

    def run(name: str, threshold: float | None) -> tuple[dict, list[dict]]:
        best = {
            "scorer": "best",
            "kind": "combine",
            "scores": ["score_a", "score_b"],
            "how": "max",
            "threshold": threshold,
        }
        stages = (
            f"stages=[extract, language, {json.dumps(a)}, {json.dumps(b)}, {json.dumps(best)}, quality, repetition]"
        )
        manifest = run_here(CONFIGS / "local.yaml", tmp_path / name, [*BELT, *NO_DEDUP, stages], CRAWL)
        return manifest, pq.read_table(tmp_path / name / "docs").to_pylist()

    _, scored = run("scored", None)
    assert scored and all(doc["score_best"] == max(doc["score_a"], doc["score_b"]) for doc in scored)
    median = sorted(doc["score_best"] for doc in scored)[len(scored) // 2]
    manifest, kept = run("kept", median)
    assert [doc["id"] for doc in kept] == [doc["id"] for doc in scored if doc["score_best"] >= median]
    counts = manifest["stages"]
    assert counts["best"]["rejected"] >= sum(doc["score_best"] < median for doc in scored) > 0
    assert counts["quality"]["rows_in"] == counts["a"]["rows_in"] - counts["best"]["rejected"]


@pytest.mark.parametrize(
    "combine, message",
    [
        ({"scores": ["score_hq", "score_nope"]}, r"stages\[5\]\.scores: 'score_nope' is not a number column an earlier stage adds \(they add: lang_score, score_hq\)"),
        ({"scores": ["score_hq", "label_hq"]}, r"stages\[5\]\.scores: 'label_hq' is not a number column"),
        ({"scores": ["score_hq"]}, r"stages\[5\]\.scores: expected the names of two or more score columns"),
        ({"scores": ["score_hq", "score_hq"], "how": "median"}, r"stages\[5\]\.how: expected one of max, mean, min, got 'median'"),
    ],
)  # fmt: skip
def test_a_bad_combine_entry_is_refused_naming_its_key(classifier, combine, message, tmp_path):
    scorer = json.dumps({"scorer": "hq", "kind": "transformers", "model": str(classifier)})
    entry_ = json.dumps({"scorer": "best", "kind": "combine", **combine})
    stages = f"stages=[extract, language, quality, repetition, {scorer}, {entry_}]"
    with pytest.raises(ConfigError, match=message):
        load_config(str(CONFIGS / "local.yaml"), overrides=[stages], output=str(tmp_path))
