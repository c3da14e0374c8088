"""Hostile transformers model folders (issue 46): a folder is checked before anything loads it (stages/model_files.py),
nothing in it runs, its tokenizer runs under a time limit, and `validate` refuses in one line what a run would
trip on. The folders are written by hand in milliseconds (benchmarks/hostile/models.py, which the hostile-files
benchmark runs too): a two-layer BERT's config.json, about 160 KB of safetensors, a word-level tokenizer.json."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, ledger_table

pytest.importorskip("transformers", reason="the classify extra (transformers) is not installed")

from pipeline.passes import filtering  # noqa: E402
from pipeline.config import ConfigError  # noqa: E402
from pipeline.config.load import load_config  # noqa: E402
from stages.model_scorer import TransformerScore, TransformerScorer  # noqa: E402
from stages.user import StageError  # noqa: E402

_spec = importlib.util.spec_from_file_location("hostile_models", ROOT / "benchmarks" / "hostile" / "models.py")
hostile = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(hostile)  # type: ignore[union-attr]

DOCUMENT = hostile.DOCUMENT


def validate(folder: Path, model: Path, **settings) -> None:
    """load_config of a belt of one transformers scorer on `model`: what `validate` runs."""
    config = hostile.scorer_config(folder, model, [DOCUMENT], **settings)
    load_config(str(config), output=str(folder / "out"))


def refused(tmp_path: Path, model: Path, message: str, **settings) -> None:
    with pytest.raises(ConfigError) as error:
        validate(tmp_path, model, **settings)
    assert message in str(error.value) and "\n" not in str(error.value), str(error.value)
    assert str(error.value).startswith("stages[0]."), str(error.value)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"id2label": None, "label2id": None, "num_labels": 10**9}, "num_labels 1000000000 is not a whole number"),
        ({"hidden_size": 65_536}, "hidden_size 65536 is not a whole number in [1, 16,384]"),
        ({"num_hidden_layers": 10**6}, "num_hidden_layers 1000000 is not a whole number"),
        # within the bounds, but not what the 160 KB of weights hold
        ({"hidden_size": 64}, "bert.embeddings.word_embeddings.weight is [21, 32] in the weights, [21, 64] by"),
        ({"vocab_size": 900_000}, "is [21, 32] in the weights, [900000, 32] by config.json"),
        ({"id2label": {str(i): f"L{i}" for i in range(1001)}}, "id2label: expected 1 to 1,000 labels"),
        ({"id2label": {"0": "x" * 101, "1": "y"}}, "a label name is not text of at most 100 characters"),
        ({"architectures": ["BertModel"]}, "BertModel: not a sequence-classification model"),
        ({"architectures": ["BertForTokenClassification"]}, "BertForTokenClassification: not a sequence-class"),
        ({"model_type": "evil", "auto_map": {"AutoConfig": "x.C"}}, "model_type 'evil' is not one transformers has"),
        # the scorer pads batches with it (BERT's embeddings take -1 as their last row; GPT-2 checks none)
        ({"pad_token_id": -1}, "config.json: pad_token_id -1 is not a token of the model (0 to 20): batches are"),
    ],
)
def test_a_config_that_its_weights_do_not_hold_is_refused_before_anything_is_allocated(tmp_path, config, message):
    refused(tmp_path, hostile.model_folder(tmp_path / "model", config), message)


def test_a_size_under_another_models_name_is_bounded_too(tmp_path):
    """GPT-2 says n_layer for num_hidden_layers: ten million layers built on the meta device took minutes and GBs."""
    from stages.model_files import ModelFolderError, check_model_folder

    config = {"model_type": "gpt2", "architectures": ["GPT2ForSequenceClassification"], "n_layer": 10**7}
    (tmp_path / "config.json").write_text(json.dumps(config | {"n_embd": 8, "n_head": 2, "vocab_size": 10}))
    (tmp_path / "model.safetensors").write_bytes(b"\x02" + b"\x00" * 7 + b"{}")
    with pytest.raises(ModelFolderError, match=r"num_hidden_layers 10000000 is not a whole number in \[1, 128\]"):
        check_model_folder(str(tmp_path))


def test_weights_without_the_classification_head_are_refused_not_drawn_at_random(tmp_path):
    tensors = {k: v for k, v in hostile.bert_tensors().items() if not k.startswith("classifier.")}
    model = hostile.model_folder(tmp_path / "model", tensors=tensors)
    refused(tmp_path, model, "the weights have no classifier.weight")
    with pytest.raises(StageError, match="may not load: .*the weights have no classifier.weight"):
        TransformerScorer(str(model)).score([DOCUMENT])  # a worker refuses it too


def test_pickle_weights_are_refused_and_never_loaded(tmp_path):
    hostile.pickle_weights(tmp_path)
    refused(tmp_path, tmp_path / "model", "no safetensors weights (pytorch_model.bin is a pickle")
    assert not (tmp_path / "pickle-ran").exists()


@pytest.mark.parametrize("offsets", [[0, 10**9], [8, 4], [0, 12]])
def test_a_safetensors_header_whose_offsets_do_not_fit_is_refused(tmp_path, offsets):
    model = hostile.model_folder(tmp_path / "model")
    path = model / "model.safetensors"
    data = path.read_bytes()
    (length,) = __import__("struct").unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    header["classifier.bias"]["data_offsets"] = offsets
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + data[8 + length :])
    refused(tmp_path, model, "tensor 'classifier.bias': its offsets do not fit its shape or the file")


def test_a_multi_label_head_scores_each_label_with_a_sigmoid(tmp_path):
    model = hostile.model_folder(tmp_path / "model", {"problem_type": "multi_label_classification"})
    scorer = TransformerScorer(str(model))
    logits = scorer.logits([DOCUMENT, "the river"])
    scores, _ = scorer.score([DOCUMENT, "the river"])
    assert scores == pytest.approx([1 / (1 + math.exp(-float(row[1]))) for row in logits])


def test_a_probability_threshold_outside_0_1_is_refused_a_regression_keeps_any(tmp_path):
    refused(
        tmp_path, hostile.model_folder(tmp_path / "model"), "threshold: expected a probability in [0, 1]", threshold=3
    )
    names = {"id2label": {"0": "edu"}, "label2id": {"edu": 0}, "problem_type": "regression"}
    regression = {k: v for k, v in hostile.bert_tensors(labels=1).items()}
    validate(tmp_path, hostile.model_folder(tmp_path / "edu", names, tensors=regression), threshold=3)


def test_max_tokens_without_room_for_the_special_tokens_is_refused(tmp_path):
    refused(tmp_path, hostile.model_folder(tmp_path / "model"), "max_tokens: 2 leaves no room for text", max_tokens=2)


def tokenizer_config(model: Path, **changes) -> None:
    path = model / "tokenizer_config.json"
    settings = {**json.loads(path.read_text()), **changes}
    path.write_text(json.dumps({k: v for k, v in settings.items() if v is not None}))


def test_a_tokenizer_without_a_pad_token_pads_with_its_end_token_else_is_refused(tmp_path):
    model = hostile.model_folder(tmp_path / "model")
    tokenizer_config(model, pad_token=None, eos_token="[SEP]")
    validate(tmp_path, model)
    scores, _ = TransformerScorer(str(model), batch_size=4).score([DOCUMENT, "the river", "a"])
    assert all(0 <= score <= 1 for score in scores)
    tokenizer_config(model, eos_token=None)
    refused(tmp_path, model, "its tokenizer has no pad token and no end (eos) token to pad with")


def test_the_token_limit_is_the_smaller_of_the_tokenizers_and_the_models_positions(tmp_path):
    model = hostile.model_folder(tmp_path / "model")
    tokenizer_config(model, model_max_length=512)  # the model has 128 positions
    scorer = TransformerScorer(str(model), max_tokens=512)
    assert len(scorer.tokenize([DOCUMENT * 3])[0]) == 128
    assert 0 <= scorer.score([DOCUMENT * 3])[0][0] <= 1


def test_a_slow_tokenizer_is_stopped_at_the_time_limit_and_its_document_rejected(tmp_path):
    hostile.slow_tokenizer(tmp_path)
    slow = ("a" * 26 + " ") * 80  # seconds in its regular expression (Rust: no signal stops it)
    texts = [DOCUMENT, "the river", slow]  # last: no second child to start for the texts after it
    stage = TransformerScore(TransformerScorer(str(tmp_path / "model"), timeout_s=0.3), "hq")
    out = stage(ledger_table(texts))
    assert out["reason"].to_pylist() == [None, None, "hq:timeout"]
    assert out["detail"].to_pylist()[2] == "tokenizing took over 0.3 s"
    scores = out["score_hq"].to_pylist()
    assert scores[2] is None and all(0 <= score <= 1 for score in scores[:2])
    fast = TransformerScorer(str(tmp_path / "model"), timeout_s=None).score(texts[:2])[0]
    assert scores[:2] == pytest.approx(fast, abs=1e-6)  # the child's ids are the tokenizer's


def test_a_model_file_copied_over_changes_the_fingerprint_and_a_worker_reloads_it(tmp_path):
    model = hostile.model_folder(tmp_path / "model")
    config = load_config(str(hostile.scorer_config(tmp_path, model, [DOCUMENT])), output=str(tmp_path / "out"))
    files = filtering.input_files(config)
    before = filtering.fingerprint(config, files)
    scorer = TransformerScorer(str(model))
    scores = scorer.score([DOCUMENT])
    hostile.write_safetensors(tmp_path / "w.safetensors", {k: v * 3 for k, v in hostile.bert_tensors().items()})
    folder_time = os.stat(model).st_mtime_ns
    shutil.copy(tmp_path / "w.safetensors", model / "model.safetensors")  # cp over it: same size, same folder time
    assert os.stat(model).st_mtime_ns == folder_time
    assert filtering.fingerprint(config, files) != before  # a resumed run scores again
    assert scorer.score([DOCUMENT])[0] != scores[0]  # a worker that loaded the old one loads the new


def test_train_classifier_never_runs_an_encoders_code_nor_reads_stdin(tmp_path):
    encoder = hostile.model_folder(tmp_path / "enc", {"model_type": "evil", "auto_map": {"AutoConfig": "evil.C"}})
    (encoder / "evil.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    done = train(tmp_path, encoder, input="y\n")
    assert done.returncode == 2 and not (tmp_path / "ran").exists(), done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        f"train-classifier: --encoder: {encoder}: config.json: model_type 'evil' is not one transformers has (code in "
        "a model folder is never run)"
    ]


@pytest.mark.slow
def test_train_classifier_clamps_max_tokens_and_pads_with_the_end_token(tmp_path):
    encoder = hostile.model_folder(tmp_path / "enc", {"architectures": ["BertModel"]})
    tokenizer_config(encoder, pad_token=None, eos_token="[SEP]", model_max_length=None)  # 128 positions
    done = train(tmp_path, encoder)
    assert done.returncode == 0, done.stderr[-2000:]
    held_out = json.loads((tmp_path / "out" / "metrics.json").read_text())["held_out"]["examples"]
    assert held_out > 0 and held_out % 6 == 0, held_out  # scored; each text's 6 copies on one side of the split


def train(tmp_path: Path, encoder: Path, input: str | None = None) -> subprocess.CompletedProcess:
    """train-classifier --kind transformers on `encoder`, its default --max-tokens 512, stdin `input` or none."""
    long = " ".join([DOCUMENT] * 4)  # over 128 tokens
    (tmp_path / "pos.txt").write_text("\n".join([long, "the river flows"] * 6))
    (tmp_path / "neg.txt").write_text("\n".join(["a of and to", "in is was for on"] * 6))
    args = ["--kind", "transformers", "--encoder", str(encoder), "--out", str(tmp_path / "out"), "--epochs", "1"]
    args += ["--positive", str(tmp_path / "pos.txt"), "--negative", str(tmp_path / "neg.txt")]
    return subprocess.run(
        [sys.executable, "-m", "pipeline", "train-classifier", *args],
        cwd=ROOT,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


# --- issue 46, a new user's trial: a folder without its tokenizer, NaN, every problem listed, files not regular


def test_a_folder_without_its_tokenizer_or_with_more_words_than_the_model_is_refused(tmp_path):
    """transformers builds a fallback tokenizer without tokenizer.json: every document got the same score."""
    model = hostile.model_folder(tmp_path / "model")
    (model / "tokenizer.json").unlink()
    (model / "tokenizer_config.json").unlink()
    refused(tmp_path, model, "it has no tokenizer.json (a scorer's folder holds its tokenizer")
    words = hostile.tokenizer_json()
    words["model"]["vocab"]["river"] = len(hostile.WORDS)  # id 21: past the model's 21 embeddings
    model = hostile.model_folder(tmp_path / "wider", tokenizer=words)
    refused(tmp_path, model, "its tokenizer has ids up to 21, past the model's 21 token embeddings (vocab_size)")


def test_a_config_with_a_number_that_is_not_finite_is_refused(tmp_path):
    model = hostile.model_folder(tmp_path / "model", {"layer_norm_eps": float("nan")})  # every score NaN
    refused(tmp_path, model, "config.json: layer_norm_eps is NaN, not a finite number")


def test_a_nan_score_is_below_any_threshold(tmp_path, monkeypatch):
    from stages.classifier import ClassifierScore

    stage = TransformerScore(TransformerScorer(str(hostile.model_folder(tmp_path / "model"))), "hq", threshold=0.1)
    monkeypatch.setattr(stage.scorer, "scores_of", lambda outputs: ([math.nan, 0.5], ["low", "high"]))
    out = stage(ledger_table([DOCUMENT, "the river"]))
    assert out["reason"].to_pylist() == ["hq:below_threshold", None]
    assert out["detail"].to_pylist()[0] == "score NaN < 0.1"

    class NaNModel:
        def score(self, text):
            return math.nan if text == "a" else 0.5

    out = ClassifierScore(NaNModel(), threshold=0.1, name="clf", column="score_clf")(ledger_table(["a", "b"]))
    assert out["reason"].to_pylist() == ["clf:below_threshold", None]
    assert out["detail"].to_pylist()[0] == "score NaN < 0.1"


def test_validate_lists_every_broken_scorers_problem(tmp_path):
    first = hostile.model_folder(tmp_path / "one", {"hidden_size": 65_536})
    second = hostile.model_folder(tmp_path / "two", {"architectures": ["BertModel"]})
    config = hostile.scorer_config(tmp_path, first, [DOCUMENT])
    settings = yaml.safe_load(config.read_text())
    settings["stages"].append({"scorer": "hq2", "kind": "transformers", "model": str(second)})
    config.write_text(yaml.safe_dump(settings))
    with pytest.raises(ConfigError) as error:
        load_config(str(config), output=str(tmp_path / "out"))
    assert [problem[:10] for problem in error.value.problems] == ["stages[0].", "stages[1]."], error.value.problems


@pytest.mark.parametrize("file", ["config.json", "tokenizer.json", "model.safetensors"])
def test_a_model_file_that_is_not_a_regular_file_is_refused_in_one_line(tmp_path, file):
    model = hostile.model_folder(tmp_path / "model")
    (model / file).unlink()
    (model / file).symlink_to("/dev/zero")
    refused(tmp_path, model, f"{file} is not a regular file")


def test_two_labels_of_the_same_name_are_refused(tmp_path):
    model = hostile.model_folder(tmp_path / "model", {"id2label": {"0": "x", "1": "x"}, "label2id": {"x": 1}})
    refused(tmp_path, model, "config.json: id2label: the label 'x' is named twice")


def test_train_classifier_saves_no_auto_map_of_its_encoder(tmp_path):
    from pipeline.train_classifier import _encoder_parts

    encoder = hostile.model_folder(tmp_path / "enc", {"auto_map": {"AutoConfig": "evil.C"}})
    tokenizer_config(encoder, auto_map={"AutoTokenizer": [None, "evil.T"]})
    head = {"id2label": {0: "neg", 1: "pos"}, "label2id": {"neg": 0, "pos": 1}, "problem_type": None}
    tokenizer, config = _encoder_parts(str(encoder), head)
    config.save_pretrained(tmp_path / "out")
    tokenizer.save_pretrained(tmp_path / "out")
    for name in ("config.json", "tokenizer_config.json"):
        assert "auto_map" not in json.loads((tmp_path / "out" / name).read_text()), name
