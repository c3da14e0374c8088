"""`train-classifier` (pipeline/train_classifier.py): fastText's own training and a transformers head, from
reference-against-crawl files and from labelled or scored records, held-out metrics, determinism, bad input in
one line, and the README's commands as written. The real labelled text is the main text of
../shared/realhtml's pages, English against other languages (the datasets' own language labels)."""

from __future__ import annotations

import json
import shutil
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

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


@pytest.mark.slow  # about 15 s or more side by side: out of the quick loop
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
    # an encoder whose tokenizer was saved padding on the left trains as the scorer scores: padded on the right
    left = shutil.copytree(encoder, tmp_path / "left")
    settings = json.loads((left / "tokenizer_config.json").read_text()) | {"padding_side": "left"}
    (left / "tokenizer_config.json").write_text(json.dumps(settings))
    rated[rated.index("32")] = "256"  # texts of different lengths: batches are padded
    padded_right = cli("train-classifier", *rated, "--out", str(tmp_path / "right"))
    rated[rated.index(str(encoder))] = str(left)
    padded_left = cli("train-classifier", *rated, "--out", str(tmp_path / "left-head"))
    assert padded_right.returncode == 0 and padded_left.returncode == 0, padded_left.stderr
    assert (tmp_path / "left-head" / weights).read_bytes() == (tmp_path / "right" / weights).read_bytes()


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    good, bad = (ROOT / "configs" / "classifier" / f"{name}.txt" for name in ("good", "bad"))
    (tmp_path / "broken.jsonl").write_text('{"text": "one", "label": "a"}\n{"text": "two", "label": "b"}\nnot json\n')
    (tmp_path / "unlabelled.jsonl").write_text('{"text": "one"}\n')
    (tmp_path / "words.jsonl").write_text("".join(json.dumps({"text": "x", "s": "high"}) + "\n" for _ in range(5)))
    (tmp_path / "low.jsonl").write_text("".join(json.dumps({"text": f"x {i}", "s": 1}) + "\n" for i in range(5)))
    cases = [
        (["--data", str(tmp_path / "broken.jsonl"), "--label-field", "label"], r".*broken\.jsonl:3: not JSON \(.*\)"),
        (["--data", str(tmp_path / "unlabelled.jsonl"), "--label-field", "label"], r".*unlabelled\.jsonl:1: the record has no 'text' and 'label'"),
        (["--data", str(tmp_path / "words.jsonl"), "--score-field", "s"], r".*words\.jsonl:1: --score-field 's' is 'high', not a number"),
        (["--data", str(tmp_path / "low.jsonl"), "--score-field", "s"], r"5 examples with the labels cc: need at least 4, and two labels"),
        (["--data", str(tmp_path / "broken.jsonl")], r"--data needs --label-field \(labels\) or --score-field \(numeric scores\), one of them"),
        (["--positive", str(good)], r"give --positive and --negative files \(reference against crawl\), or --data"),
        (["--positive", str(good), "--negative", str(tmp_path / "missing.txt")], r".*missing\.txt: no such file"),
        (["--positive", str(good), "--negative", str(good), "--held-out", "1.5"], r"--held-out: expected a share in \(0, 1\), got 1\.5"),
    ]  # fmt: skip
    for arguments, message in cases:
        done = cli_here(capsys, "train-classifier", "--kind", "fasttext", *arguments, "--out", str(tmp_path / "out"))
        assert done.returncode == 2 and done.stdout == "", (arguments, done.stderr)
        assert re.fullmatch(f"train-classifier: {message}\n", done.stderr), done.stderr
    (tmp_path / "a-file").write_text("")
    done = cli("train-classifier", "--kind", "fasttext", "--positive", str(good), "--negative", str(good),
               "--out", str(tmp_path / "a-file" / "model"))  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr
        == f"train-classifier: --out {tmp_path / 'a-file' / 'model'}: {tmp_path / 'a-file'} is not a folder\n"
    )
    done = cli("train-classifier", "--kind", "transformers", "--positive", str(good), "--negative", str(bad),
               "--encoder", str(tmp_path / "no-model"), "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        f"train-classifier: --encoder: {str(tmp_path / 'no-model')!r} is not a model folder (no config.json in it)\n"
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


# ---------------------------------------------------------------------------------------------
# Issue 46: mistakes get one line, hostile files stay bounded, --out is replaced only when it is ours.


def words(i: int, tag: str) -> str:
    return f"{tag} example {i} of {tag} words {i * 7 % 13} {tag}"


def jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return str(path)


def labelled(path, labels):
    """A JSONL file of one record per label value, each with its own text."""
    return jsonl(path, [{"text": words(i, "t"), "label": label} for i, label in enumerate(labels)])


def cli_here(capsys, *args: str) -> subprocess.CompletedProcess:
    """`python -m pipeline ARGS` in this process: for commands that end before any training (no process start)."""
    from pipeline.cli import main

    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def one_line(done, message: str) -> None:
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert re.fullmatch(f"train-classifier: {message}\n", done.stderr), done.stderr


def test_hostile_examples_and_options_are_one_line_naming_file_and_row(tmp_path, capsys):
    good, bad = write_lines(tmp_path / "good.txt", [words(i, "g") for i in range(6)]), None
    bad = tmp_path / "bad.txt"
    bad.write_text("".join(words(i, "b") + "\n" for i in range(6)) + "word " * 2_000_001 + "\n")
    many = jsonl(tmp_path / "many.jsonl", [{"text": words(i, "t"), "label": f"l{i % 1001}"} for i in range(2002)])
    cases = [
        (["--positive", good, "--negative", str(bad)], r".*bad\.txt:7: a line of 10000005 bytes, over the 10000000-byte limit"),
        (["--positive", good, "--negative", good], r".*good\.txt: given as --positive and as --negative"),
        (["--positive", good, "--negative", str(bad), "--seed", "-1"], r"--seed: expected an integer from 0 to 2147483647, got -1"),
        (["--data", many, "--label-field", "label"], r"1001 labels, over the 1000 a classifier may have \(--label-field 'label'\)"),
    ]  # fmt: skip
    for value, shown in (
        (None, "null"),
        (["a"], "an array"),
        (1.5, "a number with a fraction"),
        (True, "true or false"),
    ):
        path = labelled(tmp_path / f"{shown.replace(' ', '-')}.jsonl", ["a", "b", "a", value, "b"])
        cases.append(
            (
                ["--data", path, "--label-field", "label"],
                rf".*\.jsonl:4: --label-field 'label' is {shown}; a label is a string or an integer",
            )  # fmt: skip
        )
    tabbed = labelled(tmp_path / "tabbed.jsonl", ["a", "b", "a\tc", "b"])
    cases.append((["--data", tabbed, "--label-field", "label"], r".*tabbed\.jsonl:3: the label 'a\\tc' holds white space; a label is one word"))  # fmt: skip
    four = labelled(tmp_path / "four.jsonl", ["a", "b", "a", "b"])
    cases.append((["--data", four, "--label-field", "label", "--held-out", "0.9"], r"--held-out 0\.9 leaves 0 of 4 examples to train on, with 0 labels: training needs two labels"))  # fmt: skip
    for arguments, message in cases:
        done = cli_here(capsys, "train-classifier", "--kind", "fasttext", *arguments, "--out", str(tmp_path / "out"))
        one_line(done, message)
        assert not (tmp_path / "out").exists()


def test_integer_labels_are_their_digits_and_a_one_label_training_share_is_one_line(tmp_path):
    from pipeline import train_classifier

    texts = [words(i, "a") for i in range(3)] + ["the same b text"] * 3
    seed = next(seed for seed in range(100) if all(texts[i] != "the same b text" for i in train_classifier.split(texts, 0.5, seed)[0]))  # fmt: skip
    path = jsonl(tmp_path / "one.jsonl", [{"text": t, "label": 1 if t.startswith("a") else 2} for t in texts])
    done = cli("train-classifier", "--kind", "fasttext", "--data", path, "--label-field", "label", "--held-out", "0.5",
               "--seed", str(seed), "--out", str(tmp_path / "out"))  # fmt: skip
    one_line(done, r"--held-out 0\.5 leaves [23] of 6 examples to train on, with 1 labels: training needs two labels")


def test_the_held_out_split_keeps_identical_texts_on_one_side():
    from pipeline.train_classifier import split

    texts = [f"text {i % 40}" for i in range(200)] + [f"text {i}  " for i in range(40, 60)]
    for seed in range(5):
        train, held = split(texts, 0.1, seed)
        assert sorted([*train, *held]) == list(range(len(texts)))
        assert not {" ".join(texts[i].split()) for i in train} & {" ".join(texts[i].split()) for i in held}
        assert 22 <= len(held) <= 27  # a tenth, and the rest of the last held text's copies
    assert split(texts, 0.1, 0)[1].tolist() != split(texts, 0.1, 1)[1].tolist()


def test_fasttext_trains_on_the_text_its_scorer_sees_and_predicts_once_a_text(monkeypatch, tmp_path):
    import numpy as np

    from pipeline import train_classifier
    import stages.classifier
    import stages.langid

    assert (
        train_classifier.fasttext_line("cc", "caf\u00e9\u00a0menu\r\nnext\tline")
        == "__label__cc caf\u00e9\u00a0menu  next\tline\n"
    )
    calls = []

    def predict(model, text, k=1):
        calls.append(text)
        return [("a", 0.75), ("b", 0.25)]

    for module in (stages.langid, stages.classifier):
        monkeypatch.setattr(module, "fasttext_predict", predict)
        monkeypatch.setattr(module, "load_fasttext_model", lambda path: object())
    probabilities = train_classifier.fasttext_predictions(tmp_path / "model.bin", ["x", "y"], ["a", "b", "c"])
    assert np.array_equal(probabilities, [[0.75, 0.25, 0.0]] * 2) and calls == ["x", "y"]


def test_label_metrics_match_a_count_by_hand():
    import numpy as np

    from pipeline.train_classifier import auc, label_metrics

    truth, predicted = ["a", "a", "b", "c", "c"], ["a", "b", "b", "c", "a"]
    probabilities = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.5, 0.2, 0.3]])
    held = label_metrics(truth, predicted, probabilities, ["a", "b", "c"])
    f1s = [2 * 1 / (2 + 1 + 1), 2 * 1 / (2 + 1 + 0), 2 * 1 / (2 + 0 + 1)]
    assert held["accuracy"] == 3 / 5 and held["macro_f1"] == pytest.approx(sum(f1s) / 3)
    assert auc([True, False, True, False], np.array([0.5, 0.5, 0.9, 0.1])) == pytest.approx(0.875)  # a tie is half


@pytest.mark.slow  # about 15 s or more side by side: out of the quick loop
def test_data_reads_only_its_columns_and_jsonl_as_the_belt_does(tmp_path):
    """A Parquet file of 2 KB whose unused column inflates to 4 GB reads in a few MB; .jsonl.gz, .ndjson and
    .json are JSON lines, gzip and zstd told by their bytes."""
    import gzip

    rows = 160
    bomb = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x" * (25 << 20)]))
    texts, labels = [words(i, "t") for i in range(rows)], ["a", "b"] * (rows // 2)
    pq.write_table(pa.table({"text": texts, "label": labels, "bomb": bomb}), tmp_path / "bomb.parquet", compression="zstd")  # fmt: skip
    code = (
        "import sys, argparse, pyarrow as pa; from pipeline.train_classifier import load_examples; "
        f"e = load_examples(argparse.Namespace(data=[{str(tmp_path / 'bomb.parquet')!r}], text_field='text', "
        "label_field='label', score_field=None, positive=None, negative=None)); "
        "print(len(e.texts), e.labels[:3], pa.default_memory_pool().max_memory())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    count, first, second, third, peak = done.stdout.replace(",", " ").replace("[", " ").replace("]", " ").split()
    assert (count, first, second, third) == ("160", "'a'", "'b'", "'a'") and int(peak) < 20_000_000, done.stderr

    with gzip.open(tmp_path / "good.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"body": words(i, "g")}) + "\n" for i in range(10))
    jsonl(tmp_path / "bad.ndjson", [{"body": words(i, "b")} for i in range(10)])
    done = cli("train-classifier", "--kind", "fasttext", "--positive", str(tmp_path / "good.jsonl.gz"), "--negative",
               str(tmp_path / "bad.ndjson"), "--text-field", "body", "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 0 and metrics(tmp_path / "out")["trained_on"] == 18, done.stderr
    labelled(tmp_path / "data.json", ["a", "b", 3, 3, "b", "a"])
    done = cli("train-classifier", "--kind", "fasttext", "--data", str(tmp_path / "data.json"), "--label-field",
               "label", "--out", str(tmp_path / "out2"))  # fmt: skip
    assert done.returncode == 0 and metrics(tmp_path / "out2")["trained_on"] == 5, done.stderr


@pytest.mark.slow  # about 15 s or more side by side: out of the quick loop
def test_out_is_replaced_only_when_it_is_a_model_folder_it_wrote(tmp_path):
    good, bad = (write_lines(tmp_path / f"{tag}.txt", [words(i, tag) for i in range(6)]) for tag in ("g", "b"))
    args = ["train-classifier", "--kind", "fasttext", "--positive", good, "--negative", bad, "--out"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    one_line(cli(*args, str(tmp_path / "mine")), rf"--out {tmp_path / 'mine'}: a folder holding other files; "
             r"train-classifier replaces only a model folder it wrote")  # fmt: skip
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    encoder = tmp_path / "encoder"
    encoder.mkdir()
    (encoder / "config.json").write_text("{}")
    for out in (encoder, encoder / "head", tmp_path):
        done = cli(*args, str(out), "--kind", "transformers", "--encoder", str(encoder))
        one_line(done, rf"--out {out} and --encoder {encoder} overlap: the model would overwrite its encoder")
    assert [p.name for p in encoder.iterdir()] == ["config.json"]

    assert cli(*args, str(tmp_path / "model")).returncode == 0
    (tmp_path / "model" / "config.json").write_text("{}")  # as an older transformers head left it
    done = cli(*args, str(tmp_path / "model"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == [".crawlbelt", "metrics.json", "model.bin"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize(
    "stop, code, said",
    [
        (signal.SIGINT, 130, "interrupted"),
        pytest.param(signal.SIGTERM, 143, "stopped by SIGTERM", marks=pytest.mark.slow),  # the same path as Ctrl-C's
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_ctrl_c_and_sigterm_are_one_line_and_out_is_as_it_was(tmp_path, paragraphs, stop, code, said):
    """SIGTERM (`timeout`, a scheduler) cleans up as Ctrl-C does, and ends fastText's child too."""
    english = write_lines(tmp_path / "en.txt", paragraphs["en"])
    other = write_lines(tmp_path / "other.txt", paragraphs["other"])
    command = [sys.executable, "-m", "pipeline", "train-classifier", "--kind", "fasttext", "--positive", english,
               "--negative", other, "--epochs", "10000", "--out", str(tmp_path / "out")]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.building-*/train.txt")):  # its examples written: fastText is training
            assert process.poll() is None and time.monotonic() < deadline, "it ended, or never began training"
            time.sleep(0.1)
        time.sleep(0.5)
        process.send_signal(stop)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == code and stdout == "", stderr
    assert stderr == f"train-classifier: {said}; --out is as it was (run the same command again to train)\n"
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))
    trainers = [p for p in Path("/proc").glob("[0-9]*/cmdline") if str(tmp_path).encode() in _read(p)]
    assert trainers == [], "fastText's child outlived the command"


def _read(path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # a process that ended meanwhile
        return b""


def test_inputs_inside_out_and_foreign_names_in_out_are_one_line(tmp_path, capsys):
    """Issue 46 trial: --data OUT/train.jsonl --out OUT deleted the examples (exit 0)."""
    from pipeline.storage import MARKER, marker_text
    from pipeline.train_classifier import OUT_KIND

    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text(marker_text(OUT_KIND))
    (out / "model.bin").write_text("")
    data = labelled(out / "train.jsonl", ["a", "b"] * 4)
    good = write_lines(out / "good.txt", [words(i, "g") for i in range(6)])
    bad = write_lines(tmp_path / "bad.txt", [words(i, "b") for i in range(6)])
    for option, arguments in (("--data", ["--data", data, "--label-field", "label"]),
                              ("--positive", ["--positive", good, "--negative", bad])):  # fmt: skip
        done = cli_here(capsys, "train-classifier", "--kind", "fasttext", *arguments, "--out", str(out))
        path = data if option == "--data" else good
        one_line(done, rf"--out {out} holds {option} {path}; keep the examples outside the folder it replaces")
    assert sorted(p.name for p in out.iterdir()) == [".crawlbelt", "good.txt", "model.bin", "train.jsonl"]
    (out / "train.jsonl").rename(tmp_path / "train.jsonl")
    (out / "good.txt").rename(tmp_path / "good.txt")
    for foreign in ("notes.txt", "runs"):
        (out / foreign).mkdir() if foreign == "runs" else (out / foreign).write_text("keep me")
        done = cli_here(capsys, "train-classifier", "--kind", "fasttext", "--data", str(tmp_path / "train.jsonl"),
                        "--label-field", "label", "--out", str(out))  # fmt: skip
        one_line(done, rf"--out {out}: it holds {foreign}, which train-classifier never writes; it replaces only "
                 r"a model folder it wrote")  # fmt: skip
        assert (out / foreign).exists()
        (out / foreign).rmdir() if foreign == "runs" else (out / foreign).unlink()


def test_options_are_bounded_and_exclusive_in_one_line(tmp_path, capsys):
    good, bad = (write_lines(tmp_path / f"{tag}.txt", [words(i, tag) for i in range(6)]) for tag in ("g", "b"))
    data = labelled(tmp_path / "data.jsonl", ["a", "b"] * 4)
    files = ["--positive", good, "--negative", bad]
    cases = [
        ([*files, "--word-ngrams", "1000"], r"--word-ngrams: expected an integer from 1 to 16, got 1000"),
        ([*files, "--dim", "100000000"], r"--dim: expected an integer from 1 to 1000, got 100000000"),
        ([*files, "--dim", "0"], r"--dim: expected an integer from 1 to 1000, got 0"),
        ([*files, "--epochs", "100000000"], r"--epochs: expected an integer from 1 to 10000, got 100000000"),
        ([*files, "--lr", "nan"], r"--lr: expected a number above 0 and at most 10, got nan"),
        ([*files, "--lr", "100"], r"--lr: expected a number above 0 and at most 10, got 100\.0"),
        ([*files, "--batch-size", "100000"], r"--batch-size: expected an integer from 1 to 4096, got 100000"),
        ([*files, "--max-chars", "0"], r"--max-chars: expected an integer from 1 to 10000000, got 0"),
        ([*files, "--data", data, "--label-field", "label"], r"--data and --positive/--negative are two recipes: give one of them"),
        ([*files, "--cut", "3"], r"--cut applies to --score-field, which is not given"),
        (["--data", data, "--label-field", "label", "--cut", "0.5"], r"--cut applies to --score-field, which is not given"),
        (["--data", data, "--score-field", "label", "--cut", "inf"], r"--cut: expected a finite number, got inf"),
    ]  # fmt: skip
    for arguments, message in cases:
        done = cli_here(capsys, "train-classifier", "--kind", "fasttext", *arguments, "--out", str(tmp_path / "out"))
        one_line(done, message)
        assert not (tmp_path / "out").exists()


def test_a_written_model_that_fails_its_check_is_one_line(tmp_path, capsys, monkeypatch):
    from pipeline import train_classifier

    def broken_model(examples, train, out, args):
        (out / "model.bin").write_bytes(b"\0" * 100)
        return ["a", "b"]

    monkeypatch.setattr(train_classifier, "train_fasttext", broken_model)
    data = labelled(tmp_path / "data.jsonl", ["a", "b"] * 4)
    done = cli_here(capsys, "train-classifier", "--kind", "fasttext", "--data", data, "--label-field", "label",
                    "--out", str(tmp_path / "out"))  # fmt: skip
    one_line(done, r"the model fastText wrote does not pass the belt's check: .* is not a fastText model \(.*\)")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))


def test_a_compressed_line_bomb_stops_within_the_line_limit(tmp_path, monkeypatch):
    import gzip

    from pipeline import train_classifier

    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        for _ in range(64):
            f.write(b"a" * 1_000_000)  # 64 MB, no line break
    read = [0]
    decompressed = train_classifier.decompressed

    def counted(handle):
        inner = decompressed(handle)

        def read_counted(size):
            chunk = inner(size)
            read[0] += len(chunk)
            return chunk

        return read_counted

    monkeypatch.setattr(train_classifier, "decompressed", counted)
    with pytest.raises(train_classifier.TrainingError, match=r"bomb\.jsonl\.gz:1: a line of over 10000000 bytes"):
        list(train_classifier.file_lines(str(path), train_classifier.Budget()))
    assert read[0] < 12_000_000


def test_labels_and_files_messages_a_user_expects(tmp_path, capsys):
    import decimal
    import os

    from pipeline import train_classifier

    good = write_lines(tmp_path / "good.txt", [words(i, "g") for i in range(6)])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (str(tmp_path), "/dev/zero", str(fifo)):
        done = cli_here(capsys, "train-classifier", "--kind", "fasttext", "--positive", path, "--negative", good,
                        "--out", str(tmp_path / "out"))  # fmt: skip
        one_line(done, rf"{re.escape(path)}: not a regular file")
    empty = labelled(tmp_path / "empty.jsonl", ["a", "b", ""])
    done = cli_here(capsys, "train-classifier", "--kind", "fasttext", "--data", empty, "--label-field", "label",
                    "--out", str(tmp_path / "out"))  # fmt: skip
    one_line(done, r".*empty\.jsonl:3: the label is empty")
    assert train_classifier.label_text(1.0, "f:1", "label") == "1"
    assert train_classifier.label_text("__label__good", "f:1", "label") == "good"
    with pytest.raises(train_classifier.TrainingError, match="the label is empty"):
        train_classifier.label_text("__label__", "f:1", "label")
    assert train_classifier.score_number(decimal.Decimal("2.50"), "f:1", "s") == 2.5
    table = pa.table({"text": [words(i, "t") for i in range(2)],
                      "score": pa.array([decimal.Decimal("1.5"), decimal.Decimal("3.0")], pa.decimal128(4, 1))})  # fmt: skip
    pq.write_table(table, tmp_path / "scores.parquet")
    columns = train_classifier.read_records(str(tmp_path / "scores.parquet"), "text", ["text", "score"])
    assert [train_classifier.score_number(v, "w", "score") for v in columns["score"]] == [1.5, 3.0]
