"""The belt, declared once, in order, as data.

    filter pass   read -> extract -> language -> quality -> repetition -> classifier   (per document)
    dedup pass    exact_dedup -> near_dedup                                          (global, on survivors)
    tokens pass   tokenizer -> mixture -> pack

Each StageSpec says what a stage is: its name (its reject codes are `name:reason`), the config section that
sets it up, the columns it reads and adds, its reject codes, and the keys of its section that name files it
loads. Everything else is derived from here: the per-document stages the filter pass runs, its resume
fingerprint, the manifest's stage rows, the report's funnel and the README's stage table.

A config's `stages:` list names the per-document stages in order, built-in ones by name and a user's own
by import path (stages/user.py has the contract); without it the belt is DEFAULT_STAGES.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, BinaryIO
from collections.abc import Callable

import pyarrow as pa

from pipeline.config import ClassifierConfig, CombineScorerConfig, TransformersScorerConfig
from stages.c4 import C4Filter
from stages.classifier import ClassifierScore, CombineScores, FastTextClassifier, NaiveBayes
from stages.decontaminate import Decontaminate, EvalSet
from stages.extract import Extract
from stages.fineweb import FineWebQuality
from stages.langid import LanguageId
from stages.model_scorer import TransformerScore, TransformerScorer
from stages.model_scorer import added_columns as model_columns
from stages.pii import PiiMasker
from stages.quality import GopherQuality, GopherRepetition
from stages.url_filter import UrlFilter
from stages.user import UserStage


@dataclass
class StageSpec:
    name: str
    summary: str  # what it does, for the README's table
    rejects: str = ""  # its reject codes, for the README's table
    section: str | None = None  # the config section that sets it up
    needs: tuple[str, ...] = ()  # columns it reads
    adds: dict[str, pa.DataType] = field(default_factory=dict)  # columns it adds (kept in docs/ where listed there)
    files: tuple[str, ...] = ()  # keys of its section that name files it loads: their content shapes its verdicts
    shares: tuple[str, ...] = ()  # other config sections whose settings it uses (they join its fingerprint)
    build: Callable[[Any], Any] | None = None  # config -> the stage object, or None when the config turns it off


def _extract(config):
    settings = config.extract
    return Extract(
        timeout_s=settings.timeout_s,
        favor=settings.favor,
        include_tables=settings.include_tables,
        include_comments=settings.include_comments,
        max_html_bytes=int(settings.max_html_mb * 1e6),
        method=settings.method,
        fast=settings.fast,
    )


def _language(config):
    settings = config.language
    return LanguageId(
        method=settings.method,
        languages=tuple(settings.languages),
        threshold=settings.threshold,
        short_text_chars=settings.short_text_chars,
        model_path=settings.model_path,
        max_chars=settings.max_chars,
    )


def _rules(stage_class, section: str):
    def build(config):
        settings = getattr(config, section)
        rules = {key: value for key, value in vars(settings).items() if key != "enabled"}
        return stage_class(**rules) if settings.enabled else None

    return build


def _section(stage_class, section: str):
    """A stage set up by every key of its section."""
    return lambda config: stage_class(**vars(getattr(config, section)))


def scorer(settings, name: str = "classifier", column: str = "quality_score"):
    """A classifier's scoring stage (ClassifierConfig-shaped settings), or None for kind none."""
    model: NaiveBayes | FastTextClassifier
    if settings.kind == "naive_bayes":
        model = NaiveBayes.from_files(settings.good_examples, settings.bad_examples)
    elif settings.kind == "fasttext":
        model = FastTextClassifier(settings.model_path, settings.label)
    else:
        return None
    return ClassifierScore(model, threshold=settings.threshold, name=name, column=column)


CLASSIFIER_FILES = ("good_examples", "bad_examples", "model_path")


def eval_set(settings) -> EvalSet:
    """An EvalSetConfig as the stage takes it."""
    return EvalSet(settings.name, settings.path, tuple(settings.fields), settings.action)


def opener(config) -> Callable[[str], BinaryIO]:
    """path -> binary file, for local paths and s3:// URIs (the config's storage settings)."""
    from pipeline.storage import open_input

    return partial(open_input, settings=config.storage)


def _contamination(config):
    settings, dedup = config.decontamination, config.dedup
    return Decontaminate(
        [eval_set(s) for s in settings.eval_sets],
        ngram=settings.ngram,
        ngram_detector=settings.ngram_detector,
        near_detector=settings.near_detector,
        near_threshold=settings.near_threshold,
        placeholder=settings.placeholder,
        num_perm=dedup.num_perm,  # the near-dedup stage's signatures
        shingle_words=dedup.shingle_words,
        seed=dedup.seed,
        opener=opener(config),
    )


READ = StageSpec(
    "read",
    section="read",
    summary="warcio over WARC/ARC, plain, gzip or zstd (`.warc.zst`, with or without a dictionary); one row per "
    "record; HTTP bodies decoded from gzip, deflate, br or zstd; WET `conversion` records (text/plain) are "
    "documents whose text skips extraction, decoded by the charset their Content-Type declares (else UTF-8); "
    "WAT `metadata` records are not documents; JSONL and Parquet "
    "sources give their text field",
    rejects="`read:not_html`, `read:http_status`, `read:too_large`, `read:content_encoding` (unknown, or not valid "
    "data in its encoding), `read:malformed`, `read:not_text` (an HTML page in a belt without "
    "`extract`)",
)

DOCUMENT_STAGES = {
    spec.name: spec
    for spec in [
        StageSpec(
            "extract",
            section="extract",
            needs=("html", "http_charset"),
            adds={"text": pa.string(), "charset": pa.string()},
            build=_extract,
            summary="charset (HTTP header, meta tag, detector), then trafilatura (or resiliparse: "
            "`extract.method`) with a per-document time limit that holds in C code (an extraction child "
            "process); a text given by the input is kept",
            rejects="`extract:too_large`, `extract:too_complex`, `extract:empty`, `extract:timeout`, `extract:error`",
        ),
        StageSpec(
            "language",
            section="language",
            needs=("text",),
            files=("model_path",),
            adds={"lang": pa.string(), "lang_score": pa.float64()},
            build=_language,
            summary="fastText lid.176 and/or a stop-word detector for short texts",
            rejects="`language:<code>`, `language:low_score`",
        ),
        StageSpec(
            "quality",
            section="quality",
            needs=("text",),
            build=_rules(GopherQuality, "quality"),
            summary="Gopher quality rules, with the stop words of each document's `lang`; names every rule broken",
            rejects="`quality:too_short,missing_stop_words,...`",
        ),
        StageSpec(
            "repetition",
            section="repetition",
            needs=("text",),
            build=_rules(GopherRepetition, "repetition"),
            summary="Gopher repetition rules (duplicate lines/paragraphs, top and duplicated n-grams)",
            rejects="`repetition:dup_line_frac,...`",
        ),
        StageSpec(
            "classifier",
            section="classifier",
            needs=("text",),
            adds={"quality_score": pa.float64()},
            files=CLASSIFIER_FILES,
            build=lambda config: scorer(config.classifier),
            summary="naive Bayes (or a fastText supervised model) score, optional threshold",
            rejects="`classifier:below_threshold`",
        ),
        StageSpec(
            "pii",
            section="pii",
            needs=("text",),
            adds={"pii_replacements": pa.int64()},
            build=lambda config: PiiMasker(**vars(config.pii)),
            summary="masks e-mail addresses, public IPv4 and IPv6 addresses and phone numbers in the text with "
            "placeholders (`<EMAIL>`, `<IP_ADDRESS>`, `<PHONE>`; versions, dates, ISBNs and the like kept); "
            "`pii_replacements` counts them; the stages after it, dedup and the tokens see the masked text",
            rejects="nothing: it changes the text",
        ),
        StageSpec(
            "contamination",
            section="decontamination",
            needs=("text",),
            adds={"contamination_masked": pa.int64(), "contamination_items": pa.string()},
            files=("eval_sets",),
            shares=("dedup",),
            build=_contamination,
            summary="eval sets (JSONL or Parquet, local or s3://) looked for in each document: any shared word "
            "13-gram (a sorted array of 64-bit hashes), and optionally near copies (the near-dedup stage's "
            "MinHash/LSH over item-sized windows, verified by containment); per eval set, `reject` or `mask` "
            "(the spans replaced, counted in `contamination_masked`, the items in `contamination_items`)",
            rejects="`contamination:NAME` (detail: the item's id and the matching span)",
        ),
        StageSpec(
            "url",
            section="url",
            needs=("url",),
            files=("blocklists",),
            build=_section(UrlFilter, "url"),
            summary="domain and URL blocklists (`url.blocklists`): a domain blocks its subdomains, a URL itself "
            "(scheme, fragment and final `/` aside)",
            rejects="`url:blocked` (`detail`: the entry and its file)",
        ),
        StageSpec(
            "c4",
            section="c4",
            needs=("text",),  # and replaces it: a kept page's text is its kept lines
            files=("bad_words_file",),
            build=_section(C4Filter, "c4"),
            summary="C4's rules as datatrove's C4QualityFilter: lines without terminal punctuation, with "
            "javascript, a policy phrase, too few words or a too long word removed (the kept text replaces "
            "the text); optional bad-words list (`c4.bad_words_file`)",
            rejects="`c4:lorem_ipsum,curly_bracket,too_few_sentences,bad_words`",
        ),
        StageSpec(
            "fineweb",
            section="fineweb",
            needs=("text",),
            build=_section(FineWebQuality, "fineweb"),
            summary="FineWeb's quality filter (datatrove's FineWebQualityFilter, FineWeb's thresholds); names "
            "every rule broken",
            rejects="`fineweb:line_punct_ratio,short_line_ratio,char_dup_ratio,list_ratio`, `fineweb:empty`",
        ),
    ]
}
# The belt without a `stages:` list; the other DOCUMENT_STAGES run only where a config lists them.
DEFAULT_STAGES = ["extract", "language", "quality", "repetition", "classifier"]

DEDUP_STAGES = [
    StageSpec(
        "exact_dedup",
        section="dedup",
        needs=("text",),
        summary="SHA-1 of the normalized text (NFKC, case-folded, every Unicode space or line separator a "
        "word break, runs collapsed, zero-width and other format characters removed), partitioned "
        "by hash",
        rejects="`exact_duplicate` (with `dup_of`)",
    ),
    StageSpec(
        "near_dedup",
        section="dedup",
        needs=("text",),
        summary="one-permutation MinHash on 5-word shingles of the same normalized text, LSH band buckets "
        "sharded across workers, candidates verified by exact Jaccard, connected components",
        rejects="`near_duplicate` (with `dup_of`)",
    ),
    StageSpec(
        "paragraph_dedup",
        section="dedup",
        needs=("text",),
        adds={"paragraph_removed": pa.float64()},
        summary="off unless `dedup.paragraphs.enabled`: a paragraph (line) seen before, in the order of "
        "documents, leaves every later document, by a Bloom filter or an exact set per hash shard; or, with "
        "`ngram`, DCLM's BFF (Unicode word-bound n-grams, its document rule as an option)",
        rejects="`too_short` (the share removed in `detail`), `duplicate` (BFF's document rule)",
    ),
]

TOKENS_STEPS = [
    StageSpec(
        "tokenizer",
        section="tokenizer",
        summary="byte-level BPE trained on the curated documents (deterministic), or a given `tokenizer.json` "
        "(its truncation and padding ignored, with a warning); every document encoded once per batch "
        "on either engine (tiktoken where it gives the same ids); a document's text never yields a special "
        "token's id",
    ),
    StageSpec(
        "mixture",
        section="mixture",
        summary="tokens per source, the passes each weight implies (`w_i * D / N_i`), whole passes plus a "
        "seeded sample; a source may draw only its best documents by a score (`select`)",
        rejects="nothing: draws are reported in the mixture table",
    ),
    StageSpec(
        "pack",
        section="packing",
        summary="documents joined by the end token into sequences of `seq_len + 1` tokens, one source per "
        "sequence, shuffled across shards from the seed",
    ),
]


@dataclass
class Stage:
    """One per-document stage of a run's belt: its spec and the object that runs it (None: turned off)."""

    spec: StageSpec
    runner: Any
    entry: dict = field(default_factory=dict)  # the `stages:` entry it came from (user stages: target, arguments)


def document_stages(config) -> list:
    """The objects the filter pass runs over each batch after reading, in order (turned-off stages left out)."""
    runners = [_runner(stage, config) for stage in declared(config)]
    return [runner for runner in runners if runner is not None]


def filter_steps(config) -> list[tuple[list, Any]]:
    """The filter pass in steps, each (stage objects, the pool it asks for): first the stages run in one task
    per input file (pool None), then from each transformers scorer on, a step on a pool of actors of its own
    (TransformersScorerConfig: num_cpus, num_gpus, concurrency) that also runs the stages listed after it."""
    steps: list[tuple[list, Any]] = [([], None)]
    for stage in declared(config):
        runner = _runner(stage, config)
        if runner is not None and on_actors(stage):
            steps.append(([runner], transformers_settings(stage.entry)))
        elif runner is not None:
            steps[-1][0].append(runner)
    return steps


def _runner(stage: Stage, config):
    """The object that runs a declared stage (config validation has checked its entry: spec_checks._stage_entry);
    None when its config turns it off."""
    if stage.runner is not None:  # a user's stage, imported by declared()
        return stage.runner
    if stage.spec.build is not None:  # a built-in stage, set up by its config section
        return stage.spec.build(config)
    name = stage.spec.name  # a named scorer
    if on_actors(stage):
        settings = transformers_settings(stage.entry)
        model = TransformerScorer(
            str(settings.model),
            label=settings.label,
            max_chars=settings.max_chars,
            max_tokens=settings.max_tokens,
            batch_size=settings.batch_size,
            device="cuda" if settings.num_gpus else "cpu",
            threads=max(1, int(settings.num_cpus)),
            timeout_s=settings.timeout_s,
            int_range=None if settings.int_range is None else (settings.int_range[0], settings.int_range[1]),
        )
        return TransformerScore(model, name, settings.threshold, settings.int_threshold)
    if stage.entry.get("kind") == "combine":
        combine = CombineScorerConfig(**{key: value for key, value in stage.entry.items() if key != "scorer"})
        return CombineScores(name, combine.scores, combine.how, combine.threshold)
    return scorer(scorer_settings(stage.entry), name=name, column=f"score_{name}")


def scorer_spec(name: str, entry: dict) -> StageSpec:
    """A named scorer's spec: a `{scorer: NAME, kind: ...}` entry adds `score_NAME` (and a transformers
    model's label or rounded score)."""
    transformers, combine = entry.get("kind") == "transformers", entry.get("kind") == "combine"
    return StageSpec(
        name,
        section=None,
        needs=tuple(entry["scores"]) if combine else ("text",),
        adds=model_columns(name, entry["model"]) if transformers else {f"score_{name}": pa.float64()},
        files=("model",) if transformers else () if combine else CLASSIFIER_FILES,
        summary=f"scorer: `score_{name}`",
        rejects=f"`{name}:below_threshold`",
    )


def scorer_settings(entry: dict) -> ClassifierConfig:
    """A `{scorer: NAME, kind: ..., ...}` entry's settings as a ClassifierConfig."""
    return ClassifierConfig(**{key: value for key, value in entry.items() if key != "scorer"})


def transformers_settings(entry: dict) -> TransformersScorerConfig:
    """A `{scorer: NAME, kind: transformers, ...}` entry's settings."""
    return TransformersScorerConfig(**{key: value for key, value in entry.items() if key != "scorer"})


def on_actors(stage: Stage) -> bool:
    """Whether a declared stage runs as a step of its own on a pool of actors (a transformers scorer) rather
    than in the filter pass's task per input file."""
    return stage.entry.get("kind") == "transformers" and "scorer" in stage.entry


def user_stage(entry: dict, probe: bool = False) -> Stage:
    """A `{use: module:Class, ...}` entry's stage. `probe`: set it up here and run it on a probe batch, so that
    a stage that cannot start or breaks its contract stops the run before any work (stages.user.StageError)."""
    runner = UserStage.from_entry(entry)
    if probe:
        runner.probe(probe_batch())
    return Stage(
        StageSpec(
            runner.name,
            section=None,
            adds=runner.adds,
            summary=f"user stage `{runner.target}`",
            rejects=f"`{runner.name}:<reason>`, `{runner.name}:error`",
        ),
        runner,
        entry,
    )


def probe_batch() -> pa.Table:
    """Two alive rows of text, as the reader gives them."""
    from stages.warc_read import DOCUMENT_SCHEMA

    texts = ["A probe document of crawlbelt: is the stage ready?", "Another one, with a second line.\nThe end."]
    rows: dict[str, list] = {name: [None, None] for name in DOCUMENT_SCHEMA.names}
    rows.update(
        order=[0, 1],
        id=["probe-0", "probe-1"],
        url=["https://example.com/a", "https://example.com/b"],
        source=["probe", "probe"],
        text=texts,
    )
    return pa.Table.from_pydict(rows, schema=DOCUMENT_SCHEMA)


def declared(config) -> list[Stage]:
    """The run's per-document stages, in order, without building them (their `runner` is None), except
    users' stages, whose runner is imported but not set up."""
    stages = []
    for entry in config.stages if config.stages is not None else DEFAULT_STAGES:
        if isinstance(entry, str):
            stages.append(Stage(DOCUMENT_STAGES[entry], None, {"stage": entry}))
        elif "scorer" in entry:
            stages.append(Stage(scorer_spec(entry["scorer"], entry), None, entry))
        else:
            stages.append(user_stage(entry))
    return stages


def stage_names(config) -> list[str]:
    """Every stage that can reject a document, in belt order: the manifest's rows and the report's funnel."""
    dedup = DEDUP_STAGES if config.dedup.paragraphs.enabled else DEDUP_STAGES[:-1]  # paragraphs: off by default
    return [READ.name, *(stage.spec.name for stage in declared(config)), *(s.name for s in dedup)]


def added_columns(config) -> dict[str, pa.DataType]:
    """The columns the run's per-document stages add, in belt order."""
    columns: dict[str, pa.DataType] = {}
    for stage in declared(config):
        columns.update(stage.spec.adds)
    if config.dedup.paragraphs.enabled:
        columns.update(DEDUP_STAGES[-1].adds)
    return columns


def readme_table() -> str:
    """The README's table of the default belt's stages (tests/test_spec.py checks the README holds it)."""
    rows = [READ, *(DOCUMENT_STAGES[name] for name in DEFAULT_STAGES), *DEDUP_STAGES, *TOKENS_STEPS]
    lines = ["| # | stage | what it does | rejects as |", "|---|---|---|---|"]
    lines += [
        f"| {i} | {spec.name.replace('_', ' ')} | {spec.summary} | {spec.rejects} |" for i, spec in enumerate(rows, 1)
    ]
    optional = [spec for name, spec in DOCUMENT_STAGES.items() if name not in DEFAULT_STAGES]
    if optional:
        lines += ["", "Built-in stages a `stages:` list may add, anywhere among stages 2 to 6:", ""]
        lines += ["| stage | what it does | rejects as |", "|---|---|---|"]
        lines += [f"| `{spec.name}` | {spec.summary} | {spec.rejects} |" for spec in optional]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m pipeline.spec: the README's stage table
    print(readme_table())
