"""Time of one extraction on a hostile page, in its own process, killed at a wall-clock deadline.

    python scripts/bench_hostile_extract.py METHOD PAGE [--deadline S]

PAGE: attrs100k (one tag with 100,000 attributes), nested_div200k (200,000 nested <div>),
sib_p200k (200,000 unclosed <p> with two words each), a_unclosed200k (200,000 unclosed <a>).
The stage runs with its defaults (timeout_s 5). Prints the wall time and the reject, or KILLED when the
call ran past the deadline (the SIGALRM limit cannot interrupt C code).
"""

import argparse
import multiprocessing
import time

PAGES = {
    "attrs100k": lambda: "<html><body><div " + " ".join(f"a{i}=x" for i in range(100_000)) + ">hi</div></body></html>",
    "nested_div200k": lambda: "<html><body>" + "<div>" * 200_000 + "x" + "</div>" * 200_000 + "</body></html>",
    "sib_p200k": lambda: "<html><body>" + "<p>word word" * 200_000 + "</body></html>",
    "a_unclosed200k": lambda: "<html><body>" + "<a href=x>w" * 200_000 + "</body></html>",
}


def extract(method: str, page: str) -> None:
    from stages.extract import Extract

    stage = Extract(method=method)
    stage.load()
    html = PAGES[page]()
    started = time.monotonic()
    _, reason, detail = stage.extract_decoded(html)
    print(f"{method} {page} {len(html)} chars: {time.monotonic() - started:.1f} s {reason} {detail}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("method")
    parser.add_argument("page", choices=sorted(PAGES))
    parser.add_argument("--deadline", type=float, default=25.0)
    args = parser.parse_args()
    child = multiprocessing.get_context("fork").Process(target=extract, args=(args.method, args.page))
    child.start()
    child.join(args.deadline)
    if child.is_alive():
        child.kill()
        child.join()
        print(f"{args.method} {args.page}: KILLED after {args.deadline:.0f} s")


if __name__ == "__main__":
    main()
