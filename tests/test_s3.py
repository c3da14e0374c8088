"""s3:// inputs and outputs against a real S3 API server on loopback (moto's server mode)."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import yaml

import pytest

from helpers import CONFIGS, FIXTURES, ROOT, needs_spark

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_REGION": "us-east-1"}


def client(endpoint: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(
        access_key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        secret_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region="us-east-1",
        scheme="http",
        endpoint_override=endpoint.split("://")[1],
        allow_bucket_creation=True,
    )


def run(config: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", "run", str(config)],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=ROOT,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize("engine", ["ray", pytest.param("spark", marks=needs_spark)])
@pytest.mark.slow
def test_s3_input_and_output(s3_server, tmp_path, engine):
    s3 = client(s3_server)
    s3.create_dir("crawls")
    names = sorted(p.name for p in (FIXTURES / "warc").iterdir())
    for name in names:
        with s3.open_output_stream(f"crawls/fixture/{name}", compression=None) as stream:  # the bytes as they are
            stream.write((FIXTURES / "warc" / name).read_bytes())
    s3.create_dir("curated")
    raw = yaml.safe_load((CONFIGS / "local.yaml").read_text())
    raw["sources"] = [{"name": "web", "input": ["s3://crawls/fixture/crawl-*"]}]
    raw["output"] = "s3://curated/run1"
    raw["storage"] = {"endpoint": s3_server}  # the endpoint from the config, credentials from the environment
    raw["classifier"].update(
        good_examples=[str(CONFIGS / "classifier" / "good.txt")], bad_examples=[str(CONFIGS / "classifier" / "bad.txt")]
    )
    if engine == "ray":
        raw["ray"]["num_cpus"] = 2
    else:  # the tasks read s3:// themselves, as on Ray
        raw.update(engine="spark", spark={"master": "local[2]"})
    raw["packing"]["seq_len"] = 64
    raw["packing"]["formats"] = ["parquet", "megatron", "mds", "nanotron", "huggingface"]  # uploaded as the rest
    config = tmp_path / "s3.yaml"
    config.write_text(yaml.safe_dump(raw))

    result = run(config, CREDENTIALS)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with s3.open_input_stream("curated/run1/manifest.json") as stream:
        manifest = json.loads(stream.read())
    assert manifest["invariants"] and all(manifest["invariants"].values()), manifest["invariants"]
    expected = json.loads((FIXTURES / "expected.json").read_text())["records"]
    counts = manifest["counts"]
    assert counts["records_read"] == len(expected)
    assert [p["file"] for p in manifest["inputs"]] == [f"s3://crawls/fixture/{n}" for n in names]
    # read the outputs back from the bucket: every manifest output is there, and the kept rows add up
    listed = {
        i.path.removeprefix("curated/run1/")
        for i in s3.get_file_info(pafs.FileSelector("curated/run1", recursive=True))
        if i.type == pafs.FileType.File
    }
    outputs = manifest["outputs"]
    top = {".crawlbelt", "manifest.json", "report.html", "run.log"}
    assert {path for paths in outputs.values() for path in paths} | top == listed
    for files in manifest["tokens"]["exports"].values():  # megatron, mds, nanotron, huggingface (README.md)
        for f in files:
            with s3.open_input_stream(f"curated/run1/{f['path']}") as stream:
                assert hashlib.sha256(stream.read()).hexdigest() == f["sha256"], f
    assert set(manifest["tokens"]["exports"]) == {"megatron", "mds", "nanotron", "huggingface"}
    kept = sum(pq.read_table(f"curated/run1/{p}", filesystem=s3).num_rows for p in outputs["docs"])
    assert kept == counts["kept"] > 0
    files = set(
        pq.read_table(f"curated/run1/{outputs['docs'][0]}", filesystem=s3, columns=["file"])["file"].to_pylist()
    )
    assert files <= {f"s3://crawls/fixture/{n}" for n in names}
    # the local staging folder the output was built in is gone once uploaded
    staging = next(line.split("report: ")[1] for line in result.stderr.splitlines() if "crawlbelt: report: " in line)
    assert "crawlbelt-staging-" in staging and not Path(staging).parent.exists()


def test_s3_output_holding_other_objects_is_refused(s3_server, tmp_path):
    s3 = client(s3_server)
    s3.create_dir("other")
    with s3.open_output_stream("other/data/keep-me.txt") as stream:
        stream.write(b"not a crawlbelt output")
    raw = yaml.safe_load((CONFIGS / "crawl_sample.yaml").read_text())
    raw["sources"][0]["input"] = [str(CONFIGS / "crawl_sample.warc")]
    raw["classifier"].update(
        good_examples=[str(CONFIGS / "classifier" / "good.txt")], bad_examples=[str(CONFIGS / "classifier" / "bad.txt")]
    )
    raw["output"] = "s3://other/data"
    raw["storage"] = {"endpoint": s3_server}
    config = tmp_path / "other.yaml"
    config.write_text(yaml.safe_dump(raw))
    result = run(config, CREDENTIALS)
    assert result.returncode == 2 and "not an earlier crawlbelt output" in result.stderr, result.stderr[-2000:]
    assert s3.get_file_info("other/data/keep-me.txt").type == pafs.FileType.File


@pytest.mark.slow
def test_curated_parquet_source_from_s3(s3_server, tmp_path):
    s3 = client(s3_server)
    s3.create_dir("library")
    texts = [line for line in (CONFIGS / "classifier" / "good.txt").read_text().splitlines() if line.strip()]
    with s3.open_output_stream("library/books/part-00000.parquet") as stream:
        pq.write_table(pa.table({"text": texts}), stream)
    raw = yaml.safe_load((CONFIGS / "crawl_sample.yaml").read_text())
    raw["sources"] = [
        {"name": "web", "input": [str(CONFIGS / "crawl_sample.warc")]},
        {"name": "books", "input": ["s3://library/books/*.parquet"], "curated": True},
    ]
    raw["classifier"].update(
        good_examples=[str(CONFIGS / "classifier" / "good.txt")], bad_examples=[str(CONFIGS / "classifier" / "bad.txt")]
    )
    raw["output"] = str(tmp_path / "out")
    raw["storage"] = {"endpoint": s3_server}
    config = tmp_path / "books.yaml"
    config.write_text(yaml.safe_dump(raw))
    result = run(config, CREDENTIALS)
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    table = {row["source"]: row for row in manifest["mixture"]["table"]}
    assert table["books"]["tokens_available"] > 0 and table["books"]["documents_drawn"] >= len(texts)
    assert manifest["counts"]["records_read"] == 7  # the curated source skips the curation passes
    assert all(manifest["invariants"].values())
