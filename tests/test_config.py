"""Config validation: each kind of error is one line naming the key or file, exit code 2, nothing written."""
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config import ConfigError, load_config
from stages.tokens import train_bpe

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "configs" / "crawl_sample.yaml"


def write_config(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("text, expected", [
    ("sources: [{name: web, input: [x.warc]}]\nlanguage: {treshold: 0.5}\n", "unknown key 'language.treshold'"),
    ("sources: [{name: web, input: [x.warc]}]\nlanguage: {threshold: high}\n",
     "language.threshold: expected float, got str 'high'"),
    ("sources: [{name: web, input: [x.warc]}]\ndedup: {shards: 2.5}\n", "dedup.shards: expected int"),
    ("sources: [{name: web, input: [x.warc]}]\nquality: {enabled: 1}\n", "quality.enabled: expected bool"),
    ("sources: [{name: web, input: [missing/*.warc.gz]}]\n", "input '"),
    ("sources: [{name: web, input: [x.warc]}]\nlanguage: {method: magic}\n", "language.method: expected one of"),
    ("sources: [{name: web, input: [x.warc]}]\nresources: {filter: {num_cpus: 0}}\n", "resources.filter: expected"),
    ("sources: [{name: web, input: [x.warc]}]\nresources: {encode: {cpus: 2}}\n", "unknown key 'resources.encode.cpus'"),
    ("sources: [{name: web, input: [x.warc]}]\nresources: {filter: {max_retries: -2}}\n",
     "resources.filter.max_retries: expected -1 (no limit), 0 or more"),
    ("sources: [{name: web, input: [x.warc]}]\nray: {node_lost_timeout_s: 0}\n", "ray.node_lost_timeout_s: expected"),
])
def test_config_errors_name_the_key_exit_2_and_write_nothing(tmp_path, text, expected):
    (tmp_path / "x.warc").write_bytes(b"")
    config = write_config(tmp_path, text + "classifier: {kind: none}\n")
    out = tmp_path / "out"
    result = run_cli("run", config, "--output", str(out), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: ") and expected in lines[0], result.stderr
    assert not out.exists()


def test_output_is_a_local_path_or_an_s3_uri(tmp_path):
    (tmp_path / "x.warc").write_bytes(b"")
    config = write_config(tmp_path, "sources: [{name: web, input: [x.warc]}]\nclassifier: {kind: none}\n")
    with pytest.raises(ConfigError, match="'gs://bucket/out': expected a local path or an s3:// URI"):
        load_config(config, output="gs://bucket/out")


def test_missing_input_names_the_pattern(tmp_path):
    config = write_config(tmp_path, "sources: [{name: web, input: [nowhere/*.warc.gz]}]\n")
    with pytest.raises(ConfigError, match="nowhere/\\*.warc.gz' matches no file"):
        load_config(config)


def test_missing_config_file_and_bad_override(tmp_path):
    result = run_cli("run", str(tmp_path / "absent.yaml"), cwd=tmp_path)
    assert result.returncode == 2 and "absent.yaml' not found" in result.stderr
    with pytest.raises(ConfigError, match="unknown key 'dedup.bogus'"):
        load_config(str(SAMPLE), overrides=["dedup.bogus=1"])


def test_overrides_and_inputs_apply(tmp_path):
    warc = tmp_path / "a.warc"
    warc.write_bytes(b"")
    config = load_config(str(SAMPLE), overrides=["language.threshold=0.9", "dedup.near=false"],
                         inputs=[str(warc)], output=str(tmp_path / "o"))
    assert config.language.threshold == 0.9 and config.dedup.near is False
    assert config.sources[0].input == [str(warc)] and config.output == str(tmp_path / "o")
    # paths in the file are relative to the config's folder, not the working directory
    assert load_config(str(SAMPLE)).classifier.good_examples == [str(ROOT / "configs" / "classifier" / "good.txt")]


def test_output_that_is_not_ours_is_refused(tmp_path):
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.tex").write_text("do not delete")
    with pytest.raises(ConfigError, match="not an earlier crawlbelt output"):
        load_config(str(SAMPLE), output=str(tmp_path / "precious"))


def test_token_settings_and_curated_sources_are_checked(tmp_path):
    (tmp_path / "a.warc").write_bytes(b"")
    pq.write_table(pa.table({"text": ["a document"]}), tmp_path / "docs.parquet")
    pq.write_table(pa.table({"body": ["no text column"]}), tmp_path / "other.parquet")
    (tmp_path / "tok.json").write_text("not json")
    base = "classifier: {kind: none}\n"
    cases = [
        ("sources: [{name: web, input: [a.warc, docs.parquet]}]\n", "either crawls (WARC/ARC) or curated"),
        ("sources: [{name: web, input: [other.parquet]}]\n", "has no string column 'text'"),
        ("sources: [{name: web, input: [a.warc], weight: -1}]\n", "sources[0].weight: expected a number >= 0"),
        ("sources: [{name: web, input: [a.warc], weight: 0}]\n", "at least one weight must be above 0"),
        ("sources: [{name: web, input: [a.warc]}]\npacking: {remainder: keep}\n", "packing.remainder: expected one of"),
        ("sources: [{name: web, input: [a.warc]}]\npacking: {seq_len: 0}\n", "packing.seq_len: expected a positive"),
        ("sources: [{name: web, input: [a.warc]}]\nmixture: {budget_tokens: 0}\n", "mixture.budget_tokens"),
        ("sources: [{name: web, input: [a.warc]}]\ntokenizer: {vocab_size: 100}\n", "at least 258"),
        ("sources: [{name: web, input: [a.warc]}]\ntokenizer: {path: tok.json}\n", "is not a tokenizer.json"),
        ("sources: [{name: web, input: [a.warc]}]\ntokenizer: {path: absent.json}\n", "not found"),
    ]
    for text, expected in cases:
        with pytest.raises(ConfigError) as error:
            load_config(write_config(tmp_path, text + base), output=str(tmp_path / "out"))
        assert expected in str(error.value), (text, str(error.value))
    train_bpe(iter(["some text"]), 300, ["<s>"]).save(str(tmp_path / "tok.json"))
    with pytest.raises(ConfigError, match="tokenizer.eos_token: '<|endoftext|>' is not in"):
        load_config(write_config(tmp_path, "sources: [{name: web, input: [a.warc]}]\ntokenizer: {path: tok.json}\n"
                                 + base), output=str(tmp_path / "out"))
    with pytest.raises(ConfigError, match="inside the output folder"):
        load_config(write_config(tmp_path, "sources: [{name: web, input: [docs.parquet]}]\n" + base),
                    output=str(tmp_path))
    config = load_config(write_config(tmp_path, "sources: [{name: old, input: [docs.parquet], weight: 2}]\n"
                                      "tokenizer: {path: tok.json, eos_token: <s>}\n" + base),
                         output=str(tmp_path / "out"))
    assert config.sources[0].curated() and config.sources[0].weight == 2.0
    assert config.tokenizer.path == str(tmp_path / "tok.json")
