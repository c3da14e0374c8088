"""PII masking: e-mail addresses, IPv4 and IPv6 addresses and phone numbers in the text become placeholders.

A modifier stage: it changes the `text` of alive rows and rejects nothing; `pii_replacements` counts the
placeholders it put into each document. Every finder returns character spans, so the stage, its tests and
benchmarks/bench_pii.py score the same thing. What is masked and what is not (docs/design.md, "PII masking"):

- e-mail: a dot-atom local part (letters of any script, digits, `_ % + -`, single dots inside), `@`, a
  domain of dot-separated labels ending in a letters-only top-level domain (or `xn--` punycode); a trailing
  dot stays text. `logo@2x.png` (an image name) is not an address.
- IPv4: four dotted decimal numbers that `ipaddress` accepts (0-255, no leading zeros), not inside a longer
  dotted run (`1.2.3.4.5`) or a word (`v1.2.3.4`), not before a package version's suffix (`-generic`,
  `-1ubuntu1`, `+dfsg`, `~bpo11`), not after a version or numbering word (`version 1.2.3.4`, `release`,
  `build`, `linux`, `section`, `article`, `paragraph`, `Chrome/`): those are versions. Four numbers all below 16 (`3.11.4.1`,
  `4.2.1.3`, `1.2.3.4`) are a version or a section number too: one random public address in 65,000 looks so,
  and the known ones (1.1.1.1, 8.8.8.8) are public resolvers, which name no one.
- IPv6: what `ipaddress` accepts, among runs of hex digits and colons holding at least one digit (times such
  as 12:30:45 and MAC addresses fail it).
- Only globally routable addresses (`is_global`) unless `mask_private_ips`: 10.x, 192.168.x, 127.0.0.1, ::1,
  fe80::, and the documentation ranges name no one, and tutorials need them.
- phone: `+CC` and 8 to 15 digits in all; North American `(555) 123-4567`, `555-123-4567`, `555.123.4567`,
  `1-800-555-0199`; national numbers written with a trunk 0 (UK `020 7946 0958`, DE `030 12345678` or
  `089 / 123 456 78`, FR `01 23 45 67 89`, IT `06 1234 5678`) of 10 to 12 digits with one kind of separator
  (three hyphenated groups only as the UK groups them: `020-7946-0958`; `06-2019-0034` is a file number);
  after a phone word (`Tel.`, `phone`, `call us on`, `fax`), any number in 3 to 5 groups of 9 to 12 digits
  (ES `912 345 678`, PL `22 123 45 67`). A national number needs separators (a plain 10-digit run is an id
  as often as a phone), one right after `ISBN`, `serial`, `SKU`, `order`, `reservation`, a German `…-Nr.` or
  `…nummer` and the like is not a phone (but after a phone word: `Tel.-Nr.`, `Telefonnummer`), and `00` for `+` is not read (`0044 20 7946 0958`: zero-padded codes look the same).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator

import pyarrow as pa

from .ledger import run_on_alive

KINDS = ("email", "ipv4", "ipv6", "phone")
Span = tuple[int, int, str]  # (start, end, kind)

# Speed: the e-mail, IPv4 and phone patterns begin with one character or class, which the regex engine scans
# for cheaply; the characters that must not come before a match are checked by a look-behind once that first
# character has been consumed (a look-behind in front would run at every position of the text). The IPv6
# pattern runs only in texts with _IPV6_HINT.
_EMAIL = re.compile(
    r"[\w%+-](?<![\w.%+-].)[\w%+-]*(?:\.[\w%+-]+)*@"  # the local part, not the tail of a longer one
    r"(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+"
    r"(?!(?i:png|jpe?g|gif|svg|webp|bmp|ico|pdf)\b)(?:[^\W\d_]{2,63}|xn--[a-z0-9-]{2,59})"
    r"(?![\w-]|\.[^\W_])"  # the whole domain: no label after it
)
_LOCAL_PART_MAX, _DOMAIN_MAX = 64, 255  # RFC 5321's limits: an address lies within them around its @
# Not followed by a word, a further dotted number, or a package version's suffix (`-`, `+` or `~`, then a
# word with a letter in it: `5.15.0.91-generic`, `-1ubuntu1`, `+dfsg`, `~bpo11`); an address range goes on
# with a number (`81.2.69.160-81.2.69.170`).
_IPV4 = re.compile(r"\d(?<![\w.]\d)\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w]|\.\d|[-+~]\d*[^\W\d_])")
# Two colons with at most four hex digits between them: in every IPv6 address, and in few texts.
_IPV6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:")
# Hex groups and colons with a digit among them, optionally ending in a dotted IPv4 (::ffff:192.0.2.1). The
# digit is looked for within the 39 characters an address can have, not along a whole run of colons.
_IPV6 = re.compile(
    r"(?<![\w])(?=[0-9A-Fa-f:]{0,38}\d)(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{1,4})?(?![\w:])"
)
# The words that make the dotted number after them a version or a section number, not an address.
_VERSION_CUE = re.compile(
    r"(?:\b(?:version|ver|v|release|rel|build|rev|revision|firmware|kernel|linux|update|patch|section|sec|chapter|"
    r"clause|article|art|paragraph|para|step|figure|fig|table)\.?\s*[:#]?\s*|§\s*|[A-Za-z]/)$",
    re.IGNORECASE,
)

_NOT_DIGIT_END = r"(?![\w]|[.,/-]\d)"  # the number ends here: no digit or word goes on after a separator
# After a phone number's first character: not inside a word or a number, nor after a run of digit groups (IBAN)
_STARTS_NUMBER = r"(?<![\w+.,/-].)(?<!\d .)"
_INTERNATIONAL = re.compile(
    r"\+(?<![\w+]\+)[1-9]\d{0,2}"  # +, the country code
    r"(?:[ .-]?\(0\))?"  # (0): the trunk prefix some countries write after it
    r"(?:[ .-]?\(\d{1,5}\))?"  # an area code in parentheses
    # Digit groups. A run is split one way, six digits a group (possessive): the same matches, as a match ends
    # only where a run ends and six a group reaches each run's end in the fewest groups; trying every split of
    # a run too long to end in took 15 ms a plus sign (issue 46).
    r"(?:[ .-]?\d{1,6}+){1,6}" + _NOT_DIGIT_END
)
_NORTH_AMERICAN = re.compile(
    r"[(1-9]" + _STARTS_NUMBER + r"(?:(?<=1)[ .-]?[(2-9]|)"  # the country code 1 (optional), or not
    r"(?:(?<=\()[2-9]\d{2}\)[ .-]?|(?<=[2-9])\d{2}(?P<sep>[ .-]))"  # the area code: (555) or 555 and a separator
    r"\d{3}(?(sep)(?P=sep)|[ .-])\d{4}" + _NOT_DIGIT_END  # 123-4567, with the area code's separator
)
_TRUNK_ZERO = re.compile(
    r"[(0]" + _STARTS_NUMBER + r"(?:(?<=\()0\d{1,4}\)\s?|(?<=0)\d{1,4}(?:\s?/\s?|[ .-]))"  # (020) or 020, a separator
    r"\d{2,8}(?:(?P<sep>[ .-])\d{2,8})?(?:(?P=sep)\d{2,8}){0,3}" + _NOT_DIGIT_END  # groups, one separator
)
# After a phone word, any number in 3 to 5 groups: national numbers without a trunk 0 (ES 912 345 678,
# PL 22 123 45 67), which without the word read as numbers with spaces for thousands.
_GROUPED_NUMBER = re.compile(
    r"[(\d]" + _STARTS_NUMBER + r"(?:(?<=\()\d{2,4}\)|(?<=\d)\d{1,3})(?:[ .-]\d{2,4}){2,4}" + _NOT_DIGIT_END
)
_PHONE_CUE = re.compile(
    r"(?:\b(?:tel|telephone|telefon|téléphone|tél|phone|ph|fax|call|mobile|mobil|mob|cell|handy|whatsapp|rufnummer|"
    r"тел|телефон)\.?(?:[\s-]*(?:no\.?|number|nr\.?|nummer))?(?:\s+(?:us|me|them))?(?:\s+(?:on|at))?|[☎📞])\s*:?\s*$",
    re.IGNORECASE,
)
# Words after which a run of digit groups is an identifier, not a phone number.
_IDENTIFIER_CUE = re.compile(
    r"\b(?:isbn(?:-1[03])?|issn|doi|serial|s/n|sn|sku|part|model|order|invoice|ref|reference|tracking|patent|"
    r"ean|upc|gtin|lot|batch|case|id|reservation|booking|confirmation|account|customer|ticket|"
    r"[\w.-]*(?:nr|nummer))"  # German numbers, `Kd.-Nr.`, `Kundennummer` (but `Tel.-Nr.`: _PHONE_CUE wins)
    r"\.?\s*(?:number|no\.?|nr\.?|#)?\s*[:#]?\s*$",
    re.IGNORECASE,
)
_CUE_WINDOW = 24  # characters before a candidate that a cue is looked for in


def _before(text: str, start: int) -> str:
    return text[max(0, start - _CUE_WINDOW) : start]


def _digits(candidate: str) -> int:
    return sum(character.isdigit() for character in candidate)


def email_spans(text: str) -> Iterator[tuple[int, int]]:
    # The pattern runs only around each @ (most documents have none), and neither part of an address holds an
    # @, so only between the @s before and after it: a run of @s costs what it is long, not 300 times that.
    done, before, at = 0, -1, text.find("@")
    while at >= 0:
        after = text.find("@", at + 1)
        end = at + _DOMAIN_MAX + 2 if after < 0 else min(at + _DOMAIN_MAX + 2, after)
        match = _EMAIL.search(text, max(done, before + 1, at - _LOCAL_PART_MAX), end)
        if match is not None and match.start() <= at < match.end():
            yield match.span()
            done = match.end()
            after = text.find("@", done)
        before, at = at, after


def _address(candidate: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        return None


def _small_numbers(candidate: str) -> bool:
    """Every number of a dotted quad below 16: a version or a section number (3.11.4.1, 4.2.1.3). One
    random public address in 65,000 looks so; the known ones are public resolvers (1.1.1.1, 8.8.8.8), which
    name no one. (10.0.0.1 is private: no version, masked with private_too.)"""
    return all(int(number) < 16 for number in candidate.split("."))


def ipv4_spans(text: str, private_too: bool = False) -> Iterator[tuple[int, int]]:
    for match in _IPV4.finditer(text):
        address = _address(match[0])
        if address is None or _VERSION_CUE.search(_before(text, match.start())):
            continue
        if address.is_global and not _small_numbers(match[0]) or private_too and not address.is_global:
            yield match.span()


def ipv6_spans(text: str, private_too: bool = False) -> Iterator[tuple[int, int]]:
    if not _IPV6_HINT.search(text):
        return
    for match in _IPV6.finditer(text):
        address = _address(match[0])
        if address is not None and (private_too or address.is_global):
            yield match.span()


def phone_spans(text: str) -> Iterator[tuple[int, int]]:
    if "+" in text:
        for match in _INTERNATIONAL.finditer(text):
            # the country code and the number, 8 to 15 digits; a trunk (0) is not dialled from abroad, so it is
            # not counted ((_) keeps the offsets)
            end = _number_end(match[0].replace("(0)", "(_)"), 8, 15)
            if end is not None:
                yield match.start(), match.start() + end
    for pattern, shortest, longest in ((_NORTH_AMERICAN, 10, 11), (_TRUNK_ZERO, 10, 12)):
        for match in pattern.finditer(text):
            end = _number_end(match[0], shortest, longest)
            before = _before(text, match.start())
            if end is None or _IDENTIFIER_CUE.search(before) and not _PHONE_CUE.search(before):
                continue
            if pattern is _NORTH_AMERICAN or _national_grouping(match[0][:end]):
                yield match.start(), match.start() + end
    for match in _GROUPED_NUMBER.finditer(text):
        end = _number_end(match[0], 9, 12)
        if end is not None and _PHONE_CUE.search(_before(text, match.start())):
            yield match.start(), match.start() + end


def _national_grouping(number: str) -> bool:
    """A trunk-0 number written with hyphens in three groups is grouped as in the UK, the one plan that writes
    it so: 020-7946-0958, 0161-496-0000, 01632-960-000 (area of 3 to 5 digits, 10 or 11 digits, the last group
    3 or 4). `0800-1234-56` or `06-2019-0034` are file and case numbers."""
    groups = number.split("-")
    if len(groups) != 3 or not all(group.isdigit() for group in groups):
        return True
    return len(groups[0]) >= 3 and len(groups[2]) >= 3 and 10 <= len("".join(groups)) <= 11


_DIGIT_GROUP = re.compile(r"\d+")


def _number_end(candidate: str, shortest: int, longest: int) -> int | None:
    """Where the phone number in `candidate` ends: all of it when its digits are `shortest` to `longest`; when
    there are more (the pattern ran on into the next number: `030-7876447 4111 1111`), the longest start of
    it that fits and ends where the separator changes; else None (one run of groups with one separator is one
    number, too long or too short to be a phone)."""
    groups = list(_DIGIT_GROUP.finditer(candidate))
    counts = [0]
    for group in groups:
        counts.append(counts[-1] + len(group[0]))
    if shortest <= counts[-1] <= longest:
        return len(candidate)
    fitting = [i for i in range(1, len(groups)) if shortest <= counts[i] <= longest]  # ends after group i - 1
    changes = [i for i in fitting if _separator(candidate, groups, i - 2) != _separator(candidate, groups, i - 1)]
    return groups[changes[-1] - 1].end() if changes else None


def _separator(candidate: str, groups: list[re.Match], i: int) -> str:
    """The characters between group i and group i + 1 ('' past the ends)."""
    if i < 0 or i + 1 >= len(groups):
        return ""
    return candidate[groups[i].end() : groups[i + 1].start()]


def pii_spans(text: str, kinds=KINDS, private_too: bool = False) -> list[Span]:
    """The spans to mask in `text`, in order, none overlapping: where two finders claim the same characters
    the earlier span wins, and at the same start the kind listed first in KINDS (a number that begins an e-mail
    address stays the address's)."""
    finders: dict[str, Callable[[str], Iterator[tuple[int, int]]]] = {
        "email": email_spans,
        "ipv4": lambda t: ipv4_spans(t, private_too),
        "ipv6": lambda t: ipv6_spans(t, private_too),
        "phone": phone_spans,
    }
    found = [(start, KINDS.index(kind), end) for kind in kinds for start, end in finders[kind](text)]
    spans: list[Span] = []
    last_end = 0
    for start, rank, end in sorted(found):
        if start >= last_end:
            spans.append((start, end, KINDS[rank]))
            last_end = end
    return spans


class PiiMasker:
    """The `pii` stage: masks the `kinds` of PII in each alive row's text with their placeholders."""

    name = "pii"

    def __init__(
        self,
        kinds=KINDS,
        email_placeholder: str = "<EMAIL>",
        ip_placeholder: str = "<IP_ADDRESS>",
        phone_placeholder: str = "<PHONE>",
        mask_private_ips: bool = False,
    ):
        unknown = [kind for kind in kinds if kind not in KINDS]
        if unknown:
            raise ValueError(f"unknown PII kind {unknown[0]!r} (known: {', '.join(KINDS)})")
        self.kinds = tuple(kinds)
        self.mask_private_ips = mask_private_ips
        self.placeholders = {
            "email": email_placeholder,
            "ipv4": ip_placeholder,
            "ipv6": ip_placeholder,
            "phone": phone_placeholder,
        }

    def mask(self, text: str | None) -> tuple[str | None, int]:
        """(the text with every span replaced by its kind's placeholder, the number of spans replaced)."""
        if not text:
            return text, 0
        spans = pii_spans(text, self.kinds, self.mask_private_ips)
        if not spans:
            return text, 0
        parts, position = [], 0
        for start, end, kind in spans:
            parts += [text[position:start], self.placeholders[kind]]
            position = end
        parts.append(text[position:])
        return "".join(parts), len(spans)

    def __call__(self, batch: pa.Table) -> pa.Table:
        columns = {"text": pa.string(), "pii_replacements": pa.int64()}
        return run_on_alive(batch, self.name, self._compute, columns, replaces=("text",))

    def _compute(self, alive: pa.Table):
        masked = [self.mask(text) for text in alive["text"].to_pylist()]
        texts = [text for text, _ in masked]
        counts = [count for _, count in masked]
        return {"text": pa.array(texts, pa.string()), "pii_replacements": pa.array(counts, pa.int64())}, None, None
