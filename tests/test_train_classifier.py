"""`train-classifier` (pipeline/train_classifier.py): fastText's own training and a transformers head, from
reference-against-crawl files and from labelled or scored records, held-out metrics, determinism, bad input in
one line, and the README's commands as written. The real labelled text is the main text of
../shared/realhtml's pages, English against other languages (the datasets' own language labels)."""

from __future__ import annotations

import json
import random
import re
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import ROOT, SHARED, cli
from tiny_models import bert_encoder

pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "fasttext-trainer" / "fasttext").is_dir(),
    reason="fastText's trainer is not installed (.venv/fasttext-trainer: bash scripts/setup.sh)",
)


@pytest.fixture(scope="module")
def paragraphs() -> dict[str, list[str]]:
    """300 English and 300 other paragraphs of real pages' main text (40 characters or more), shuffled."""
    path = SHARED / "realhtml" / "ground_truth.jsonl"
    if not path.exists():
        pytest.skip(f"../shared/realhtml not found: {path} is missing")
    found: dict[str, list[str]] = {"en": [], "other": []}
    for line in path.read_text().split("\n")[:-1]:  # not splitlines(): the texts hold U+2028
        page = json.loads(line)
        if page.get("main_text") and page.get("lang"):
            texts = [p.strip() for p in page["main_text"].split("\n") if len(p.strip()) >= 40]
            found["en" if page["lang"] == "en" else "other"] += texts
    for texts in found.values():
        random.Random(0).shuffle(texts)
    return {name: texts[:300] for name, texts in found.items()}


def write_lines(path, texts):
    path.write_text("\n".join(texts) + "\n")
    return str(path)


def metrics(folder):
    return json.loads((folder / "metrics.json").read_text())


def test_fasttext_from_reference_and_crawl_files_is_good_held_out_and_the_same_twice(tmp_path, paragraphs):
    english = write_lines(tmp_path / "en.txt", paragraphs["en"])
    other = write_lines(tmp_path / "other.txt", paragraphs["other"])
    args = ["--kind", "fasttext", "--positive", english, "--negative", other, "--epochs", "20"]
    first = cli("train-classifier", *args, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    held = metrics(tmp_path / "a")["held_out"]
    assert held["examples"] == 60 and metrics(tmp_path / "a")["trained_on"] == 540
    assert held["accuracy"] > 0.8 and held["macro_f1"] > 0.8 and held["auc"] > 0.85, held
    assert re.fullmatch(
        r"train-classifier: fasttext model in \S+, trained on 540 examples; held out: examples 60, accuracy "
        r"0\.\d+, macro_f1 0\.\d+, auc 0\.\d+\n",
        first.stdout,
    )
    again = cli("train-classifier", *args, "--out", str(tmp_path / "b"))
    assert again.returncode == 0 and metrics(tmp_path / "b") == metrics(tmp_path / "a")
    assert (tmp_path / "b" / "model.bin").read_bytes() == (tmp_path / "a" / "model.bin").read_bytes()
    other_seed = cli("train-classifier", *args, "--seed", "1", "--out", str(tmp_path / "c"))
    assert other_seed.returncode == 0 and metrics(tmp_path / "c") != metrics(tmp_path / "a")


@pytest.mark.slow
def test_a_transformers_head_from_labelled_records_and_from_scores(tmp_path, paragraphs):
    english, other = paragraphs["en"][:150], paragraphs["other"][:150]
    encoder = bert_encoder(tmp_path / "encoder", english + other)
    records = [{"text": t, "lang": "en"} for t in english] + [{"text": t, "lang": "xx"} for t in other]
    (tmp_path / "labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    common = ["--kind", "transformers", "--encoder", str(encoder), "--max-tokens", "32", "--lr", "1e-3"]
    done = cli(
        "train-classifier", *common, "--data", str(tmp_path / "labelled.jsonl"), "--label-field", "lang",
        "--out", str(tmp_path / "head"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    held = metrics(tmp_path / "head")["held_out"]
    assert held["examples"] == 30 and held["accuracy"] > 0.7 and held["auc"] > 0.75, held
    config = json.loads((tmp_path / "head" / "config.json").read_text())
    assert config["id2label"] == {"0": "en", "1": "xx"}

    # FineWeb-Edu's recipe: a numeric rating per text (here 4 for English, 1 for the rest), a regression head
    # on the frozen encoder, F1 at the cut 3; Parquet this time.
    scores = [4.0] * len(english) + [1.0] * len(other)
    pq.write_table(pa.table({"text": english + other, "edu": scores}), tmp_path / "rated.parquet")
    rated = [*common, "--data", str(tmp_path / "rated.parquet"), "--score-field", "edu", "--freeze", "--epochs", "2"]
    first = cli("train-classifier", *rated, "--out", str(tmp_path / "edu"))
    assert first.returncode == 0, first.stderr
    held = metrics(tmp_path / "edu")["held_out"]
    assert set(held) == {"examples", "mse", "cut", "f1_at_cut"} and held["cut"] == 3.0 and held["mse"] > 0
    again = cli("train-classifier", *rated, "--out", str(tmp_path / "edu2"))
    assert metrics(tmp_path / "edu2") == metrics(tmp_path / "edu")
    weights = "model.safetensors"
    assert (tmp_path / "edu2" / weights).read_bytes() == (tmp_path / "edu" / weights).read_bytes(), again.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    good = ROOT / "configs" / "classifier" / "good.txt"
    (tmp_path / "broken.jsonl").write_text('{"text": "one", "label": "a"}\n{"text": "two", "label": "b"}\nnot json\n')
    (tmp_path / "unlabelled.jsonl").write_text('{"text": "one"}\n')
    (tmp_path / "words.jsonl").write_text("".join(json.dumps({"text": "x", "s": "high"}) + "\n" for _ in range(5)))
    (tmp_path / "low.jsonl").write_text("".join(json.dumps({"text": f"x {i}", "s": 1}) + "\n" for i in range(5)))
    cases = [
        (["--data", str(tmp_path / "broken.jsonl"), "--label-field", "label"], r".*broken\.jsonl:3: not a JSON record \(.*\)"),
        (["--data", str(tmp_path / "unlabelled.jsonl"), "--label-field", "label"], r".*unlabelled\.jsonl:1: the record has no 'text' and 'label'"),
        (["--data", str(tmp_path / "words.jsonl"), "--score-field", "s"], r"--score-field 's': expected numbers, got 'high'"),
        (["--data", str(tmp_path / "low.jsonl"), "--score-field", "s"], r"5 examples with the labels cc: need at least 4, and two labels"),
        (["--data", str(tmp_path / "broken.jsonl")], r"--data needs --label-field \(labels\) or --score-field \(numeric scores\), one of them"),
        (["--positive", str(good)], r"give --positive and --negative files \(reference against crawl\), or --data"),
        (["--positive", str(good), "--negative", str(tmp_path / "missing.txt")], r".*missing\.txt: no such file"),
        (["--positive", str(good), "--negative", str(good), "--held-out", "1.5"], r"--held-out: expected a share in \(0, 1\), got 1\.5"),
    ]  # fmt: skip
    for arguments, message in cases:
        done = cli("train-classifier", "--kind", "fasttext", *arguments, "--out", str(tmp_path / "out"))
        assert done.returncode == 2 and done.stdout == "", (arguments, done.stderr)
        assert re.fullmatch(f"train-classifier: {message}\n", done.stderr), done.stderr
    (tmp_path / "a-file").write_text("")
    done = cli("train-classifier", "--kind", "fasttext", "--positive", str(good), "--negative", str(good),
               "--out", str(tmp_path / "a-file" / "model"))  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == f"train-classifier: {tmp_path / 'a-file' / 'model'}: Not a directory\n"
    done = cli("train-classifier", "--kind", "transformers", "--positive", str(good), "--negative", str(good),
               "--encoder", str(tmp_path), "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr == f"train-classifier: --encoder: {str(tmp_path)!r} is not a model folder (no config.json in it)\n"
    )


@pytest.mark.slow
def test_the_readme_commands_run_as_written():
    """README, "Your own quality classifier": train on the bundled examples, then run the belt with the model as
    a scorer; the examples it was trained on score as their labels say."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Your own quality classifier") :]
    (block,) = re.findall(r"```bash\n(.*?)```", section[: section.index("\n## ")], re.S)
    for folder in ("quality-fasttext", "scored"):
        subprocess.run(["rm", "-rf", str(ROOT / "out" / folder)], check=True)
    done = subprocess.run(["bash", "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    from stages.classifier import FastTextClassifier

    model = FastTextClassifier(ROOT / "out" / "quality-fasttext" / "model.bin", "__label__hq")
    good, bad = (
        (ROOT / "configs" / "classifier" / f"{name}.txt").read_text().split("\n")[0] for name in ("good", "bad")
    )
    assert model.score(good) > 0.5 > model.score(bad)
    manifest = json.loads((ROOT / "out" / "scored" / "manifest.json").read_text())
    assert (
        manifest["complete"]
        and "score_hq" in pq.read_schema(next((ROOT / "out" / "scored" / "docs").glob("*.parquet"))).names
    )
