"""Decode each HTML payload to text and extract its main content with trafilatura or resiliparse.

Adds `text` and `charset` (the codec actually used) to alive rows, then drops the large `html` column.
Rows that already have their text (the reader's WET conversion records) pass through untouched.
Each document gets a time limit, so that one pathological page cannot stall a whole batch, in C code too:
the stage extracts in a child process of its own (one per worker process, started on first use and kept
for the next batches), reads each page's result with a deadline, and kills the child at the limit (a fresh
one goes on with the rest of the batch). Inside the child a SIGALRM at the same limit stops Python code
without that restart. Before parsing, a linear scan rejects pages that make the parsers quadratic
(`extract:too_complex`: a tag with very many attributes, very deep nesting).

Methods (`extract.method`; measured in docs/benchmarks.md, "Extraction: speed and quality"):
- `trafilatura`: trafilatura's extractor, with its fallbacks (readability, jusText) unless `fast`;
- `resiliparse`: resiliparse's `extract_plain_text(main_content=True)`, many times faster, less exact;
- `resiliparse-clean`: resiliparse without image alt texts, then lines of under 5 words that do not end
  a sentence dropped (menus, link lists, share buttons, bylines); better than trafilatura's `fast` on the
  benchmark at resiliparse's speed;
- `resiliparse-blocks`: resiliparse's main content (without alt texts), then each of its blocks kept or
  dropped by a small learned classifier (stages/blocks.py; weights in stages/data/extract_blocks.json,
  trained by benchmarks/train_extractor.py): on the benchmark a higher mean F1 than trafilatura (scored on
  datasets it was not trained on) at about 11 times its speed, but a lower snippet accuracy;
- `trafilatura+resiliparse`: trafilatura, and resiliparse for the pages where trafilatura finds nothing.
"""

from __future__ import annotations

import codecs
import functools
import json
import os
import re
import threading
import time

import pyarrow as pa

from stages import blocks
from stages.child_process import (
    ChildProcess,
    child_streams,
    die_with_parent,
    framed,
    read_message,
    unframed,
    write_message,
)
from stages.ledger import run_on_alive
from stages.time_limit import TimeLimitExceeded, call_with_time_limit

# What a declared charset should really be decoded with. Browsers read these labels as a superset
# (WHATWG Encoding Standard), and pages labelled with the smaller set often use the larger one.
# Keys are Python's canonical codec names, plus a few web labels that Python does not know.
CHARSET_ALIASES = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "iso8859-9": "cp1254",
    "tis-620": "cp874",
    "iso8859-11": "cp874",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
    # web labels unknown to Python
    "x-gbk": "gb18030",
    "gb_2312-80": "gb18030",
    "windows-31j": "cp932",
    "x-sjis": "cp932",
    "windows-874": "cp874",
    "x-user-defined": "cp1252",
    "x-mac-roman": "mac-roman",
}

_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _codec(label: str | None) -> str | None:
    """Python's canonical codec name for a charset label, after the aliases; None if unknown."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    try:
        name = codecs.lookup(CHARSET_ALIASES.get(label, label)).name
    except LookupError:
        return None
    name = CHARSET_ALIASES.get(name, name)
    # A page cannot really be in UTF-16/32 when the label comes from an ASCII meta tag; browsers
    # read such labels as UTF-8 too.
    return "utf-8" if name.startswith(("utf-16", "utf-32")) else name


def _strict(payload: bytes, codec: str | None) -> str | None:
    if codec is None:
        return None
    try:
        return payload.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def decode_html(payload: bytes, http_charset: str | None) -> tuple[str, str]:
    """(text, charset used), trying in turn:

    1. a byte-order mark;
    2. UTF-8, when the bytes are valid UTF-8 and not plain ASCII: legacy text practically never is, so
       this beats a declaration (pages labelled latin-1 but saved as UTF-8 are common);
    3. the HTTP charset, then a <meta> charset in the first 4 KB, each if it decodes strictly;
    4. a declared charset that fails on only a few bytes (a character cut in half somewhere);
    5. UTF-8 again when it is mostly valid (more good multi-byte characters than broken ones);
    6. windows-1252 when under 1% of the bytes are non-ASCII: browsers default to it, and a detector has
       too little to go on there (it guessed big5 and mac-iceland for such English pages);
    7. charset_normalizer's best guess;
    8. UTF-8 with replacement characters.
    """
    for bom, name in _BOMS:
        if payload.startswith(bom):
            # A BOM is stronger than any label (as in browsers); the codec strips it.
            codec = "utf-8-sig" if name == "utf-8" else name
            return payload.decode(codec, errors="replace"), name

    utf8 = _strict(payload, "utf-8")
    if utf8 is not None and not payload.isascii():
        return utf8, "utf-8"

    labels = [_codec(http_charset)]
    match = _META_CHARSET.search(payload[:4096])
    if match:
        labels.append(_codec(match.group(1).decode("ascii", "ignore")))
    declared = [codec for codec in dict.fromkeys(labels) if codec is not None]
    for codec in declared:
        text = _strict(payload, codec)
        if text is not None:
            return text, codec
    for codec in declared:
        text = payload.decode(codec, errors="replace")
        if text.count("\ufffd") <= max(1, len(text) // 10_000):
            return text, codec

    if utf8 is not None:  # plain ASCII, nothing usable declared
        return utf8, "utf-8"
    text = payload.decode("utf-8", errors="replace")
    broken = text.count("\ufffd")
    if len(text) - len(text.encode("ascii", errors="ignore")) - broken >= broken:
        return text, "utf-8"

    non_ascii = len(payload) - len(payload.decode("ascii", errors="ignore"))
    if non_ascii < len(payload) / 100:
        return payload.decode("cp1252", errors="replace"), "cp1252"

    from charset_normalizer import from_bytes  # imported here: only a few pages get this far

    best = from_bytes(payload).best()
    guessed = _codec(best.encoding) if best is not None else None
    if guessed is not None:
        return payload.decode(guessed, errors="replace"), guessed

    return text, "utf-8"


@functools.lru_cache(maxsize=1)
def _trafilatura_config():
    """Built on first use in each process (the stage object itself stays small and picklable)."""
    from trafilatura.settings import use_config

    config = use_config()
    # trafilatura's default minimums (250 characters extracted) drop short pages entirely; the quality
    # stage decides on length, so keep whatever text a page has.
    # (MIN_EXTRACTED_COMM_SIZE is not read by trafilatura 2.3.1; set for versions that do.)
    for key in ("MIN_EXTRACTED_SIZE", "MIN_OUTPUT_SIZE", "MIN_OUTPUT_COMM_SIZE", "MIN_EXTRACTED_COMM_SIZE"):
        config.set("DEFAULT", key, "1")
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # the stage keeps its own time limit
    return config


METHODS = ("trafilatura", "resiliparse", "resiliparse-clean", "resiliparse-blocks", "trafilatura+resiliparse")

# resiliparse-clean: a line is kept if it has this many words, or ends like a sentence. Chosen on the
# realhtml benchmark (3 to 10 words all scored within 0.005 mean F1 of each other).
MIN_LINE_WORDS = 5
_SENTENCE_END = (".", "!", "?", ":", ";", '"', "\u201d", "\u201c", "\u00bb", "\u2026", "\u3002", "\uff01", "\uff1f")
# Words: runs of letters and digits; each CJK ideograph, kana or hangul syllable counts as one.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+")
_BLANK_RUNS = re.compile(r"\n{3,}")


def drop_short_lines(text: str, min_words: int = MIN_LINE_WORDS) -> str:
    """`text` without its short lines that do not end a sentence; blank lines (paragraph breaks) stay.
    If nothing would be left, `text` unchanged (the quality stage decides about short pages)."""
    kept = [
        line
        for line in text.split("\n")
        if not line.strip() or line.rstrip().endswith(_SENTENCE_END) or len(_WORD.findall(line)) >= min_words
    ]
    cleaned = _BLANK_RUNS.sub("\n\n", "\n".join(kept)).strip()
    return cleaned or text


# Pre-parse limits. The parsers are quadratic in these (2026-12-03, docs/benchmarks.md): resiliparse takes
# 0.5 s at a depth of 5,000 and 4.5 s at 10,000; a tag with 10,000 attributes 0.4 s, with 30,000 2.9 s. The
# real pages of ../shared/realhtml and tests/fixtures reach a depth of 1,496 and 591 attributes in a tag.
MAX_DEPTH = 5_000
MAX_ATTRIBUTES = 10_000
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)")
_TAG_START = re.compile(r"<[A-Za-z]")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
# Tags that do not nest: void elements, and those a parser closes by itself at the next of their kind or
# of their parent (an unclosed <p>, <li> or <a> before the next one is not deeper).
_FLAT_TAGS = frozenset(
    "area base br col embed hr img input link meta param source track wbr keygen basefont bgsound frame "
    "p li dt dd option optgroup tr td th thead tbody tfoot colgroup rb rt rtc rp html head body a".split()
)


def max_attributes(html: str) -> int:
    """About the most attributes in one tag: words outside quotes after a `<` and a letter, up to the next
    `>` (an upper bound: a name without a value counts, and so does stray text between quotes)."""
    return _most_attributes(html.split(">"))


def _most_attributes(parts: list[str]) -> int:
    most = 0
    for part in parts:
        if len(part) <= 2 * most:  # each attribute takes a space and a letter at least
            continue
        start = _TAG_START.search(part)
        if start is not None:
            most = max(most, len(_QUOTED.sub("", part[start.start() :]).split()) - 1)
    return most


def max_depth(html: str) -> int:
    """How deep the tags nest: open tags that nest less their closing tags, at most."""
    depth = deepest = 0
    for slash, name in _TAG.findall(html):
        if name.lower() in _FLAT_TAGS:
            continue
        if slash:
            depth = max(depth - 1, 0)
        else:
            depth += 1
            deepest = max(deepest, depth)
    return deepest


def too_complex(html: str) -> str | None:
    """Why a page would make the parsers quadratic, or None: a linear scan before parsing. Each count is
    made only where a cheaper one (in C) says it could be over its limit."""
    parts = html.split(">")
    if max(map(len, parts)) > 2 * MAX_ATTRIBUTES:  # only so long a tag can hold so many attributes
        attributes = _most_attributes(parts)
        if attributes > MAX_ATTRIBUTES:
            return f"a tag with about {attributes} attributes, over {MAX_ATTRIBUTES}"
    if html.count("<") - html.count("</") > MAX_DEPTH:  # only so many opening tags can nest so deep
        depth = max_depth(html)
        if depth > MAX_DEPTH:
            return f"tags nested {depth} deep, over {MAX_DEPTH}"
    return None


def _column(table: pa.Table, name: str) -> list:
    return table[name].to_pylist() if name in table.column_names else [None] * table.num_rows


class Extract:
    """Stage: `html` (+ `http_charset`) -> `text`, `charset`; the `html` column is dropped. A row that
    arrives with `text` keeps it and its `charset`.

    `favor`, `include_tables` and `fast` are trafilatura's settings (the resiliparse methods ignore them);
    `include_comments` applies to both extractors (resiliparse's `comments`)."""

    name = "extract"

    def __init__(
        self,
        timeout_s: float = 5.0,
        favor: str = "balanced",
        include_tables: bool = True,
        include_comments: bool = False,
        max_html_bytes: int | None = 5_000_000,
        method: str = "trafilatura",
        fast: bool = False,
    ):
        if favor not in ("balanced", "precision", "recall"):
            raise ValueError(f"favor must be balanced, precision or recall, not {favor!r}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
        self.method = method
        self.fast = fast
        self.timeout_s = timeout_s
        self.favor = favor
        self.include_tables = include_tables
        self.include_comments = include_comments
        self.max_html_bytes = max_html_bytes

    def __call__(self, batch: pa.Table) -> pa.Table:
        batch = run_on_alive(batch, self.name, self._compute, {"text": pa.string(), "charset": pa.string()})
        return batch.drop_columns(["html"]) if "html" in batch.column_names else batch

    def _compute(self, alive: pa.Table):
        payloads = alive["html"].to_pylist()
        charsets = _column(alive, "http_charset")
        given = zip(_column(alive, "text"), _column(alive, "charset"))  # rows the reader gave text (WET)
        rows: list[tuple] = []  # (text, charset, reason, detail) of each row; None where still to extract
        pending = []  # (row, payload size, charset, decoded page) of the pages to extract
        for payload, http_charset, (given_text, given_charset) in zip(payloads, charsets, given):
            if given_text is not None and given_text.strip():  # kept as it is
                rows.append((given_text, given_charset, None, None))
            elif given_text is not None:  # as a page without text would
                rows.append((None, None, "extract:empty", "no text in the record"))
            else:
                payload = payload or b""
                html, charset, reason, detail = self._decode(payload, http_charset)
                if html is not None:
                    pending.append((len(rows), len(payload), charset, html))
                rows.append((None, charset, reason, detail))
        extracted = self._extract_all([html for *_, html in pending])
        for (row, size, charset, _), result in zip(pending, extracted):
            rows[row] = self._with_charset(size, charset, *result)
        texts, used, reasons, details = (list(column) for column in zip(*rows)) if rows else ([], [], [], [])
        return {"text": texts, "charset": used}, reasons, details

    def extract_one(
        self, payload: bytes, http_charset: str | None
    ) -> tuple[str | None, str | None, str | None, str | None]:
        """(text, charset, reject reason, detail) for one page, in this process."""
        html, charset, reason, detail = self._decode(payload, http_charset)
        if html is None:
            return None, charset, reason, detail
        return self._with_charset(len(payload), charset, *self.extract_decoded(html))

    def _decode(self, payload: bytes, http_charset: str | None):
        """(decoded page, charset, None, None), or (None, None, reject reason, detail)."""
        if self.max_html_bytes is not None and len(payload) > self.max_html_bytes:
            # lxml and trafilatura hold several copies of a page in memory; the time limit alone does not bound that
            return (
                None,
                None,
                "extract:too_large",
                f"HTML of {len(payload)} bytes, over the {self.max_html_bytes}-byte limit",
            )
        try:
            html, charset = decode_html(payload, http_charset)
        except Exception as error:
            return None, None, "extract:decode", f"{type(error).__name__}: {error}"
        return html, charset, None, None

    @staticmethod
    def _with_charset(size: int, charset: str, text: str | None, reason: str | None, detail: str | None):
        if reason == "extract:empty":
            detail = f"no text in {size} bytes of HTML (decoded as {charset})"
        return text, charset, reason, detail

    def _extract_all(self, pages: list[str]) -> list[tuple[str | None, str | None, str | None]]:
        """`extract_decoded` of each page: in the extraction child when there is a time limit (it holds in
        C code and in any thread), else here."""
        if not pages:
            return []
        if self.timeout_s is None or self.timeout_s <= 0:
            self.load()
            return [self.extract_decoded(html) for html in pages]
        return _extract_in_child(self, pages)

    def extract_decoded(self, html: str) -> tuple[str | None, str | None, str | None]:
        """(text, reject reason, detail) for one decoded page, under the time limit: everything the stage
        does after decoding (benchmarks/bench_extract.py times this), in this process: the time limit holds in
        Python code on the main thread only (the stage itself extracts in a child). Call `load` once first."""
        complex_because = too_complex(html)
        if complex_because is not None:
            return None, "extract:too_complex", complex_because
        started = time.monotonic()
        try:
            # no watchdog: the stage extracts in a child, which its parent kills at the limit
            text = call_with_time_limit(self.timeout_s, self.extract_text, html, end_process=False)
        except TimeLimitExceeded:
            return None, "extract:timeout", f"over {self.timeout_s} s ({time.monotonic() - started:.1f} s)"
        except Exception as error:
            return None, "extract:error", f"{type(error).__name__}: {str(error)[:300]}"
        if not text or not text.strip():
            return None, "extract:empty", "no text"
        return text, None, None

    def load(self) -> None:
        """Import the extractors and build trafilatura's config (once per process), outside any time limit."""
        if self.method.startswith("trafilatura"):
            _trafilatura_config()
        if "resiliparse" in self.method:
            import resiliparse.extract.html2text  # noqa: F401
        if self.method == "resiliparse-blocks":
            blocks.shipped_model()

    def extract_text(self, html: str) -> str | None:
        """The main text of one decoded page by the configured method; no time limit."""
        if self.method == "resiliparse":
            return self._resiliparse(html)
        if self.method == "resiliparse-clean":
            return drop_short_lines(self._resiliparse(html, alt_texts=False))
        if self.method == "resiliparse-blocks":
            return blocks.extract(html, self.include_comments)
        text = self._trafilatura(html)
        if self.method == "trafilatura+resiliparse" and (not text or not text.strip()):
            return self._resiliparse(html)
        return text

    def _trafilatura(self, html: str) -> str | None:
        import trafilatura

        return trafilatura.extract(
            html,
            config=_trafilatura_config(),
            output_format="txt",
            fast=self.fast,
            favor_precision=self.favor == "precision",
            favor_recall=self.favor == "recall",
            include_tables=self.include_tables,
            include_comments=self.include_comments,
            with_metadata=False,
        )

    def _resiliparse(self, html: str, alt_texts: bool = True) -> str:
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        return extract_plain_text(
            HTMLTree.parse(html), main_content=True, comments=self.include_comments, alt_texts=alt_texts
        )

    def settings(self) -> dict:
        """The arguments that make this stage again (in the extraction child)."""
        return dict(
            timeout_s=self.timeout_s,
            favor=self.favor,
            include_tables=self.include_tables,
            include_comments=self.include_comments,
            max_html_bytes=self.max_html_bytes,
            method=self.method,
            fast=self.fast,
        )


# --- the extraction child -------------------------------------------------------------------------------
# One per worker process and stage settings, started on first use and reused by every batch. The parent
# sends a batch of decoded pages, then reads one result per page, each within the time limit; on an overrun
# it kills the child (SIGKILL stops C code, which SIGALRM cannot) and a fresh one takes the rest. Each message
# has an 8-byte length: pages are their UTF-8, settings and results JSON (never a pickle: the child parses
# hostile pages); lone surrogates are kept.

_STARTUP_S = 300.0  # imports and a first page, on a loaded machine
_GRACE_S = 0.5  # the child's own alarm stops Python code at the limit; past this, the child is killed
_WARM_UP = "<html><body><article><p>A first page loads what every page needs.</p></article></body></html>"
_children: dict[tuple, _Child] = {}
_children_lock = threading.Lock()  # one batch at a time per process: a child extracts one page at a time


def _message_bytes(message) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _message(data: bytes):
    return json.loads(data.decode("utf-8", "surrogatepass"))


class _Child(ChildProcess):
    """An extraction process: pages in, each its UTF-8 after its length (JSON's escaping of a page costs about
    seven times its encoding, and as much again to parse: 2 of the 6 CPU-s resiliparse-blocks spent on the real
    pages); results out as JSON."""

    def __init__(self, settings: dict):
        super().__init__("stages.extract", "_serve", _message_bytes((os.getpid(), settings)))
        ready = self.receive(time.monotonic() + _STARTUP_S)
        if ready is None or _message(ready) != "ready":
            self.stop()
            raise RuntimeError(f"the extraction process did not start (exit status {self.process.returncode})")

    def send_pages(self, pages: list[str]) -> None:
        self.send(framed([page.encode("utf-8", "surrogatepass") for page in pages]))


def _extract_in_child(stage: Extract, pages: list[str]) -> list[tuple[str | None, str | None, str | None]]:
    settings = stage.settings()
    key = tuple(sorted(settings.items()))
    limit = stage.timeout_s + _GRACE_S
    results: list[tuple[str | None, str | None, str | None]] = []
    with _children_lock:
        while len(results) < len(pages):  # a child per round; a new round after a child was stopped
            child = _children.get(key)
            if child is None or not child.usable():
                child = _children[key] = _Child(settings)
            child.send_pages(pages[len(results) :])
            while len(results) < len(pages):
                started = time.monotonic()
                try:
                    result = child.receive(started + limit)
                except EOFError:  # it died on this page (a crash in C code)
                    code = child.stop()
                    results.append((None, "extract:error", f"the extraction process died (exit status {code})"))
                    break
                if result is None:
                    child.stop()
                    stopped = time.monotonic() - started
                    results.append((None, "extract:timeout", f"over {stage.timeout_s} s (stopped at {stopped:.1f} s)"))
                    break
                results.append(_message(result))
    return results


def _serve() -> None:
    """The extraction child's main loop: settings, then batches of pages; a result per page as it is done."""
    pages_in, results = child_streams()
    parent, settings = _message(read_message(pages_in))
    die_with_parent(parent)
    stage = Extract(**settings)
    stage.load()
    stage.extract_text(_WARM_UP)  # trafilatura's first call loads more than a page needs: not in a page's time
    write_message(results, _message_bytes("ready"))
    while True:
        try:
            pages = unframed(read_message(pages_in))
        except EOFError:  # the parent is done, or gone
            return
        for page in pages:
            write_message(results, _message_bytes(stage.extract_decoded(page.decode("utf-8", "surrogatepass"))))
