import pyarrow as pa
import pytest

from helpers import CRAWL_SAMPLE, ledger_table
from stages.quality import GopherQuality, GopherRepetition, gopher_quality_rules, gopher_repetition_rules

# Ordinary English words with stop words and a mean length of 3.75 characters.
CLEAN = ["the", "river", "carries", "sand", "to", "the", "sea", "and"]


def words(n, vocabulary=CLEAN):
    return [vocabulary[i % len(vocabulary)] for i in range(n)]


def text(n):
    return " ".join(words(n))


# --- quality rules, one by one: (rule, text that breaks exactly it, near miss that breaks nothing) ---


def _lines(n_lines, marked, mark):
    """n_lines lines of six clean words, the first `marked` of them passed through `mark`."""
    lines = [" ".join(words(6)) for _ in range(n_lines)]
    return "\n".join(mark(line) if i < marked else line for i, line in enumerate(lines))


QUALITY_CASES = [
    ("too_short", text(49), text(50)),
    ("too_long", text(100_001), text(100_000)),
    # mean word length 1.04, then exactly 3 (the bounds are inclusive)
    ("odd_word_length", " ".join(["to", "of"] + ["a"] * 48), " ".join(["the", "and"] + ["cat"] * 48)),
    # mean word length above 10, then exactly 10
    (
        "odd_word_length",
        " ".join(["the", "and"] + ["x" * 11] * 48),
        " ".join(["the", "and", "x" * 24] + ["y" * 10] * 47),
    ),
    # 6 "#" in 50 words is 0.12; 5 is 0.10, not above
    ("too_many_symbols", " ".join(words(44) + ["#tag"] * 6), " ".join(words(45) + ["#tag"] * 5)),
    # the same with ellipses, kept off the line's end so that mostly_ellipsis stays quiet
    ("too_many_symbols", " ".join(["wait..."] * 3 + ["so…"] * 3 + words(44)), " ".join(["wait..."] * 5 + words(45))),
    # all 10 lines are bullets; then 9 of 10 (0.9 is not above 0.9)
    ("mostly_bullets", _lines(10, 10, lambda line: "-" + line), _lines(10, 9, lambda line: "•" + line)),
    # 4 of 10 lines end with an ellipsis; then 3 of 10
    ("mostly_ellipsis", _lines(10, 4, lambda line: line + "..."), _lines(10, 3, lambda line: line + "…")),
    # 40 of 51 words have a letter (0.78); then 40 of 50 (0.80)
    ("too_few_alphabetic_words", " ".join(words(40) + ["123"] * 11), " ".join(words(40) + ["123"] * 10)),
    # only "the" of the Gopher stop words; then "the" and "and"
    (
        "missing_stop_words",
        " ".join(["The"] + words(49, ["river", "carries", "sand", "sea"])),
        " ".join(["The", "AND,"] + words(48, ["river", "carries", "sand", "sea"])),
    ),
]


@pytest.mark.parametrize("rule, broken, near_miss", QUALITY_CASES, ids=[c[0] for c in QUALITY_CASES])
def test_each_quality_rule(rule, broken, near_miss):
    assert gopher_quality_rules(broken) == [rule]
    assert gopher_quality_rules(near_miss) == []


def test_quality_thresholds_are_parameters():
    assert gopher_quality_rules(text(20), min_words=20) == []
    assert gopher_quality_rules(text(60), max_words=59) == ["too_long"]
    assert gopher_quality_rules(text(50), min_stop_words=4) == ["missing_stop_words"]


def test_quality_on_empty_and_blank_text():
    assert gopher_quality_rules("") == ["too_short", "missing_stop_words"]
    assert gopher_quality_rules(" \n\n ") == ["too_short", "missing_stop_words"]


def test_quality_rules_order_follows_the_table():
    # Breaks five rules at once; they come out in table order.
    bad = "\n".join("- # 1 2 …" for _ in range(3))
    assert gopher_quality_rules(bad) == [
        "too_short",
        "odd_word_length",
        "too_many_symbols",
        "mostly_bullets",
        "mostly_ellipsis",
        "too_few_alphabetic_words",
        "missing_stop_words",
    ]


def test_crawl_sample_quality():
    assert gopher_quality_rules(CRAWL_SAMPLE[2]) == ["too_short", "too_few_alphabetic_words", "missing_stop_words"]
    assert gopher_quality_rules(CRAWL_SAMPLE[4]) == ["too_many_symbols", "missing_stop_words"]
    for page in (0, 3, 5, 6):
        assert gopher_quality_rules(CRAWL_SAMPLE[page]) == [], page


def test_crawl_sample_repetition():
    for page in (0, 5, 6):
        assert gopher_repetition_rules(CRAWL_SAMPLE[page]) == [], page
    # page 4 is one phrase twelve times: every n-gram rule fires, lines and paragraphs do not (one each)
    assert gopher_repetition_rules(CRAWL_SAMPLE[4]) == [
        "top_2_gram",
        "top_3_gram",
        "top_4_gram",
        "dup_5_gram",
        "dup_6_gram",
        "dup_7_gram",
        "dup_8_gram",
        "dup_9_gram",
        "dup_10_gram",
    ]


# --- repetition rules ---------------------------------------------------------------------------


def unique(prefix, n):
    """n distinct four-character words, so no n-gram repeats by accident."""
    return [f"{prefix}{i:03d}" for i in range(n)]


def para(prefix, n=10):
    return " ".join(unique(prefix, n))


def test_dup_para_frac():
    # 10 paragraphs, 4 of them repeat the short "ok fine" (0.4 by count, few characters)
    shorts = ["ok fine"] * 5
    breaks = "\n\n".join(shorts + [para(p) for p in "abcde"])
    broken = gopher_repetition_rules(breaks)
    assert "dup_para_frac" in broken and "dup_para_char_frac" not in broken
    # 3 repeats of 10 is 0.3, not above
    near = "\n\n".join(["ok fine"] * 4 + [para(p) for p in "abcdef"])
    assert "dup_para_frac" not in gopher_repetition_rules(near)


def test_dup_para_char_frac():
    long_para = para("l", 30)
    breaks = "\n\n".join([long_para, long_para] + [para(p, 2) for p in "abcdefgh"])  # 1 repeat of 10
    broken = gopher_repetition_rules(breaks)
    assert "dup_para_char_frac" in broken and "dup_para_frac" not in broken
    near = "\n\n".join([long_para, para("m", 30)] + [para(p, 2) for p in "abcdefgh"])
    assert gopher_repetition_rules(near) == []


def test_dup_line_frac():
    breaks = "\n".join(["ok fine"] * 5 + [para(p) for p in "abcde"])
    broken = gopher_repetition_rules(breaks)
    assert "dup_line_frac" in broken and "dup_line_char_frac" not in broken
    assert "dup_para_frac" not in broken  # single newlines: one paragraph
    near = "\n".join(["ok fine"] * 4 + [para(p) for p in "abcdef"])
    assert "dup_line_frac" not in gopher_repetition_rules(near)


def test_dup_line_char_frac():
    long_line = para("l", 30)
    breaks = "\n".join([long_line, long_line] + [para(p, 2) for p in "abcdefgh"])
    broken = gopher_repetition_rules(breaks)
    assert "dup_line_char_frac" in broken and "dup_line_frac" not in broken
    near = "\n".join([long_line, para("m", 30)] + [para(p, 2) for p in "abcdefgh"])
    assert gopher_repetition_rules(near) == []


def _interleave(gram, filler_per_gram, reps):
    """`gram` repeated `reps` times, each time followed by `filler_per_gram` fresh four-character words.

    The top n-gram then holds len(gram) / (len(gram) + 4 * filler_per_gram) of the word characters.
    """
    filler = unique("w", filler_per_gram * reps)
    out = []
    for r in range(reps):
        out += gram + filler[r * filler_per_gram : (r + 1) * filler_per_gram]
    return " ".join(out)


def test_top_2_gram():
    # "big deal": 7 / (7 + 4) = 0.64 of the characters; no longer n-gram repeats
    assert gopher_repetition_rules(_interleave(["big", "deal"], 1, 20)) == ["top_2_gram"]
    # 7 / (7 + 8 * 4) = 0.18, under 0.20
    assert gopher_repetition_rules(_interleave(["big", "deal"], 8, 20)) == []


def test_top_3_gram():
    broken = gopher_repetition_rules(_interleave(["big", "deal", "now"], 2, 20))
    assert "top_3_gram" in broken and "top_4_gram" not in broken
    # 10 / (10 + 12 * 4) = 0.17, under 0.18
    assert gopher_repetition_rules(_interleave(["big", "deal", "now"], 12, 20)) == []


def test_top_4_gram():
    broken = gopher_repetition_rules(_interleave(["a", "big", "deal", "now"], 2, 20))
    assert "top_4_gram" in broken and "dup_5_gram" not in broken
    # 11 / (11 + 15 * 4) = 0.155, under 0.16
    assert gopher_repetition_rules(_interleave(["a", "big", "deal", "now"], 15, 20)) == []


def test_top_ngram_needs_a_repeat():
    # A two-word title is all one bigram, but nothing repeats.
    assert gopher_repetition_rules("Hello world") == []


@pytest.mark.parametrize("n", range(5, 11))
def test_dup_n_gram(n):
    phrase = unique("p", n)
    breaks = " ".join(phrase + unique("u", 20) + phrase)
    broken = gopher_repetition_rules(breaks)
    assert f"dup_{n}_gram" in broken
    assert f"dup_{n + 1}_gram" not in broken  # the repeated run is only n words long
    # change one word of the second copy: no n-gram repeats
    altered = phrase[:-1] + ["z999"]
    assert f"dup_{n}_gram" not in gopher_repetition_rules(" ".join(phrase + unique("u", 20) + altered))


def test_dup_n_gram_counts_overlaps_once():
    # "a b c d e" five times in a row (25 words): the 5-gram repeats overlap, yet the duplicated
    # characters are the last four copies' words exactly once: 20 of 25 words = 0.8, never above 1.
    text = " ".join(["abcd", "efgh", "ijkl", "mnop", "qrst"] * 5)
    assert "dup_5_gram" in gopher_repetition_rules(text)
    assert "dup_5_gram" not in gopher_repetition_rules(text, dup_ngram_char_fracs=((5, 0.8),))
    assert "dup_5_gram" in gopher_repetition_rules(text, dup_ngram_char_fracs=((5, 0.79),))


def test_repetition_on_empty_text():
    assert gopher_repetition_rules("") == []
    assert gopher_repetition_rules("\n\n \n") == []


# --- stages -------------------------------------------------------------------------------------


def _table():
    table = ledger_table([CRAWL_SAMPLE[0], CRAWL_SAMPLE[2], CRAWL_SAMPLE[4], CRAWL_SAMPLE[2]])
    decided = pa.array([None, None, None, "language"], pa.string())
    reason = pa.array([None, None, None, "language:fr"], pa.string())
    table = table.set_column(table.schema.get_field_index("stage"), "stage", decided)
    return table.set_column(table.schema.get_field_index("reason"), "reason", reason)


def test_gopher_quality_stage():
    table = _table()
    out = GopherQuality()(table)
    assert out.column_names == table.column_names  # no new columns
    assert out["stage"].to_pylist() == [None, "quality", "quality", "language"]
    assert out["reason"].to_pylist() == [
        None,
        "quality:too_short,too_few_alphabetic_words,missing_stop_words",
        "quality:too_many_symbols,missing_stop_words",
        "language:fr",  # already rejected: untouched
    ]
    # keyword arguments reach the rules
    out = GopherQuality(min_words=10, min_alpha_words_ratio=0.5, min_stop_words=0)(table)
    assert out["reason"].to_pylist() == [None, None, "quality:too_many_symbols", "language:fr"]


def test_gopher_repetition_stage():
    out = GopherRepetition()(_table())
    assert out["stage"].to_pylist() == [None, None, "repetition", "language"]
    assert out["reason"][2].as_py() == (
        "repetition:top_2_gram,top_3_gram,top_4_gram,dup_5_gram,dup_6_gram,dup_7_gram,dup_8_gram,dup_9_gram,dup_10_gram"
    )
    out = GopherRepetition(top_ngram_char_fracs=(), dup_ngram_char_fracs=((10, 0.99),))(_table())
    assert out["reason"].to_pylist() == [None, None, None, "language:fr"]


def test_stage_rejects_misspelt_keyword_early():
    with pytest.raises(TypeError):
        GopherQuality(min_word=10)
