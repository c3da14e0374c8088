"""The Gopher quality rules' two word modes (`quality.words`) and per-language stop words (`quality.stop_words`)."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import CRAWL_SAMPLE, ROOT, ledger_table
from pipeline import belt
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from stages.quality import STOP_WORDS_BY_LANGUAGE, GopherQuality, gopher_quality_rules
from stages.words import datatrove_words

# spaCy 3.8.18's `spacy.blank("en")`, as datatrove 0.10.1's word tokenizer gives them (whitespace tokens dropped).
SPACY_TOKENS = {
    "Hello, world! It's a well-known U.S. fact (e.g. 3.5%) -- see http://x.com/a?b=1 and foo@bar.com... "
    "\"quoted\" don't can't 10km $5 #tag ...": [
        *"Hello , world ! It 's a well - known U.S. fact ( e.g. 3.5 % ) -- see http://x.com/a?b=1 and".split(),
        *"foo@bar.com ... \" quoted \" do n't ca n't 10 km $ 5 # tag ...".split(),
    ],
    "word.Next 1,000 3-4 e-mail and/or x:y – y—z [1] © 20°C :) ): cannot St. Louis, Mo.)": [
        *"word . Next 1,000 3 - 4 e - mail and/or x : y – y — z [ 1 ] © 20 ° C :) ): can not St. Louis , Mo. )".split()
    ],
    "Der Fluss (so heißt es) trägt – wie immer – Sand; „Zitat“ … Привет, мир!": [
        *"Der Fluss ( so heißt es ) trägt – wie immer – Sand ; „ Zitat “ … Привет , мир !".split()
    ],
}

GERMAN = (
    "Der Rhein ist einer der längsten Flüsse Europas und fließt von den Alpen bis zur Nordsee. Entlang seiner Ufer "
    "liegen viele alte Städte, deren Geschichte bis in die Römerzeit zurückreicht. Im Sommer fahren zahlreiche "
    "Schiffe mit Touristen auf dem Fluss, während im Winter vor allem Frachtschiffe unterwegs sind. Die Landschaft "
    "mit ihren Weinbergen und Burgen gehört zum Welterbe."
)
FRENCH = (
    "La Loire est le plus long fleuve de France et traverse une grande partie du pays avant de rejoindre "
    "l'océan Atlantique. Ses rives sont bordées de châteaux célèbres, construits pour la plupart à la Renaissance. "
    "Le fleuve est connu pour ses bancs de sable qui changent de place chaque année, ce qui rend la navigation "
    "difficile. Les visiteurs viennent nombreux en été pour découvrir les vignobles et les villages de la vallée."
)
RUSSIAN = (
    "Волга — самая длинная река в Европе, она течёт через центральную часть России и впадает в Каспийское море. "
    "На её берегах стоят многие старые города, история которых насчитывает сотни лет. Летом по реке ходят "
    "туристические теплоходы, а зимой она во многих местах покрывается льдом. Для жителей Поволжья это не просто "
    "река, а часть их жизни и культуры, и о ней сложено много песен."
)
CHINESE = (
    "长江是中国最长的河流，也是世界第三长的河流。它发源于青藏高原，向东流经许多省份，最后在上海附近注入东海。"
    "长江流域是中国人口最多、经济最发达的地区之一，沿岸有很多历史悠久的城市。每年夏天，这里的雨水很多，"
    "河水会上涨，人们在两岸修建了大堤来保护农田和村庄。"
)
PAGES = {"de": GERMAN, "fr": FRENCH, "ru": RUSSIAN, "zh": CHINESE}


@pytest.mark.parametrize("text", SPACY_TOKENS)
def test_datatrove_words_are_spacys_tokens(text):
    assert datatrove_words(text) == SPACY_TOKENS[text]


def test_punctuation_tokens_are_no_words_but_count_in_the_ratios():
    # The datatrove-mode verdicts here and in the next test are datatrove 0.10.1's own GopherQualityFilter's
    # (gopher_below_alpha_threshold, gopher_short_doc, kept, kept), checked in its benchmark venv.
    # 60 words, each followed by a comma: whitespace sees 60 words, all with letters; datatrove 120 tokens,
    # 60 of them commas: still 60 words (not too short), but only half the tokens have a letter.
    text = " ".join(["river, sand, the, and,"] * 15)
    assert gopher_quality_rules(text) == []
    assert gopher_quality_rules(text, words="datatrove") == ["too_few_alphabetic_words"]
    # 45 words and 10 dashes: 55 words split on whitespace, 45 for datatrove (a dash alone is punctuation)
    text = " ".join(["the river carries sand to the sea and builds"] * 5 + ["—"] * 10)
    assert gopher_quality_rules(text) == []
    assert gopher_quality_rules(text, words="datatrove") == ["too_short"]


def test_datatrove_words_move_the_mean_length_and_find_stop_words_inside_punctuation():
    # "(xxxxxxxxxx)," is 13 characters split on whitespace, a 10-letter word and two marks for datatrove
    text = " ".join(["the", "and"] + ["(xxxxxxxxxx),"] * 48)
    assert gopher_quality_rules(text, min_alpha_words_ratio=0) == ["odd_word_length"]
    assert gopher_quality_rules(text, words="datatrove", min_alpha_words_ratio=0) == []
    # the stop words only ever next to punctuation: whitespace mode strips it, datatrove's tokens have none
    text = " ".join(["(the) river, (and) sea"] * 13)
    assert gopher_quality_rules(text) == gopher_quality_rules(text, words="datatrove", min_alpha_words_ratio=0) == []


@pytest.mark.parametrize("lang", PAGES)
@pytest.mark.parametrize("words", ["whitespace", "datatrove"])
def test_a_page_is_kept_with_its_languages_stop_words_and_not_with_englishs(lang, words):
    page = PAGES[lang]
    assert gopher_quality_rules(page, lang=lang, words=words) == []
    # english: every row as English (a Chinese page then also breaks the rules made for spaced words)
    english = gopher_quality_rules(page, lang=lang, words=words, stop_words="english")
    assert english[-1] == "missing_stop_words" and (lang == "zh" or english == ["missing_stop_words"])
    assert gopher_quality_rules(page, lang=None, words=words) == english  # no language: English


def test_chinese_counts_characters_as_words_and_skips_the_word_length_rule():
    assert len(CHINESE) >= 50 and CHINESE.count(" ") == 0
    # split on whitespace the page is one "word" of 150 characters
    assert gopher_quality_rules(CHINESE, lang="en") == ["too_short", "odd_word_length", "missing_stop_words"]
    assert gopher_quality_rules(CHINESE[:40], lang="zh") == ["too_short"]  # 40 characters


@pytest.mark.parametrize("words", ["whitespace", "datatrove"])
def test_english_verdicts_do_not_depend_on_the_stop_word_setting(words):
    for text in CRAWL_SAMPLE:
        expected = gopher_quality_rules(text, words=words, stop_words="english")
        assert gopher_quality_rules(text, words=words) == expected
        assert gopher_quality_rules(text, lang="en", words=words) == expected


def test_every_stop_word_is_in_its_languages_stopwordsiso_list():
    # Its data file, read directly: stopwordsiso 0.6.1's own import needs pkg_resources, which recent setuptools
    # (84 here) no longer has.
    package = importlib.util.find_spec("stopwordsiso")
    if package is None or package.origin is None:
        pytest.skip("stopwordsiso is not installed (the test extra has it)")
    lists = json.loads((Path(package.origin).parent / "stopwords-iso.json").read_text("utf-8"))
    for lang, words in STOP_WORDS_BY_LANGUAGE.items():
        assert len(words) == 8 and words <= set(lists[lang]), lang


def test_the_stage_picks_each_rows_stop_words_by_its_lang():
    texts = [GERMAN, FRENCH, CRAWL_SAMPLE[0] * 2]
    with_lang = ledger_table(texts, lang=["de", "fr", "en"])
    assert GopherQuality()(with_lang)["reason"].to_pylist() == [None, None, None]
    english = GopherQuality(stop_words="english")(with_lang)["reason"].to_pylist()
    assert english == ["quality:missing_stop_words", "quality:missing_stop_words", None]
    # no language stage before it: every row is English's
    assert GopherQuality()(ledger_table(texts))["reason"].to_pylist() == english


@pytest.mark.parametrize(
    "override, message",
    [
        ("quality.words=spacy", "quality.words: expected one of whitespace, datatrove, got 'spacy'"),
        ("quality.stop_words=german", "quality.stop_words: expected one of auto, english, got 'german'"),
    ],
)
def test_a_wrong_choice_is_refused(tmp_path, override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(str(ROOT / "configs" / "local.yaml"), overrides=[override], output=str(tmp_path / "out"))


@pytest.mark.usefixtures("embedded_ray")
def test_a_belt_of_four_languages_with_datatrove_words_keeps_their_pages(tmp_path, caplog):
    """The bundled crawl and four real-language pages (as JSONL text) through the whole belt: the German,
    French, Russian and Chinese pages are kept, and the ledger holds."""
    pages = tmp_path / "pages.jsonl"
    pages.write_text(
        "".join(json.dumps({"text": text, "url": f"https://{lang}.example/"}) + "\n" for lang, text in PAGES.items())
    )
    sources = f"sources=[{{name: web, input: ['{ROOT / 'tests' / 'fixtures' / 'warc'}/*']}}, {{name: pages, input: ['{pages}']}}]"
    # fastText alone: the short-text detector knows only en, fr, de and es
    languages = ["language.method=fasttext", "language.languages=[en, de, fr, ru, zh]"]
    overrides = [sources, *languages, "quality.words=datatrove", "packing.seq_len=128"]
    config = load_config(str(ROOT / "configs" / "local.yaml"), overrides=overrides, output=str(tmp_path / "out"))
    with caplog.at_level(logging.INFO, logger="crawlbelt"):
        manifest = belt.run(config)
    assert manifest["invariants"] and all(manifest["invariants"].values()), manifest["invariants"]
    docs = [row for path in manifest["outputs"]["docs"] for row in pq.read_table(tmp_path / "out" / path).to_pylist()]
    kept = {row["url"]: row["lang"] for row in docs if row["source"] == "pages"}
    assert kept == {f"https://{lang}.example/": lang for lang in PAGES}
    # the bundled crawl's junk pages are still rejected by the quality rules, each rule named
    rejects = [
        row for path in manifest["outputs"]["rejects"] for row in pq.read_table(tmp_path / "out" / path).to_pylist()
    ]
    assert any(row["stage"] == "quality" and row["reason"].startswith("quality:") for row in rejects)
