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
"""

from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa

from .ledger import run_on_alive
from .stamps import file_stamp


def read_blocklist(path: str) -> list[str]:
    """The entries of a blocklist file, in file order."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _host(netloc_host: str | None) -> str:
    return (netloc_host or "").lower().rstrip(".")


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
