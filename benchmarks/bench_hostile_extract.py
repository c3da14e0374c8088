"""Time of one extraction on a hostile page, in its own process, killed at a wall-clock deadline.

    python benchmarks/bench_hostile_extract.py METHOD PAGE [--deadline S] [--in-process]

PAGE: attrs100k (one tag with 100,000 attributes), nested_div200k (200,000 nested <div>),
sib_p200k (200,000 unclosed <p> with two words each), a_unclosed200k (200,000 unclosed <a>), busy_in_c (80 tags
of 9,000 attributes each: under the pre-parse limits, yet 10 to 20 s of parsing in C).
The stage runs with its defaults (timeout_s 5), through its extraction child as in a run (started on a first
page outside the timing); with --in-process, Extract.extract_decoded in this process under SIGALRM only, as
the stage ran before the child. Prints the wall time and the reject, or KILLED when the call ran past the
deadline (the SIGALRM limit cannot interrupt C code).
"""

import argparse
import multiprocessing
import time

PAGES = {
    "attrs100k": lambda: "<html><body><div " + " ".join(f"a{i}=x" for i in range(100_000)) + ">hi</div></body></html>",
    "nested_div200k": lambda: "<html><body>" + "<div>" * 200_000 + "x" + "</div>" * 200_000 + "</body></html>",
    "sib_p200k": lambda: "<html><body>" + "<p>word word" * 200_000 + "</body></html>",
    "a_unclosed200k": lambda: "<html><body>" + "<a href=x>w" * 200_000 + "</body></html>",
    "busy_in_c": lambda: busy_in_c(),
}


def busy_in_c() -> str:
    """A page the pre-parse check lets through (each tag under its attribute limit) on which the parsers work
    quadratically in C: 80 tags of 9,000 attributes, 4 MB."""
    tag = "<div " + " ".join(f"a{i:x}" for i in range(9_000)) + ">w</div>"
    return "<html><body>" + tag * 80 + "</body></html>"


def extract(method: str, page: str, in_process: bool) -> None:
    from stages.extract import Extract

    stage = Extract(method=method)
    stage.load()
    html = PAGES[page]()
    if in_process:  # as the stage extracted before its child process: SIGALRM only
        run = stage.extract_decoded
    else:  # as the stage does: in its child, started here on a first page outside the timing
        stage._extract_all(["<p>a first page</p>"])
        run = lambda html: stage._extract_all([html])[0]  # noqa: E731
    started = time.monotonic()
    _, reason, detail = run(html)
    print(f"{method} {page} {len(html)} chars: {time.monotonic() - started:.1f} s {reason} {detail}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("method")
    parser.add_argument("page", choices=sorted(PAGES))
    parser.add_argument("--deadline", type=float, default=25.0)
    parser.add_argument("--in-process", action="store_true", help="extract_decoded in this process (before)")
    args = parser.parse_args()
    child = multiprocessing.get_context("fork").Process(target=extract, args=(args.method, args.page, args.in_process))
    child.start()
    child.join(args.deadline)
    if child.is_alive():
        child.kill()
        child.join()
        print(f"{args.method} {args.page}: KILLED after {args.deadline:.0f} s")


if __name__ == "__main__":
    main()
