"""The tokens pass and the report on a real embedded Ray: packed shards decode back to the documents, the
shuffle keeps every sequence, curated Parquet sources with weights and a given tokenizer, the repetition
warning, and the report in a real headless Chromium."""

import json
import logging
import subprocess
import sys
from html import escape
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer, normalizers

import browser
from helpers import ROOT
from pipeline import belt
from pipeline.config.load import load_config
from stages.tokens import train_bpe

EOS = "<|endoftext|>"


pytestmark = pytest.mark.usefixtures("embedded_ray")  # conftest.py


@pytest.fixture(scope="module")
def stream_run(tmp_path_factory, ray_session):
    """The fixture crawl, sequences left in stream order, the last one padded."""
    out = tmp_path_factory.mktemp("tokens") / "stream"
    config = load_config(
        str(ROOT / "configs" / "local.yaml"),
        output=str(out),
        overrides=[
            "packing.seq_len=64",
            "packing.shuffle=false",
            "packing.remainder=pad",
            "packing.sequences_per_shard=30",
        ],
    )
    return belt.run(config), out


def shard_table(out: Path, manifest: dict) -> pa.Table:
    return pa.concat_tables([pq.read_table(out / shard["path"]) for shard in manifest["tokens"]["shards"]])


def curated_config(tmp_path, sources: str, extra: str = "") -> Path:
    path = tmp_path / "curated.yaml"
    path.write_text(f"sources:\n{sources}\nclassifier: {{kind: none}}\nray: {{num_cpus: 2}}\n{extra}")
    return path


def test_shards_decode_back_to_the_documents_in_order(stream_run):
    manifest, out = stream_run
    tokens = manifest["tokens"]
    docs = pa.concat_tables([pq.read_table(p) for p in sorted((out / "docs").glob("*.parquet"))])["text"].to_pylist()
    shards = shard_table(out, manifest)
    assert shards.schema.equals(
        pa.schema([("tokens", pa.list_(pa.uint16(), 65)), ("source", pa.string()), ("length", pa.int32())])
    )
    assert len(tokens["shards"]) == len(list((out / "tokens").glob("part-*.parquet"))) >= 2
    assert [s["sequences"] for s in tokens["shards"]] == [
        pq.ParquetFile(out / s["path"]).metadata.num_rows for s in tokens["shards"]
    ]
    assert shards.num_rows == tokens["sequences"] and set(shards["source"].to_pylist()) == {"web"}

    tokenizer = Tokenizer.from_file(str(out / "tokens" / "tokenizer.json"))
    assert tokens["eos_id"] == tokenizer.token_to_id(EOS) and tokens["pad_id"] == tokenizer.token_to_id("<|pad|>")
    assert tokens["vocab_size"] == tokenizer.get_vocab_size() and tokens["dtype"] == "uint16"
    rows, lengths = shards["tokens"].to_pylist(), shards["length"].to_pylist()
    assert all(n == 65 for n in lengths[:-1]) and 0 < lengths[-1] < 65
    assert set(rows[-1][lengths[-1] :]) == {tokens["pad_id"]}
    ids = [t for row, n in zip(rows, lengths) for t in row[:n]]
    assert tokenizer.decode(ids, skip_special_tokens=False) == "".join(d + EOS for d in docs)
    assert sum(lengths) == tokens["tokens_per_source"]["web"] == manifest["mixture"]["table"][0]["tokens_drawn"]
    assert tokens["padding_tokens"] == 65 - lengths[-1]
    assert all(manifest["invariants"].values())


def test_shuffle_and_a_given_tokenizer_keep_every_sequence(stream_run, tmp_path):
    manifest, out = stream_run
    given = out / "tokens" / "tokenizer.json"
    config = curated_config(
        tmp_path,
        f"  - {{name: again, input: [{out}/docs/*.parquet], curated: true}}",
        (f"tokenizer: {{path: {given}}}\npacking: {{seq_len: 64, remainder: pad, sequences_per_shard: 30}}\n"),
    )
    shuffled = belt.run(load_config(str(config), output=str(tmp_path / "shuffled")))
    assert (tmp_path / "shuffled" / "tokens" / "tokenizer.json").read_bytes() == given.read_bytes()
    assert shuffled["counts"]["records_read"] == 0 and not (tmp_path / "shuffled" / "docs").exists()
    before = shard_table(out, manifest)
    after = shard_table(tmp_path / "shuffled", shuffled)
    key = lambda table: [tuple(row) for row in table["tokens"].to_pylist()]  # noqa: E731
    assert key(after) != key(before) and sorted(key(after)) == sorted(key(before))
    assert sorted(after["length"].to_pylist()) == sorted(before["length"].to_pylist())


def test_weighted_curated_sources_repeat_with_a_warning(stream_run, tmp_path, caplog):
    manifest, out = stream_run
    parts = sorted((out / "docs").glob("*.parquet"))
    given = tmp_path / "given.json"  # no pad token, another end token: pads with the end token
    texts = pq.read_table(parts[0])["text"].to_pylist()
    train_bpe(iter(texts), 400, ["</s>"]).save(str(given))
    # byte-level: at most one token per byte, plus the end token; so 'small' is repeated at least twice
    sizes = [len(t.encode()) + 1 for p in parts for t in pq.read_table(p)["text"].to_pylist()]
    budget = 3 * sum(sizes)
    config = curated_config(
        tmp_path,
        f"  - {{name: small, input: [{parts[0]}], weight: 3}}\n"
        f"  - {{name: large, input: [{parts[1]}, {parts[2]}], weight: 1}}",
        (
            f"tokenizer: {{path: {given}, eos_token: '</s>'}}\nmixture: {{budget_tokens: {budget}, max_passes: 2}}\n"
            "packing: {seq_len: 32, remainder: pad, formats: [parquet, megatron]}\n"
        ),
    )
    with caplog.at_level(logging.INFO, logger="crawlbelt"):
        run = belt.run(load_config(str(config), output=str(tmp_path / "mixed")))
    table = {row["source"]: row for row in run["mixture"]["table"]}
    assert table["small"]["documents"] == pq.ParquetFile(parts[0]).metadata.num_rows
    assert run["mixture"]["budget_tokens"] == budget
    for name, share in (("small", 0.75), ("large", 0.25)):
        row = table[name]
        assert row["passes"] == pytest.approx(share * budget / row["tokens_available"], abs=1e-4)
        assert row["tokens_target"] == round(share * budget)
        assert 0 <= row["tokens_drawn"] - row["tokens_target"] < max(sizes)  # overshoots by less than one document
    repeated = [name for name, row in table.items() if row["passes"] > 2]
    assert "small" in repeated and len(run["mixture"]["warnings"]) == len(repeated)
    for name, warning in zip(repeated, run["mixture"]["warnings"]):
        assert f"'{name}'" in warning and f"{table[name]['passes']:.2f} passes" in warning
        assert any(r.levelno == logging.WARNING and warning in r.getMessage() for r in caplog.records)

    tokens = run["tokens"]
    assert tokens["eos_id"] == tokens["pad_id"] == Tokenizer.from_file(str(given)).token_to_id("</s>")
    # tokens/ names the given end token for AutoTokenizer, and no pad token: the tokenizer has none
    folder = tmp_path / "mixed" / "tokens"
    assert json.loads((folder / "special_tokens_map.json").read_text()) == {"eos_token": "</s>"}
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["eos_token"] == "</s>" and "pad_token" not in config
    shards = shard_table(tmp_path / "mixed", run)
    sources = shards["source"].to_pylist()
    for name in ("small", "large"):
        lengths = [n for s, n in zip(sources, shards["length"].to_pylist()) if s == name]
        assert sum(lengths) == tokens["tokens_per_source"][name] == table[name]["tokens_drawn"]
    # shuffled: the two sources alternate instead of one long run of each
    assert sum(a != b for a, b in zip(sources, sources[1:])) > len(sources) / 4
    # Megatron's export: every draw of both sources, whole, each ending with the given tokenizer's end token,
    # the sources mixed along the draw order (a Megatron split of it samples both)
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    documents = IndexedDataset(str(tmp_path / "mixed" / "tokens" / "megatron" / "tokens"))
    assert len(documents) == sum(row["documents_drawn"] for row in table.values())
    assert sum(documents.sequence_lengths) == sum(row["tokens_drawn"] for row in table.values())
    assert all(documents[i][-1] == tokens["eos_id"] for i in range(len(documents)))
    encoder = Tokenizer.from_file(str(given))
    small = {tuple(e.ids + [tokens["eos_id"]]) for e in encoder.encode_batch(texts, add_special_tokens=False)}
    from_small = [tuple(documents[i].tolist()) in small for i in range(len(documents))]
    half = len(from_small) // 2
    assert (
        any(from_small[:half]) and not all(from_small[:half]) and any(from_small[half:]) and not all(from_small[half:])
    )
    transformers = pytest.importorskip("transformers", reason="the classify extra (transformers)")
    loaded = transformers.AutoTokenizer.from_pretrained(folder)
    assert loaded.eos_token_id == tokens["eos_id"] and loaded.pad_token is None


def test_a_given_tokenizers_truncation_padding_and_normalized_specials_stay_out_of_the_shards(
    stream_run, tmp_path, caplog
):
    manifest, out = stream_run
    docs = pa.concat_tables([pq.read_table(p) for p in sorted((out / "docs").glob("*.parquet"))])["text"].to_pylist()
    docs.append("a forum post quoting <|ENDOFTEXT|> and <|Pad|> in the middle of a page")
    pq.write_table(pa.table({"text": docs}), tmp_path / "docs.parquet")
    tokenizer = Tokenizer.from_file(str(out / "tokens" / "tokenizer.json"))
    tokenizer.enable_truncation(16)
    tokenizer.enable_padding(length=200, pad_id=1, pad_token="<|pad|>")
    tokenizer.normalizer = normalizers.Lowercase()
    spec = json.loads(tokenizer.to_str())
    for added in spec["added_tokens"]:
        added["normalized"] = True  # "<|ENDOFTEXT|>" normalizes to the end token's text
    given = tmp_path / "given.json"
    given.write_text(json.dumps(spec))
    config = curated_config(
        tmp_path,
        f"  - {{name: quoted, input: [{tmp_path}/docs.parquet], curated: true}}",
        (f"tokenizer: {{path: {given}}}\npacking: {{seq_len: 64, remainder: pad, shuffle: false}}\n"),
    )
    with caplog.at_level(logging.INFO, logger="crawlbelt"):
        run = belt.run(load_config(str(config), output=str(tmp_path / "out")))
    (warning,) = run["tokens"]["warnings"]
    assert "truncation and padding settings of" in warning and str(given) in warning
    assert any(r.levelno == logging.WARNING and r.getMessage() == warning for r in caplog.records)

    shards = shard_table(tmp_path / "out", run)
    ids = [t for row, n in zip(shards["tokens"].to_pylist(), shards["length"].to_pylist()) for t in row[:n]]
    eos = run["tokens"]["eos_id"]
    assert ids.count(eos) == len(docs) and ids[-1] == eos and 1 not in ids  # end tokens only at the ends
    plain = Tokenizer.from_str(json.dumps(spec))
    plain.no_truncation()
    assert plain.decode(ids, skip_special_tokens=False) == "".join(d.lower() + EOS for d in docs)


@pytest.mark.parametrize("case", ["seq_len longer than all the text", "a lone source without tokens"])
def test_a_pass_that_writes_no_sequence_says_why_in_the_log_and_the_manifest(stream_run, tmp_path, caplog, case):
    _, out = stream_run
    if case == "a lone source without tokens":
        pq.write_table(pa.table({"text": pa.array(["", None], pa.string())}), tmp_path / "empty.parquet")
        source, seq_len = f"{tmp_path}/empty.parquet", 64
        expected = ["source 'web' has weight 1.0 but no tokens", "no sequence written: 0 tokens drawn"]
    else:
        source, seq_len = f"{out}/docs/*.parquet", 10**6
        expected = [
            "no sequence written",
            f"fewer than one sequence of {10**6 + 1} (packing.seq_len + 1); lower "
            "packing.seq_len or set packing.remainder: pad",
        ]
    config = curated_config(
        tmp_path,
        f"  - {{name: web, input: [{source}]}}",
        (f"tokenizer: {{path: {out}/tokens/tokenizer.json}}\npacking: {{seq_len: {seq_len}}}\n"),
    )
    with caplog.at_level(logging.INFO, logger="crawlbelt"):
        run = belt.run(load_config(str(config), output=str(tmp_path / "out")))
    assert run["tokens"]["sequences"] == 0 and run["tokens"]["shards"] == []
    warnings = run["mixture"]["warnings"] + run["tokens"]["warnings"]
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for part in expected:
        assert any(part in w for w in warnings) and any(part in line for line in logged), (part, warnings)
    page = (tmp_path / "out" / "report.html").read_text()
    assert all(escape(w) in page for w in warnings)  # the report shows them too


@pytest.mark.browser
def test_report_renders_in_headless_chromium(stream_run, tmp_path):
    if browser.chromium() is None:
        pytest.skip(
            "chromium not found: the report's browser test needs Debian's chromium "
            "(bash scripts/install_browser.sh installs it)"
        )
    _, out = stream_run
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "report", str(out), "--output", str(tmp_path / "again.html")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "again.html").read_bytes() == (out / "report.html").read_bytes()

    broken = tmp_path / "broken.html"  # the checks below can fail: a page with a broken plot and an error
    broken.write_text(
        '<html><body><img alt="bad" src="data:image/svg+xml;base64,PHN2Zz48L3N2Zw">'
        '<script>console.error("boom")</script></body></html>'
    )
    page, control = browser.load([(out / "report.html").as_uri(), broken.as_uri()])
    assert control["errors"] == ["boom"] and control["images"][0]["width"] == 0

    assert page["title"].startswith("crawlbelt report") and page["errors"] == []
    alts = {image["alt"] for image in page["images"]}
    assert {
        "funnel: documents in and rejected at each stage",
        "reject reasons",
        "languages",
        "quality score histogram",
        "duplicate cluster sizes",
        "tokens per source",
        "time per stage",
    } <= alts
    for image in page["images"]:
        assert image["complete"] and image["width"] > 0 and image["height"] > 0 and image["shown"] > 0, image


def test_report_command_refuses_a_folder_without_a_run(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 2 and "no manifest.json" in result.stderr
