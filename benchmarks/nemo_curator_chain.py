"""NeMo Curator's CPU curation of WARC files, its stages called in this process: run by bench_filter.py
--nemo-curator inside NeMo Curator's own virtual environment (.bench/nemo-curator-venv), never with crawlbelt.

    python nemo_curator_chain.py METHOD LID_MODEL LANGUAGE THRESHOLD REPEAT WARC...

The stages, as NeMo Curator's documentation chains them for Common Crawl: DocumentIterateExtractStage with
CommonCrawlWarcIterator and CommonCrawlHTMLExtractor (METHOD: trafilatura or resiliparse; it detects each
page's language with pycld2 to pick jusText-style stop words), a ScoreFilter with FastTextLangId (LID_MODEL,
LANGUAGE, THRESHOLD: ours), then every ScoreFilter of its shipped English heuristic pipeline
(config/text/heuristic_filter_english_pipeline.yaml, the reader and writer left out). Each stage's `setup`
and a one-page warm-up run before the clock; CPU time is this process's and its children's. Prints JSON, with
the versions of NeMo Curator and of the extractor.
"""

import importlib.metadata
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import nemo_curator
from hydra.utils import instantiate
from nemo_curator.stages.text.download.base.iterator import DocumentIterateExtractStage
from nemo_curator.stages.text.download.common_crawl.extract import CommonCrawlHTMLExtractor
from nemo_curator.stages.text.download.common_crawl.warc_iterator import CommonCrawlWarcIterator
from nemo_curator.stages.text.filters.fasttext.fasttext_filters import FastTextLangId
from nemo_curator.stages.text.filters.score_filter import ScoreFilter
from nemo_curator.tasks import FileGroupTask
from omegaconf import OmegaConf

HEURISTICS = Path(nemo_curator.__file__).parent / "config" / "text" / "heuristic_filter_english_pipeline.yaml"
WARM_UP = (
    b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000000>\r\n"
    b"WARC-Target-URI: http://warm.example/\r\nContent-Type: application/http; msgtype=response\r\n"
    b"Content-Length: %d\r\n\r\n%s\r\n\r\n"
)


def stages(method: str, lid_model: str, language: str, threshold: float) -> list:
    config = OmegaConf.load(HEURISTICS)
    OmegaConf.update(config, "text_field", "text")
    heuristics = [
        instantiate(stage)
        for stage in config.stages
        if stage["_target_"].endswith("ScoreFilter")  # the reader and the writer are not part of the work
    ]
    return [
        DocumentIterateExtractStage(
            iterator=CommonCrawlWarcIterator(), extractor=CommonCrawlHTMLExtractor(algorithm=method)
        ),
        ScoreFilter(FastTextLangId(model_path=lid_model, min_langid_score=threshold, lang=language)),
        *heuristics,
    ]


def run(chain: list, files: list[str]):
    """The documents the iterator handed to extraction, and the batch left at the end (None: all dropped)."""
    batch = chain[0].process(FileGroupTask(dataset_name="bench", data=files))
    extracted = len(batch.to_pandas())
    for stage in chain[1:]:
        if batch is None:
            break
        batch = stage.process(batch)
    return extracted, batch


def warm_up_file() -> str:
    body = b"<html><body><p>" + b"The river carries sand to the sea and builds a delta. " * 30 + b"</p></body></html>"
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + body
    path = Path(tempfile.mkdtemp()) / "warm.warc"
    path.write_bytes(WARM_UP % (len(http), http))
    return str(path)


def usage() -> float:
    """CPU seconds of this process and its reaped children."""
    return sum(
        getattr(resource.getrusage(who), field)
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for field in ("ru_utime", "ru_stime")
    )


def main() -> None:
    method, lid_model, language, threshold, repeat, *files = sys.argv[1:]
    chain = stages(method, lid_model, language, float(threshold))
    for stage in chain:
        stage.setup()
    run(chain, [warm_up_file()])

    # The documents its extractor is handed: every response record (it extracts those it can decode).
    documents = sum(1 for _ in range(int(repeat)) for f in files for _ in CommonCrawlWarcIterator().iterate(f))
    started, wall = usage(), time.perf_counter()
    extracted = kept = 0
    for _ in range(int(repeat)):
        got, batch = run(chain, files)
        extracted += got
        kept += 0 if batch is None else len(batch.to_pandas())
    cpu_s = usage() - started
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(
        json.dumps(
            {
                "documents": documents,
                "extracted": extracted,
                "kept": kept,
                "cpu_s": cpu_s,
                "wall_s": time.perf_counter() - wall,
                "peak_rss_mib": hwm / 1024,
                "heuristic_filters": len(chain) - 2,
                "version": [importlib.metadata.version(name) for name in ("nemo-curator", method)],
            }
        )
    )


if __name__ == "__main__":
    main()
