"""The report's reject samples and per-domain table: one real run of the crawl sample, and an output folder
built by hand with real Parquet parts (two reject parts, one of them in several row groups) under that run's
manifest, read back from the written page."""

import json
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import belt, report
from pipeline.config.load import load_config

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory, ray_session):
    out = tmp_path_factory.mktemp("report") / "sample"
    manifest = belt.run(load_config(str(ROOT / "configs" / "crawl_sample.yaml"), output=str(out)))
    return manifest, out


class Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts (entities decoded), keyed by the <details> summary it is in."""

    def __init__(self, page: str):
        super().__init__()
        self.tables: list[tuple[str | None, list[list[str]]]] = []
        self.summary: str | None = None
        self.cell: str | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append((self.summary, []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th", "summary"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][1][-1].append(self.cell)
        elif tag == "summary":
            self.summary = self.cell
        elif tag == "details":
            self.summary = None
        self.cell = None if tag in ("td", "th", "summary") else self.cell

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def samples_on(page: str) -> dict[str, list[dict]]:
    """rule -> the sample rows of its <details> block."""
    blocks = {}
    for summary, rows in Tables(page).tables:
        if summary is not None:
            rule, count = summary.rsplit(" (", 1)
            blocks[rule] = [dict(zip(rows[0], row)) for row in rows[1:]]
    return blocks


def domain_table(page: str) -> list[dict]:
    rows = next(rows for _, rows in Tables(page).tables if rows[0][0] == "registered domain")
    return [dict(zip(rows[0], row)) for row in rows[1:]]


def rules_of(reason: str) -> set[str]:
    stage, _, names = reason.partition(":")
    return {f"{stage}:{name}" for name in names.split(",")} if names else {stage}


def test_the_sample_runs_report_shows_each_rules_rejects_and_every_document_by_domain(sample_run):
    manifest, out = sample_run
    page = (out / "report.html").read_text()
    rejects = pa.concat_tables([pq.read_table(p) for p in sorted((out / "rejects").glob("*.parquet"))]).to_pylist()
    samples = samples_on(page)
    assert set(samples) == set().union(*map(rules_of, manifest["counts"]["rejected_by_reason"]))
    for rule, rows in samples.items():
        expected = [r for r in rejects if rule in rules_of(r["reason"])][:5]
        assert [(s["URL"], s["reason"]) for s in rows] == [(r["url"], r["reason"]) for r in expected], rule
    duplicates = {s["URL"]: s["detail"] for s in samples["near_duplicate"] + samples["exact_duplicate"]}
    assert duplicates and all(d.startswith("duplicate of <urn:uuid:") for d in duplicates.values())

    domains = domain_table(page)
    assert [d["registered domain"] for d in domains] == ["crawl-sample.example"]  # no public suffix: the host
    assert sum(int(d["documents read"]) for d in domains) == manifest["counts"]["documents"]
    assert sum(int(d["kept"]) for d in domains) == manifest["counts"]["kept"]


@pytest.mark.parametrize(
    "url, domain",
    [
        ("http://news.bbc.co.uk/a", "bbc.co.uk"),
        ("https://WWW.BBC.CO.UK:8443/b?x=1", "bbc.co.uk"),
        ("http://bbc.co.uk/", "bbc.co.uk"),
        ("http://other.co.uk/", "other.co.uk"),
        ("http://a.b.example.com/", "example.com"),
        ("http://user:pw@shop.example.com./", "example.com"),
        ("http://192.0.2.7/x", "192.0.2.7"),
        ("http://[2001:db8::1]:8080/", "2001:db8::1"),
        ("http://localhost/", "localhost"),
        ("http://crawl-sample.example/page/1", "crawl-sample.example"),
        (None, "(no url)"),
        ("", "(no url)"),
        ("mailto:someone@example.org", "(no url)"),
        ("http://[2001:db8::1/", "(no url)"),  # unclosed bracket: urlsplit raises
    ],
)
def test_registered_domain(url, domain):
    assert report.registered_domain(url) == domain


def site(i: int, j: int) -> str:
    return f"http://page{j}.site{i:02d}.org/{j}"


# (url, reason or None for kept, text) in output order; the rejects go to two parts, split at SPLIT
KEPT = [
    ("http://news.bbc.co.uk/k", None, None),
    ("http://www.bbc.co.uk/k", None, None),
    ("http://192.0.2.7/k", None, None),
    (None, None, None),
] + [(site(i, j), None, None) for i in range(35) for j in range(i % 3)]
REJECTED = (
    [(f"http://news.bbc.co.uk/{j}", "quality:too_short", f"short {j}") for j in range(3)]
    + [
        ("http://other.co.uk/s", "quality:too_short,missing_stop_words", SCRIPT + "x" * 400),
        ("http://other.co.uk/n", "near_duplicate", None),
    ]
    + [(f"http://bbc.co.uk/{j}", "quality:too_short", f"short b{j}") for j in range(4)]
    + [("http://[::1]/", "language:fr", "bonjour")]
    + [(site(i, j), "language:de", "hallo") for i in range(35) for j in range(i // 2)]
)
SPLIT = 4


def write_output(run_out: Path, folder: Path) -> dict:
    """KEPT and REJECTED as a run's docs/ and rejects/ parts, under the sample run's manifest with these counts."""
    for name in ("docs", "rejects"):
        (folder / name).mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "id": [f"k{i}" for i in range(len(KEPT))],
                "url": [u for u, _, _ in KEPT],
                "lang": ["en"] * len(KEPT),
                "quality_score": [0.5] * len(KEPT),
            }
        ),
        folder / "docs" / "part-00000.parquet",
    )
    rejects = pa.table(
        {
            "id": [f"r{i}" for i in range(len(REJECTED))],
            "url": [u for u, _, _ in REJECTED],
            "stage": [r.split(":")[0] if ":" in r else "near_dedup" for _, r, _ in REJECTED],
            "reason": [r for _, r, _ in REJECTED],
            "detail": ["detected fr" if r == "language:fr" else None for _, r, _ in REJECTED],
            "dup_of": ["k0" if r == "near_duplicate" else None for _, r, _ in REJECTED],
            "text": [t for _, _, t in REJECTED],
        }
    )
    pq.write_table(rejects.slice(0, SPLIT), folder / "rejects" / "part-00000.parquet")
    pq.write_table(rejects.slice(SPLIT), folder / "rejects" / "part-00001.parquet", row_group_size=2)
    manifest = json.loads((run_out / "manifest.json").read_text())
    manifest["counts"].update(
        documents=len(KEPT) + len(REJECTED), kept=len(KEPT), rejected_by_reason=dict(Counter(r for _, r, _ in REJECTED))
    )
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def test_samples_and_domains_of_a_hand_built_output(sample_run, tmp_path):
    _, run_out = sample_run
    manifest = write_output(run_out, tmp_path / "out")
    page = report.write(tmp_path / "out").read_text()
    assert "<script" not in page  # the reject's markup is text on the page, not markup

    samples = samples_on(page)
    short = samples["quality:too_short"]  # 8 rejects over both parts: the first 5 in order
    assert [s["URL"] for s in short] == (
        [f"http://news.bbc.co.uk/{j}" for j in range(3)] + ["http://other.co.uk/s", "http://bbc.co.uk/0"]
    )
    assert short[4]["text"] == "short b0" and short[3]["reason"] == "quality:too_short,missing_stop_words"
    assert [s["URL"] for s in samples["quality:missing_stop_words"]] == ["http://other.co.uk/s"]
    assert short[3]["text"] == (SCRIPT + "x" * 400)[:300] + "…"
    assert samples["near_duplicate"][0]["detail"] == "duplicate of k0" and samples["near_duplicate"][0]["text"] == "-"
    assert samples["language:fr"][0]["detail"] == "detected fr"
    assert len(samples["language:de"]) == 5
    assert all(rule in rules_of(s["reason"]) and len(rows) <= 5 for rule, rows in samples.items() for s in rows)

    read = Counter(report.registered_domain(u) for u, _, _ in KEPT + REJECTED)
    kept = Counter(report.registered_domain(u) for u, _, _ in KEPT)
    assert read["bbc.co.uk"] == 9 and read["other.co.uk"] == 2 and read["site34.org"] == 17 + 1
    top = sorted(read, key=lambda d: (-read[d], d))[:30]
    rows = domain_table(page)
    assert len(rows) == 31 and rows[-1]["registered domain"] == f"({len(read) - 30} other domains)"
    assert [r["registered domain"] for r in rows[:30]] == top
    assert [(int(r["documents read"]), int(r["kept"])) for r in rows[:30]] == [(read[d], kept[d]) for d in top]
    assert sum(int(r["documents read"]) for r in rows) == manifest["counts"]["documents"]
    bbc = rows[top.index("bbc.co.uk")]
    assert bbc["kept share"] == "22.2%" and bbc["main reject reason"] == "quality:too_short (7)"
    assert rows[top.index("site34.org")]["main reject reason"] == "language:de (17)"


def edited_manifest() -> dict:
    """A manifest whose number cells and names were edited into markup, as anyone with the file can."""
    return {
        "complete": True,
        "counts": {
            "records_read": SCRIPT,
            "not_documents": {},
            "documents": 2,
            "kept": SCRIPT,
            "rejected": {},
            "rejected_by_reason": {},
        },
        "invariants": {SCRIPT: True},
        "stages": {"quality": {"rows_in": 2, "rejected": 0, "seconds": 0.1}},
        "wall_seconds": SCRIPT,
        "config": {"output": f"/tmp/{SCRIPT}"},
        "mixture": {
            "budget_tokens": 10,
            "seed": SCRIPT,
            "max_passes": 4,
            "warnings": [],
            "table": [
                {
                    "source": SCRIPT,
                    "weight": SCRIPT,
                    "documents": SCRIPT,
                    "tokens_available": 5,
                    "tokens_drawn": 5,
                    "passes": SCRIPT,
                }
            ],
        },
        "tokens": {
            "tokens_per_source": {SCRIPT: 5},
            "shards": [],
            "seq_len": SCRIPT,
            "vocab_size": 300,
            "dtype": SCRIPT,
            "eos_id": SCRIPT,
            "pad_id": None,
            "sequences": 1,
            "shuffled": SCRIPT,
            "remainder": SCRIPT,
            "dropped_tokens_per_source": {},
            "padding_tokens": 0,
            "formats": [SCRIPT],
            "exports": {},
        },
    }


def test_an_edited_manifests_names_and_number_cells_are_text_on_the_page(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(edited_manifest()))
    page = report.write(tmp_path).read_text()
    assert "<script" not in page
    cells = [cell for _, rows in Tables(page).tables for row in rows for cell in row]
    assert cells.count(SCRIPT) >= 4  # records read, kept, wall seconds, the mixture's weight ...: shown as text


@pytest.mark.parametrize(
    "key, value",
    [("counts.documents", "many"), ("counts.not_documents", [1]), ("counts.rejected_by_reason", None), ("stages", [])],
)
def test_a_manifest_edited_into_another_shape_is_one_line(tmp_path, key, value):
    manifest = edited_manifest()
    *parents, name = key.split(".")
    section = manifest
    for parent in parents:
        section = section[parent]
    section[name] = value
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(report.ManifestError, match="manifest.json"):
        report.write(tmp_path)
