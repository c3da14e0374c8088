"""Every documented choice of every config key (README's config table) runs the whole belt on the bundled
sample: five runs, each with several choices, each run's manifest checked."""

import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helpers import CRAWL_SAMPLE, ROOT
from pipeline import belt
from pipeline.config.load import load_config
from pipeline.passes.finalize import doc_columns
from stages.langid import default_lid_model_path
from stages.tokens import train_bpe

WARCS = ROOT / "tests" / "fixtures" / "warc"

# Each run: (the choices, as --set overrides), plus what else it brings.
RUNS = {
    "trafilatura": [
        "extract.method=trafilatura",
        "extract.fast=false",
        "extract.favor=balanced",
        "language.method=fasttext+stopwords",
        "quality.words=whitespace",
        "quality.stop_words=auto",
        "classifier.kind=naive_bayes",
        "dedup.verify=exact",
        "tokenizer.engine=auto",
        "packing.remainder=drop",
        "packing.shuffle=true",
        "rejects.text=snippet",
        "dedup.paragraphs.enabled=true",  # DCLM's BFF as DCLM runs it: paragraphs and its document rule
        "dedup.paragraphs.ngram=13",
        "dedup.paragraphs.remove_type=old-both",
        "dedup.paragraphs.filter=exact",
    ],
    "resiliparse": [
        "extract.method=resiliparse",
        "extract.fast=true",
        "extract.favor=precision",
        "language.method=fasttext",
        "language.max_chars=null",
        "classifier.kind=fasttext",
        "classifier.label=__label__en",
        f"classifier.model_path={default_lid_model_path()}",
        "classifier.threshold=0.5",
        "dedup.verify=estimated",
        "dedup.exact=false",
        "quality.enabled=false",
        "tokenizer.engine=tokenizers",
        "packing.remainder=pad",
        "packing.shuffle=false",
        "packing.formats=[parquet, megatron]",
        "rejects.text=full",
        "dedup.paragraphs.enabled=true",
        "dedup.paragraphs.ngram=8",
        "dedup.paragraphs.min_ngram=3",
        "dedup.paragraphs.remove_type=document",
    ],
    "resiliparse-clean": [
        "extract.method=resiliparse-clean",
        "extract.favor=recall",
        "language.method=stopwords",
        "quality.words=datatrove",
        "classifier.kind=none",
        "dedup.verify=none",
        "dedup.near=false",
        "repetition.enabled=false",
        "mixture.budget_tokens=20000",
        "rejects.text=none",
        "decontamination.ngram_detector=false",
        "decontamination.near_detector=true",
    ],
    "resiliparse-blocks": [
        "extract.method=resiliparse-blocks",
        "dedup.paragraphs.enabled=true",  # exact paragraphs (ngram null), a Bloom filter
        "dedup.paragraphs.filter=bloom",
        "dedup.paragraphs.remove_type=paragraph",
        "progress.log_every_s=0.5",  # progress lines (stderr is no terminal here); metrics.port: tests/test_progress.py
    ],
    "trafilatura+resiliparse": [
        "extract.method=trafilatura+resiliparse",
        "extract.include_tables=false",
        "extract.include_comments=true",
        "language.languages=[]",
        "quality.stop_words=english",
        "classifier.threshold=-5",
        "dedup.bands=16",
        "dedup.rows=4",
        # the stages outside the default belt, with the other choice of each of their switches
        "stages=[extract, language, pii, c4, fineweb, quality, repetition, classifier]",
        "pii.mask_private_ips=true",
        "c4.split_paragraph=false",
        "c4.remove_citations=false",
        "c4.filter_no_terminal_punct=false",
        "c4.max_word_length=null",
        "c4.filter_lorem_ipsum=false",
        "c4.filter_javascript=false",
        "c4.filter_curly_bracket=false",
        "c4.filter_policy=false",
        "fineweb.line_punct_exclude_zero=true",
    ],
}


pytestmark = pytest.mark.usefixtures("embedded_ray")  # conftest.py


def flat(section: dict, prefix="") -> dict:
    out = {}
    for key, value in section.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("name", RUNS)
def test_every_documented_choice_runs_the_whole_belt(tmp_path, caplog, name):
    overrides = list(RUNS[name]) + ["packing.seq_len=128"]
    if name in ("resiliparse-clean", "trafilatura+resiliparse"):
        # A second source of curated Parquet whose text is large_string (Polars' default).
        texts = pa.array(CRAWL_SAMPLE * 3, pa.large_string())
        pq.write_table(pa.table({"text": texts}), tmp_path / "polars.parquet")
        # A third source of text, in a file whose name does not say its format, with its own field names.
        rows = [
            {"key": f"note-{i}", "body": text, "link": f"https://notes.example/{i}"}
            for i, text in enumerate(CRAWL_SAMPLE)
        ]
        if name == "resiliparse-clean":
            (tmp_path / "notes.data").write_text("".join(json.dumps(row) + "\n" for row in rows))
            text = (
                "{name: notes, input: ['%s'], format: jsonl, text_field: body, id_field: key, url_field: link, "
                "select: {score: lang_score, min_score: 0.5}}" % (tmp_path / "notes.data")
            )
        else:
            pq.write_table(pa.Table.from_pylist(rows), tmp_path / "notes.data")
            text = (
                "{name: notes, input: ['%s'], format: parquet, text_field: body, id_field: key, "
                "url_field: link, select: {score: quality_score, top_fraction: 0.5}}" % (tmp_path / "notes.data")
            )
        overrides.append(
            f"sources=[{{name: web, input: ['{WARCS}/*'], format: warc}}, "
            f"{{name: old, input: ['{tmp_path / 'polars.parquet'}'], weight: 0.5, curated: true}}, "
            f"{text}]"
        )
    if name == "resiliparse-clean":  # the contamination stage, masking a passage of a fixture page
        passage = "Galileo first saw these moons in January 1610, and he noticed that their positions changed"
        (tmp_path / "moons.jsonl").write_text(json.dumps({"text": passage}) + "\n")
        overrides += [
            "stages=[extract, language, quality, repetition, contamination, classifier]",
            f"decontamination.eval_sets=[{{name: moons, path: '{tmp_path / 'moons.jsonl'}', action: mask}}]",
        ]
    if name == "trafilatura+resiliparse":
        tokenizer = train_bpe(iter(CRAWL_SAMPLE * 20), 400, ["<|endoftext|>", "<|pad|>"])
        tokenizer.save(str(tmp_path / "tokenizer.json"))
        overrides.append(f"tokenizer.path={tmp_path / 'tokenizer.json'}")
    config = load_config(str(ROOT / "configs" / "local.yaml"), overrides=overrides, output=str(tmp_path / "out"))
    with caplog.at_level(logging.INFO, logger="crawlbelt"):
        manifest = belt.run(config)

    chosen = flat(manifest["config"])
    for assignment in RUNS[name]:
        key, value = assignment.split("=", 1)
        assert chosen[key] == yaml.safe_load(value), (key, chosen[key])
    assert manifest["invariants"] and all(manifest["invariants"].values()), manifest["invariants"]
    assert manifest["counts"]["kept"] > 0 and manifest["tokens"]["sequences"] > 0
    if chosen["dedup.paragraphs.enabled"]:
        section = manifest["paragraph_dedup"]
        assert section["units"] > 0 and ("repeated_units" in section) == bool(chosen["dedup.paragraphs.ngram"])
    docs = [pq.read_table(tmp_path / "out" / path) for path in manifest["outputs"]["docs"]]
    assert all(table.schema.names == doc_columns(config) for table in docs)
    assert ("pii_replacements" in doc_columns(config)) == (name == "trafilatura+resiliparse")
    masked = "contamination_masked" in doc_columns(config)
    assert masked == (name == "resiliparse-clean")
    if masked:
        assert any(n for table in docs for n in table["contamination_masked"].to_pylist())
    assert all(table.schema.field("quality_score").type == pa.float64() for table in docs)
    scores = [s for table in docs for s in table["quality_score"].to_pylist()]
    assert (set(scores) == {None}) == (name == "resiliparse-clean")  # classifier.kind: none scores nothing
    sources = {row["source"]: row for row in manifest["mixture"]["table"]}
    if "old" in sources:
        assert sources["old"]["documents"] == len(CRAWL_SAMPLE) * 3 and manifest["tokens"]["tokens_per_source"]["old"]
    if "notes" in sources:  # read with its own fields, and only its selected documents drawn
        notes = [
            row
            for table in docs
            for row in table.select(["id", "url", "file"]).to_pylist()
            if row["file"].endswith("notes.data")
        ]
        assert notes and all(
            row["id"].startswith("note-") and row["url"].startswith("https://notes.example/") for row in notes
        )
        selected = [line for line in caplog.messages if line.startswith("mixture: notes: ")]
        assert selected and sources["notes"]["documents"] == int(selected[0].split()[2]) <= len(notes)
    lines = [record.getMessage() for record in caplog.records if record.name == "crawlbelt"]
    assert not any(line.endswith("None s") for line in lines), lines
    if chosen["progress.log_every_s"] < 60:  # a pass's progress, every half second
        assert any(line.startswith("progress: ") and " left" in line for line in lines), lines
    if name == "resiliparse":
        assert manifest["tokens"]["encoded_with"].startswith("tokenizers")
        # exact dedup and the quality rules are off: their log lines say they did not run
        assert any(line.startswith("exact_dedup: ") and line.endswith("did not run") for line in lines), lines
