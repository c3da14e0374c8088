import math
import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from helpers import ledger_table
from stages.classifier import ClassifierScore, FastTextClassifier, NaiveBayes
from stages.langid import default_lid_model_path

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "classifier"

GOOD = [
    "the river deposits sand at its mouth and over many years builds a delta",
    "a delta is formed where a river meets the sea and slows down",
    "the cell is the basic unit of life and every organism is made of cells",
    "light travels faster than sound which is why we see lightning before thunder",
    "the history of the city begins with a small settlement on the river",
    "photosynthesis converts light into chemical energy stored in sugar",
]
BAD = [
    "click here buy now limited offer best price",
    "free free free win a prize click now",
    "best deals cheap price buy buy buy",
    "subscribe now click the link for free coupons",
    "hot singles best price click here now",
    "lose weight fast buy now free shipping",
]
GOOD_DOC = "the delta is formed when the river deposits sand over many years"
BAD_DOC = "click here buy now best price free free free"


def _check_expected_figures(model):
    assert (model.n_good, model.n_bad, model.vocabulary_size) == (77, 45, 80)
    assert round(model.vote("river"), 3) == 1.158
    assert round(model.vote("click"), 3) == -1.837
    assert round(model.score(GOOD_DOC), 2) == 8.52
    assert round(model.score(BAD_DOC), 2) == -16.49


def test_naive_bayes_expected_figures():
    _check_expected_figures(NaiveBayes.train(GOOD, BAD))


def test_naive_bayes_from_config_files():
    _check_expected_figures(NaiveBayes.from_files([CONFIGS / "good.txt"], [CONFIGS / "bad.txt"]))
    # a single path works too
    _check_expected_figures(NaiveBayes.from_files(str(CONFIGS / "good.txt"), str(CONFIGS / "bad.txt")))


def test_naive_bayes_from_files_skips_blank_lines(tmp_path):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("\n".join(GOOD[:3]) + "\n\n  \n" + "\n".join(GOOD[3:]) + "\n")
    bad.write_text("\n\n".join(BAD))
    _check_expected_figures(NaiveBayes.from_files([good], [bad]))


def test_naive_bayes_details():
    model = NaiveBayes.train(GOOD, BAD)
    # by hand: "river" is 3 times good, never bad
    assert model.vote("river") == pytest.approx(math.log(4 / (77 + 80)) - math.log(1 / (45 + 80)))
    assert model.vote("RIVER") == model.vote("river")  # words are lowercased
    assert model.vote("zebra") == 0.0
    # unseen words add nothing; every occurrence of a seen word counts
    assert model.score("zebra quagga") == 0.0
    assert model.score("free free zebra") == pytest.approx(2 * model.vote("free"))
    assert model.score("") == 0.0
    copy = pickle.loads(pickle.dumps(model))
    assert copy.score(GOOD_DOC) == model.score(GOOD_DOC)


def test_classifier_score_stage_without_threshold():
    model = NaiveBayes.train(GOOD, BAD)
    table = ledger_table([GOOD_DOC, BAD_DOC, GOOD_DOC], stage=pa.array([None, None, "language"], pa.string()))
    out = ClassifierScore(model)(table)
    assert out.schema.field("quality_score").type == pa.float64()
    scores = out["quality_score"].to_pylist()
    assert scores[0] == pytest.approx(8.5186, abs=1e-3)
    assert scores[1] == pytest.approx(-16.4908, abs=1e-3)
    assert scores[2] is None  # already decided rows are not scored
    assert out["stage"].to_pylist() == [None, None, "language"]
    assert out["reason"].to_pylist() == [None, None, None]


def test_classifier_score_stage_with_threshold():
    model = NaiveBayes.train(GOOD, BAD)
    table = ledger_table([GOOD_DOC, BAD_DOC, "zebra"])
    out = ClassifierScore(model, threshold=0.0)(table)
    # score 0 is not below a threshold of 0
    assert out["stage"].to_pylist() == [None, "classifier", None]
    assert out["reason"].to_pylist() == [None, "classifier:below_threshold", None]
    assert out["quality_score"].to_pylist()[2] == 0.0
    out = ClassifierScore(model, threshold=9.0)(table)
    assert out["reason"].to_pylist() == ["classifier:below_threshold"] * 3


def test_fasttext_classifier_with_lid_model():
    # lid.176 is itself a supervised fastText model; its "__label__en" probability is a real score.
    english = FastTextClassifier(default_lid_model_path(), "__label__en")
    assert english.score("The river carries sand from the mountains to the sea.") > 0.9
    assert english.score("Le fleuve transporte le sable des montagnes vers la mer.") < 0.1
    french = FastTextClassifier(default_lid_model_path(), "__label__fr")
    assert french.score("Le fleuve transporte le sable des montagnes vers la mer.") > 0.9
    assert FastTextClassifier(default_lid_model_path(), "__label__nosuchlabel").score("hello there") == 0.0
    # picklable, model loaded lazily after unpickling
    copy = pickle.loads(pickle.dumps(english))
    assert copy.score("The river carries sand from the mountains to the sea.") > 0.9


def test_classifier_score_stage_with_fasttext():
    english = FastTextClassifier(default_lid_model_path(), "__label__en")
    table = ledger_table(
        [
            "The river carries sand from the mountains to the sea.",
            "Le fleuve transporte le sable des montagnes vers la mer.",
        ]
    )
    out = ClassifierScore(english, threshold=0.5)(table)
    scores = out["quality_score"].to_pylist()
    assert scores[0] > 0.9 and scores[1] < 0.1
    assert out["reason"].to_pylist() == [None, "classifier:below_threshold"]
