"""stages.extract on hostile pages (issue 25): a page that keeps the parsers' C code busy past the time limit is
stopped there (the extraction child is killed), rejected `extract:timeout`, and the rest of the batch goes on, on
every method and from any thread; pages that make the parsers quadratic are rejected before parsing
(`extract:too_complex`); the child dies with its parent, and a child that dies on a page makes it
`extract:error`; and the whole belt on Ray and on Spark keeps the other
pages of a WARC holding such pages. The hostile pages run in subprocesses with a timeout: a hang fails."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from helpers import CRAWL_SAMPLE, ROOT, SHARED, SPARK_SETTINGS, assert_complete, cli, needs_spark
from stages.extract import MAX_ATTRIBUTES, MAX_DEPTH, METHODS, Extract, max_attributes, max_depth, too_complex
from test_read_cases import belt_config

# Each page of the bench's set (benchmarks/bench_hostile_extract.py), built the same way.
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_hostile_extract import PAGES, busy_in_c  # noqa: E402


def good_page(i: int) -> str:
    return f"<html><head><title>t</title></head><body><article><p>{CRAWL_SAMPLE[i]}</p></article></body></html>"


# Extracts the pages in argv[3:] (names in PAGES, or good0, good6) with Extract(method=argv[1],
# timeout_s=argv[2]), in a thread when THREAD is set, and prints each row's reason, detail and text start.
RUN_STAGE = """
import json, os, sys, threading
sys.path[:0] = [os.path.join({root!r}, "tests"), os.path.join({root!r}, "benchmarks")]
from bench_hostile_extract import PAGES
from test_extract import docs
from test_extract_bound import good_page
from stages.extract import Extract
pages = [good_page(int(name[4:])) if name.startswith("good") else PAGES[name]() for name in sys.argv[3:]]
stage = Extract(method=sys.argv[1], timeout_s=float(sys.argv[2]), max_html_bytes=None)
result = {{}}
work = lambda: result.update(out=stage(docs([page.encode() for page in pages])))
if os.environ.get("THREAD"):
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
else:
    work()
out = result["out"]
print(json.dumps([out["reason"].to_pylist(), out["detail"].to_pylist(), [t and t[:40] for t in out["text"].to_pylist()]]))
"""


def run_stage(method: str, timeout_s: float, pages: list[str], thread: bool = False, limit: float = 120):
    """(reasons, details, text starts) of the pages through the stage, in a subprocess stopped at `limit`."""
    env = dict(os.environ, THREAD="1" if thread else "")
    result = subprocess.run(
        [sys.executable, "-c", RUN_STAGE.format(root=str(ROOT)), method, str(timeout_s), *pages],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=limit,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("method", METHODS)
def test_c_code_past_the_limit_is_stopped_and_the_batch_goes_on(method):
    # 80 tags of 9,000 attributes each pass the pre-parse check, and take each parser 10 to 20 s in C
    assert too_complex(busy_in_c()) is None
    reasons, details, texts = run_stage(method, 1, ["good0", "busy_in_c", "good6"])
    assert reasons == [None, "extract:timeout", None]
    assert details[1].startswith("over 1.0 s (stopped at")
    assert texts[0] == CRAWL_SAMPLE[0][:40] and texts[2] == CRAWL_SAMPLE[6][:40]


def test_the_limit_holds_outside_the_main_thread():
    # Ray may run a task off the main thread, where no SIGALRM can be set
    reasons, _, texts = run_stage("resiliparse", 1, ["busy_in_c", "good0", "busy_in_c", "good6"], thread=True)
    assert reasons == ["extract:timeout", None, "extract:timeout", None]
    assert texts[1] == CRAWL_SAMPLE[0][:40] and texts[3] == CRAWL_SAMPLE[6][:40]


@pytest.mark.parametrize("method", ["trafilatura", "resiliparse"])
def test_pages_that_make_parsers_quadratic_are_rejected_before_parsing(method):
    reasons, details, texts = run_stage(method, 5, ["attrs100k", "good0", "nested_div200k", "good6"])
    assert reasons == ["extract:too_complex", None, "extract:too_complex", None]
    assert details[0] == f"a tag with about 100000 attributes, over {MAX_ATTRIBUTES}"
    assert details[2] == f"tags nested 200000 deep, over {MAX_DEPTH}"
    assert texts[1] == CRAWL_SAMPLE[0][:40]


def test_the_pre_parse_scan():
    assert max_attributes(PAGES["attrs100k"]()) == 100_000
    assert max_depth(PAGES["nested_div200k"]()) == 200_000
    # unclosed <p> and <a> do not nest (the parser closes them at the next one); void tags never do
    assert too_complex(PAGES["sib_p200k"]()) is None and too_complex(PAGES["a_unclosed200k"]()) is None
    assert max_depth("<html><body>" + "<br><img src=x><div>" * 6_000 + "</div>" * 6_000) == 6_000
    assert max_depth("<div>" * 6_000 + "</div><div>" * 6_000) == 6_000
    # quoted values are not attributes; a tag cut by a `<` in an attribute value still counts its part
    many_words = '<img alt="' + "word " * 30_000 + '" src=x>'
    assert max_attributes(many_words) == 2
    assert max_attributes("<p>" + "x " * 50_000 + "<div " + "a b c " * 4_000 + ">") == 12_000


@pytest.mark.slow
def test_no_real_page_is_too_complex():
    from stages.extract import decode_html
    from stages.warc_read import read_warc

    files = sorted((SHARED / "realhtml" / "warc").glob("*.warc.gz"))
    if not files:
        pytest.skip("../shared/realhtml not found")
    deepest = most = pages = 0
    for index, path in enumerate([*files, *sorted((ROOT / "tests" / "fixtures" / "warc").glob("*"))]):
        for table in read_warc(str(path), index, "real"):
            for row in table.select(["html", "http_charset", "stage"]).to_pylist():
                if row["stage"] is None and row["html"]:
                    html, _ = decode_html(row["html"], row["http_charset"])
                    deepest, most = max(deepest, max_depth(html)), max(most, max_attributes(html))
                    pages += 1
    assert pages > 1_400
    # the margins docs/benchmarks.md states: three times the deepest page, 16 times the most attributes
    assert 3 * deepest < MAX_DEPTH and 16 * most < MAX_ATTRIBUTES, (deepest, most)


# The parent: starts the stage (and so its child) and then sleeps, to be killed.
PARENT = """
import os, sys, time
sys.path.insert(0, "tests")
from test_extract import docs
from stages import extract
extract.Extract(method="resiliparse", timeout_s=5)(docs([b"<p>hello</p>"]))
print(*[child.process.pid for child in extract._children.values()], flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has exited: its parent (init) reaps it
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_the_extraction_child_dies_with_its_parent(how):
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        children = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(children) == 1 and alive(children[0])
        parent.send_signal(how)
        parent.wait(timeout=60)
        deadline = time.monotonic() + 30
        while alive(children[0]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(children[0]), "the extraction child outlived its parent"
    finally:
        parent.kill()
        parent.wait()


# --- the whole belt ----------------------------------------------------------------------------------


def hostile_warc(path: Path) -> list[str]:
    """A WARC of good pages around the pages that hurt the parsers; returns the good pages' texts."""
    pages = [("good0", good_page(0)), ("busy", busy_in_c()), ("good6", good_page(6))]
    pages += [("nested", PAGES["nested_div200k"]()), ("attrs", PAGES["attrs100k"]()), ("good1", good_page(1))]
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for name, html in pages:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                f"https://hostile.example/{name}", "response", payload=io.BytesIO(html.encode()), http_headers=headers
            )
            writer.write_record(record)
    return [CRAWL_SAMPLE[0], CRAWL_SAMPLE[6], CRAWL_SAMPLE[1]]


ENGINES = [
    pytest.param(["ray.num_cpus=1"], id="ray"),
    pytest.param(["engine=spark", "spark.master=local[1]", *SPARK_SETTINGS], id="spark", marks=needs_spark),
]


@pytest.mark.slow
@pytest.mark.parametrize("settings", ENGINES)
def test_the_belt_rejects_hostile_pages_and_keeps_the_others(tmp_path, settings):
    data = tmp_path / "hostile.warc.gz"
    good = hostile_warc(data)
    config = belt_config(tmp_path, {"input": [str(data)]})
    # resiliparse: it never returns on the nested page, and takes 10 to 20 s in C on the busy one
    sets = [*settings, "extract.method=resiliparse", "extract.timeout_s=2"]
    args = [arg for s in sets for arg in ("--set", s)]
    result = cli("run", str(config), "--output", str(tmp_path / "out"), *args, timeout=400)
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = assert_complete(tmp_path / "out")
    assert manifest["inputs"][0]["records"] == 6
    docs = pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / "out" / "docs").glob("*.parquet"))])
    assert sorted(docs["text"].to_pylist()) == sorted(good)
    rejects = pq.read_table(tmp_path / "out" / "rejects").to_pylist()
    by_url = {row["url"].rsplit("/", 1)[1]: row["reason"] for row in rejects}
    assert by_url == {"busy": "extract:timeout", "nested": "extract:too_complex", "attrs": "extract:too_complex"}


# Kills the extraction child a second into a batch, while it parses busy_in_c (10 to 20 s in C).
CRASH = """
import os, signal, sys, threading
sys.path[:0] = ["tests", "benchmarks"]
from bench_hostile_extract import busy_in_c
from test_extract import docs
from test_extract_bound import good_page
from stages import extract
stage = extract.Extract(method="resiliparse", timeout_s=60)
stage(docs([good_page(0).encode()]))  # the child started
(child,) = extract._children.values()
threading.Timer(1, os.kill, (child.process.pid, signal.SIGKILL)).start()
out = stage(docs([page.encode() for page in (good_page(0), busy_in_c(), good_page(6))]))
print(out["reason"].to_pylist(), out["detail"][1].as_py(), out["text"][2].as_py()[:20])
"""


def test_a_child_that_dies_on_a_page_rejects_it_and_the_batch_goes_on():
    # as a crash in C code would (a segmentation fault): the page is extract:error, the next one extracted
    result = subprocess.run([sys.executable, "-c", CRASH], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == (
        f"[None, 'extract:error', None] the extraction process died (exit status -9) {CRAWL_SAMPLE[6][:20]}"
    )


def test_the_child_extracts_what_this_process_would_whatever_the_characters():
    # Pages reach the child as their UTF-8, lone surrogates kept (which resiliparse refuses: extract:error).
    other = f"<html><body><article><p>caf\u00e9 \u4e2d\u6587 \U0001f600 {CRAWL_SAMPLE[0]}</p></article></body></html>"
    pages = [good_page(0), "", other, other.replace("\u4e2d", "\ud800"), good_page(6)]
    in_child = Extract(method="resiliparse", timeout_s=60)._extract_all(pages)
    here = Extract(method="resiliparse", timeout_s=None)._extract_all(pages)
    assert [tuple(result) for result in in_child] == here
    assert in_child[2][0].startswith("caf\u00e9 \u4e2d\u6587 \U0001f600") and in_child[3][1] == "extract:error"
