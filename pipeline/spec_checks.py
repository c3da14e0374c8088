"""The checks of a config that need the belt's spec (pipeline/spec.py): the `stages:` list (each user stage
imported, set up and run on a probe batch), the sections of the stages the belt runs, the scores a source's
`select` may use, and the eval sets of the `contamination` stage.

They sit above pipeline/spec.py, which reads the config; pipeline/config/load.py runs them.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import math
import re
from pathlib import Path

import pyarrow as pa

from pipeline import spec
from pipeline.config import (
    COMBINE_HOW,
    ClassifierConfig,
    CombineScorerConfig,
    Config,
    ConfigError,
    Problems,
    TransformersScorerConfig,
    input_format,
    json_value,
)
from stages.model_scorer import INT_SCORE_LIMIT
from pipeline.config.checks import check_choice, check_scorer
from pipeline.config.read import build, resolve_path
from stages import model_scorer
from stages.decontaminate import ACTIONS, EvalSetError, read_items
from stages.user import StageError
from stages.warc_read import DOCUMENT_SCHEMA


def unused_sections(config: Config) -> set[str]:
    """The sections of the built-in stages the belt does not run: a section is needed, and checked, only when
    its stage runs (a belt without `classifier` needs no example files, a run of curated sources only none)."""
    listed = config.stages if config.stages is not None else spec.DEFAULT_STAGES
    if config.sources and all(source.curated for source in config.sources):
        listed = []  # curated sources join at the tokens pass: no stage of the belt runs
    return {stage.section for name, stage in spec.DOCUMENT_STAGES.items() if stage.section and name not in listed}


def check_select(config: Config, i: int) -> None:
    select = config.sources[i].select
    if select is None:
        return
    key = f"sources[{i}].select"
    if select.top_fraction is None and select.min_score is None:
        raise ConfigError(f"{key}: give top_fraction, min_score or both")
    if select.top_fraction is not None and not 0 < select.top_fraction <= 1:
        raise ConfigError(f"{key}.top_fraction: expected a number in (0, 1], got {select.top_fraction}")
    if config.sources[i].curated:
        from pipeline.storage import parquet_file

        for f in config.sources[i].files:
            schema = parquet_file(f, config.storage).schema_arrow
            if select.score not in schema.names:
                raise ConfigError(f"{key}.score: {f!r} has no column {select.score!r}")
            if not _is_number(schema.field(select.score).type):
                raise ConfigError(
                    f"{key}.score: the column {select.score!r} of {f!r} is {schema.field(select.score).type}, "
                    "not a number"
                )
        return
    try:
        added = spec.added_columns(config)
    except StageError:  # a user stage that cannot be imported: the `stages` check says so
        return
    scores = [c for c, t in added.items() if _is_number(t)]
    if select.score not in scores:
        raise ConfigError(
            f"{key}.score: {select.score!r} is not a score the belt's stages add (they add: "
            f"{', '.join(scores) or 'none'})"
        )


def _is_number(type_: pa.DataType) -> bool:
    return pa.types.is_floating(type_) or pa.types.is_integer(type_)


USER_STAGE_KEYS = ("use", "with", "name", "adds", "threshold", "max_error_share", "timeout_s")
RESERVED_NAMES = (
    "read",
    "not_document",
    "exact_dedup",
    "near_dedup",
    "paragraph_dedup",
    "tokenizer",
    "mixture",
    "pack",
)


def check_stages(config: Config, base: Path) -> None:
    """The `stages:` list: each entry known and well formed, each user stage importable, set up and keeping the
    stage contract on a probe batch, names and columns unique, and text extracted before a stage reads it."""
    if config.stages is None:
        return
    if not config.stages:
        raise ConfigError("stages: an empty list; leave the key out for the default belt")
    names: dict[str, str] = {}  # stage name -> the entry that has it
    columns: dict[str, str] = {}  # column -> the entry that adds it
    stage_types: dict[str, pa.DataType] = {}  # column -> its type
    problems = Problems()  # each entry's problem, so that validate lists every broken scorer
    for i, entry in enumerate(config.stages):
        key = f"stages[{i}]"
        stage = problems.check(_stage_entry, config, entry, key, base)
        if stage is None:
            continue
        name = stage.spec.name
        if name in names or name in RESERVED_NAMES:
            why = f"{names[name]} has it too" if name in names else "a name of the belt's own passes"
            raise ConfigError(f"{key}: the stage name {name!r} is taken ({why}); give the entry a `name`")
        names[name] = key
        if isinstance(entry, dict) and entry.get("kind") == "combine":
            unknown = [c for c in entry["scores"] if c not in columns or not _is_number(stage_types[c])]
            if unknown and not problems.found:  # a broken entry's columns are not known
                numbers = [c for c in columns if _is_number(stage_types[c])]
                raise ConfigError(
                    f"{key}.scores: {unknown[0]!r} is not a number column an earlier stage adds (they add: "
                    f"{', '.join(numbers) or 'none'})"
                )
        for column in stage.spec.adds:
            if column in columns:
                raise ConfigError(f"{key}: stage {name!r} adds the column {column!r}, which {columns[column]} adds too")
            if column in DOCUMENT_SCHEMA.names and name != "extract":
                raise ConfigError(f"{key}: stage {name!r} adds the column {column!r}, which every row has already")
            columns[column] = key
            stage_types[column] = stage.spec.adds[column]
    problems.raise_any()
    order = [entry if isinstance(entry, str) else None for entry in config.stages]
    if "extract" in order:
        reads_text = [e for e in order[: order.index("extract")] if e and "text" in spec.DOCUMENT_STAGES[e].needs]
        if reads_text:
            raise ConfigError(
                f"stages: {reads_text[0]!r} reads the text, which `extract` (after it) makes; list extract first"
            )
    else:
        pages = [f for s in config.sources if not s.curated for f in s.files if input_format(f, s) == "warc"]
        crawls = [f for f in pages if not is_wet(f)]
        if crawls:
            raise ConfigError(
                f"stages: WARC/ARC sources need `extract` (it turns each page's HTML into text), and "
                f"{crawls[0]!r} is not a WET file (*.wet, *.wet.gz, *.wet.zst: text already)"
            )


def is_wet(path: str) -> bool:
    """A WET file by its name, as Common Crawl names them (CC-...warc.wet.gz): its records hold text, not HTML."""
    return path.lower().endswith((".wet", ".wet.gz", ".wet.zst"))


def _stage_entry(config: Config, entry, key: str, base: Path):
    """One `stages:` entry as a spec.Stage, or ConfigError naming what is wrong with it."""
    if isinstance(entry, str):
        if entry not in spec.DOCUMENT_STAGES:
            raise ConfigError(
                f"{key}: unknown stage {entry!r} (built-in: {', '.join(spec.DOCUMENT_STAGES)}; or "
                "{scorer: NAME, kind: ...} or {use: module:Class})"
            )
        return spec.Stage(spec.DOCUMENT_STAGES[entry], None)
    if not isinstance(entry, dict) or ("use" in entry) == ("scorer" in entry):
        raise ConfigError(
            f"{key}: expected a built-in stage's name, {{scorer: NAME, kind: ...}} or "
            f"{{use: module:Class, with: {{...}}}}, got {entry!r}"
        )
    if "scorer" in entry:
        name = entry["scorer"]
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise ConfigError(f"{key}.scorer: expected a lower-case name (letters, digits, _), got {name!r}")
        kinds = ("naive_bayes", "fasttext", "transformers", "combine")
        if entry.get("kind", "naive_bayes") not in kinds:  # naive_bayes: ClassifierConfig's default
            raise ConfigError(f"{key}.kind: a scorer needs one of {', '.join(kinds)}, got {entry['kind']!r}")
        if entry.get("kind") == "transformers":
            return _transformers_scorer(entry, key, base, config.engine)
        if entry.get("kind") == "combine":
            return _combine_scorer(entry, key)
        problems = Problems()
        settings = build(ClassifierConfig, {k: v for k, v in entry.items() if k != "scorer"}, key, problems)
        problems.raise_any()
        check_scorer(settings, key, base)
        entry.update(dataclasses.asdict(settings))  # the files, resolved
        return spec.Stage(spec.scorer_spec(name, entry), None, entry)
    unknown = [k for k in entry if k not in USER_STAGE_KEYS]
    if unknown:
        raise ConfigError(f"{key}: unknown key {unknown[0]!r} (known: {', '.join(USER_STAGE_KEYS)})")
    if not isinstance(entry.get("with") or {}, dict):
        raise ConfigError(f"{key}.with: expected a mapping of keyword arguments, got {entry['with']!r}")
    if entry.get("name") is not None and not re.fullmatch(r"[a-z][a-z0-9_]*", str(entry["name"])):
        raise ConfigError(f"{key}.name: expected a lower-case name (letters, digits, _), got {entry['name']!r}")
    try:
        json.dumps(entry.get("with") or {}, default=json_value)
    except (TypeError, ValueError) as error:  # the manifest records the arguments
        raise ConfigError(f"{key}.with: {error}; give text, numbers, dates, lists or mappings") from None
    _check_number(entry.get("threshold"), f"{key}.threshold", "a number", lambda v: True)
    _check_number(entry.get("max_error_share"), f"{key}.max_error_share", "a share in [0, 1]", lambda v: 0 <= v <= 1)
    _check_number(entry.get("timeout_s"), f"{key}.timeout_s", "seconds above 0", lambda v: v > 0)
    try:
        stage = spec.user_stage(entry, probe=True)
    except StageError as error:
        raise ConfigError(f"{key}: {error}") from None
    if stage.runner.probe_errors:
        config.notes.append(
            f"{key}: stage {stage.spec.name} raised on the probe batch ({stage.runner.probe_errors}); on real "
            f"documents a run stops once it raises on more than max_error_share ({stage.runner.max_error_share:g})"
            " of them"
        )
    return stage


def _transformers_scorer(entry: dict, key: str, base: Path, engine: str):
    """A `{scorer: NAME, kind: transformers, model: DIR, ...}` entry: the extra installed, the model folder there
    with a classification head whose labels hold `label`, the numbers in range."""
    problems = Problems()
    settings = build(TransformersScorerConfig, {k: v for k, v in entry.items() if k != "scorer"}, key, problems)
    problems.raise_any()
    if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("torch") is None:
        raise ConfigError(f"{key}: {model_scorer.EXTRA}")
    if not settings.model:
        raise ConfigError(f"{key}.model: the transformers scorer needs a local model folder (save_pretrained's)")
    settings.model = resolve_path(settings.model, base)
    if not os.path.lexists(os.path.join(settings.model, "config.json")):  # one that is there: checked when loaded
        why = "a file: give its folder" if os.path.isfile(settings.model) else "no config.json in it"
        raise ConfigError(f"{key}.model: {settings.model!r} is not a model folder ({why})")
    for name in ("max_chars", "max_tokens", "batch_size", "concurrency"):
        _check_number(getattr(settings, name), f"{key}.{name}", "a whole number above 0", lambda v: v == int(v) > 0)
    _check_number(settings.timeout_s, f"{key}.timeout_s", "seconds above 0, or null", lambda v: v > 0)
    labels, problem = _checked_model(settings, key)
    if settings.label is not None and (problem == "regression" or settings.label not in labels):
        has = "a regression head, no labels" if problem == "regression" else f"the labels {', '.join(labels)}"
        raise ConfigError(f"{key}.label: {settings.label!r} is not a label of {settings.model!r} (it has {has})")
    if problem == "regression":  # a regression head's output has any range (FineWeb-Edu's: 0 to 5)
        _check_number(settings.threshold, f"{key}.threshold", "a number", lambda v: True)
    else:
        _check_number(settings.threshold, f"{key}.threshold", "a probability in [0, 1] for a classifier", _fraction)
    _check_int_score(settings, problem, key, entry["scorer"])
    _check_number(settings.num_cpus, f"{key}.num_cpus", "CPUs above 0", lambda v: v > 0)
    _check_number(settings.num_gpus, f"{key}.num_gpus", "GPUs, 0 or more", lambda v: v >= 0)
    if engine == "spark" and settings.num_gpus:
        raise ConfigError(
            f"{key}.num_gpus: on engine: spark the transformers scorer runs in the executors' CPU tasks; give "
            "num_gpus: 0, or run it on GPU actors with engine: ray"
        )
    entry.update(dataclasses.asdict(settings))  # the folder, resolved
    return spec.Stage(spec.scorer_spec(entry["scorer"], entry), None, entry)


def _check_int_score(settings: TransformersScorerConfig, problem: str, key: str, name: str) -> None:
    """int_range and int_threshold: a regression head's; the range two whole numbers, LOW <= HIGH; the threshold
    within the range, and not given with `threshold` (each would reject by its own rule)."""
    given = [each for each in ("int_range", "int_threshold") if getattr(settings, each) is not None]
    if given and problem != "regression":
        raise ConfigError(
            f"{key}.{given[0]}: {settings.model!r} is a classifier, which adds label_{name}, no int score; "
            "int_range and int_threshold are for a regression head"
        )
    span = settings.int_range
    if span is not None and (len(span) != 2 or span[0] > span[1] or max(map(abs, span)) > INT_SCORE_LIMIT):
        raise ConfigError(
            f"{key}.int_range: expected [LOW, HIGH], two whole numbers with LOW <= HIGH, each within ±2**62, "
            f"got {span!r}"
        )
    if settings.int_threshold is None:
        return
    if settings.threshold is not None:
        raise ConfigError(
            f"{key}.int_threshold: give threshold (on score_{name}) or int_threshold (on int_score_{name}), not both"
        )
    if span is not None and not span[0] <= settings.int_threshold <= span[1]:
        raise ConfigError(
            f"{key}.int_threshold: {settings.int_threshold} is outside int_range {span} (every int_score_{name} is "
            "in it, so it would keep every document or none)"
        )


def _fraction(value) -> bool:
    return 0 <= value <= 1


def _checked_model(settings: TransformersScorerConfig, key: str) -> tuple[list[str], str]:
    """The model folder's labels and problem type, after the checks a worker makes before loading it
    (stages/model_files.py), and its tokenizer's: a pad token (or an end token to pad with), and room in
    `max_tokens` for a text's special tokens."""
    try:
        tokenizer = model_scorer.load_tokenizer(str(settings.model))
    except StageError as error:
        raise ConfigError(f"{key}.model: {error}") from None
    specials = tokenizer.num_special_tokens_to_add()
    if settings.max_tokens <= specials:
        raise ConfigError(
            f"{key}.max_tokens: {settings.max_tokens} leaves no room for text after the model's {specials} special "
            "tokens"
        )
    return model_scorer.model_head(str(settings.model))


def _combine_scorer(entry: dict, key: str):
    """A `{scorer: NAME, kind: combine, scores: [...], how: ...}` entry (check_stages checks that earlier stages
    add its scores)."""
    problems = Problems()
    settings = build(CombineScorerConfig, {k: v for k, v in entry.items() if k != "scorer"}, key, problems)
    problems.raise_any()
    if not isinstance(settings.scores, list) or len(settings.scores) < 2:
        raise ConfigError(f"{key}.scores: expected the names of two or more score columns, got {settings.scores!r}")
    check_choice(settings.how, COMBINE_HOW, f"{key}.how")
    _check_number(settings.threshold, f"{key}.threshold", "a number", lambda v: True)
    return spec.Stage(spec.scorer_spec(entry["scorer"], entry), None, entry)


def _check_number(value, key: str, wording: str, accepts) -> None:
    """An optional number of a `stages:` entry: None, or a finite int or float that `accepts`."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not accepts(value):
        raise ConfigError(f"{key}: expected {wording}, got {value!r}")


def check_decontamination(config: Config, base: Path) -> None:
    """The eval sets, when the belt has the `contamination` stage: named, each action known, each file read
    whole here (its items, fields and format), so that a bad one stops the run before any work."""
    settings = config.decontamination
    listed = "contamination" in (config.stages or [])
    if not listed:
        if settings.eval_sets:
            raise ConfigError(
                "decontamination.eval_sets: given, but `contamination` is not in `stages:`; list it (after "
                "quality and repetition)"
            )
        return
    if not settings.eval_sets:
        raise ConfigError("decontamination.eval_sets: the contamination stage needs at least one eval set")
    if not (settings.ngram_detector or settings.near_detector):
        raise ConfigError("decontamination: turn on ngram_detector, near_detector or both")
    names: set[str] = set()
    for i, eval_set in enumerate(settings.eval_sets):
        key = f"decontamination.eval_sets[{i}]"
        if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", eval_set.name) or eval_set.name in names:
            raise ConfigError(
                f"{key}.name: expected a unique lower-case name (letters, digits, _ . -), got {eval_set.name!r}"
            )
        names.add(eval_set.name)
        check_choice(eval_set.action, ACTIONS, f"{key}.action")
        if not eval_set.fields:
            raise ConfigError(f"{key}.fields: expected at least one field")
        if not eval_set.path:
            raise ConfigError(f"{key}.path: no file given")
        eval_set.path = resolve_path(eval_set.path, base)
        try:
            ids, _ = read_items(spec.eval_set(eval_set), spec.opener(config))
        except EvalSetError as error:
            raise ConfigError(f"{key}.path: {error}") from None
        if not ids:
            raise ConfigError(f"{key}.path: {eval_set.path!r} holds no item")
