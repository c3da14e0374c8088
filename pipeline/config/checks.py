"""The checks of a curation config that need only its values, the files it names and the stages' own
constants and readers (stages/): choices, ranges, the sources' inputs, the models, word lists, output and
tokenizer. Each raises one ConfigError line naming the key; pipeline/config/load.py runs them in order.

The checks that need the belt's spec are in pipeline/spec_checks.py, the train section's in
pipeline/train/checks.py.
"""

from __future__ import annotations

import importlib.util
import glob
import os
import re
import shutil
from pathlib import Path

import pyarrow as pa

from pipeline.config import RAY_OBJECT_STORE_MIN_MB, ClassifierConfig, Config, ConfigError, Problems, input_format
from pipeline.config.read import expand_inputs, file_key, resolve_path
from pipeline.passes.export import FORMATS as EXPORT_FORMATS
from stages.c4 import read_bad_words
from stages.extract import METHODS as EXTRACT_METHODS
from stages.langid import METHODS as LANGUAGE_METHODS
from stages.langid import STOP_WORDS, default_lid_model_path
from stages.paragraphs import filter_too_large
from stages.pii import KINDS as PII_KINDS
from stages.quality import STOP_WORDS as QUALITY_STOP_WORDS
from stages.file_names import real_path
from stages.quality import WORDS as QUALITY_WORDS
from stages.read_text import FORMAT_NAMES, column_type, plain_format, text_column_problem
from stages.url_filter import read_blocklist


def check_choice(value, allowed, path):
    if value not in allowed:
        raise ConfigError(f"{path}: expected one of {', '.join(allowed)}, got {value!r}")


# The ranges of the curation config's numbers (null, where allowed, is always accepted).
_FRACTION = ("a number in [0, 1]", lambda v: 0 <= v <= 1)
_ABOVE_0 = ("a number above 0", lambda v: v > 0)
_AT_LEAST_0 = ("a number >= 0", lambda v: v >= 0)
_POSITIVE_INT = ("a positive integer", lambda v: v >= 1)
RANGES = {
    "ray.num_cpus": _POSITIVE_INT,  # 0: Ray would wait for ever for a CPU to run the first task on
    "ray.object_store_mb": (
        f"at least {RAY_OBJECT_STORE_MIN_MB} (Ray's minimum)",
        lambda v: v >= RAY_OBJECT_STORE_MIN_MB,
    ),
    "ray.node_lost_timeout_s": _ABOVE_0,
    "ray.node_lost_retries": _AT_LEAST_0,
    "ray.resource_wait_s": _AT_LEAST_0,
    "progress.log_every_s": _ABOVE_0,
    "metrics.port": ("a port number in [1, 65535]", lambda v: 1 <= v <= 65535),
    "read.batch_size": _POSITIVE_INT,
    "read.max_payload_mb": _ABOVE_0,
    "read.batch_mb": _ABOVE_0,
    "extract.timeout_s": _ABOVE_0,
    "extract.max_html_mb": _ABOVE_0,
    "language.threshold": _FRACTION,
    "language.short_text_chars": _AT_LEAST_0,
    "language.max_chars": _POSITIVE_INT,
    "quality.min_words": _AT_LEAST_0,
    "quality.max_words": _POSITIVE_INT,
    "quality.min_mean_word_length": _AT_LEAST_0,
    "quality.max_mean_word_length": _ABOVE_0,
    "quality.max_symbol_word_ratio": _FRACTION,
    "quality.max_bullet_lines_ratio": _FRACTION,
    "quality.max_ellipsis_lines_ratio": _FRACTION,
    "quality.min_alpha_words_ratio": _FRACTION,
    "quality.min_stop_words": _AT_LEAST_0,
    "repetition.dup_para_frac": _FRACTION,
    "repetition.dup_para_char_frac": _FRACTION,
    "repetition.dup_line_frac": _FRACTION,
    "repetition.dup_line_char_frac": _FRACTION,
    "c4.min_num_sentences": _AT_LEAST_0,
    "c4.min_words_per_line": _AT_LEAST_0,
    "c4.max_word_length": _POSITIVE_INT,
    "fineweb.line_punct_thr": _FRACTION,
    "fineweb.short_line_thr": _FRACTION,
    "fineweb.short_line_length": _AT_LEAST_0,
    "fineweb.char_duplicates_ratio": _FRACTION,
    "fineweb.new_line_ratio": _AT_LEAST_0,
    "dedup.num_perm": _POSITIVE_INT,
    "dedup.shingle_words": _POSITIVE_INT,
    "dedup.threshold": _FRACTION,
    "dedup.bands": _POSITIVE_INT,
    "dedup.rows": _POSITIVE_INT,
    "dedup.shards": _POSITIVE_INT,
    "dedup.paragraphs.ngram": ("an integer in [1, 1000]", lambda v: 1 <= v <= 1000),  # a paragraph's n-grams
    "dedup.paragraphs.min_ngram": ("an integer in [1, 1000]", lambda v: 1 <= v <= 1000),
    # BFF removes over the threshold: at 1 nothing would ever go
    "dedup.paragraphs.threshold": ("a number in [0, 1)", lambda v: 0 <= v < 1),
    "dedup.paragraphs.false_positive_rate": ("a number in (0, 1)", lambda v: 0 < v < 1),
    "dedup.paragraphs.expected": _POSITIVE_INT,
    "dedup.paragraphs.min_words": _AT_LEAST_0,
    "decontamination.ngram": _POSITIVE_INT,
    "decontamination.near_threshold": ("a number in (0, 1]", lambda v: 0 < v <= 1),
    "mixture.budget_tokens": _POSITIVE_INT,
    "mixture.max_passes": _ABOVE_0,
    "tokenizer.batch_size": _POSITIVE_INT,
    "packing.seq_len": _POSITIVE_INT,
    "packing.sequences_per_shard": _POSITIVE_INT,
}
MAX_TOKENIZER_BYTES = 128 << 20  # tokenizer.path
MIN_MAX = [("quality.min_words", "quality.max_words"), ("quality.min_mean_word_length", "quality.max_mean_word_length")]
CHOICES = {
    "engine": ("ray", "spark"),
    "rejects.text": ("snippet", "full", "none"),
    "extract.method": EXTRACT_METHODS,
    "extract.favor": ("balanced", "precision", "recall"),
    "language.method": LANGUAGE_METHODS,
    "quality.words": QUALITY_WORDS,
    "quality.stop_words": QUALITY_STOP_WORDS,
    "classifier.kind": ("naive_bayes", "fasttext", "none"),
    "dedup.verify": ("exact", "estimated", "none"),
    "dedup.paragraphs.filter": ("bloom", "exact"),
    "dedup.paragraphs.remove_type": ("paragraph", "old-both", "document"),
    "tokenizer.engine": ("auto", "tokenizers"),
    "packing.remainder": ("drop", "pad"),
}


def setting(config: Config, key: str):
    value = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def check_range(config: Config, key: str) -> None:
    wording, accepts = RANGES[key]
    value = setting(config, key)
    if value is not None and not accepts(value):
        raise ConfigError(f"{key}: expected {wording}, got {value!r}")


def check_min_max(config: Config, low: str, high: str) -> None:
    if setting(config, low) > setting(config, high):
        raise ConfigError(f"{high}: expected at least {low} ({setting(config, low)}), got {setting(config, high)}")


def check_sources(config: Config, problems: Problems) -> None:
    if not config.sources:
        problems.found.append("sources: at least one source with input is needed")
    names = [s.name for s in config.sources]
    if len(set(names)) != len(names):
        problems.found.append(f"sources: names must be unique, got {names}")
    owners: dict[str | tuple[int, int], int] = {}  # input file (file_key) -> index of the first source listing it
    for i, source in enumerate(config.sources):
        if not source.name.strip():  # the name that tells a source's rows, parts and report lines apart
            problems.found.append(f"sources[{i}].name: empty; give each source a name")
        problems.check(_check_source_input, config, i, owners)
        if source.weight < 0:
            problems.found.append(f"sources[{i}].weight: expected a number >= 0, got {source.weight}")
    if config.sources and all(s.weight >= 0 for s in config.sources) and not sum(s.weight for s in config.sources) > 0:
        problems.found.append("sources: at least one weight must be above 0")


def _check_source_input(config: Config, i: int, owners: dict[str | tuple[int, int], int]) -> None:
    source = config.sources[i]
    if not source.input:
        raise ConfigError(f"sources[{i}].input: no input given")
    check_choice(source.format, ("auto", "warc", "jsonl", "parquet"), f"sources[{i}].format")
    source.files = files = expand_inputs(source.input, config.storage)
    for f in files:
        first = owners.setdefault(file_key(f), i)
        if first != i:  # its documents would count for one source only, silently
            raise ConfigError(
                f"sources[{i}].input: {f!r} is also an input of sources[{first}] "
                f"({config.sources[first].name!r}); list each file under one source"
            )
    if source.curated:
        not_parquet = [f for f in files if not f.endswith(".parquet")]
        if not_parquet:
            raise ConfigError(
                f"sources[{i}].input: {not_parquet[0]!r} is not a .parquet file, and a curated source "
                "holds the docs/*.parquet of an earlier run"
            )
    for f in files:
        if source.curated or input_format(f, source) == "parquet":
            _check_text_column(config, i, f, "text" if source.curated else source.text_field)
        else:
            _check_plain_format(config, i, f)


def _check_plain_format(config: Config, i: int, path: str) -> None:
    """A file whose first bytes plainly say it is another format than it is read as would give a
    `read:malformed` row for every record: stop instead, naming it."""
    from pipeline.storage import open_input

    source = config.sources[i]
    read_as = input_format(path, source)
    try:
        with open_input(path, config.storage) as handle:
            found = plain_format(handle)
    except OSError:
        return  # the reader names a file it cannot open
    if found is not None and found != read_as:
        how = f"sources[{i}].format says" if source.format != "auto" else f"its name says (sources[{i}].format: auto)"
        fix = (
            "convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"
            if found == "utf-16"
            else "set the source's format, or give the file a source of its own"
        )
        raise ConfigError(
            f"sources[{i}].input: {path!r} is {FORMAT_NAMES[found]}, not {FORMAT_NAMES[read_as]} as {how}; {fix}"
        )


def _check_text_column(config: Config, i: int, path: str, column: str) -> None:
    from pipeline.storage import parquet_file

    try:
        schema = parquet_file(path, config.storage).schema_arrow
    except (OSError, pa.ArrowInvalid) as exc:
        if not config.sources[i].curated:  # cut short, or garbage: the reader rejects it by name, the rest is read
            return
        raise ConfigError(
            f"sources[{i}].input: {path!r} is not a Parquet file ({' '.join(str(exc).split())})"
        ) from None
    key = "a curated source reads `text`" if config.sources[i].curated else f"sources[{i}].text_field"
    if (count := schema.names.count(column)) > 1:
        if not config.sources[i].curated:  # the reader rejects the file by name, the rest of the folder is read
            return
        raise ConfigError(
            f"sources[{i}].input: {path!r} has {count} columns named {column!r} ({key}); keep one, or name another column"
        )
    if text_column_problem(schema, column) is not None:  # the reader's own test
        raise ConfigError(
            f"sources[{i}].input: {path!r} has no string column {column!r} ({key}; it has {', '.join(schema.names)})"
        )
    source = config.sources[i]
    if source.curated:
        return
    # an id or URL column named but absent would be ignored for every row; `url`, the default, may be absent
    named = {"id_field": source.id_field, "url_field": None if source.url_field == "url" else source.url_field}
    for key, name in named.items():
        if name is not None and column_type(schema, name) is None:
            raise ConfigError(
                f"sources[{i}].input: {path!r} has no column {name!r} (sources[{i}].{key}; it has "
                f"{', '.join(schema.names)})"
            )


def _fasttext_labels(key: str, path: str) -> list[str]:
    """The labels of the fastText model at `path`, loaded here as each worker will load it."""
    from stages.fasttext_file import FastTextFileError
    from stages.langid import fasttext_labels

    try:
        return fasttext_labels(path)
    except FastTextFileError as error:  # the file's own sizes and shapes, checked before fastText loads it
        raise ConfigError(f"{key}: {error}") from None
    except ValueError:  # fasttext's "has wrong file format!"
        raise ConfigError(f"{key}: {path!r} is not a fastText model (it does not load)") from None


def check_language(config: Config, base: Path) -> None:
    language = config.language
    if language.model_path is not None:
        language.model_path = resolve_path(language.model_path, base)
        if not os.path.isfile(language.model_path):
            raise ConfigError(f"language.model_path: file {language.model_path!r} not found")
    if language.method != "stopwords":
        path = language.model_path or default_lid_model_path()
        labels = _fasttext_labels("language.model_path", path)
        unknown = [code for code in language.languages if code not in labels]
        if unknown:
            raise ConfigError(
                f"language.languages: {unknown[0]!r} is not a language of the fastText model "
                f"{os.path.basename(path)!r} (it has {len(labels)}, e.g. {', '.join(labels[:5])})"
            )
    if language.method == "stopwords" or language.short_text_chars > 0:
        unknown = [code for code in language.languages if code not in STOP_WORDS]
        if language.method == "stopwords" and unknown:
            raise ConfigError(
                f"language.languages: {unknown[0]!r} is not a language of the stop-word detector "
                f"({', '.join(STOP_WORDS)})"
            )
        if unknown and language.method == "fasttext+stopwords":
            raise ConfigError(
                f"language.languages: {unknown[0]!r} has no stop-word list ({', '.join(STOP_WORDS)}), so "
                f"its texts under language.short_text_chars would all be rejected; set "
                f"language.method: fasttext, or short_text_chars: 0"
            )


def _check_word_file(key: str, path: str, read, what: str) -> None:
    """A file of one entry per line, read here as its stage reads it when it starts: there, and not empty."""
    if not os.path.isfile(path):
        raise ConfigError(f"{key}: file {path!r} not found")
    try:
        entries = read(path)
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {path!r} is not UTF-8 text (expected {what}, one per line)") from None
    if not entries:
        raise ConfigError(f"{key}: {path!r} holds no entry (expected {what}, one per line)")


def check_bad_words(config: Config, base: Path) -> None:
    if config.c4.bad_words_file is not None:
        config.c4.bad_words_file = resolve_path(config.c4.bad_words_file, base)
        _check_word_file("c4.bad_words_file", config.c4.bad_words_file, read_bad_words, "words or phrases")


def check_blocklists(config: Config, base: Path) -> None:
    config.url.blocklists = [resolve_path(p, base) for p in config.url.blocklists]
    for i, path in enumerate(config.url.blocklists):
        _check_word_file(f"url.blocklists[{i}]", path, read_blocklist, "domains or URLs")
    if not config.url.blocklists:
        raise ConfigError("url.blocklists: the url stage needs at least one blocklist file")


def check_classifier(config: Config, base: Path) -> None:
    check_scorer(config.classifier, "classifier", base)


def check_scorer(classifier: ClassifierConfig, key: str, base: Path) -> None:
    """A classifier's settings (the `classifier` section, or a `{scorer: NAME, ...}` entry of `stages`)."""
    check_choice(classifier.kind, ("naive_bayes", "fasttext", "none"), f"{key}.kind")
    classifier.good_examples = [resolve_path(p, base) for p in classifier.good_examples]
    classifier.bad_examples = [resolve_path(p, base) for p in classifier.bad_examples]
    if classifier.kind == "naive_bayes":
        for name in ("good_examples", "bad_examples"):
            files = getattr(classifier, name)
            if not files:
                raise ConfigError(f"{key}.{name}: naive_bayes needs example files")
            for f in files:
                if not os.path.isfile(f):
                    raise ConfigError(f"{key}.{name}: file {f!r} not found")
    if classifier.kind == "fasttext":
        if classifier.model_path is None:
            raise ConfigError(f"{key}.model_path: fasttext needs a model file")
        classifier.model_path = resolve_path(classifier.model_path, base)
        if not os.path.isfile(classifier.model_path):
            raise ConfigError(f"{key}.model_path: file {classifier.model_path!r} not found")
        labels = _fasttext_labels(f"{key}.model_path", classifier.model_path)
        if classifier.label.removeprefix("__label__") not in labels:
            raise ConfigError(
                f"{key}.label: {classifier.label!r} is not a label of {classifier.model_path!r} "
                f"(it has {', '.join(labels[:5])}{', ...' if len(labels) > 5 else ''})"
            )
        if classifier.threshold is not None and not 0 <= classifier.threshold <= 1:
            raise ConfigError(
                f"{key}.threshold: expected a probability in [0, 1] for fasttext, got {classifier.threshold}"
            )


def check_pii(config: Config, base: Path) -> None:
    pii = config.pii
    unknown = [kind for kind in pii.kinds if kind not in PII_KINDS]
    if unknown or not pii.kinds or len(set(pii.kinds)) < len(pii.kinds):
        raise ConfigError(
            f"pii.kinds: expected a non-empty list of distinct kinds among {', '.join(PII_KINDS)}, got {pii.kinds!r}"
        )


def check_formats(config: Config) -> None:
    formats = config.packing.formats
    unknown = [f for f in formats if f not in EXPORT_FORMATS] if isinstance(formats, list) else [formats]
    if unknown or len(set(formats)) < len(formats):
        raise ConfigError(
            f"packing.formats: expected a list of distinct formats among {', '.join(EXPORT_FORMATS)}, got {formats!r}"
        )
    if not set(formats) - {"huggingface"}:
        raise ConfigError(f"packing.formats: no format for the token shards in {formats!r}: add parquet (the default)")
    if "huggingface" in formats and "parquet" not in formats:
        raise ConfigError(
            "packing.formats: huggingface needs parquet too (the card's `tokens` config is the Parquet shards)"
        )


def check_engine(config: Config) -> None:
    """engine: spark can start here: Java and pyspark are installed."""
    if config.engine != "spark":
        return
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ConfigError("engine: spark needs Java 17 on PATH (or JAVA_HOME): apt install openjdk-17-jre-headless")
    if importlib.util.find_spec("pyspark") is None:
        raise ConfigError("engine: spark needs pyspark: .venv/bin/python -m pip install -e '.[spark]'")


def check_metrics_port(config: Config) -> None:
    """metrics.port is free on this machine: else the run would fail after its work started (or serve nothing)."""
    port = config.metrics.port
    if port is None or not 1 <= port <= 65535:  # off, or check_range says it
        return
    from pipeline.metrics import port_in_use

    taken = port_in_use(port)
    if taken:
        raise ConfigError(f"metrics.port {port}: in use on this machine ({taken}); give a free port, or null for none")


def check_dedup(config: Config) -> None:
    dedup = config.dedup
    if (dedup.bands is None) != (dedup.rows is None):
        raise ConfigError("dedup.bands and dedup.rows: give both or neither")
    if dedup.bands is not None and dedup.rows is not None and dedup.bands * dedup.rows > dedup.num_perm:
        raise ConfigError(f"dedup.bands * dedup.rows must be at most dedup.num_perm ({dedup.num_perm})")
    paragraphs = dedup.paragraphs
    curated = [i for i, source in enumerate(config.sources) if source.curated]
    if paragraphs.enabled and curated:  # its documents would go to the tokens pass with their boilerplate
        i = curated[0]
        raise ConfigError(
            f"dedup.paragraphs.enabled: sources[{i}] ({config.sources[i].name!r}) is curated, and curated sources "
            "join at the tokenizer, after paragraph dedup; run paragraph dedup in the run that wrote it, or read "
            "it as Parquet text to filter (curated: false)"
        )
    if paragraphs.ngram is None and (paragraphs.min_ngram is not None or paragraphs.remove_type != "paragraph"):
        key = "min_ngram" if paragraphs.min_ngram is not None else "remove_type"
        raise ConfigError(f"dedup.paragraphs.{key}: BFF's setting, set only with dedup.paragraphs.ngram")
    if paragraphs.ngram and paragraphs.min_ngram and paragraphs.min_ngram > paragraphs.ngram:
        raise ConfigError(
            f"dedup.paragraphs.min_ngram: {paragraphs.min_ngram} is over ngram ({paragraphs.ngram}); a paragraph of "
            "fewer tokens than ngram is one unit when it has at least min_ngram"
        )
    rate_in_range = 0 < paragraphs.false_positive_rate < 1  # else said by its range check
    if paragraphs.enabled and paragraphs.filter == "bloom" and paragraphs.expected and rate_in_range:
        per_shard = paragraphs.expected / max(dedup.shards, 1)
        if why := filter_too_large(per_shard, paragraphs.false_positive_rate):
            raise ConfigError(
                f"dedup.paragraphs.expected: {paragraphs.expected:,} units over {dedup.shards} shards need {why}; "
                "lower it or raise dedup.shards"
            )


def check_resources(config: Config, name: str) -> None:
    settings = getattr(config.resources, name)
    if not settings.num_cpus > 0 or (settings.memory_mb or 1) < 1 or (settings.concurrency or 1) < 1:
        raise ConfigError(f"resources.{name}: expected num_cpus > 0, and memory_mb and concurrency positive or null")


def has_scheme(output: str) -> bool:
    """`s3://...`, or another SCHEME: prefix (s3:/bucket, gs://bucket): never a local folder's name."""
    return re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", output) is not None


def check_output(config: Config) -> None:
    output = config.output
    if not output.strip():
        return  # said by load_config
    if output.startswith("s3://"):
        _check_s3_output(config)
    elif has_scheme(output):
        raise ConfigError(f"output {output!r}: expected a local path or an s3:// URI (s3://bucket/prefix)")
    else:
        _check_local_output(config)


def _input_folders(config: Config) -> list[tuple[int, str]]:
    """(source index, folder) for each local input that is a folder or a glob (the folder before its first
    wildcard): every file under it may be read, so an output written there would be read by the next run."""
    folders = []
    for i, source in enumerate(config.sources):
        for pattern in source.input:
            if "://" in pattern or os.path.isfile(real_path(pattern)):
                continue
            if os.path.isdir(real_path(pattern)):
                folders.append((i, pattern))
                continue
            parts = Path(pattern).parts
            fixed = next((n for n, part in enumerate(parts) if glob.has_magic(part)), len(parts))
            if 0 < fixed < len(parts):
                folders.append((i, str(Path(*parts[:fixed]))))
    return folders


def check_not_in_inputs(folder: str, key: str, config: Config) -> None:
    """`folder` (the output, or storage.staging) is outside every input folder."""
    where = Path(folder).resolve()
    for i, input_folder in _input_folders(config):
        if where.is_relative_to(Path(real_path(input_folder)).resolve()):
            raise ConfigError(
                f"{key} {folder!r} is inside sources[{i}].input's folder {input_folder!r}, whose files a rerun "
                "would read as input; choose a folder outside it"
            )


def _check_s3_output(config: Config) -> None:
    from pipeline.storage import output_kind

    staging = config.storage.staging
    if staging:
        check_not_in_inputs(staging, "storage.staging:", config)
    if staging and (Path(staging).exists() and not Path(staging).is_dir() or output_kind(staging) is None):
        raise ConfigError(
            f"storage.staging: {staging!r} exists and is not an earlier crawlbelt output (it has no .crawlbelt "
            "marker); the output is built there and replaces what is there: choose an empty folder"
        )
    for i, source in enumerate(config.sources):
        inside = [f for f in source.files if f.startswith(config.output.rstrip("/") + "/")]
        if inside:
            raise ConfigError(f"sources[{i}].input: {inside[0]!r} is inside the output, which this run replaces")
    try:
        kind = output_kind(config.output, config.storage)
    except (OSError, ValueError) as exc:  # ValueError: pyarrow's ArrowInvalid for a URI it cannot take
        raise ConfigError(f"output {config.output!r}: {' '.join(str(exc).split())}") from None
    if kind is None:
        raise ConfigError(
            f"output {config.output!r} holds objects and is not an earlier crawlbelt output (it has "
            "no .crawlbelt marker); choose another"
        )


def _check_local_output(config: Config) -> None:
    from pipeline.storage import output_kind

    out = Path(config.output)
    check_not_in_inputs(config.output, "output", config)
    for i, source in enumerate(config.sources):
        inside = [
            f for f in source.files if "://" not in f and Path(real_path(f)).resolve().is_relative_to(out.resolve())
        ]
        if inside:
            raise ConfigError(f"sources[{i}].input: {inside[0]!r} is inside the output folder, which this run replaces")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output {str(out)!r} exists and is not a folder; choose another")
    if output_kind(str(out)) is None:
        raise ConfigError(
            f"output {str(out)!r} exists and is not an earlier crawlbelt output (it has no .crawlbelt "
            "marker, which crawlbelt writes in every output); choose another folder"
        )


def check_tokens(config: Config, base: Path) -> None:
    from stages.tokens import MAX_TOKEN_ID, id_limit

    tokenizer = config.tokenizer
    if tokenizer.path is None:
        if tokenizer.vocab_size < 258:  # the 256 byte tokens and the two special tokens
            raise ConfigError("tokenizer.vocab_size: expected at least 258")
        if tokenizer.vocab_size > MAX_TOKEN_ID + 1:
            raise ConfigError(f"tokenizer.vocab_size: expected at most {MAX_TOKEN_ID + 1:,}")
        if tokenizer.eos_token == tokenizer.pad_token:
            raise ConfigError("tokenizer.pad_token: must differ from tokenizer.eos_token")
        return
    tokenizer.path = resolve_path(tokenizer.path, base)
    if os.path.isdir(tokenizer.path):
        raise ConfigError(f"tokenizer.path: {tokenizer.path!r} is a folder, not a tokenizer.json file")
    if not os.path.isfile(tokenizer.path):
        raise ConfigError(f"tokenizer.path: file {tokenizer.path!r} not found")
    size = os.path.getsize(tokenizer.path)
    if size > MAX_TOKENIZER_BYTES:  # checked before it is parsed: parsing holds it in memory several times over
        raise ConfigError(
            f"tokenizer.path: {tokenizer.path!r} is {size:,} bytes; at most {MAX_TOKENIZER_BYTES:,} (a tokenizer.json "
            "of the largest vocabularies is under 40 MB)"
        )
    from tokenizers import Tokenizer

    try:
        loaded = Tokenizer.from_file(tokenizer.path)
    except Exception as exc:  # tokenizers raises plain Exception on a malformed file
        problem = str(exc).splitlines()[0]
        raise ConfigError(f"tokenizer.path: {tokenizer.path!r} is not a tokenizer.json ({problem})") from None
    if id_limit(loaded) > MAX_TOKEN_ID + 1:  # the id width of the shards and exports comes from the largest id
        raise ConfigError(
            f"tokenizer.path: {tokenizer.path!r} has ids up to {id_limit(loaded) - 1:,}; at most {MAX_TOKEN_ID:,}"
        )
    if loaded.token_to_id(tokenizer.eos_token) is None:
        raise ConfigError(f"tokenizer.eos_token: {tokenizer.eos_token!r} is not in {tokenizer.path!r}")
