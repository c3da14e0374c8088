"""Reader, extraction and fastText together on real Common Crawl pages in several languages and charsets."""

import re

import pyarrow as pa
import pytest

from helpers import SHARED
from stages.extract import Extract
from stages.langid import LanguageId
from stages.warc_read import read_warc

CC_FILE = SHARED / "realdata" / "warc" / "resiliparse__warcfile.warc.gz"
pytestmark = pytest.mark.skipif(not CC_FILE.is_file(), reason=f"../shared/realdata not found ({CC_FILE}): skipped")

LANGUAGE_OF_CHARSET = {"windows-1251": "ru", "koi8-r": "ru"}


def declared_language(html: bytes, http_charset: str | None) -> str | None:
    """What a page says of its language: <html lang>, a Content-Language meta tag, or a Cyrillic-only charset."""
    head = html[:8000]
    code = rb"([a-zA-Z]{2})(?:[-_][a-zA-Z]{2,4})?[\"'\s/>]"  # "zh-cn", not a misplaced "UTF-8"
    for pattern in (rb"<html[^>]*\blang=[\"']?" + code, rb"content-language[\"']?\s+content=[\"']?" + code):
        found = re.search(pattern, head, re.I)
        if found:
            return found.group(1).decode().lower()
    return LANGUAGE_OF_CHARSET.get(http_charset or "")


def test_fasttext_finds_the_languages_the_pages_declare():
    table = pa.concat_tables(list(read_warc(str(CC_FILE), 0, "cc")))
    declared = [
        declared_language(h, c) if h else None
        for h, c in zip(table["html"].to_pylist(), table["http_charset"].to_pylist())
    ]
    table = LanguageId(method="fasttext", languages=None)(Extract()(table))
    checked = {}
    for url, want, lang, score in zip(
        table["url"].to_pylist(), declared, table["lang"].to_pylist(), table["lang_score"].to_pylist()
    ):
        if want is not None:
            assert lang == want, (url, want, lang, score)
            checked[url] = lang
    assert set(checked.values()) >= {"zh", "ru", "de", "nl"}, checked
    # the Chinese pages come in gbk/gb2312 as well as utf-8; most of the file is Chinese
    assert table["lang"].to_pylist().count("zh") >= 9
