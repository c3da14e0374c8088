"""MosaicML Streaming's own reader and writer, from .venv/mds-reader (scripts/setup.sh), for the MDS export's
test and benchmark. The package is imported without running streaming/__init__.py, which also imports its
vision datasets and so torchvision (whose wheel here needs CUDA); streaming.base, the reader and writer, needs
none of it. Run as a script, it prints each sample's token ids of the MDS dataset in a folder, one JSON list a
line, read by streaming.StreamingDataset in order:

    .venv/bin/python tests/mds_reader.py OUT/tokens/mds
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

FOLDER = Path(sys.prefix) / "mds-reader"


def streaming_base() -> types.ModuleType:
    if "streaming" not in sys.modules:
        sys.path.append(str(FOLDER))  # after the venv's own packages: numpy and torch stay ours
        spec = importlib.util.find_spec("streaming")
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(f"no MosaicML Streaming in {FOLDER}: run scripts/setup.sh")
        package = types.ModuleType("streaming")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["streaming"] = package
    import streaming.base  # type: ignore[import-not-found]

    return streaming.base


def main(folder: str) -> None:
    dataset = streaming_base().StreamingDataset(local=folder, shuffle=False, batch_size=1)
    for i in range(len(dataset)):
        print(json.dumps(dataset[i]["tokens"].tolist()))


if __name__ == "__main__":
    main(sys.argv[1])
