"""load_config: a config read (pipeline/config/read.py), its paths taken from the config's folder, and every
check run (pipeline/config/checks.py, pipeline/spec_checks.py, pipeline/train/checks.py) before any work starts.

A problem is one line naming the key path or file, raised as ConfigError (the command line turns it into exit
code 2 and writes nothing). The checks go on after a problem, so that one ConfigError holds every problem the
config has (`crawlbelt validate`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pipeline.config import Config, Problems, Source
from pipeline.config.checks import (
    CHOICES,
    MIN_MAX,
    RANGES,
    check_bad_words,
    check_blocklists,
    check_choice,
    check_classifier,
    check_dedup,
    check_engine,
    check_formats,
    check_metrics_port,
    check_language,
    check_min_max,
    check_output,
    has_scheme,
    check_pii,
    check_range,
    check_resources,
    check_sources,
    check_tokens,
    setting,
)
from pipeline.config.read import read_config, resolve_path
from pipeline.spec_checks import check_decontamination, check_select, check_stages, unused_sections
from pipeline.train.checks import check_train


def load_config(
    path: str | None,
    *,
    overrides: Sequence[str] = (),
    inputs: list[str] | None = None,
    output: str | None = None,
    for_train: bool = False,
) -> Config:
    """Read, override and validate a config; relative paths in it are taken from the config's folder.
    Raises one ConfigError that holds every problem found.

    `for_train` checks the train section and its token shards instead of the curation run's inputs.
    """
    problems = Problems()
    config = read_config(path, overrides, problems)
    base = Path(path).resolve().parent if path is not None else Path.cwd()

    if inputs:  # command-line inputs are relative to the working directory
        if len(config.sources) > 1:
            problems.found.append(
                f"--input: the config has {len(config.sources)} sources, and --input replaces the input of one; "
                "give each its own with --set sources.N.input=[...]"
            )
        # Only the input is replaced: the source's format, fields, curated, select and weight still say how to read it.
        source = config.sources[0] if config.sources else Source()
        source.input = [os.path.abspath(p) for p in inputs]
        config.sources = [source]
    else:
        for source in config.sources:
            source.input = [resolve_path(p, base) for p in source.input]
    # earlier outputs, taken from the working directory as the output is
    config.dedup.against = [p if "://" in p else os.path.abspath(p) for p in config.dedup.against]
    if output is not None:
        config.output = output
    if not config.output.strip():
        problems.found.append("output: empty; give a folder or an s3:// URI")
    elif path is not None and output is None and not os.path.isabs(config.output) and not has_scheme(config.output):
        config.output = str(Path.cwd() / config.output)

    if for_train:
        problems.check(check_train, config)
    else:
        _check(config, base, problems)
    problems.raise_any()
    return config


def _check(config: Config, base: Path, problems: Problems) -> None:
    """Every check of a curation run's config, each problem into `problems`."""
    check_sources(config, problems)
    unused = unused_sections(config)
    for key, allowed in CHOICES.items():
        if key.split(".")[0] not in unused:
            problems.check(check_choice, setting(config, key), allowed, key)
    for key in RANGES:
        if key.split(".")[0] not in unused:
            problems.check(check_range, config, key)
    for low, high in MIN_MAX:
        if low.split(".")[0] not in unused:
            problems.check(check_min_max, config, low, high)
    section_checks = {
        "language": check_language,
        "classifier": check_classifier,
        "pii": check_pii,
        "c4": check_bad_words,
        "url": check_blocklists,
    }
    for section, check in section_checks.items():
        if section not in unused:
            problems.check(check, config, base)
    problems.check(check_stages, config, base)
    problems.check(check_decontamination, config, base)
    for i in range(len(config.sources)):
        problems.check(check_select, config, i)
    problems.check(check_engine, config)
    problems.check(check_metrics_port, config)
    problems.check(check_formats, config)
    problems.check(check_dedup, config)
    for name in ("filter", "encode"):
        problems.check(check_resources, config, name)
    problems.check(check_output, config)
    problems.check(_check_against, config)
    problems.check(check_tokens, config, base)


def _check_against(config: Config) -> None:
    from pipeline.passes.dedup_index import check_against  # the dedup pieces (numba) only when a config names one

    check_against(config)
