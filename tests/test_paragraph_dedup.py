"""dedup.paragraphs (pipeline/passes/paragraphs.py, stages/paragraphs.py): a paragraph seen before, in the order of
documents, leaves every later document; a document left too short is rejected with the share removed; the
kept text is what docs/ and the token shards hold; the same bytes on Ray (two workers) and Spark (one), with an
exact set or a Bloom filter; DCLM's BFF rule over n-grams. The expected verdicts come from a plain Python
reading of the rule, not from the code under test."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helpers import CONFIGS, ROOT, assert_complete, assert_same_output, spark_missing
from pipeline.passes.filtering import part_name
from stages.paragraphs import WHOLE_DOCUMENT, BloomFilter, ExactSet, bff_units, seen_before, units

BANNER = "We use cookies to improve your experience. By using this site you accept our cookie policy."
FOOTER = "Copyright 2026 Example Media Group. All rights reserved. Terms of use apply."
MIN_WORDS = 20


def words(rng: random.Random, n: int) -> str:
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(n))


def corpus(seed: int = 3) -> list[str]:
    """Documents with a cookie banner (every one), a footer (every other one), a paragraph repeated inside
    one document, a banner spaced differently, and one document that is little more than boilerplate."""
    rng = random.Random(seed)
    docs = []
    for i in range(40):
        paragraphs = [BANNER] + [words(rng, 25) for _ in range(3)]
        if i % 2:
            paragraphs.append(FOOTER)
        docs.append("\n".join(paragraphs))
    docs[5] = docs[5] + "\n\n" + docs[5].split("\n")[1]  # its own paragraph again, after a blank line
    docs[7] = docs[7].replace(BANNER, "  " + BANNER.replace(" ", "   ") + " ")  # the banner, spaced otherwise
    docs[9] = "\n".join([BANNER, words(rng, 12), FOOTER])  # 12 words of its own: too short once cleaned
    return docs


def expected(docs: list[str]) -> list[tuple[str, float, bool]]:
    """The rule, read plainly: per document in order, each line whose words (joined by one space) were seen in
    an earlier line goes; then (the text left, the share of characters removed, whether MIN_WORDS words or
    more are left: kept)."""
    seen: set[str] = set()
    result = []
    for text in docs:
        kept = []
        for line in text.split("\n"):
            key = " ".join(line.split())
            if key in seen:
                continue
            if key:
                seen.add(key)
            kept.append(line)
        after = "\n".join(kept)
        result.append((after, 1 - len(after) / len(text), len(after.split()) >= MIN_WORDS))
    return result


def write_corpus(folder, docs: list[str], files: int = 3) -> list[str]:
    paths = []
    per_file = -(-len(docs) // files)
    for f in range(files):
        path = folder / f"part-{f}.jsonl"
        chunk = docs[f * per_file : (f + 1) * per_file]
        path.write_text("".join(json.dumps({"id": f"d{f}-{i}", "text": t}) + "\n" for i, t in enumerate(chunk)))
        paths.append(str(path))
    return paths


def config(tmp_path, inputs: list[str], name: str, **paragraphs) -> str:
    raw = {
        "sources": [{"name": "web", "input": inputs, "id_field": "id"}],
        "output": str(tmp_path / name),
        "stages": ["language"],
        "language": {"method": "fasttext", "languages": [], "threshold": 0.0},  # all kept: the verdicts are dedup's
        "classifier": {"kind": "none"},
        "tokenizer": {"vocab_size": 400},
        "packing": {"seq_len": 64},
        "dedup": {"paragraphs": {"enabled": True, "min_words": MIN_WORDS, **paragraphs}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


def kept_texts(out) -> dict[str, str]:
    table = pq.read_table(out / "docs", columns=["id", "text"])
    return dict(zip(table["id"].to_pylist(), table["text"].to_pylist()))


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory, ray_session):
    from helpers import run_here

    folder = tmp_path_factory.mktemp("paragraphs")
    docs = corpus()
    inputs = write_corpus(folder, docs)
    manifest = run_here(config(folder, inputs, "exact", filter="exact"), folder / "exact")
    return folder, docs, inputs, manifest


IDS = [f"d{f}-{i}" for f in range(3) for i in range(14)][:40]  # write_corpus's ids, in order


def test_later_copies_of_a_paragraph_leave_the_text_and_the_ledger_holds(cleaned):
    folder, docs, _, manifest = cleaned
    out = folder / "exact"
    assert_complete(out)
    want = dict(zip(IDS, expected(docs)))
    found = kept_texts(out)
    assert {i for i, (_, _, kept) in want.items() if kept} == set(found)
    for doc_id, text in found.items():
        assert text == want[doc_id][0], doc_id
    assert BANNER in found["d0-0"] and FOOTER in found["d0-1"]  # the first of each stays
    assert sum(BANNER in t for t in found.values()) == 1 and sum(FOOTER in t for t in found.values()) == 1
    assert found["d0-5"].count(docs[5].split("\n")[1]) == 1  # a document's own repeat goes too
    assert "cookie" not in found["d0-7"]  # the banner spaced otherwise is the same paragraph
    for row in pq.read_table(out / "docs", columns=["id", "paragraph_removed"]).to_pylist():
        assert row["paragraph_removed"] == pytest.approx(want[row["id"]][1], abs=1e-12)


def test_a_document_left_too_short_is_rejected_with_the_share_removed(cleaned):
    folder, docs, _, manifest = cleaned
    rejects = pq.read_table(folder / "exact" / "rejects").to_pylist()
    (short,) = [r for r in rejects if r["stage"] == "paragraph_dedup"]
    share = expected(docs)[9][1]
    assert short["id"] == "d0-9" and short["reason"] == "too_short"
    assert short["detail"] == f"{share:.1%} of its characters removed, 12 words left"
    assert short["text"].startswith(BANNER)  # as it was: what was rejected, not what was left
    assert manifest["counts"]["rejected"]["paragraph_dedup"] == 1
    assert manifest["stages"]["paragraph_dedup"]["rows_in"] == len(docs)


def test_the_manifest_and_report_list_the_boilerplate_found(cleaned):
    folder, docs, _, manifest = cleaned
    section = manifest["paragraph_dedup"]
    top = {row["text"]: row["removed"] for row in section["top_paragraphs"]}
    assert top[BANNER] == len(docs) - 1  # every later document's, the one spaced otherwise included (one key)
    assert top[FOOTER] == len(docs) // 2 - 1  # every later odd document's
    assert section["chars"] == sum(len(d) for d in docs)
    assert section["chars_removed"] == sum(len(d) - len(after) for d, (after, _, _) in zip(docs, expected(docs)))
    assert section["documents_changed"] == len(docs) - 1 and section["paragraphs_removed"] == 40 - 1 + 19 + 1
    assert section["filter"] == "exact" and section["estimated_false_positive_rate"] == 0.0
    samples = section["samples"]  # each file's two kept documents most changed, the five most of those first
    shares = [(doc_id[:2], round(share, 4)) for doc_id, (_, share, kept) in zip(IDS, expected(docs)) if kept]
    tops = [v for f in ("d0", "d1", "d2") for v in sorted((v for g, v in shares if g == f), reverse=True)[:2]]
    assert [s["removed"] for s in samples] == sorted(tops, reverse=True)[:5]
    assert all("cookie" in s["before"] and "cookie" not in s["after"] for s in samples)
    report = (folder / "exact" / "report.html").read_text()
    assert "Paragraph dedup" in report and "We use cookies to improve your experience" in report


def test_the_token_shards_hold_the_kept_text(cleaned):
    from tokenizers import Tokenizer

    folder, _, _, manifest = cleaned
    tokenizer = Tokenizer.from_file(str(folder / "exact" / "tokens" / "tokenizer.json"))
    texts = kept_texts(folder / "exact").values()
    encoded = sum(len(tokenizer.encode(t).ids) + 1 for t in texts)  # each with its end token
    assert manifest["mixture"]["table"][0]["tokens_available"] == encoded


@pytest.mark.slow
def test_a_bloom_filter_spark_on_one_worker_gives_the_bytes_of_the_exact_set_on_ray(cleaned, tmp_path, run_here):
    if reason := spark_missing():
        pytest.skip(reason)
    folder, _, inputs, _ = cleaned
    path = config(tmp_path, inputs, "bloom", filter="bloom", false_positive_rate=1e-6, expected=80_000)
    manifest = run_here(path, tmp_path / "bloom", ["engine=spark", "spark.master=local[1]"])
    assert_same_output(folder / "exact", tmp_path / "bloom")
    section = manifest["paragraph_dedup"]
    assert section["filter"] == "bloom" and 0 < section["estimated_false_positive_rate"] < 1e-6
    assert section["bytes_per_shard"] == BloomFilter(80_000 / 8, 1e-6).bytes == 35_944  # sized for `expected`


@pytest.mark.slow
def test_bff_on_spark_with_a_bloom_filter_gives_the_bytes_of_ray_with_an_exact_set(cleaned, tmp_path, run_here):
    if reason := spark_missing():
        pytest.skip(reason)
    folder, _, inputs, _ = cleaned
    bff = {"ngram": 5, "remove_type": "old-both"}
    ray = run_here(config(tmp_path, inputs, "ray", filter="exact", **bff), tmp_path / "ray")
    spark_settings = ["engine=spark", "spark.master=local[1]"]
    run_here(
        config(tmp_path, inputs, "spark", filter="bloom", false_positive_rate=0.3, **bff),
        tmp_path / "spark",
        spark_settings,
    )
    assert_same_output(tmp_path / "ray", tmp_path / "spark")  # a Bloom filter of 30% false positives: same verdicts
    assert ray["paragraph_dedup"]["bff_paragraphs_removed"] > 0


@pytest.mark.slow
def test_a_run_killed_in_paragraph_dedup_reruns_to_the_same_bytes(cleaned, tmp_path):
    from test_user_stages import run_killed

    folder, _, inputs, _ = cleaned
    path = config(tmp_path, inputs, "killed", filter="exact")
    # killed -9 once step 1 has written a file's paragraphs: inside the paragraph steps (or finalize just after)
    run_killed(Path(path), ROOT, ROOT, tmp_path / "killed" / "_work" / "paragraphs" / "lines", at_least=1)
    assert (tmp_path / "killed" / "_work" / "paragraphs").exists()  # killed before the run could end
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", path], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_output(folder / "exact", tmp_path / "killed")


def test_bff_removes_a_paragraph_most_of_whose_ngrams_were_seen(tmp_path, run_here):
    rng = random.Random(5)
    original = words(rng, 40)
    edited = original.split()
    edited[-1] = "changed"  # 40 words, 36 5-grams: all but the last one seen
    first = "\n".join([original, words(rng, 30)])
    second = "\n".join([" ".join(edited), words(rng, 30)])
    third = "\n".join([words(rng, 10) + " " + " ".join(original.split()[:10]), words(rng, 30)])  # 6 of 16 seen
    inputs = write_corpus(tmp_path, [first, second, third], files=1)
    manifest = run_here(config(tmp_path, inputs, "bff", ngram=5, threshold=0.8, filter="exact"), tmp_path / "bff")
    found = kept_texts(tmp_path / "bff")
    assert found["d0-0"] == first
    assert found["d0-1"] == second.split("\n")[1]  # 35 of 36 n-grams seen: 0.97 >= 0.8
    assert found["d0-2"] == third  # 6 of 16: stays
    assert manifest["paragraph_dedup"]["paragraphs_removed"] == 1


def test_units_split_lines_as_python_does_and_ignore_spacing():
    texts = pa.array(["a  b\n\n a b \nc\u2028d e", "", "x\ny"])
    lines, found = units(texts)
    assert lines["doc"].tolist() == [0, 0, 0, 2, 2] and lines["para"].tolist() == [0, 2, 3, 0, 1]
    assert found["hash"][0] == found["hash"][1]  # "a  b" and " a b ": one paragraph


def test_bff_units_are_word_bound_tokens_and_a_paragraph_under_min_ngram_has_none():
    texts = pa.array(["one, two three four\n\nfive six", "Home | About us\r\nx", "\u00a0\n  \n"])
    lines, found = bff_units(texts, ngram=3, min_ngram=2)
    # "one" "," "two" "three" "four": 3 trigrams; "five six": one unit of both; "|" is a token, "\r" is none
    assert lines["doc"].tolist() == [0, 0, 1] and lines["para"].tolist() == [0, 2, 0]
    assert lines["units"].tolist() == [3, 1, 2]  # "x" (1 token) under min_ngram: no unit, never removed
    lines, _ = bff_units(texts, ngram=3, min_ngram=2, whole_document=True)
    assert lines["para"].tolist() == [WHOLE_DOCUMENT] * 2 and lines["units"].tolist() == [5, 3]  # across lines


def test_bff_keeps_short_paragraphs_one_at_the_threshold_and_never_inserts_a_removed_one(tmp_path):
    rng = random.Random(11)
    first = words(rng, 17)  # 5 13-grams
    edited = first.rsplit(" ", 1)[0] + " changed"  # 4 of its 5 13-grams seen: 0.8, not over 0.8
    menu = "Home | About us | Contact"  # 6 tokens: under min_ngram (13), never removed
    longer = first + " more"  # 5 of 6 seen: removed, so its last 13-gram is never inserted
    tail = " ".join(longer.split()[-13:])  # that 13-gram alone: not seen
    texts = [f"{first}\n{menu}", f"{edited}\n{menu}", longer, f"{tail}\n{menu}", f"{edited}\n{first}"]
    bff = {"ngram": 13, "min_ngram": 13, "threshold": 0.8, "remove_type": "paragraph"}
    rows, stats = steps(tmp_path, texts, bff=bff, min_words=0)
    assert rows["text"].to_pylist()[:2] == texts[:2] and rows["text"][3].as_py() == texts[3]
    assert rows["reason"][2].as_py() == "too_short"  # its one paragraph removed: no words left
    assert rows["reason"][4].as_py() == "too_short"  # both seen before (the edited one was kept, so inserted)
    assert stats["paragraphs_removed"] == 3


def test_a_bloom_filter_finds_every_unit_seen_and_about_its_rate_of_others():
    rng = np.random.default_rng(0)
    hashes = rng.integers(0, 2**63, size=60_000, dtype=np.uint64)
    stream = np.concatenate([hashes[:40_000], hashes[30_000:]])  # 10,000 repeated
    keys = np.arange(len(stream))
    exact = np.concatenate([seen_before(part, k, ExactSet()) for part, k in [(stream, keys)]])
    bloom = BloomFilter(expected=60_000, rate=0.01)
    flags = np.concatenate(
        [seen_before(stream[i : i + 7_000], keys[i : i + 7_000], bloom) for i in range(0, len(stream), 7_000)]
    )
    assert exact.sum() == 10_000 and not (exact & ~flags).any()  # no unit seen before is missed
    false_positives = int((flags & ~exact).sum()) / (len(stream) - 10_000)
    assert false_positives < 0.02 and bloom.estimated_false_positive_rate() < 0.02
    assert bloom.bytes == bloom.bits // 8 and bloom.bits >= 60_000 * 9.5  # 9.6 bits per item at 1%


@pytest.mark.parametrize(
    "setting, message",
    [
        ("dedup.paragraphs.filter=fast", "dedup.paragraphs.filter: expected one of bloom, exact"),
        ("dedup.paragraphs.false_positive_rate=0", "dedup.paragraphs.false_positive_rate: expected a number in (0, 1)"),
        ("dedup.paragraphs.threshold=1", "dedup.paragraphs.threshold: expected a number in [0, 1)"),
        ("dedup.paragraphs.remove_type=both", "dedup.paragraphs.remove_type: expected one of paragraph, old-both"),
        ("dedup.paragraphs.min_ngram=5", "dedup.paragraphs.min_ngram: BFF's setting, set only with"),
        ("dedup.paragraphs.remove_type=document", "dedup.paragraphs.remove_type: BFF's setting, set only with"),
        ("dedup.paragraphs.ngram=0", "dedup.paragraphs.ngram: expected"),
        ("dedup.paragraphs.min_words=-1", "dedup.paragraphs.min_words: expected"),
    ],
)
def test_a_paragraph_setting_out_of_range_is_one_line_naming_it(setting, message, tmp_path):
    from pipeline.config import ConfigError
    from pipeline.config.load import load_config

    with pytest.raises(ConfigError) as error:
        load_config(str(CONFIGS / "local.yaml"), overrides=[setting], output=str(tmp_path / "o"))
    assert str(error.value).startswith(message) and "\n" not in str(error.value), str(error.value)


# Paragraph dedup's steps called directly, without an engine: step 1 per file, step 2 per shard, then finalize's
# edit of the file's rows (issue 46's cases: bounded memory, the filter's size, texts left empty, Unicode spaces).
SETTINGS = {"ngram": None, "threshold": 0.8, "min_words": MIN_WORDS}


def steps(
    folder: Path, texts: list[str], shards: int = 2, bff: dict | None = None, **settings
) -> tuple[pa.Table, dict]:
    """Steps 1 to 3 and finalize's edit over one input file of `texts` (every document kept by the stages);
    `bff`: {ngram, min_ngram, threshold, remove_type} for BFF's mode, else exact paragraphs."""
    from pipeline.passes import paragraphs

    n = len(texts)
    rows = pa.table(
        {
            "order": pa.array(range(n), pa.int64()),
            "id": [f"d{i}" for i in range(n)],
            "text": pa.array(texts, pa.string()),
            "stage": pa.nulls(n, pa.string()),
            "reason": pa.nulls(n, pa.string()),
            "detail": pa.nulls(n, pa.string()),
        }
    )
    (folder / "filtered").mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, folder / "filtered" / "file-00000.parquet")
    work = folder / "paragraphs"
    work.mkdir(exist_ok=True)
    item = {"filtered": str(folder / "filtered" / "file-00000.parquet"), "folder": str(work), "file": 0}
    bff = bff or {"ngram": 0, "min_ngram": 0, "remove_type": "paragraph", "threshold": 0.8}
    step1 = {"dropped": [], "shards": shards, "whole_document": bff["remove_type"] == "document"}
    counted = paragraphs.hash_file(item | step1 | {"ngram": bff["ngram"], "min_ngram": bff["min_ngram"]})
    found, kind = [], settings.pop("filter", "exact")
    for s in range(shards):
        step = {"folder": str(work), "shard": s, "files": [0], "filter": kind, "rate": 0.001}
        find = paragraphs.find_repeats if bff["ngram"] else paragraphs.find_seen
        found.append(find(step | {"expected": max(counted["units"][s], 1)}))
    if bff["ngram"]:
        ids = np.cumsum([0] + [r["repeated"] for r in found]).tolist()
        judge = {"folder": str(work), "files": [0], "ids": ids, "threshold": bff["threshold"]}
        paragraphs.judge_paragraphs(judge | {"document_rule": bff["remove_type"] == "old-both"})
    return paragraphs.edit(rows, 0, {"folder": str(work)} | SETTINGS | {"ngram": bff["ngram"]} | settings)


def test_a_document_with_no_words_left_is_rejected_whatever_min_words(tmp_path):
    rows, stats = steps(tmp_path, [BANNER + "\n" + FOOTER, BANNER + "\n\n" + FOOTER + "\n"], min_words=0)
    assert rows["stage"].to_pylist() == [None, "paragraph_dedup"] and rows["reason"][1].as_py() == "too_short"
    assert rows["detail"][1].as_py().endswith(", 0 words left")


def test_a_line_of_unicode_spaces_is_no_paragraph_and_never_listed_as_removed(tmp_path):
    spaces = "\u00a0\u2003\u3000 \u202f"
    lines, _ = units(pa.array([f"a\n{spaces}\nb\u00a0c\n\u2028"]))
    assert lines["para"].tolist() == [0, 2]  # the line of spaces and the lone line separator are no paragraphs
    first = "\n".join([BANNER, spaces, words(random.Random(1), 30)])
    second = "\n".join([spaces, BANNER.replace(" ", "\u00a0"), words(random.Random(2), 30), spaces])
    rows, stats = steps(tmp_path, [first, second])
    assert rows["text"][1].as_py() == "\n".join([spaces, words(random.Random(2), 30), spaces])
    assert [text for text, _ in stats["top"]] == [BANNER]  # the banner as its key (words, one space), not a blank


def peak_mb_of_child(script: str, cap_mb: int = 1500, timeout: float = 120) -> float:
    """Runs `script` (which prints nothing) in a fresh Python and returns its peak RSS in MB; kills it past
    `cap_mb` (an assertion error) so that a broken bound cannot take the machine."""
    import time

    code = script + "\nprint([r for r in open('/proc/self/status') if r.startswith('VmHWM')][0].split()[1])\n"
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started = time.monotonic()
    while child.poll() is None:
        try:
            status = Path(f"/proc/{child.pid}/status").read_text()
            rss = int(next(row for row in status.splitlines() if row.startswith("VmRSS")).split()[1]) / 1024
        except (OSError, StopIteration):
            rss = 0
        if rss > cap_mb or time.monotonic() - started > timeout:
            child.kill()
            child.wait()
            raise AssertionError(f"killed at {rss:.0f} MB RSS after {time.monotonic() - started:.0f} s")
        time.sleep(0.05)
    out, err = child.communicate()
    assert child.returncode == 0, err.decode()[-2000:]
    return int(out.split()[-1]) / 1024


def test_the_bloom_filters_estimate_counts_its_bits_without_unpacking_them():
    # a 128 MB filter with its pages touched; unpacking a byte per bit would hold 1 GB more
    script = (
        "import numpy as np\nfrom stages.paragraphs import BloomFilter\n"
        "b = BloomFilter(70_000_000, 0.001)\nb.words[:] = np.uint64(0x0101010101010101)\n"
        "assert b.bytes > 120e6 and abs(b.estimated_false_positive_rate() - 0.125 ** b.probes) < 1e-12\n"
    )
    assert peak_mb_of_child(script) < 128 + 250


@pytest.mark.slow
def test_paragraph_dedup_of_a_file_of_one_word_lines_keeps_a_bounded_memory(tmp_path):
    # three 9 MB documents of one-word lines (4.5 million paragraphs each, all but a few removed): the steps
    # and finalize's edit of the file held every removed paragraph as Python objects (killed at 2.5 GB here;
    # 1.0 GB now, the process's 0.35 GB of imports and texts included)
    script = (
        "import sys; sys.path.insert(0, 'tests')\nfrom pathlib import Path\n"
        "from test_paragraph_dedup import steps\n"
        "texts = [('w%d\\n' % i) + 'a\\nb\\n' * 2_250_000 for i in range(3)]\n"
        f"rows, stats = steps(Path({str(tmp_path)!r}), texts, min_words=1)\ndel texts\n"
        "assert stats['paragraphs_removed'] == 3 * 4_500_000 - 2 and rows['stage'].null_count == 3\n"
        "assert stats['top'] == [('a', 3 * 2_250_000 - 1), ('b', 3 * 2_250_000 - 1)], stats['top']\n"
    )
    assert peak_mb_of_child(script, cap_mb=2500) < 1200


def test_a_bloom_filter_is_sized_for_the_units_counted_when_expected_is_fewer():
    from pipeline.passes.paragraphs import units_per_shard

    assert units_per_shard(1, np.array([40_000, 0])) == [40_000, 1]  # `expected: 1`: 8 bytes before
    assert units_per_shard(1_000_000, np.array([40_000, 10])) == [500_000, 500_000]
    rng = np.random.default_rng(1)
    hashes = rng.integers(0, 2**63, size=40_000, dtype=np.uint64)
    bloom = BloomFilter(units_per_shard(1, np.array([40_000]))[0], 0.001)
    assert seen_before(hashes, np.arange(len(hashes)), bloom).sum() < 40_000 * 0.003  # all new: the rate holds


def test_validate_refuses_a_bloom_filter_too_large_naming_its_size(tmp_path):
    from pipeline.config import ConfigError
    from pipeline.config.load import load_config

    settings = ["dedup.paragraphs.enabled=true", "dedup.paragraphs.expected=1000000000000"]
    with pytest.raises(ConfigError) as error:
        load_config(str(CONFIGS / "local.yaml"), overrides=settings, output=str(tmp_path / "o"))
    message = str(error.value)
    assert message.startswith("dedup.paragraphs.expected: ") and "\n" not in message, message
    assert "209.2 GiB per shard" in message, message


def test_validate_refuses_paragraph_dedup_with_a_curated_source_in_one_line(tmp_path):
    from pipeline.config import ConfigError
    from pipeline.config.load import load_config

    pq.write_table(pa.table({"text": ["an earlier run's document"]}), tmp_path / "part-00000.parquet")
    raw = yaml.safe_load((CONFIGS / "local.yaml").read_text())
    earlier = {"name": "earlier", "input": [str(tmp_path / "part-00000.parquet")], "curated": True}
    raw["sources"] = [raw["sources"][0] | {"input": [str(CONFIGS / "../tests/fixtures/warc/*")]}, earlier]
    raw["dedup"]["paragraphs"], raw["classifier"] = {"enabled": True}, {"kind": "none"}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as error:
        load_config(str(tmp_path / "c.yaml"), output=str(tmp_path / "o"))
    message = str(error.value)
    assert message.startswith("dedup.paragraphs.enabled: sources[1] ('earlier') is curated") and "\n" not in message


# DCLM's BFF (`ngram`), checked against a line-by-line port of its process_line (tests/bff_port.py) on real pages
GROUND_TRUTH = ROOT.parent / "shared" / "realhtml" / "ground_truth.jsonl"


def real_texts(datasets: tuple[str, ...] | None = None) -> list[str]:
    """The real pages' main texts (../shared/realhtml), of `datasets` or all, in file order: the order both
    see them in."""
    if not GROUND_TRUTH.exists():
        pytest.skip(f"../shared/realhtml not found ({GROUND_TRUTH}): skipped")
    rows = (json.loads(line) for line in GROUND_TRUTH.read_text().split("\n") if line)
    return [r["main_text"] for r in rows if r.get("main_text") and (not datasets or r["dataset"] in datasets)]


def port_verdicts(texts: list[str], bff: dict) -> tuple[dict[int, set[int]], set[int]]:
    """The port's paragraphs removed per document (str.split("\\n") numbers) and documents removed whole."""
    import bff_port

    results = bff_port.run_bff(texts, bff["remove_type"], bff["min_ngram"], bff["ngram"], bff["threshold"])
    if bff["remove_type"] == "document":
        return {}, {i for i, r in enumerate(results) if r["windows"]}
    paragraphs = {i: bff_port.removed_paragraphs(t, r) for i, (t, r) in enumerate(zip(texts, results))}
    return {i: p for i, p in paragraphs.items() if p}, {i for i, r in enumerate(results) if r.get("document_removed")}


def crawlbelt_verdicts(folder: Path, texts: list[str], bff: dict) -> tuple[dict[int, set[int]], set[int]]:
    """crawlbelt's steps, called directly on the same texts in the same order (exact set, 3 shards)."""
    rows, _ = steps(folder, texts, shards=3, bff=bff, min_words=0)
    gone = pq.read_table(folder / "paragraphs" / "removed" / part_name(0)).to_pylist()
    paragraphs: dict[int, set[int]] = {}
    for row in gone:
        if row["para"] >= 0:
            paragraphs.setdefault(row["order"], set()).add(row["para"])
    whole = {i for i, reason in enumerate(rows["reason"].to_pylist()) if reason == "duplicate"}
    assert whole == {row["order"] for row in gone if row["para"] < 0}
    return paragraphs, whole


def assert_same_verdicts(folder: Path, texts: list[str], remove_type: str) -> tuple[int, int]:
    bff = {"ngram": 13, "min_ngram": 13, "threshold": 0.8, "remove_type": remove_type}  # DCLM's README run
    want_paragraphs, want_documents = port_verdicts(texts, bff)
    got_paragraphs, got_documents = crawlbelt_verdicts(folder, texts, bff)
    assert got_documents == want_documents
    assert got_paragraphs == want_paragraphs
    return sum(map(len, want_paragraphs.values())), len(want_documents)


def test_bff_mode_removes_what_dclms_bff_removes_on_real_greek_polish_russian_chinese_and_english_pages(tmp_path):
    # DAniEL's news in five scripts and Mozilla Readability's pages: 197 paragraphs and 5 documents removed
    paragraphs, documents = assert_same_verdicts(tmp_path, real_texts(("daniel", "mozilla_readability")), "old-both")
    assert paragraphs > 100 and documents > 0  # a comparison that could fail


@pytest.mark.slow
def test_bff_mode_removes_what_dclms_bff_removes_on_all_the_real_pages(tmp_path):
    texts = real_texts()
    for remove_type in ("paragraph", "old-both", "document"):
        paragraphs, documents = assert_same_verdicts(tmp_path / remove_type, texts, remove_type)
        assert paragraphs > 500 if remove_type != "document" else documents > 0
