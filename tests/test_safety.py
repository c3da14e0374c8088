"""Safe handling: configs are data only, nothing read is unpickled or evaluated, RNG checkpoints load with
weights_only=True, and no credential reaches the output or the console."""

from __future__ import annotations

import json
import os
import random
import re

import numpy as np
import pytest
import torch

from helpers import ROOT, cli
from pipeline import redact
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from pipeline.train.checkpoint import rng_states, set_rng_states


def test_a_config_cannot_run_code(tmp_path):
    marker = tmp_path / "ran"
    config = tmp_path / "evil.yaml"
    config.write_text(f"sources: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(str(config))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(None, overrides=[f"output=!!python/object/apply:os.system ['touch {marker}']"])
    assert not marker.exists()


def test_no_unsafe_loading_in_the_code():
    unsafe = re.compile(r"\bpickle\.loads?\b|\beval\(|\bexec\(|weights_only=False|yaml\.load\(|yaml\.unsafe_load")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("pipeline", "stages")
        for path in (ROOT / folder).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if unsafe.search(line)
    ]
    assert found == []


def test_rng_states_load_with_weights_only(tmp_path):
    random.seed(3), np.random.seed(3), torch.manual_seed(3)
    torch.save(rng_states(), tmp_path / "rng.pt")
    expected = (random.random(), np.random.random(), torch.rand(1).item())
    random.seed(4), np.random.seed(4), torch.manual_seed(4)
    set_rng_states(torch.load(tmp_path / "rng.pt", weights_only=True))
    assert (random.random(), np.random.random(), torch.rand(1).item()) == expected


def test_credentials_are_masked_in_any_line(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_envsecret_123456")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # not a secret: `tokenizers` is not `token`
    line = (
        "http://minio:pa55w0rd@127.0.0.1:9000/b https://ghp_abc123@github.com/x s3://bucket/key "
        "http://h:9000/a@b sent hf_envsecret_123456 (tokens: false)"
    )
    assert redact.text(line) == (
        "http://(not shown)@127.0.0.1:9000/b https://(not shown)@github.com/x s3://bucket/key "
        "http://h:9000/a@b sent (not shown) (tokens: false)"
    )
    secret = ["spark.hadoop.fs.s3a.secret.key", "spark.ssl.keyPassword", "AWS_SESSION_TOKEN", "WANDB_API_KEY"]
    assert all(redact.is_secret_name(name) for name in secret)
    assert not any(redact.is_secret_name(name) for name in ["tokens", "max_tokens", "AWS_ACCESS_KEY_ID", "PWD"])


@pytest.mark.slow
def test_no_credential_reaches_the_output_or_the_console(tmp_path):
    out = tmp_path / "out"
    secrets = ["pa55w0rd-x", "hunter2-secret", "sk-very-secret", "hf_envsecret_123456"]
    result = cli(
        "run",
        str(ROOT / "configs" / "local.yaml"),
        "--output",
        str(out),
        *("--set", "ray.num_cpus=2", "--set", "storage.endpoint=http://minio:pa55w0rd-x@127.0.0.1:1/"),
        *("--set", "spark.conf={spark.hadoop.fs.s3a.secret.key: hunter2-secret}"),
        *("--set", "storage.secret_access_key=sk-very-secret"),
        env={**os.environ, "HF_TOKEN": "hf_envsecret_123456"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    written = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert {"manifest.json", "run.log", "report.html"} <= set(written)
    leaks = [(name, secret) for name, data in written.items() for secret in secrets if secret.encode() in data]
    leaks += [("console", s) for s in secrets if s in result.stdout + result.stderr]
    assert leaks == []
    config = json.loads(written["manifest.json"])["config"]
    assert config["storage"]["endpoint"] == "http://(not shown)@127.0.0.1:1/"
    assert config["storage"]["secret_access_key"] == "(not shown)"
    assert config["spark"]["conf"] == {"spark.hadoop.fs.s3a.secret.key": "(not shown)"}
    assert config["sources"][0]["input"] == [str(ROOT / "tests" / "fixtures" / "warc" / "*")]  # paths stay

    # A library's error quotes the URL's userinfo without its scheme: the one line masks it as a value.
    failed = cli(
        "validate",
        str(ROOT / "configs" / "local.yaml"),
        "--set",
        "output=s3://user:secretpw1@bucket/out",
        "--set",
        "storage.endpoint=http://127.0.0.1:1",
    )
    assert failed.returncode == 2 and failed.stderr.startswith("config error: output 's3://(not shown)@bucket/out'")
    assert "secretpw1" not in failed.stderr + failed.stdout and len(failed.stderr.splitlines()) == 1
