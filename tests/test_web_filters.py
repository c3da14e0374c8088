"""The optional filters others use: C4 (stages/c4.py), FineWeb's quality filter (stages/fineweb.py) and URL
blocklists (stages/url_filter.py): each rule on a small text, their config errors, and the belt with all three."""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import CONFIGS, ROOT, cli, ledger_table
from pipeline import belt
from pipeline.passes import filtering
from pipeline.config.load import load_config
from stages.c4 import C4Filter, bad_words_pattern, c4_clean
from stages.english_split import count_sentences, count_words
from stages.fineweb import FineWebQuality, fineweb_rules
from stages.url_filter import Blocklist, UrlFilter, url_key

GOOD = [
    "The river carries sand from the mountains to the sea.",
    "Farmers grow rice on the delta, because the soil is rich.",
    "When the river floods, it brings new soil with it.",
    "That is why the land stays fertile for so long.",
    "People have lived there for thousands of years.",
]


def page(*extra: str) -> str:
    return "\n".join([*GOOD, *extra])


# --- C4 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Read more",  # no terminal punctuation
        "And so it went on...",  # an ellipsis is no terminal punctuation
        "Too short.",  # fewer than 3 words
        "Please enable JavaScript to see this page.",
        "By using this site you accept our Terms of Use.",
        "This website uses cookies to work well.",
        "A word " + "x" * 1001 + " too long.",
    ],
)
def test_c4_removes_each_kind_of_line_and_keeps_the_rest_exactly(line):
    text, broken = c4_clean(page(line))
    assert broken == [] and text == "\n".join(GOOD)


def test_c4_keeps_lines_stripped_and_without_citations():
    text, broken = c4_clean(
        "  " + GOOD[0] + "  \n\n" + "\n".join(GOOD[1:4]) + "\nIt rained for days[1] and days.[citation needed]"
    )
    assert broken == []
    assert text == "\n".join(GOOD[:4]) + "\nIt rained for days and days."


@pytest.mark.parametrize(
    "text, broken",
    [
        (page("Lorem ipsum dolor sit amet."), ["lorem_ipsum"]),
        (page("The set {a, b} has two members."), ["curly_bracket"]),
        ("\n".join(GOOD[:4]), ["too_few_sentences"]),
        ("\n".join(GOOD[:3]) + "\nLorem Ipsum is {here}.", ["lorem_ipsum", "curly_bracket", "too_few_sentences"]),
        # datatrove looks for lorem ipsum and brackets only in lines that passed the first line rules
        (page("lorem ipsum and {x} without an end"), []),
        (page("Enable javascript for {this} page."), []),
    ],
)
def test_c4_page_rules_name_every_rule_broken(text, broken):
    assert c4_clean(text)[1] == broken


def test_c4_counts_sentences_as_spacy_does():
    # one line of five sentences is enough; an abbreviation or an ellipsis ends no sentence
    assert c4_clean("One is here. Two is here! Three is here? Four is here. Five is here.")[1] == []
    assert count_sentences("Mr. Smith met Dr. Jones at 5 p.m. today.") == 1
    assert count_sentences("He waited... and waited. Then he left.") == 2
    assert count_sentences("It ended on Wednesday.The next day was calm.") == 2  # spaCy splits lower.Upper
    assert count_sentences("Michael Shadlen, Ph.D., of Columbia.") == 1
    assert count_sentences("Interest on U.S. Debt . Order Reprints") == 2


def test_c4_options_turn_rules_off_and_sentences_mode_joins_with_spaces():
    assert c4_clean("\n".join(GOOD[:2]), min_num_sentences=0) == ("\n".join(GOOD[:2]), [])
    assert c4_clean(page("Read more here"), filter_no_terminal_punct=False)[0].endswith("\nRead more here")
    assert c4_clean(page("Lorem ipsum dolor sit amet."), filter_lorem_ipsum=False)[1] == []
    assert c4_clean(page("x" * 2000 + " is the end."), max_word_length=None)[0].endswith(" is the end.")
    text, broken = c4_clean("Title\n" + " ".join(GOOD) + " Read more", split_paragraph=False)
    assert broken == [] and text == "Title\n" + " ".join(GOOD)  # a sentence is what ends at its punctuation


def test_c4_bad_words_are_whole_words_in_any_case(tmp_path):
    pattern = bad_words_pattern(["ass", "bad phrase"])
    assert c4_clean(page("What an Ass you are."), bad_words=pattern)[1] == ["bad_words"]
    assert c4_clean(page("It was a Bad  phrase.", "A BAD PHRASE it was."), bad_words=pattern)[1] == ["bad_words"]
    assert c4_clean(page("The class was massive."), bad_words=pattern)[1] == []
    assert c4_clean(page("Read ass"), bad_words=pattern)[1] == []  # on the kept text only: that line is removed

    words = tmp_path / "words.txt"
    words.write_text("ass\n\n")
    stage = C4Filter(bad_words_file=str(words), min_num_sentences=5)
    out = stage(ledger_table([page("Read more"), page("What an ass."), "short"]))
    assert out["text"].to_pylist() == ["\n".join(GOOD), page("What an ass."), "short"]  # rejects keep their text
    assert out["reason"].to_pylist() == [None, "c4:bad_words", "c4:too_few_sentences"]


def test_c4_bad_words_in_scripts_without_spaces_match_inside_words():
    pattern = bad_words_pattern(["坏词", "ass"])
    assert pattern.search("这是坏词吗") and pattern.search("un ass.") and not pattern.search("这是好词 class")


def test_c4_leaves_decided_rows_alone():
    batch = ledger_table([page("Read more"), page("Read more")])
    batch = batch.set_column(batch.schema.get_field_index("stage"), "stage", pa.array([None, "language"]))
    out = C4Filter()(batch)
    assert out["text"].to_pylist() == ["\n".join(GOOD), page("Read more")]


# --- FineWeb --------------------------------------------------------------------------------------


def test_fineweb_passes_prose_and_names_every_rule_broken():
    assert fineweb_rules(page()) == []
    assert fineweb_rules("") == fineweb_rules("\n \n") == ["empty"]
    menu = "\n".join(["Home", "About", "Contact", "Blog", "Shop", "Home"])
    assert fineweb_rules(menu) == ["line_punct_ratio", "short_line_ratio", "char_dup_ratio", "list_ratio"]


def test_fineweb_line_punctuation_around_its_threshold():
    line = "a line of prose that has no final mark at all"
    # 12 of 100 lines end in terminal punctuation: at the threshold, kept; 11: rejected
    keep = "\n".join([line + "."] * 12 + [line + f" {i}" for i in range(88)])
    drop = "\n".join([line + "."] * 11 + [line + f" {i}" for i in range(89)])
    assert "line_punct_ratio" not in fineweb_rules(keep)
    assert "line_punct_ratio" in fineweb_rules(drop)
    none = "\n".join(line + f" {i}" for i in range(10))
    assert "line_punct_ratio" not in fineweb_rules(none, line_punct_exclude_zero=True)
    assert "line_punct_ratio" in fineweb_rules("\n".join([line + "。"] + [line] * 9))  # 。 counts, 1 of 10 is few


def test_fineweb_short_lines_duplicates_and_lists_around_their_thresholds():
    long = [f"Line {i} is long enough to count as a line of prose here." for i in range(100)]
    short = [f"Short line {i}." for i in range(100)]  # at most 30 characters
    assert "short_line_ratio" not in fineweb_rules("\n".join(short[:67] + long[:33]))
    assert "short_line_ratio" in fineweb_rules("\n".join(short[:68] + long[:32]))
    # duplicated line characters over all characters (newlines aside): 1% is the limit
    unique = "\n".join(long)
    chars = len(unique.replace("\n", ""))
    dup = "x" * (chars // 100 - 2) + "."
    assert "char_dup_ratio" not in fineweb_rules(unique + "\n" + dup + "\n" + dup)
    assert "char_dup_ratio" in fineweb_rules(unique + "\n" + long[0] + "\n" + long[0])
    # newlines per word: 0.3 is the limit; "One two three." is 4 tokens, as spaCy counts them
    assert count_words("One two three.") == 4
    tokens = {"17-year-old": 5, "don’t": 2, "dont": 2, "4K": 2, "Ph.D.,": 2, "and/or": 1, "...": 1, "(2011-12-08)": 7}
    assert {word: count_words(word) for word in tokens} == tokens
    assert "list_ratio" not in fineweb_rules("\n".join(f"Item {i}." for i in range(10)))  # 9 newlines, 30 words
    assert "list_ratio" in fineweb_rules("\n".join(f"Item {i}." for i in range(11)))  # 10 newlines, 33 words


def test_fineweb_stage_rejects_with_its_name():
    out = FineWebQuality()(ledger_table([page(), "Home\nAbout\nContact"]))
    assert out["reason"].to_pylist() == [None, "fineweb:line_punct_ratio,short_line_ratio,list_ratio"]


# --- URL blocklists --------------------------------------------------------------------------------


def test_a_domain_blocks_its_subdomains_only_and_a_url_itself(tmp_path):
    (tmp_path / "domains.txt").write_text("# spam\nexample.com   # a comment\n\n*.tracker.net\nNEWS.site/a/\n")
    (tmp_path / "more.txt").write_text("https://news.site/b?x=1\nexample.com\n")
    blocklist = Blocklist([str(tmp_path / "domains.txt"), str(tmp_path / "more.txt")])
    blocked = {
        "https://example.com/": "example.com (domains.txt)",
        "http://a.b.EXAMPLE.com:8080/x": "example.com (domains.txt)",
        "https://cdn.tracker.net/p": "*.tracker.net (domains.txt)",
        "https://news.site/a": "NEWS.site/a/ (domains.txt)",
        "http://news.site/a/#top": "NEWS.site/a/ (domains.txt)",
        "https://news.site:443/b?x=1": "https://news.site/b?x=1 (more.txt)",
    }
    for url, entry in blocked.items():
        assert blocklist.match(url) == entry, url
    for url in [
        "https://badexample.com/",
        "https://example.com.au/",
        "https://news.site/a/b",
        "https://news.site/a?page=2",
        "https://news.site/b",
        "https://www.news.site/a",
        "not a url",
        "http://[spam.example/x",  # an unclosed IPv6 bracket: urlsplit raises on it
        "http://spam.example[/x",
        None,
    ]:
        assert blocklist.match(url) is None, url
    assert url_key("https://Example.com:80/a/") == url_key("example.com/a") == "example.com/a"


def test_hosts_files_adblock_domain_rules_and_idna_domains_block(tmp_path):
    """The formats people download: a hosts file, an adblock list (only its domain rules list domains) and
    internationalized domains, Unicode or punycode, matching URLs written either way."""
    (tmp_path / "hosts").write_text(
        "\ufeff# StevenBlack-style hosts\n127.0.0.1 localhost\n0.0.0.0 ads.example.com\n"
        "0.0.0.0 a.tracker.net b.tracker.net  # two\n::1 six.example\n"
    )
    (tmp_path / "easylist.txt").write_text(
        "[Adblock Plus 2.0]\n! Title: EasyList\n||adserver.example^\n||pixel.example^$third-party\n"
        "@@||allowed.example^\n##.banner\nexample.org##.ad\n||cdn.example/ads/\n/banner/*\n"
    )
    (tmp_path / "idna.txt").write_text("bücher.example\nxn--caf-dma.example\n")
    files = ["hosts", "easylist.txt", "idna.txt"]
    blocklist = Blocklist([str(tmp_path / name) for name in files])
    blocked = {
        "https://ads.example.com/x": "ads.example.com (hosts)",
        "http://b.tracker.net/": "b.tracker.net (hosts)",
        "http://six.example/": "six.example (hosts)",
        "https://www.adserver.example/p": "adserver.example (easylist.txt)",
        "https://pixel.example/1.gif": "pixel.example (easylist.txt)",
        "https://xn--bcher-kva.example/": "bücher.example (idna.txt)",
        "https://shop.BÜCHER.example/a": "bücher.example (idna.txt)",
        "https://café.example/": "xn--caf-dma.example (idna.txt)",
    }
    for url, entry in blocked.items():
        assert blocklist.match(url) == entry, url
    for url in ["https://allowed.example/", "https://example.org/", "https://cdn.example/", "https://tracker.net/"]:
        assert blocklist.match(url) is None, url
    assert "0.0.0.0" not in blocklist.domains and "127.0.0.1" not in blocklist.domains


def test_url_stage_rejects_with_the_entry_in_detail(tmp_path):
    (tmp_path / "block.txt").write_text("spam.example\n")
    batch = ledger_table(["a", "b"], url=["https://www.spam.example/x", "https://ham.example/"])
    out = UrlFilter([str(tmp_path / "block.txt")])(batch)
    assert out["reason"].to_pylist() == ["url:blocked", None]
    assert out["detail"].to_pylist() == ["blocklist entry spam.example (block.txt)", None]


def test_url_stage_travels_as_its_paths_and_loads_the_list_where_it_runs(tmp_path):
    # a stage object is pickled into every task: a blocklist of 200,000 domains must not travel with it
    (tmp_path / "big.txt").write_text("".join(f"site{i}.example\n" for i in range(200_000)))
    stage = pickle.loads(pickle.dumps(UrlFilter([str(tmp_path / "big.txt")])))
    assert len(pickle.dumps(stage)) < 1_000
    out = stage(ledger_table(["a", "b"], url=["http://x.site199999.example/", "http://site200000.example/"]))
    assert out["reason"].to_pylist() == ["url:blocked", None]


def test_url_stage_reloads_a_blocklist_edited_while_the_worker_lives(tmp_path):
    # a long-lived worker keeps the loaded list; an edit (a new size or modification time) makes it read again
    path = tmp_path / "block.txt"
    path.write_text("spam.example\n")
    stage = UrlFilter([str(path)])
    urls = ["https://spam.example/", "https://ham.example/"]
    assert stage(ledger_table(["a", "b"], url=urls))["reason"].to_pylist() == ["url:blocked", None]
    path.write_text("ham.example\n")  # the same size: only the modification time tells
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert stage(ledger_table(["a", "b"], url=urls))["reason"].to_pylist() == [None, "url:blocked"]


# --- config ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, overrides, expected",
    [
        (None, ["url.blocklists=[block.txt]"], "url.blocklists[0]: file '{tmp}/block.txt' not found"),
        ("# only a comment\n\n", ["url.blocklists=[block.txt]"], "url.blocklists[0]: '{tmp}/block.txt' holds no entry"),
        (None, ["url.blocklists=[]"], "url.blocklists: the url stage needs at least one blocklist file"),
        (None, ["c4.bad_words_file=block.txt"], "c4.bad_words_file: file '{tmp}/block.txt' not found"),
        ("\n", ["c4.bad_words_file=block.txt"], "c4.bad_words_file: '{tmp}/block.txt' holds no entry"),
        (None, ["fineweb.short_line_thr=1.5"], "fineweb.short_line_thr: expected a number in [0, 1]"),
        (None, ["c4.max_word_length=0"], "c4.max_word_length: expected a positive integer"),
    ],
)
def test_a_missing_or_empty_list_file_is_a_one_line_config_error(tmp_path, content, overrides, expected):
    if content is not None:
        (tmp_path / "block.txt").write_text(content)
    config = tmp_path / "config.yaml"
    config.write_text((CONFIGS / "local.yaml").read_text().replace("../tests/", f"{ROOT}/tests/"))
    (tmp_path / "classifier").symlink_to(CONFIGS / "classifier")
    stages = (
        "stages=[extract, language, url, c4, fineweb]" if "url." in overrides[0] else "stages=[extract, c4, fineweb]"
    )
    sets = [arg for assignment in [stages, *overrides] for arg in ("--set", assignment)]
    done = cli("validate", str(config), "--output", str(tmp_path / "out"), *sets)
    assert done.returncode == 2, done.stderr
    assert expected.format(tmp=tmp_path) in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_list_files_content_is_in_the_resume_fingerprint(tmp_path):
    block, words = tmp_path / "block.txt", tmp_path / "words.txt"
    block.write_text("aaaa.example\n")
    words.write_text("ass\n")
    overrides = [
        "stages=[extract, language, url, c4, fineweb, quality, repetition, classifier]",
        f"url.blocklists=[{block}]",
        f"c4.bad_words_file={words}",
    ]
    config = load_config(str(CONFIGS / "local.yaml"), overrides=overrides, output=str(tmp_path / "out"))
    files = filtering.input_files(config)
    before = filtering.fingerprint(config, files)
    for path, text in ((block, "bbbb.example\n"), (words, "bum\n")):
        stat = os.stat(path)
        path.write_text(text)  # same size, and the time put back: only the content says it changed
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert filtering.fingerprint(config, files) != before
        before = filtering.fingerprint(config, files)


# --- the belt ---------------------------------------------------------------------------------------


def test_the_belt_with_url_c4_and_fineweb(tmp_path, embedded_ray):
    (tmp_path / "block.txt").write_text("fieldnotebook.example\n")
    overrides = [
        "stages=[extract, language, url, c4, fineweb, quality, repetition, classifier]",
        f"url.blocklists=[{tmp_path / 'block.txt'}]",
        "packing.seq_len=128",
    ]
    config = load_config(str(CONFIGS / "local.yaml"), overrides=overrides, output=str(tmp_path / "out"))
    manifest = belt.run(config)

    assert manifest["invariants"] and all(manifest["invariants"].values()), manifest["invariants"]
    assert [s for s, row in manifest["stages"].items() if "rows_in" in row] == [
        "read",
        "extract",
        "language",
        "url",
        "c4",
        "fineweb",
        "quality",
        "repetition",
        "classifier",
        "exact_dedup",
        "near_dedup",
    ]
    rejects = pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / "out" / "rejects").glob("*.parquet"))])
    by_stage = {stage: rejects.filter(pa.compute.equal(rejects["stage"], stage)) for stage in ("url", "c4", "fineweb")}
    urls = by_stage["url"]
    assert urls.num_rows > 0 and set(urls["reason"].to_pylist()) == {"url:blocked"}
    assert all("fieldnotebook.example" in url for url in urls["url"].to_pylist())
    assert set(urls["detail"].to_pylist()) == {"blocklist entry fieldnotebook.example (block.txt)"}
    assert by_stage["c4"].num_rows > 0
    assert all(reason.startswith("c4:") for reason in by_stage["c4"]["reason"].to_pylist())
    assert all(reason.startswith("fineweb:") for reason in by_stage["fineweb"]["reason"].to_pylist())
    docs = pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / "out" / "docs").glob("*.parquet"))])
    assert docs.num_rows == manifest["counts"]["kept"] > 0
    for text in docs["text"].to_pylist():  # C4 kept only lines that end in terminal punctuation
        assert all(line.endswith((".", "?", "!", '"', "'")) for line in text.split("\n")), text
