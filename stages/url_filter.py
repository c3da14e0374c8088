"""Blocklists of domains and URLs: a document whose URL one lists is rejected `url:blocked`, with `detail` naming
the entry and its file.

A blocklist file holds one entry per line; blank lines and lines starting with `#` are skipped, and a line's
first word is its entry (`example.com  # why` lists example.com). An entry with a `/` is a URL, else a domain:
- a domain blocks itself and every subdomain: `example.com` blocks `example.com` and `a.b.example.com`, not
  `badexample.com` nor `example.com.au`; case, a trailing dot and the document's port do not matter;
- a URL blocks that URL only, compared without its scheme (http and https alike), fragment, default port or
  trailing slash, host in lower case; path and query exactly (`example.com/a` blocks `https://example.com/a/`
  and `http://EXAMPLE.com/a#top`, not `/a/b` nor `/a?page=2`).
`www.` is part of a host like any other label: `www.example.com` does not block `example.com`.
A domain written in Unicode and its punycode (`xn--`) form are one domain, in lists and in URLs alike.
The formats people download are read too: hosts files (`0.0.0.0 example.com`: the hosts after the address)
and adblock lists, whose domain rules (`||example.com^`, options after `$` aside) list domains; their other
rules (element hiding, exceptions, paths) and `!` comments list nothing.
"""

from __future__ import annotations

import functools
import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa

from .ledger import run_on_alive
from .stamps import file_stamp


def read_blocklist(path: str) -> list[str]:
    """The entries of a blocklist file, in file order: plain lists, hosts files and adblock domain rules."""
    lines = Path(path).read_text(encoding="utf-8").removeprefix("\ufeff").splitlines()
    return [entry for line in lines for entry in line_entries(line)]


def line_entries(line: str) -> list[str]:
    """The entries of one blocklist line: its first word (`example.com  # why`); the hosts after the address of
    a hosts file's line (`0.0.0.0 a.example b.example`); the domain of an adblock rule `||example.com^`
    (options after `$` aside). Comments (`#`, adblock's `!`), an adblock header and adblock rules that are not
    domain rules (element hiding `##`, exceptions `@@`, paths) list nothing."""
    first = line.split()[0] if line.split() else ""
    if any(marker in first for marker in ("##", "#@#", "#?#")):  # adblock element hiding: no domain listed
        return []
    words = line.split("#", 1)[0].split()
    if not words or words[0].startswith(("!", "[", "@@")):
        return []
    if _is_address(words[0]):  # a hosts file's line
        return words[1:]
    if words[0].startswith("||"):
        domain = words[0][2:].split("$", 1)[0].removesuffix("^")
        return [domain] if domain and not any(c in domain for c in "/^*|") else []
    if words[0].startswith(("|", "/", "-", ".", "&", "?", "=", "_")) and "." not in words[0].split("/")[0]:
        return []  # an adblock rule of another kind
    return words[:1]


def _is_address(word: str) -> bool:
    try:
        ipaddress.ip_address(word)
    except ValueError:
        return False
    return True


def _host(netloc_host: str | None) -> str:
    """A host as blocklists compare it: lower case, no final dot, a Unicode (IDNA) name as its punycode
    `xn--` form, so that `bücher.example` and `xn--bcher-kva.example` are one domain."""
    host = (netloc_host or "").lower().rstrip(".")
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:  # not a valid IDNA name: compared as written
        return host


def url_key(url: str) -> str | None:
    """A URL as blocklists compare it: host/path?query, without scheme, port 80/443, fragment or a final `/`;
    None for a URL without a host."""
    try:
        parts = urlsplit(url if "//" in url else f"//{url}")
        port = parts.port
    except ValueError:  # an unclosed IPv6 bracket, a port that is not a number: no blocklist names it
        return None
    host = _host(parts.hostname)
    if not host:
        return None
    if port is not None and port not in (80, 443):
        host = f"{host}:{port}"
    key = host + parts.path.rstrip("/")
    return f"{key}?{parts.query}" if parts.query else key


class Blocklist:
    """Domains and URLs from blocklist files; `match(url)` names the entry that blocks a URL."""

    def __init__(self, paths: list[str]):
        self.domains: dict[str, str] = {}  # domain -> "entry (file)"
        self.urls: dict[str, str] = {}  # url_key -> "entry (file)"
        for path in paths:
            for entry in read_blocklist(path):
                where = f"{entry} ({Path(path).name})"
                if "/" in entry:
                    key = url_key(entry)
                    if key is not None:
                        self.urls.setdefault(key, where)
                else:
                    self.domains.setdefault(_host(entry.removeprefix("*.")), where)

    def match(self, url: str | None) -> str | None:
        """The entry (with its file) that blocks `url`, or None."""
        if not url:
            return None
        key = url_key(url)
        if key is None:
            return None
        if key in self.urls:
            return self.urls[key]
        host = _host(urlsplit(url if "//" in url else f"//{url}").hostname)
        labels = host.split(".")
        for i in range(len(labels)):  # the host itself, then each parent domain
            entry = self.domains.get(".".join(labels[i:]))
            if entry is not None:
                return entry
        return None


class UrlFilter:
    """The `url` stage: rejects alive rows whose URL a blocklist names, `url:blocked`."""

    name = "url"

    def __init__(self, blocklists: list[str]):
        # Only the paths: the stage is pickled into every task, and a real blocklist (UT1's, millions of domains)
        # is loaded once per worker process instead (_loaded).
        self.blocklists = tuple(blocklists)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, {})

    def _compute(self, alive: pa.Table):
        blocklist = _loaded(tuple(file_stamp(path) for path in self.blocklists))
        entries = [blocklist.match(url) for url in alive["url"].to_pylist()]
        reasons = [f"{self.name}:blocked" if entry else None for entry in entries]
        return {}, reasons, [f"blocklist entry {entry}" if entry else None for entry in entries]


@functools.lru_cache(maxsize=2)
def _loaded(stamps: tuple[tuple, ...]) -> Blocklist:
    """The blocklist of these files, read once per process and again when one changes (its stamp: path, size
    and modification time)."""
    return Blocklist([stamp[0] for stamp in stamps])
