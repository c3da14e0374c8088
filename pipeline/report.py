"""The run report: one self-contained HTML page (inline CSS, plots as SVG images in data URIs) telling a
run's story from its manifest and output files: the funnel with reject reasons, languages, quality
scores, duplicate clusters, sample rejects per reason, documents per registered domain, the mixture, tokens
per source and the time each stage took.

    python -m pipeline report OUT_DIR       (also written at the end of every run as OUT/report.html)
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from contextlib import contextmanager
from functools import lru_cache
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import tldextract

from pipeline import svg
from pipeline.storage import MARKER, write_atomic

PASSES = ["filter_pass", "dedup_pass", "finalize", "tokenizer", "encode", "mixture", "pack", "export", "tokens_pass"]
STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { padding: 3px 10px; border: 1px solid #ddd; }
th { background: #f3f3f3; text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: #2a7a2a; } .bad { color: #b00; font-weight: bold; }
.warning { background: #fff4e0; border-left: 4px solid #e1812c; padding: 6px 10px; margin: 6px 0; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; } img { border: 1px solid #eee; }
summary { cursor: pointer; margin: 4px 0; } details td { font-size: 0.9em; overflow-wrap: anywhere; }
"""
SAMPLES_PER_RULE = 5
SAMPLE_CHARS = 300
RULES_SHOWN = 30
DOMAINS_SHOWN = 30
NO_URL = "(no url)"
SAMPLE_COLUMNS = ["url", "reason", "detail", "dup_of", "text"]
# The public-suffix list bundled with tldextract: a report neither goes to the network nor writes a cache.
SUFFIXES = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


# The manifest's keys every report reads: a JSON without them is not a crawlbelt run's manifest.
MANIFEST_KEYS = ("counts", "invariants", "stages", "wall_seconds")


class ManifestError(Exception):
    """A folder without a crawlbelt run's manifest.json, in one line."""


def read_manifest(out: Path) -> dict:
    path = out / "manifest.json"
    try:
        manifest = json.loads(path.read_bytes())
    except FileNotFoundError:
        why = (
            "the run there did not complete (it was interrupted or failed); rerun it"
            if (out / MARKER).is_file()
            else "not a crawlbelt output"
        )
        raise ManifestError(f"{str(out)!r} holds no manifest.json: {why}") from None
    except ValueError as exc:  # cut short, or not JSON at all
        raise ManifestError(f"{str(path)!r} is not valid JSON ({exc}); is it whole?") from None
    if not isinstance(manifest, dict) or not all(key in manifest for key in MANIFEST_KEYS):
        raise ManifestError(f"{str(path)!r} is not a crawlbelt manifest (it lacks {', '.join(MANIFEST_KEYS)})")
    return manifest


def write(out: Path, path: Path | None = None) -> Path:
    """Write the report of the run in `out` (to out/report.html unless `path` is given); returns its path."""
    out = Path(out)
    path = Path(path) if path else out / "report.html"
    manifest = read_manifest(out)
    with _manifest_shape(out):
        contaminated = ["contamination_items"] if "contamination" in spec_stages(manifest) else []
    docs = _read(out / "docs", ["lang", "quality_score", "url", *contaminated, *_dup_count_column(out / "docs")])
    rejects = _read(out / "rejects", ["stage", "reason", "detail", "dup_of", "url"])
    samples = read_samples(out / "rejects")
    with _manifest_shape(out):
        page = render(manifest, docs, rejects, samples)
    try:
        write_atomic(path, page)  # nothing is left behind, whatever failed
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc  # named by the page, not its temporary name
    return path


@contextmanager
def _manifest_shape(out: Path):
    """A manifest edited into another shape (a string where a count was, a list for a table) is one line."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ManifestError(
            f"{str(out / 'manifest.json')!r} is not a crawlbelt manifest: {type(exc).__name__}: {exc}"
        ) from None


def _read(folder: Path, columns: list[str]) -> pa.Table:
    tables = [pq.read_table(p, columns=columns) for p in sorted(folder.glob("*.parquet"))]
    return pa.concat_tables(tables) if tables else pa.table({c: pa.array([], pa.string()) for c in columns})


def read_samples(folder: Path) -> dict[str, list[dict]]:
    """The first SAMPLES_PER_RULE rejects of each rule in the output's order (parts by name, rows in order).

    Rejects' `text` may be the full text: it is read only from the row groups that hold a sample.
    """
    samples: defaultdict[str, list[dict]] = defaultdict(list)
    for path in sorted(folder.glob("*.parquet")):
        parquet = pq.ParquetFile(path)
        for group in range(parquet.num_row_groups):
            picks: defaultdict[str, list[int]] = defaultdict(list)  # rule -> its sample rows in this row group
            for row, reason in enumerate(parquet.read_row_group(group, columns=["reason"])["reason"].to_pylist()):
                for rule in _rules(reason):
                    if len(samples[rule]) + len(picks[rule]) < SAMPLES_PER_RULE:
                        picks[rule].append(row)
            wanted = sorted({row for rows in picks.values() for row in rows})
            if wanted:
                table = parquet.read_row_group(group, columns=SAMPLE_COLUMNS).take(wanted)
                by_row = dict(zip(wanted, table.to_pylist()))
                for rule, rows in picks.items():
                    samples[rule] += [by_row[row] for row in rows]
    return dict(samples)


def render(manifest: dict, docs: pa.Table, rejects: pa.Table, samples: dict[str, list[dict]]) -> str:
    counts = manifest["counts"]
    output = manifest["config"]["output"]  # where the run wrote (it may have been built in a staging folder)
    name = output.rstrip("/").rsplit("/", 1)[-1]
    sections = [
        f"<h1>crawlbelt run: {escape(name)}</h1><p>{escape(output)}</p>",
        _incomplete(manifest),
        _summary(manifest),
        "<h2>Funnel</h2>",
        '<div class="plots">',
        _funnel(manifest),
        _reasons(counts["rejected_by_reason"]),
        "</div>",
        "<h2>Documents</h2>",
        '<div class="plots">',
        _languages(docs, counts["rejected_by_reason"]),
        _quality(docs),
        _duplicates(rejects),
        _dup_counts(docs),
        "</div>",
        "<h2>Rejects by reason</h2>",
        _samples(samples, counts["rejected_by_reason"]),
        "<h2>Domains</h2>",
        _domains(docs, rejects),
        _contamination(manifest, docs, rejects),
        _scorers(manifest.get("scorers") or {}),
        _paragraph_dedup(manifest.get("paragraph_dedup")),
        "<h2>Mixture and tokens</h2>",
        _mixture(manifest),
        "<h2>Time</h2>",
        '<div class="plots">',
        _times(manifest),
        "</div>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>crawlbelt report: {escape(name)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(sections)
        + "\n</body></html>\n"
    )


def _table(header: list[str], rows: list[list], numeric: set[int] | frozenset[int] = frozenset()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header) if any(header) else ""
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{escape(_fmt(v))}</td>' if i in numeric else f"<td>{escape(_fmt(v))}</td>"
            for i, v in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table>{f'<tr>{head}</tr>' if head else ''}{body}</table>"


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _incomplete(manifest: dict) -> str:
    if manifest.get("complete"):
        return ""
    return (
        '<p class="warning">This run did not complete: it stopped after '
        + ("the tokens pass, with a failed check" if "tokens" in manifest else "finalize, before the tokens pass")
        + ". Its counts are what it had done by then; rerun it to finish.</p>"
    )


def _summary(manifest: dict) -> str:
    counts = manifest["counts"]
    tokens = manifest.get("tokens") or {}
    rows = [
        ["records read", counts["records_read"]],
        ["records that are not documents", sum(counts["not_documents"].values())],
        ["documents", counts["documents"]],
        ["kept", counts["kept"]],
        ["rejected", sum(counts["rejected"].values())],
        ["token sequences", tokens.get("sequences")],
        ["tokens in shards", sum((tokens.get("tokens_per_source") or {}).values()) if tokens else None],
        ["wall seconds", manifest["wall_seconds"]],
    ]
    checks = "".join(
        f'<li class="{"ok" if ok else "bad"}">{"✓" if ok else "✗ FAILED"} {escape(name)}</li>'
        for name, ok in manifest["invariants"].items()
    )
    return _table(["", ""], rows, {1}) + f"<ul>{checks}</ul>"


def _funnel(manifest: dict) -> str:
    stages = [s for s, row in manifest["stages"].items() if "rows_in" in row]  # the belt's stages, in order
    rows = [manifest["stages"][s] for s in stages]
    chart = svg.hbars(
        f"Documents through the stages ({manifest['counts']['documents']:,} documents)",
        stages,
        {"passed on": [r["rows_in"] - r["rejected"] for r in rows], "rejected here": [r["rejected"] for r in rows]},
        stacked=True,
    )
    return svg.img(chart, "funnel: documents in and rejected at each stage")


def _rules(reason: str) -> list[str]:
    """`quality:too_short,missing_stop_words` -> `quality:too_short`, `quality:missing_stop_words`."""
    stage, _, names = reason.partition(":")
    return [f"{stage}:{name}" for name in names.split(",")] if names else [stage]


def _rule_counts(by_reason: dict[str, int]) -> Counter:
    """A document breaking several rules of a stage counts once for each rule."""
    rules: Counter[str] = Counter()
    for reason, n in by_reason.items():
        for rule in _rules(reason):
            rules[rule] += n
    return rules


def _reasons(by_reason: dict[str, int]) -> str:
    top = _rule_counts(by_reason).most_common(20)
    chart = svg.hbars(
        "Reject reasons (one count per rule broken)", [r for r, _ in top], {"documents": [n for _, n in top]}
    )
    return svg.img(chart, "reject reasons")


def _languages(docs: pa.Table, by_reason: dict[str, int]) -> str:
    kept = Counter(lang or "none" for lang in docs["lang"].to_pylist())
    rejected = Counter({r.split(":", 1)[1]: n for r, n in by_reason.items() if r.startswith("language:")})
    langs = [lang for lang, _ in (kept + rejected).most_common(15)]
    chart = svg.hbars(
        "Languages (kept documents, and those the language stage rejected)",
        langs,
        {"kept": [kept[lang] for lang in langs], "rejected": [rejected[lang] for lang in langs]},
        stacked=True,
    )
    return svg.img(chart, "languages")


def _quality(docs: pa.Table) -> str:
    scores = np.array([s for s in docs["quality_score"].to_pylist() if s is not None], float)
    counts, edges = np.histogram(scores, bins=20) if len(scores) else (np.zeros(0), np.zeros(1))
    chart = svg.histogram(
        f"Quality score of kept documents ({len(scores):,})",
        [float(e) for e in edges],
        [int(c) for c in counts],
        "classifier score",
    )
    return svg.img(chart, "quality score histogram")


def _duplicates(rejects: pa.Table) -> str:
    """Cluster size = the kept document plus its duplicates, by the stage that found them."""
    clusters: dict[str, Counter[str]] = {"exact_dedup": Counter(), "near_dedup": Counter()}
    for stage, dup_of in zip(rejects["stage"].to_pylist(), rejects["dup_of"].to_pylist()):
        if dup_of is not None and stage in clusters:
            clusters[stage][dup_of] += 1
    sizes = {stage: Counter(min(n + 1, 10) for n in c.values()) for stage, c in clusters.items()}
    present = sorted(set(sizes["exact_dedup"]) | set(sizes["near_dedup"]))
    labels = [f"{s}+" if s == 10 else str(s) for s in present]
    chart = svg.hbars(
        "Duplicate clusters by size (documents in the cluster)",
        labels,
        {"exact": [sizes["exact_dedup"][s] for s in present], "near": [sizes["near_dedup"][s] for s in present]},
    )
    return svg.img(chart, "duplicate cluster sizes")


DUP_COUNT_BINS = [(1, 1), (2, 2), (3, 5), (6, 10), (11, 100), (101, None)]  # docs/'s dup_count, in the report


def _dup_count_column(docs: Path) -> list[str]:
    """["dup_count"] where docs/ has it (an output written before it was added has not)."""
    parts = sorted(docs.glob("*.parquet"))
    return ["dup_count"] if parts and "dup_count" in pq.read_schema(parts[0]).names else []


def _dup_counts(docs: pa.Table) -> str:
    """How many copies each kept document stands for (docs/'s dup_count, exact and near, earlier outputs of
    dedup.against included): the weights a mixture may upsample by, as FineWeb-2 does."""
    if "dup_count" not in docs.column_names:
        return ""
    counts = np.array([c for c in docs["dup_count"].to_pylist() if c is not None], np.int64)
    if not len(counts):
        return "<p>Copies per kept document (dup_count): none counted (dedup off, or no document kept).</p>"
    rows = []
    for low, high in DUP_COUNT_BINS:
        n = int(np.sum((counts >= low) & (counts <= (high if high is not None else counts.max()))))
        label = str(low) if low == high else (f"{low}-{high}" if high is not None else f"{low}+")
        rows.append([label, n, f"{n / len(counts):.1%}"])
    facts = f"mean {counts.mean():.2f}, largest {int(counts.max()):,}, copies in all {int(counts.sum()):,}"
    return (
        "<div><p>Copies per kept document (dup_count, itself included; "
        + escape(facts)
        + ")</p>"
        + _table(["dup_count", "kept documents", "share"], rows, {1, 2})
        + "</div>"
    )


def _samples(samples: dict[str, list[dict]], by_reason: dict[str, int]) -> str:
    """One collapsed block per rule, the most frequent first, each with its first rejects."""
    counts = _rule_counts(by_reason)
    rules = sorted(samples, key=lambda rule: (-counts[rule], rule))
    blocks = [
        f"<p>The first {SAMPLES_PER_RULE} rejects of each rule, in the output's order (a document that "
        "breaks several rules is under each).</p>"
    ]
    blocks += [
        f"<details><summary>{escape(rule)} ({counts[rule]:,})</summary>"
        + _table(
            ["URL", "reason", "detail", "text"],
            [[r["url"], r["reason"], _detail(r), _cut(r["text"])] for r in samples[rule]],
        )
        + "</details>"
        for rule in rules[:RULES_SHOWN]
    ]
    if len(rules) > RULES_SHOWN:
        blocks.append(f"<p>{len(rules) - RULES_SHOWN} rarer reasons not shown.</p>")
    return "\n".join(blocks) if rules else "<p>No rejects.</p>"


def _detail(reject: dict) -> str | None:
    parts = [reject["detail"], reject["dup_of"] and f"duplicate of {reject['dup_of']}"]
    return "; ".join(p for p in parts if p) or None


def _cut(text: str | None) -> str | None:
    return text if text is None or len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + "…"


def _domains(docs: pa.Table, rejects: pa.Table) -> str:
    """Documents read (kept + rejected) per registered domain, the most read first."""
    kept = Counter(map(registered_domain, docs["url"].to_pylist()))
    rejected: Counter[str] = Counter()
    rules: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for url, reason in zip(rejects["url"].to_pylist(), rejects["reason"].to_pylist()):
        domain = registered_domain(url)
        rejected[domain] += 1
        rules[domain].update(_rules(reason))
    read = kept + rejected
    domains = sorted(read, key=lambda d: (-read[d], d))
    rows = [_domain_row(d, read[d], kept[d], rules[d]) for d in domains[:DOMAINS_SHOWN]]
    rest = domains[DOMAINS_SHOWN:]
    if rest:  # so that the table's documents add up to the run's
        rows.append(
            _domain_row(
                f"({len(rest):,} other domains)",
                sum(read[d] for d in rest),
                sum(kept[d] for d in rest),
                sum((rules[d] for d in rest), Counter()),
            )
        )
    return f"<p>Documents read (kept and rejected) per registered domain, the {DOMAINS_SHOWN} most read.</p>" + _table(
        ["registered domain", "documents read", "kept", "kept share", "main reject reason"], rows, {1, 2, 3}
    )


def _paragraph_dedup(section: dict | None) -> str:
    """What paragraph dedup removed: its share of the characters, the filter and the rate it reached, the
    paragraphs removed most often (the boilerplate it found) and a few documents before and after."""
    if not section:
        return ""
    rate = section["estimated_false_positive_rate"]
    facts = [
        ["documents changed", f"{section['documents_changed']:,} of {section['documents']:,}"],
        ["paragraphs removed", f"{section['paragraphs_removed']:,}"],
        ["documents removed whole (BFF's document rule)", f"{section.get('documents_removed', 0):,}"],
        [
            "characters removed",
            f"{section['chars_removed']:,} of {section['chars']:,} ({section['share_of_chars_removed']:.2%})",
        ],
        ["units seen before", f"{section['units_seen']:,} of {section['units']:,}"],
        [
            "filter",
            f"{section['filter']}, {section['bytes_per_shard']:,} bytes per shard"
            + (
                f", false positives: {rate:.2g} estimated (set: {section['false_positive_rate']:g})"
                if section["filter"] == "bloom"
                else ""
            ),
        ],
    ]
    top = [[row["removed"], row["text"]] for row in section["top_paragraphs"]]
    samples = [[doc["id"], f"{doc['removed']:.1%}", doc["before"], doc["after"]] for doc in section["samples"]]
    return "\n".join(
        [
            "<h2>Paragraph dedup</h2>",
            _table(["", ""], facts),
            "<p>The paragraphs removed most often:</p>",
            _table(["times removed", "paragraph (start)"], top, {0}),
            "<p>Documents before and after:</p>",
            _table(["id", "removed", "before", "after"], samples),
        ]
    )


def _scorers(scorers: dict) -> str:
    """Per scorer: its score per source, what it rejected per language and domain, and the documents nearest its
    threshold (pipeline/passes/scores.py): a classifier keeps what resembles its reference set, and this shows whom
    it turned away."""
    if not scorers:
        return ""
    sections = ["<h2>Scorers</h2>"]
    for name, seen in scorers.items():
        threshold = seen["threshold"]
        cut = "score only" if threshold is None else f"rejects below {threshold:g}"
        sections.append(
            f"<h3>{escape(name)}: {escape(seen['column'])}, {seen['scored']:,} documents scored, {cut}</h3>"
        )
        charts = [
            svg.img(
                svg.histogram(
                    f"{seen['column']} of source {source} ({mine['scored']:,})",
                    seen["edges"],
                    mine["counts"],
                    seen["column"],
                ),
                f"{name} scores of {source}",
            )
            for source, mine in seen["by_source"].items()
        ]
        sections.append('<div class="plots">' + "".join(charts) + "</div>")
        if threshold is None:
            continue
        for key, title in (("by_language", "language"), ("by_domain", "registered domain")):
            rows = [[k, n, out, f"{out / n:.1%}"] for k, (n, out) in seen[key].items()]
            sections.append(_table([title, "scored", f"rejected by {name}", "share"], rows, {1, 2, 3}))
        near = seen["near_threshold"]
        rows = [
            [side, doc[seen["column"]], doc["source"], doc["url"], doc["text"]]
            for side in ("above", "below")
            for doc in near.get(side, [])
        ]
        sections.append(
            "<p>The documents nearest the threshold, kept (above) and rejected (below):</p>"
            + _table(["", seen["column"], "source", "url", "text (start)"], rows, {1})
        )
    return "\n".join(sections)


def _domain_row(domain: str, read: int, kept: int, rules: Counter) -> list:
    main = min(rules.items(), key=lambda item: (-item[1], item[0]), default=None)
    return [domain, read, kept, f"{kept / read:.1%}", main and f"{main[0]} ({main[1]:,})"]


def registered_domain(url: str | None) -> str:
    """The eTLD+1 of a URL's host (`news.bbc.co.uk` -> `bbc.co.uk`); a host without a public suffix (an IP
    address, `localhost`) stands for itself, and a URL without a host is NO_URL."""
    try:
        host = urlsplit(url).hostname if url else None
    except ValueError:  # a malformed URL (an unclosed IPv6 bracket) is a page's, never a failed report
        host = None
    return _host_domain(host) if host else NO_URL


@lru_cache(maxsize=1 << 16)
def _host_domain(host: str) -> str:
    return SUFFIXES.extract_str(host).top_domain_under_public_suffix or host


def spec_stages(manifest: dict) -> list[str]:
    """The per-document stages the run had, by name, from its manifest's stage rows."""
    return [name for name, row in manifest["stages"].items() if "rows_in" in row]


CONTAMINATION_DOMAINS = 5  # top domains shown per eval set
CONTAMINATION_ITEMS = 10  # item ids shown per eval set


def _contamination(manifest: dict, docs: pa.Table, rejects: pa.Table) -> str:
    """Per eval set of a run with the contamination stage: the documents it rejected or masked, the items
    found in them, and the registered domains with the most of those documents."""
    if "contamination" not in spec_stages(manifest):
        return ""
    found = _contaminated(docs, rejects)
    rows = []
    for eval_set in manifest["config"]["decontamination"]["eval_sets"]:
        documents = found[eval_set["name"]].values()
        domains = Counter(registered_domain(url) for url, _ in documents)
        top = sorted(domains.items(), key=lambda pair: (-pair[1], pair[0]))[:CONTAMINATION_DOMAINS]
        items = sorted(set().union(*(items for _, items in documents)))
        first = ", ".join(items[:CONTAMINATION_ITEMS]) + (" …" if len(items) > CONTAMINATION_ITEMS else "")
        top_text = ", ".join(f"{domain} ({n:,})" for domain, n in top) or None
        rows.append([eval_set["name"], eval_set["action"], len(documents), len(items), first or None, top_text])
    return (
        "<h2>Contamination</h2><p>Documents holding text of each eval set, rejected or masked (a reject's "
        "detail names the first item it holds; a masked document lists every item).</p>"
        + _table(["eval set", "action", "documents", "items hit", "items", "top domains"], rows, {2, 3})
    )


def _contaminated(docs: pa.Table, rejects: pa.Table) -> defaultdict[str, dict[tuple, tuple[str | None, set[str]]]]:
    """eval set -> {document: (its URL, the set's items found in it)}, from rejects' `contamination:NAME,...`
    reasons and details (`NAME item ID (...)`) and docs' `contamination_items` (`NAME:ID,...`)."""
    found: defaultdict[str, dict[tuple, tuple[str | None, set[str]]]] = defaultdict(dict)
    columns = (rejects[c].to_pylist() for c in ("stage", "reason", "detail", "url"))
    for row, (stage, reason, detail, url) in enumerate(zip(*columns)):
        if stage == "contamination":
            named, _, rest = (detail or "").partition(" item ")
            for name in reason.partition(":")[2].split(","):
                found[name][("rejects", row)] = (url, {rest.split(" (", 1)[0]} if name == named else set())
    for row, (url, listed) in enumerate(zip(docs["url"].to_pylist(), docs["contamination_items"].to_pylist())):
        for entry in listed.split(",") if listed else []:
            name, _, item = entry.partition(":")
            found[name].setdefault(("docs", row), (url, set()))[1].add(item)
    return found


def _mixture(manifest: dict) -> str:
    mixture, tokens = manifest.get("mixture"), manifest.get("tokens")
    if not mixture or not tokens:
        return "<p>No tokens pass in this run.</p>"
    table = mixture["table"]
    rows = [
        [
            r["source"],
            r["weight"],
            r["documents"],
            r["tokens_available"],
            r["tokens_drawn"],
            r["passes"],
            tokens["tokens_per_source"].get(r["source"], 0),
        ]
        for r in table
    ]
    parts = [
        f"<p>Token budget {mixture['budget_tokens']:,}, seed {escape(str(mixture['seed']))}, "
        f"warning above {mixture['max_passes']:g} passes.</p>",
        _table(
            ["source", "weight", "documents", "tokens available", "tokens drawn", "passes", "tokens in shards"],
            rows,
            {1, 2, 3, 4, 5, 6},
        ),
    ]
    warnings = mixture["warnings"] + tokens.get("warnings", [])
    parts += [f'<div class="warning">warning: {escape(w)}</div>' for w in warnings]
    names = [r["source"] for r in table]
    chart = svg.hbars(
        "Tokens per source",
        names,
        {
            "available": [r["tokens_available"] for r in table],
            "drawn": [r["tokens_drawn"] for r in table],
            "in shards": [tokens["tokens_per_source"].get(n, 0) for n in names],
        },
    )
    shards = tokens["shards"]
    facts = [
        ["sequence length", f"{tokens['seq_len']} (+1: inputs and shifted targets)"],
        ["vocabulary", f"{tokens['vocab_size']:,} ids, stored as {tokens['dtype']}"],
        ["end / pad id", f"{tokens['eos_id']} / {tokens['pad_id'] if tokens['pad_id'] is not None else '-'}"],
        ["sequences", f"{tokens['sequences']:,} in {len(shards)} shards, shuffled: {tokens['shuffled']}"],
        [
            "remainder",
            f"{tokens['remainder']}: {sum(tokens['dropped_tokens_per_source'].values()):,} tokens "
            f"dropped, {tokens['padding_tokens']:,} padding",
        ],
        [
            "formats",
            ", ".join(
                [f"parquet ({len(shards)} shards)"] * ("parquet" in tokens["formats"])
                + [
                    f"{name} ({', '.join(f['path'] for f in files)})"
                    for name, files in tokens.get("exports", {}).items()
                ]
            ),
        ],
    ]
    parts += ['<div class="plots">', svg.img(chart, "tokens per source"), _table(["token shards", ""], facts), "</div>"]
    return "\n".join(parts)


def _times(manifest: dict) -> str:
    stages = manifest["stages"]
    per_doc = [s for s, row in stages.items() if "rows_in" in row and row.get("seconds") is not None]
    passes = [p for p in PASSES if (stages.get(p) or {}).get("seconds") is not None]
    return svg.img(
        svg.hbars(
            "Seconds per stage (per-document stages: summed over workers)",
            per_doc,
            {"seconds": [stages[s]["seconds"] for s in per_doc]},
            unit=" s",
        ),
        "time per stage",
    ) + svg.img(
        svg.hbars(
            "Seconds per pass and step (wall clock)",
            passes,
            {"seconds": [stages[p]["seconds"] for p in passes]},
            unit=" s",
        ),
        "time per pass",
    )
