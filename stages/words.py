"""Words as datatrove 0.10.1 counts them for English: spaCy's English tokenizer, reimplemented.

The one English tokenizer here: the Gopher quality filter's words (`datatrove_words`), and through
`chunk_tokens` the C4 sentences and FineWeb word counts of stages/english_split.py.

datatrove splits a text with `spacy.blank("en")` (its `load_word_tokenizer("eng")`) and drops the tokens
that are only whitespace. spaCy splits on whitespace, then peels prefixes and suffixes off each chunk
(punctuation, quotes, brackets, ellipses, currency, units after a number, "'s"), one at a time, and splits
what is left on infixes (hyphens and slashes between letters, a comma between letters, a full stop between
a lower- and an upper-case letter, ellipses); a chunk that is a URL or one of its exceptions (contractions,
abbreviations, emoticons) is kept whole or split its own way, and a second pass puts back exceptions the
affix rules split (":)" after a word). This module follows that algorithm with spaCy 3.8's English rules
(spacy/lang/punctuation.py, char_classes.py, en/; MIT licence) and its exceptions, exported to
data/spacy_en_exceptions.json. Letters are Unicode's where spaCy lists ranges of code points, and its
IP-address URLs are left out; docs/benchmarks.md ("Gopher quality: agreement with datatrove") counts the
texts whose tokens still differ from spaCy's (2 of 1,280) and the verdicts that differ from datatrove's.
"""

from __future__ import annotations

import functools
import importlib.resources
import json

import regex

# spaCy's character classes (spacy/lang/char_classes.py), its ranges of code points written as Unicode
# properties: a letter is any script's; scripts without case (CJK, kana, Hangul, Hebrew, Arabic, Indic,
# Ethiopic) count as both lower and upper case, as in spaCy.
_UNCASED = (
    r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Hebrew}\p{Arabic}\p{Bengali}\p{Devanagari}\p{Kannada}"
    r"\p{Tamil}\p{Telugu}\p{Sinhala}\p{Ethiopic}"
)
_ALPHA = r"\p{L}"
_LOWER = r"\p{Ll}" + _UNCASED
_UPPER = r"\p{Lu}" + _UNCASED
_PUNCT = r"… …… , : ; \! \? ¿ ؟ ¡ \( \) \[ \] \{ \} < > _ # \* & 。 ？ ！ ， 、 ； ： ～ · । ، ۔ ؛ ٪".split()
_QUOTES = r"\' \" ” “ ` ‘ ´ ’ ‚ , „ » « 「 」 『 』 （ ） 〔 〕 【 】 《 》 〈 〉 〈 〉 ⟦ ⟧".split()
_CONCAT_QUOTES = "".join(_QUOTES)
_CURRENCY = r"\$ £ € ¥ ฿ US\$ C\$ A\$ ₽ ﷼ ₴ ₠ ₡ ₢ ₣ ₤ ₥ ₦ ₧ ₨ ₩ ₪ ₫ € ₭ ₮ ₯ ₰ ₱ ₲ ₳ ₴ ₵ ₶ ₷ ₸ ₹ ₺ ₻ ₼ ₽ ₾ ₿".split()
_UNITS = (
    "km km² km³ m m² m³ dm dm² dm³ cm cm² cm³ mm mm² mm³ ha µm nm yd in ft kg g mg µg t lb oz m/s km/h kmh mph "
    "hPa Pa mbar mb MB kb KB gb GB tb TB T G M K % км км² км³ м м² м³ дм дм² дм³ см см² см³ мм мм² мм³ нм кг г мг "
    "м/с км/ч кПа Па мбар Кб КБ кб Мб МБ мб Гб ГБ гб Тб ТБ тб"
).split()
_HYPHENS = "- – — -- --- —— ~".split()
_ELLIPSES = [r"\.\.+", "…"]
_ICONS = [r"\p{So}"]  # spaCy lists the So (other symbol) code points
_PUNCT_ALTERNATIVES = "|".join(_PUNCT)  # spaCy puts this, bars and all, inside a character class

_PREFIXES = ["§", "%", "=", "—", "–", r"\+(?![0-9])", *_PUNCT, *_ELLIPSES, *_QUOTES, *_CURRENCY, *_ICONS]
_SUFFIXES = [
    *_PUNCT,
    *_ELLIPSES,
    *_QUOTES,
    *_ICONS,
    "'s",
    "'S",
    "’s",
    "’S",
    "—",
    "–",
    r"(?<=[0-9])\+",
    r"(?<=°[FfCcKk])\.",
    r"(?<=[0-9])(?:{})".format("|".join(_CURRENCY)),
    r"(?<=[0-9])(?:{})".format("|".join(map(regex.escape, _UNITS))),
    rf"(?<=[0-9{_LOWER}%²\-\+{_CONCAT_QUOTES}{_PUNCT_ALTERNATIVES}])\.",
    rf"(?<=[{_UPPER}][{_UPPER}])\.",
]
_INFIXES = [
    *_ELLIPSES,
    *_ICONS,
    r"(?<=[0-9])[+\-\*^](?=[0-9-])",
    rf"(?<=[{_LOWER}{_CONCAT_QUOTES}])\.(?=[{_UPPER}{_CONCAT_QUOTES}])",
    rf"(?<=[{_ALPHA}]),(?=[{_ALPHA}])",
    r"(?<=[{a}0-9])(?:{h})(?=[{a}])".format(a=_ALPHA, h="|".join(_HYPHENS)),
    rf"(?<=[{_ALPHA}0-9])[:<>=/](?=[{_ALPHA}])",
]
_PREFIX = regex.compile("|".join(f"(?:{p})" for p in _PREFIXES))  # matched at a position: match() anchors it
_SUFFIX = regex.compile("(?:" + "|".join(f"(?:{s})" for s in _SUFFIXES) + ")$")
# The characters searched for a suffix at first: longer than any suffix but a run of full stops.
_SUFFIX_WINDOW = 8
# spaCy tries its URL pattern on a whole chunk, and it backtracks quadratically on long ones ("a.b@a.b@...");
# no URL is this long (browsers stop far below it), so a longer chunk is split on infixes like other text.
_LONGEST_URL = 8192
_INFIX = regex.compile("|".join(f"(?:{i})" for i in _INFIXES))

# spaCy's URL_MATCH (spacy/lang/tokenizer_exceptions.py), without its IP-address branch.
_URL = regex.compile(
    r"^(?:(?:[\w\+\-\.]{2,})://)?(?:\S+(?::\S*)?@)?"
    rf"(?:(?:(?:[A-Za-z0-9\u00a1-\uffff][A-Za-z0-9\u00a1-\uffff_-]{{0,62}})?[A-Za-z0-9\u00a1-\uffff]\.)+"
    rf"(?:[{_LOWER}]{{2,63}}))(?::\d{{2,5}})?(?:[/?#]\S*)?$"
)


def _data(name: str) -> dict:
    """One of the JSON files in stages/data/ (each says where it comes from and its licence)."""
    return json.loads((importlib.resources.files("stages") / "data" / name).read_text("utf-8"))


# The characters datatrove counts as punctuation: a token made only of them is not a word.
DATATROVE_PUNCTUATION = frozenset(_data("datatrove_punctuation.json")["characters"])


@functools.cache
def _exceptions() -> dict[str, tuple[str, ...]]:
    """spaCy's English tokenizer exceptions, chunk -> its tokens (data/spacy_en_exceptions.json says where
    they come from): contractions ("don't" -> "do" "n't", "cannot" -> "can" "not"), abbreviations kept
    with their full stop ("etc.", "Calif."), emoticons kept whole (":)")."""
    return {chunk: tuple(tokens) for chunk, tokens in _data("spacy_en_exceptions.json")["exceptions"].items()}


def datatrove_words(text: str) -> list[str]:
    """The tokens datatrove 0.10.1's Gopher quality filter counts as words for English text."""
    words: list[str] = []
    for chunk in text.split():
        words.extend(chunk_tokens(chunk))
    return words


@functools.lru_cache(maxsize=65536)
def chunk_tokens(chunk: str) -> tuple[str, ...]:
    """One whitespace-free chunk's tokens (cached: a text repeats most of its chunks, as spaCy's cache knows)."""
    specials = _exceptions()
    return _merge_specials(_affix_tokens(chunk, specials), _special_patterns())


def _affix_tokens(chunk: str, specials: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """spaCy's Tokenizer._tokenize on one chunk: the exception it is, or its prefixes, what is left between
    them, split on infixes, and its suffixes."""
    if chunk in specials:
        return specials[chunk]
    prefixes, core, suffixes = _split_affixes(chunk, specials)
    return (*prefixes, *_attach(core, specials), *reversed(suffixes))


def _split_affixes(chunk: str, specials: dict[str, tuple[str, ...]]) -> tuple[list[str], str, list[str]]:
    """spaCy's Tokenizer._split_affixes: peel one prefix and one suffix at a time until none is left or what
    is left is an exception. What is left is chunk[start:end], never copied, so that peeling a chunk of n
    characters costs O(n), not O(n^2) as in spaCy (a page of 1 MB of brackets)."""
    prefixes: list[str] = []
    suffixes: list[str] = []
    longest = max(map(len, specials), default=0)

    def special(a: int, b: int) -> bool:
        return b - a <= longest and chunk[a:b] in specials

    start, end = 0, len(chunk)
    last_size = 0
    while end > start and end - start != last_size:
        if special(start, end):
            break
        last_size = end - start
        prefix = _PREFIX.match(chunk, start, end)
        pre_len = prefix.end() - start if prefix else 0
        if pre_len and special(start + pre_len, end):
            prefixes.append(chunk[start : start + pre_len])
            start += pre_len
            break
        suf_len = _suffix_length(chunk, start + pre_len, end)
        if suf_len and special(start, end - suf_len):
            suffixes.append(chunk[end - suf_len : end])
            end -= suf_len
            break
        if pre_len and suf_len and pre_len + suf_len <= end - start:
            prefixes.append(chunk[start : start + pre_len])
            suffixes.append(chunk[end - suf_len : end])
            start, end = start + pre_len, end - suf_len
        elif pre_len:
            prefixes.append(chunk[start : start + pre_len])
            start += pre_len
        elif suf_len:
            suffixes.append(chunk[end - suf_len : end])
            end -= suf_len
    return prefixes, chunk[start:end], suffixes


def _suffix_length(chunk: str, start: int, end: int) -> int:
    """The length of the suffix spaCy finds in chunk[start:end] (0: none). Only the last characters are
    searched: a suffix is a few characters, or a run of full stops, which a match at the window's start may
    continue, and then a window twice as long is searched (so the cost stays that of what is peeled)."""
    size = _SUFFIX_WINDOW
    while end - size > start:
        window = end - size
        found = _SUFFIX.search(chunk, window, end)
        if found is None:
            return 0
        if found.start() >= window + 2:  # a look-behind there reads only characters of the window
            return found.end() - found.start()
        size *= 2
    found = _SUFFIX.search(chunk[start:end])  # a short rest: the slice itself, as spaCy searches it
    return found.end() - found.start() if found else 0


def _attach(core: str, specials: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """spaCy's Tokenizer._attach_tokens for what the affixes left: an exception, a URL, or split on infixes."""
    if not core:
        return ()
    if core in specials:
        return specials[core]
    if len(core) <= _LONGEST_URL and _URL.match(core):
        return (core,)
    tokens: list[str] = []
    start = 0
    for match in _INFIX.finditer(core):
        if match.start() == 0:  # an infix at the very start is no split (spaCy skips it)
            continue
        if match.start() != start:
            tokens.append(core[start : match.start()])
        if match.end() != match.start():
            tokens.append(match.group())
        start = match.end()
    if core[start:]:
        tokens.append(core[start:])
    return tuple(tokens)


@functools.cache
def _special_patterns() -> dict[tuple[str, str], list[tuple[tuple[str, ...], tuple[str, ...]]]]:
    """spaCy's second pass (Tokenizer._apply_special_cases): an exception that the affix rules would split
    ("):" -> ")" ":", "St." -> "St" ".") is found again among a chunk's tokens and put back. Its first two split
    tokens -> [(the split tokens, the exception's own tokens)], longest first (keyed by two tokens, so that a
    run of colons does not try every emoticon that starts with one at every token)."""
    patterns: dict[tuple[str, str], list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for chunk, tokens in _exceptions().items():
        split = _affix_tokens(chunk, {})
        if len(split) > 1:
            patterns.setdefault((split[0], split[1]), []).append((split, tokens))
    for candidates in patterns.values():
        candidates.sort(key=lambda pattern: -len(pattern[0]))
    return patterns


def _merge_specials(tokens: tuple[str, ...], patterns) -> tuple[str, ...]:
    """`tokens` with each run that spells a split exception replaced by the exception's tokens, left to right,
    the longest run first."""
    if len(tokens) < 2 or not any(pair in patterns for pair in zip(tokens, tokens[1:])):
        return tokens
    merged: list[str] = []
    i = 0
    while i < len(tokens):
        for split, own in patterns.get(tokens[i : i + 2], ()):
            if tokens[i : i + len(split)] == split:
                merged.extend(own)
                i += len(split)
                break
        else:
            merged.append(tokens[i])
            i += 1
    return tuple(merged)
