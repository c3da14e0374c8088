"""fastText model binaries are walked before fastText's C++ believes them (stages/fasttext_file.py): hostile
files, written byte by byte and then cut or edited, are refused in one line naming the file and the problem;
real models (lid.176.ftz, models fastText's own trainer writes, plain and quantized) are accepted."""

from __future__ import annotations

import random
import struct
import subprocess
import sys

import pytest

from helpers import ROOT, cli
from stages import fasttext_file
from stages.fasttext_file import FastTextFileError, check_fasttext_file
from stages.langid import default_lid_model_path, fasttext_labels
from tiny_models import fasttext_bytes

TRAINER = ROOT / ".venv" / "fasttext-trainer"

# Offsets in fasttext_bytes()'s default model: settings from 8, the dictionary header from 64, its entries
# (</s>, river, sea, __label__hq, __label__lq) from 92 to 176, then the input matrix (flag, m, n, 3 x 4
# floats) to 241 and the output matrix (flag, m, n, 2 x 4 floats) to 290.
WORD_NGRAMS, MODEL, NWORDS, SIZE, INPUT_ROWS, INPUT_DATA, OUTPUT_END = 28, 36, 68, 64, 177, 193, 290
QUANT_CODESIZE = 194  # quantized input: flag 176, qnorm 177, m 178, n 186, codesize 194


def edited(data: bytes, offset: int, layout: str, *values) -> bytes:
    return data[:offset] + struct.pack(layout, *values) + data[offset + struct.calcsize(layout) :]


MODEL_BYTES = fasttext_bytes()
QUANTIZED = fasttext_bytes(quantized=True, bucket=10, word_ngrams=2)
HOSTILE = {
    "empty": (b"", "the file is empty"),
    "not fastText": (b"\x00" * 64, "its header is not fastText's: magic 0, version 0"),
    "word without NUL (95 bytes)": (MODEL_BYTES[:95], "its dictionary entry 0 runs past the end of the file"),
    "ends in the settings": (MODEL_BYTES[:40], "it ends inside its settings"),
    "not supervised": (edited(MODEL_BYTES, MODEL, "<i", 1), "it is not a supervised model (model 1)"),
    "word n-grams without buckets": (edited(MODEL_BYTES, WORD_NGRAMS, "<i", 2), "it has 0 hash buckets"),
    "nwords > size": (edited(MODEL_BYTES, NWORDS, "<i", 10), "its dictionary counts disagree: 5 entries, 10 words"),
    "negative size": (edited(MODEL_BYTES, SIZE, "<i", -1), "its dictionary counts disagree: -1 entries"),
    "30 million words": (
        edited(MODEL_BYTES, SIZE, "<ii", 30_000_002, 30_000_000),
        "its dictionary holds 30,000,000 words and 2 labels; at most 4,000,000 entries",
    ),
    "label 1 MB long": (
        fasttext_bytes(labels=("__label__" + "x" * 2**20,)),
        "its label 0 is 1,048,585 bytes long; at most 1,024",
    ),
    "label not UTF-8": (fasttext_bytes(labels=("__label__\udcff",)), "its label 0 is not UTF-8"),
    "a word among the labels": (edited(MODEL_BYTES, 175, "<b", 0), "its dictionary entry 4 is not a label"),
    "6 GB input matrix": (
        edited(MODEL_BYTES, INPUT_ROWS, "<q", 375_000_000),
        "its input matrix declares 6,000,000,000 bytes but only 97 are left",
    ),
    "negative matrix": (edited(MODEL_BYTES, INPUT_ROWS, "<q", -3), "its input matrix is -3 x 4"),
    "m x n wraps in 64 bits": (
        edited(MODEL_BYTES, INPUT_ROWS, "<qq", 2**62, 4),
        "its input matrix declares 73,786,976,294,838,206,464 bytes",
    ),
    "input matrix short of the vocabulary": (
        edited(MODEL_BYTES[:INPUT_DATA] + MODEL_BYTES[INPUT_DATA + 16 :], INPUT_ROWS, "<q", 2),
        "its input matrix is 2 x 4, not (words + buckets) x dim = 3 x 4",
    ),
    "truncated output matrix": (MODEL_BYTES[:-4], "its output matrix declares 32 bytes but only 28 are left"),
    "bytes after the end": (MODEL_BYTES + b"\0", "1 bytes follow the model's end"),
    "quantized codesize huge": (
        edited(QUANTIZED, QUANT_CODESIZE, "<i", 2**31 - 1),
        "its input matrix's quantizer's codes declares 2,147,483,647 bytes",
    ),
    "quantizer that does not fit": (
        edited(QUANTIZED, QUANT_CODESIZE + 4 + 26 + 4, "<i", 3),  # after the 13 x 2 codes and dim: nsubq
        "its input matrix's quantizer (dim 4, 3 x 2, last 2) does not fit vectors of 4",
    ),
    "pruned index past the matrix": (
        fasttext_bytes(quantized=True, bucket=10, word_ngrams=2, pruned=[(3, 0), (7, 5)]),
        "its pruned n-grams point at row 8 of a 5-row input matrix",
    ),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_model_files_are_refused_naming_the_problem(tmp_path, name):
    data, reason = HOSTILE[name]
    path = tmp_path / "model.bin"
    path.write_bytes(data)
    with pytest.raises(FastTextFileError) as error:
        check_fasttext_file(str(path))
    assert str(error.value) == f"{str(path)!r} is not a fastText model ({error.value.reason})"
    assert reason in error.value.reason


def test_every_load_checks_the_file_first(tmp_path):
    # a 1 MB label loads in fastText; the belt's loader refuses it before
    path = tmp_path / "model.bin"
    path.write_bytes(HOSTILE["label 1 MB long"][0])
    with pytest.raises(FastTextFileError, match="its label 0 is 1,048,585 bytes long"):
        fasttext_labels(str(path))


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"bucket": 10, "word_ngrams": 2, "maxn": 3},
        {"quantized": True, "bucket": 10, "word_ngrams": 2},
        {"quantized": True, "qout": True, "qnorm": True, "bucket": 10, "maxn": 4},
        {"quantized": True, "qout": True, "qnorm": True, "bucket": 10, "word_ngrams": 2, "pruned": [(3, 0), (7, 1)]},
    ],
)
def test_models_written_as_fasttext_writes_them_load_and_predict(tmp_path, settings):
    path = tmp_path / "model.bin"
    path.write_bytes(fasttext_bytes(**settings))
    check_fasttext_file(str(path))
    assert fasttext_labels(str(path)) == ["hq", "lq"]


def test_character_ngrams_of_the_vocabulary_are_bounded(tmp_path, monkeypatch):
    # (12 bytes of words + < and > around each of 3) x n-gram lengths 2 and 3: 36 ids
    monkeypatch.setattr(fasttext_file, "MAX_SUBWORDS", 35)
    path = tmp_path / "model.bin"
    path.write_bytes(fasttext_bytes(bucket=10, maxn=3))
    with pytest.raises(FastTextFileError, match="its vocabulary would need 36 character n-grams; at most 35"):
        check_fasttext_file(str(path))


def test_lid_176_is_accepted_quickly():
    import time

    path = default_lid_model_path()
    start = time.perf_counter()
    check_fasttext_file(path)
    assert time.perf_counter() - start < 0.5  # about 6 ms here: it runs on every load


@pytest.mark.skipif(not (TRAINER / "fasttext").is_dir(), reason="fastText's trainer is not installed (setup.sh)")
def test_models_from_fasttexts_own_trainer_are_accepted(tmp_path):
    good, bad = (
        "river mill sea bank boat water stone bridge".split(),
        "cheap pills now buy click free offer win".split(),
    )
    pick = random.Random(0).choice
    lines = [
        f"__label__{label} " + " ".join(pick(words) for _ in range(20))
        for label, words in [("hq", good), ("lq", bad)] * 150
    ]
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n")
    code = (
        f"import sys; sys.path.insert(0, {str(TRAINER)!r}); import fasttext; "
        f"m = fasttext.train_supervised(input={str(tmp_path / 'train.txt')!r}, dim=4, wordNgrams=2, bucket=1000, "
        "minn=2, maxn=3, epoch=2, thread=1, seed=0, verbose=0); "
        f"m.save_model({str(tmp_path / 'model.bin')!r}); "
        f"m.quantize(input={str(tmp_path / 'train.txt')!r}, qnorm=True, cutoff=300, retrain=False, dsub=2); "
        f"m.save_model({str(tmp_path / 'model.ftz')!r})"
    )
    for _ in range(3):  # fastText 0.9.3 now and then stops on "Encountered NaN" on the same input (seen 2 in 50)
        trained = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if "Encountered NaN" not in trained.stderr:
            break
    assert trained.returncode == 0, trained.stderr
    for name in ("model.bin", "model.ftz"):
        check_fasttext_file(str(tmp_path / name))
        assert fasttext_labels(str(tmp_path / name)) == ["hq", "lq"]


def test_validate_refuses_a_hostile_model_in_one_line(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(HOSTILE["word without NUL (95 bytes)"][0])
    done = cli("validate", str(ROOT / "configs" / "local.yaml"), "--set", f"language.model_path={path}", timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"config error: language.model_path: {str(path)!r} is not a fastText model "
        "(its dictionary entry 0 runs past the end of the file)"
    )
