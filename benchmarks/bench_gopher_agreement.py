"""Gopher quality rules: crawlbelt's verdicts against datatrove 0.10.1's GopherQualityFilter on identical texts,
and the share of each language's pages the rules keep with English and with per-language stop words.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_gopher_agreement.py               # both reports
    PYTHONPATH=. .venv/bin/python benchmarks/bench_gopher_agreement.py --no-datatrove  # languages only
    PYTHONPATH=. .venv/bin/python benchmarks/bench_gopher_agreement.py --source warc   # texts the belt extracts

Texts: the realhtml ground-truth main texts (`../shared/realhtml/ground_truth.jsonl`, those that have one), or
with `--source warc` the texts the belt's extract stage gives for `../shared/realhtml/warc/` (configs/local.yaml,
`--set` overrides). Each text's language is the belt's language stage's answer (fastText lid.176 with the
stop-word detector for short texts, the default config).

Agreement: datatrove's filter with its defaults (English words and stop words, as FineWeb's pipeline runs it)
in its benchmark venv (benchmarks/bench_filter.py makes it) against `gopher_quality_rules(stop_words="english")`
with `words` whitespace and datatrove; the same keep or reject verdict counts as agreement (datatrove names
only the first rule broken). Every difference of the datatrove mode is listed. CPU time (`time.process_time`)
of the rules and, in the venv, of spaCy's tokenization alone.

Languages: per language, the share of texts `gopher_quality_rules` keeps with `stop_words` english and auto,
and the share that holds at least two of the language's stop words (STOP_WORDS_BY_LANGUAGE).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_filter import DEFAULT_CONFIG, DEFAULT_WARCS, datatrove_python, warc_files  # noqa: E402  (benchmarks/ is on the path)
from stages.quality import STOP_WORDS_BY_LANGUAGE, WORDS, gopher_quality_rules  # noqa: E402
from stages.words import datatrove_words  # noqa: E402

GROUND_TRUTH = ROOT.parent / "shared" / "realhtml" / "ground_truth.jsonl"

# Runs inside the datatrove venv: the filter's verdict for each text, and the CPU time of its word split alone.
DATATROVE_RUNNER = textwrap.dedent(
    r"""
    import json, sys, time
    from datatrove.data import Document
    from datatrove.pipeline.filters import GopherQualityFilter
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    texts = [json.loads(line) for line in open(sys.argv[1])]
    tokenizer = load_word_tokenizer("eng")
    tokenizer.word_tokenize("warm up: spaCy loads its English tokenizer here.")
    started = time.process_time()
    for text in texts:
        tokenizer.word_tokenize(text)
    tokenize_s = time.process_time() - started
    gopher = GopherQualityFilter()
    verdicts = []
    for i, text in enumerate(texts):
        verdict = gopher.filter(Document(text=text, id=str(i)))
        verdicts.append("kept" if verdict is True else verdict[1])
    print(json.dumps({"verdicts": verdicts, "tokenize_cpu_s": tokenize_s}))
    """
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", choices=("ground-truth", "warc"), default="ground-truth")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--no-datatrove", action="store_true", help="the languages report only")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    return parser.parse_args(argv)


def ground_truth_texts() -> list[str]:
    rows = [json.loads(line) for line in GROUND_TRUTH.open()]
    return [row["main_text"] for row in rows if (row.get("main_text") or "").strip()]


def extracted_texts(overrides: list[str]) -> list[str]:
    """The texts the belt's extract stage makes from the realhtml WARCs (alive rows only)."""
    import pyarrow.compute as pc

    from pipeline.config.load import load_config
    from pipeline.spec import DOCUMENT_STAGES
    from stages.warc_read import read_warc

    files = warc_files([DEFAULT_WARCS])
    config = load_config(DEFAULT_CONFIG, overrides=overrides, inputs=files)
    build = DOCUMENT_STAGES["extract"].build
    assert build is not None  # a built-in stage, built from its config section
    extract = build(config)
    texts = []
    for index, path in enumerate(files):
        for batch in read_warc(path, index, "bench", config.read.batch_size, int(config.read.max_payload_mb * 1e6)):
            batch = extract(batch)
            texts += batch.filter(pc.is_null(batch["stage"]))["text"].to_pylist()
    return texts


def languages_of(texts: list[str]) -> list[str]:
    """Each text's language as the belt's default language stage gives it (any language kept)."""
    from stages.langid import LanguageId

    detector = LanguageId(method="fasttext+stopwords", languages=(), short_text_chars=100)
    return [detector.detect(text)[0] for text in texts]


def our_verdicts(texts: list[str], langs: list[str], **settings) -> tuple[list[list[str]], float]:
    started = time.process_time()
    verdicts = [gopher_quality_rules(text, lang=lang, **settings) for text, lang in zip(texts, langs)]
    return verdicts, time.process_time() - started


def datatrove_verdicts(texts: list[str]) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        handle.writelines(json.dumps(text) + "\n" for text in texts)
    env = {"PYTHONPATH": "", "HF_HUB_OFFLINE": "1", "LOGURU_LEVEL": "WARNING", "PATH": "/usr/bin:/bin"}
    process = subprocess.run(
        [str(datatrove_python()), "-c", DATATROVE_RUNNER, handle.name], capture_output=True, text=True, env=env
    )
    Path(handle.name).unlink()
    if process.returncode != 0:
        sys.stderr.write(process.stderr[-4000:])
        raise SystemExit(f"bench_gopher_agreement: the datatrove run failed (exit {process.returncode})")
    return json.loads(process.stdout.strip().splitlines()[-1])


def agreement_report(texts: list[str], langs: list[str], theirs: dict) -> tuple[str, dict]:
    lines = [
        f"{len(texts)} texts ({sum(lang == 'en' for lang in langs)} English); datatrove keeps "
        f"{theirs['verdicts'].count('kept')}; spaCy's tokenization alone {theirs['tokenize_cpu_s']:.2f} CPU-s",
        "",
        "| `quality.words` | same verdict, all texts | English texts | CPU-s, rules | kept by ours |",
        "|---|---|---|---|---|",
    ]
    figures: dict = {"texts": len(texts), "datatrove_tokenize_cpu_s": theirs["tokenize_cpu_s"], "modes": {}}
    english = [i for i, lang in enumerate(langs) if lang == "en"]
    differences = {}
    for words in WORDS:
        ours, seconds = our_verdicts(texts, langs, words=words, stop_words="english")
        same = [(not broken) == (verdict == "kept") for broken, verdict in zip(ours, theirs["verdicts"])]
        same_en = sum(same[i] for i in english)
        lines.append(
            f"| {words} | {sum(same):,} of {len(texts):,} ({100 * sum(same) / len(texts):.1f}%) | {same_en:,} of "
            f"{len(english):,} ({100 * same_en / len(english):.1f}%) | {seconds:.2f} | {sum(not b for b in ours):,} |"
        )
        differences[words] = [
            (i, langs[i], ",".join(ours[i]) or "kept", theirs["verdicts"][i]) for i, ok in enumerate(same) if not ok
        ]
        figures["modes"][words] = {"same": sum(same), "same_en": same_en, "cpu_s": seconds}
    for words, rows in differences.items():
        lines += ["", f"differences, words {words}: (ours, datatrove's) -> texts"]
        pairs = Counter((ours, theirs) for _, _, ours, theirs in rows)
        lines += [f"  {ours} / {theirs}: {count}" for (ours, theirs), count in pairs.most_common()]
    lines += ["", "each difference, words datatrove: text index, language, ours / datatrove's: why"]
    lines += [
        f"  {i} {lang}: {ours} / {theirs}: {cause(texts[i], ours, theirs)}"
        for i, lang, ours, theirs in differences["datatrove"]
    ]
    return "\n".join(lines), figures


def cause(text: str, ours: str, theirs: str) -> str:
    """Which of the two known differences in the rules (not the words) explains a verdict, checked on the text."""
    lines = text.splitlines()
    ending = sum(line.rstrip().endswith(("...", "…")) for line in lines)
    blank = sum(not line.strip() for line in lines)
    if "mostly_ellipsis" in ours and blank and ending / len(lines) <= 0.3:
        return (
            f"{ending} of {len(lines) - blank} lines end with an ellipsis; datatrove also counts the {blank} blank "
            f"lines ({ending / len(lines):.2f})"
        )
    stops = STOP_WORDS_BY_LANGUAGE["en"]
    tokens = datatrove_words(text)
    if theirs == "gopher_enough_stop_words":
        exact, any_case = set(tokens) & stops, {t.lower() for t in tokens} & stops
        return f"stop words as written {sorted(exact)}, in any case {sorted(any_case)}: datatrove matches case"
    return "not explained"


def languages_report(texts: list[str], langs: list[str]) -> tuple[str, dict]:
    by_lang: dict[str, list[int]] = defaultdict(list)
    for i, lang in enumerate(langs):
        by_lang[lang].append(i)
    lines = [
        "| language | texts | kept, English stop words | kept, its own (auto) | with >= 2 of its stop words "
        "| rejected with auto, by rule |",
        "|---|---|---|---|---|---|",
    ]
    figures = {}
    verdicts = {mode: our_verdicts(texts, langs, stop_words=mode)[0] for mode in ("english", "auto")}
    for lang, rows in sorted(by_lang.items(), key=lambda item: -len(item[1])):
        kept = {mode: sum(not verdicts[mode][i] for i in rows) for mode in verdicts}
        stops = STOP_WORDS_BY_LANGUAGE.get(lang)
        with_stops = "-"
        if stops is not None:
            held = sum("missing_stop_words" not in verdicts["auto"][i] for i in rows)
            with_stops = f"{held} ({100 * held / len(rows):.0f}%)"
        rules = Counter(rule for i in rows for rule in verdicts["auto"][i])
        lines.append(
            f"| {lang} | {len(rows)} | {kept['english']} ({100 * kept['english'] / len(rows):.0f}%) | "
            f"{kept['auto']} ({100 * kept['auto'] / len(rows):.0f}%) | {with_stops} | "
            f"{', '.join(f'{rule} {count}' for rule, count in rules.most_common()) or '-'} |"
        )
        figures[lang] = {"texts": len(rows), **kept}
    english = by_lang.get("en", [])
    changed = sum(verdicts["english"][i] != verdicts["auto"][i] for i in english)
    lines.append(f"\nEnglish verdicts that differ between english and auto: {changed} of {len(english)}")
    return "\n".join(lines), figures


def main(argv=None) -> None:
    args = parse_args(argv)
    texts = ground_truth_texts() if args.source == "ground-truth" else extracted_texts(args.overrides)
    langs = languages_of(texts)
    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, source {args.source}\n")
    figures = {}
    if not args.no_datatrove:
        report, figures["agreement"] = agreement_report(texts, langs, datatrove_verdicts(texts))
        print(report + "\n")
    report, figures["languages"] = languages_report(texts, langs)
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
