"""The image and cluster files in docker/ cannot be built or run here (no Docker engine, no Kubernetes);
these checks keep them consistent with the repository: what they copy exists, the Python dependencies
come from pyproject.toml alone, the Ray versions agree, and the config the RayJob runs is a valid config."""

import re
import tomllib

import yaml

from helpers import ROOT
from pipeline.submit import check_config

DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
RAY_PIN = next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith("ray[")).split("==")[1]


def test_dockerfile_copies_what_exists_and_installs_from_pyproject():
    copies = re.findall(r"^COPY (?:--\S+ )*(.+) \S+$", DOCKERFILE, re.M)
    sources = [s for line in copies for s in line.split()]
    assert "pyproject.toml" in sources and {"pipeline", "stages"} <= set(sources)
    assert all((ROOT / s).exists() for s in sources), sources
    # every package the project ships is in the image
    assert {p.split(".")[0] for p in PYPROJECT["tool"]["setuptools"]["packages"]} <= set(sources)
    # one dependency list: pip installs the project itself, no requirements file of the image's own
    assert (
        re.search(r"pip install [^\n]*\s\"?\.(\[train,classify\])?\"?\s", DOCKERFILE)
        and "requirements" not in DOCKERFILE
    )
    assert re.search(rf"^FROM rayproject/ray:{re.escape(RAY_PIN)}-py311", DOCKERFILE, re.M), RAY_PIN


def test_rayjob_runs_a_valid_config_from_the_image():
    job = yaml.safe_load((ROOT / "docker" / "rayjob.yaml").read_text())
    assert job["kind"] == "RayJob" and job["spec"]["rayClusterSpec"]["rayVersion"] == RAY_PIN
    entrypoint = job["spec"]["entrypoint"].split()
    assert entrypoint[:4] == ["python", "-m", "pipeline", "run"]
    in_image = entrypoint[4]
    assert in_image.startswith("/home/ray/crawlbelt/")  # the Dockerfile's WORKDIR
    config = ROOT / in_image.removeprefix("/home/ray/crawlbelt/")
    checked = check_config(str(config), [], None)
    assert checked.output.startswith("s3://") and all(p.startswith("s3://") for s in checked.sources for p in s.input)
    images = {
        c["image"]
        for group in [
            job["spec"]["rayClusterSpec"]["headGroupSpec"],
            *job["spec"]["rayClusterSpec"]["workerGroupSpecs"],
        ]
        for c in group["template"]["spec"]["containers"]
    }
    assert images == {"crawlbelt:0.1.0"}
