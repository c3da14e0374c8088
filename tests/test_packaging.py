"""torch is the `train` extra: the curation belt imports and runs without it, and `train` without it says so
in one line. A fresh venv takes too long here, so torch is hidden instead, in every process of the run (the
blocker is a sitecustomize on PYTHONPATH, which Ray's workers inherit). The package builds without warnings."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from helpers import ROOT

NO_TORCH = """
import os, sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
with open(os.environ["NO_TORCH_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")
"""

MAIN = (
    "import sys; from pipeline.cli import main; code = main(sys.argv[1:]); assert 'torch' not in sys.modules; "
    "sys.exit(code)"
)


def test_torch_is_only_in_the_train_extra_which_setup_installs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("torch") for d in project["dependencies"])
    assert project["optional-dependencies"]["train"] == ["torch==2.13.0"]
    assert project["optional-dependencies"]["classify"] == ["torch==2.13.0", "transformers==5.25.0"]
    assert '".[test,train,spark,classify,export]"' in (ROOT / "scripts" / "setup.sh").read_text()


def test_pyspark_is_only_in_the_spark_extra_which_setup_installs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("pyspark") for d in project["dependencies"])
    assert project["optional-dependencies"]["spark"] == ["pyspark==4.3.0"]
    assert "command -v java" in (ROOT / "scripts" / "setup.sh").read_text()  # says what to install without it


@pytest.mark.slow
def test_the_belt_runs_without_torch_and_train_says_it_needs_the_extra(tmp_path):
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text(NO_TORCH)
    log = tmp_path / "pids"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "blocker"), "NO_TORCH_LOG": str(log)}

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-c", MAIN, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )

    hidden = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert hidden.returncode == 1 and "No module named 'torch'" in hidden.stderr
    dry = cli("dry-run", "--output", str(tmp_path / "dry"))
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "| 0 | kept |" in dry.stdout
    assert len(set(log.read_text().split())) > 2  # the Ray workers ran without torch too
    train = cli("train", str(ROOT / "configs" / "train_tiny.yaml"))
    assert train.returncode == 2
    assert train.stderr == "the train command needs the train extra: pip install 'crawlbelt[train]'\n"


def test_the_package_builds_quietly_with_its_data_files(tmp_path):
    """setuptools warns about a data folder it is not told is a package; the wheel must still hold the data.
    Built from a copy: setuptools writes build/ and *.egg-info next to the sources."""
    source = tmp_path / "source"
    for package in ("pipeline", "stages"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", source)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", str(source), "-w", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    output = built.stdout + built.stderr
    assert "warning" not in output.lower() and "would be ignored" not in output, output[-3000:]
    (wheel,) = tmp_path.glob("crawlbelt-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {f"stages/data/{path.name}" for path in (ROOT / "stages" / "data").glob("*.json")}
    assert data and data <= names and "pipeline/engines/spark-log4j2.properties" in names
    # the editable install scripts/setup.sh makes: setuptools' warnings shown as pip shows them
    editable = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            f"import setuptools.build_meta as b; b.build_editable({str(tmp_path)!r})",
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert editable.returncode == 0, editable.stderr[-3000:]
    # setuptools prints each warning (as pip shows it: BuildBackendWarning) as `file:line: Category: text`
    assert not re.search(r": \w*(Warning|InformationOnly): ", editable.stdout + editable.stderr), editable.stderr[
        -3000:
    ]
