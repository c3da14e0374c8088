"""English sentences and words as datatrove 0.10.1 counts them, without spaCy.

datatrove splits English with `spacy.blank("en")` plus spaCy's rule-based `sentencizer` (no model, but spaCy
itself, a large dependency and slow per call). What its C4 and FineWeb filters use of that is small: how many
sentences a line holds, where a text's sentences end, and how many tokens a text has. Those depend on a few
of spaCy's English tokenizer rules, which this module mirrors on whitespace-separated chunks:

- a sentence ends at a token in the sentencizer's list (`.`, `!`, `?` and their kin in other scripts); the next
  sentence starts at the first later token that is not all punctuation;
- `!`, `?` at the end of a chunk are split off as tokens; a final `.` only after a digit, a lower-case or
  uncased letter, punctuation, `%²-+`, or two capitals (spaCy's suffix rule), never in one of its
  abbreviations (`Mr.`, `e.g.`, `a.`, ...), and a run of dots is one token (an ellipsis, which ends nothing);
- leading and trailing punctuation and symbols are tokens of their own (prefix and suffix rules), and so are
  infixes: lower.Upper dots, hyphens after a letter or digit, `/` `:` `,` between letters, symbols, `2-3`;
- `n't` and `'s`-like endings, spaCy's apostrophe-less exceptions (`dont`, `gonna`) and a unit after a
  number (`4K`, `10km`) make two tokens; URLs, paths and e-mail addresses keep their dots.

docs/benchmarks.md measures how often this and spaCy disagree on real pages.
"""

from __future__ import annotations

import re
import unicodedata

# spacy.pipeline.sentencizer.Sentencizer.default_punct_chars (spaCy 3.8)
SENTENCE_ENDS = frozenset(
    "!.?\u0589\u061f\u06d4\u0700\u0701\u0702\u07f9\u0964\u0965\u104a\u104b\u1362\u1367\u1368\u166e\u1735\u1736"
    "\u1803\u1809\u1944\u1945\u1aa8\u1aa9\u1aaa\u1aab\u1b5a\u1b5b\u1b5e\u1b5f\u1c3b\u1c3c\u1c7e\u1c7f\u203c"
    "\u203d\u2047\u2048\u2049\u2e2e\u2e3c\ua4ff\ua60e\ua60f\ua6f3\ua6f7\ua876\ua877\ua8ce\ua8cf\ua92f\ua9c8"
    "\ua9c9\uaa5d\uaa5e\uaa5f\uaaf0\uaaf1\uabeb\ufe52\ufe56\ufe57\uff01\uff0e\uff1f\U00010a56\U00010a57"
    "\U00011047\U00011048\U000110be\U000110bf\U000110c0\U000110c1\U00011141\U00011142\U00011143\U000111c5"
    "\U000111c6\U000111cd\U000111de\U000111df\U00011238\U00011239\U0001123b\U0001123c\U000112a9\U0001144b"
    "\U0001144c\U000115c2\U000115c3\U000115c9\U000115ca\U000115cb\U000115cc\U000115cd\U000115ce\U000115cf"
    "\U000115d0\U000115d1\U000115d2\U000115d3\U000115d4\U000115d5\U000115d6\U000115d7\U00011641\U00011642"
    "\U0001173c\U0001173d\U0001173e\U00011a42\U00011a43\U00011a9b\U00011a9c\U00011c41\U00011c42\U00016a6e"
    "\U00016a6f\U00016af5\U00016b37\U00016b38\U00016b44\U0001bc9f\U0001da88\uff61\u3002"
)
# spaCy's English tokenizer exceptions that end in a dot: the dot stays part of the word.
ABBREVIATIONS = frozenset(
    "._. Adm. Ak. Ala. Apr. Ariz. Ark. Aug. Bros. Calif. Co. Colo. Conn. Corp. D.C. Dec. Del. Dr. E.G. E.g. "
    "Feb. Fla. Ga. Gen. Gov. I.E. I.e. Ia. Id. Ill. Inc. Ind. Jan. Jr. Jul. Jun. Kan. Kans. Ky. La. Ltd. Mar. "
    "Mass. Md. Messrs. Mich. Minn. Miss. Mo. Mont. Mr. Mrs. Ms. Mt. N.C. N.D. N.H. N.J. N.M. N.Y. Neb. Nebr. "
    "Nev. Nov. Oct. Okla. Ore. Pa. Ph.D. Prof. Rep. Rev. S.C. Sen. Sep. Sept. St. Tenn. Va. Wash. Wis. a.m. "
    "co. e.g. i.e. p.m. v.s. vs. °C. °F. °K. °c. °f. °k. ä. ö. ü.".split()
    + [f"{letter}." for letter in "abcdefghijklmnopqrstuvwxyz"]
    + [f"{hour}{half}" for hour in range(1, 13) for half in ("a.m.", "p.m.")]
)
_ENDS_IN_A_WORD = SENTENCE_ENDS - {"."}
_CHUNK = re.compile(r"\S+")
# spaCy's infixes: within a word, each is a token of its own that cuts the word in two.
_SYMBOLS = "".join(chr(c) for c in range(0x20000) if unicodedata.category(chr(c)) == "So")  # ©, °, emoji, ...
_INFIX = re.compile(  # one group: split() gives the words and, between them, the infixes
    "("
    + "|".join(
        [
            r"\.\.+|…",  # an ellipsis
            f"[{re.escape(_SYMBOLS)}]",
            r"(?<=[0-9])[+\-*^](?=[0-9-])",  # 2-3, 2+3
            r"(?<=[a-zß-öø-ÿ\"'”“‘’])\.(?=[A-ZÀ-ÖØ-Þ\"'”“‘’])",  # end.Next
            r"(?<=[^\W\d_]),(?=[^\W\d_])",  # one,two
            r"(?<=[^\W_])(?:---|--|——|-|–|—|~)(?=[^\W\d_])",  # e-mail, 17-year
            r"(?<=[^\W_])[:<>=/](?=[^\W\d_])",  # his/her
        ]
    )
    + ")"
)
_INFIX_DOT = re.compile(r"(?:(?<=[^\W\d_][a-zß-öø-ÿ])|(?<=[\"'”“‘’]))\.(?=[A-ZÀ-ÖØ-Þ\"'”“‘’])")
_JOINER = re.compile(r"(?<=[^\W\d_])(?:-|–|—|~|/|:)(?=[^\W\d_])")
_CONTRACTION = re.compile(r"(?i)(?:n['’]t|['’](?:s|re|ll|ve|m|d))$")
# spaCy's English exceptions written without an apostrophe, lower case (it lists them capitalized too), by the
# number of tokens it makes of each: "dont" is "do" "nt", "cantve" is "ca" "nt" "ve".
_SPLIT_WORDS = dict.fromkeys(
    "aint arent cannot cant couldnt couldve darent didnt doesnt dont gonna gotta hadnt hasnt havent hed hes "
    "howd howll howre hows howve id im isnt itd itll ive maynt mightnt mightve mustnt mustve neednt notve "
    "oughtnt shant shes shouldnt shouldve thatd thatll thats thered therell therere theres thereve thesed "
    "thesell thesere theseve theyd theyll theyre theyve thisd thisll thiss thosed thosell thosere thoseve "
    "wasnt wed werent weve whatd whatll whatre whats whatve whend whenll whenre whens whenve whered wherell "
    "wherere wheres whereve whod wholl whos whove whyd whyll whyre whys whyve wont wouldnt wouldve yall youd "
    "youll youre youve ".split(),
    2,
) | dict.fromkeys(
    "cantve couldntve didntve doesntve dontve hadntve hedve hellve howdve howllve idve illve ima itdve itllve "
    "mayntve mightntve mustntve needntve oughtntve shantve shedve shellve shouldntve thatdve thatllve "
    "theredve therellve thesedve thesellve theydve theyllve thisdve thisllve thosedve thosellve wedve wellve "
    "whatdve whatllve whendve whenllve wheredve wherellve whodve whollve whydve whyllve wontve wouldntve "
    "youdve youllve ".split(),
    3,
)
_UNIT = re.compile(
    r"\d+(?:km|km²|km³|m|m²|m³|dm|dm²|dm³|cm|cm²|cm³|mm|mm²|mm³|ha|µm|nm|yd|in|ft|kg|g|mg|µg|t|lb|oz|m/s|km/h|kmh|mph"
    r"|hPa|Pa|mbar|mb|MB|kb|KB|gb|GB|tb|TB|T|G|M|K)"
)


def _is_punct(char: str) -> bool:
    return unicodedata.category(char).startswith("P")


def _is_affix(char: str) -> bool:
    """A character spaCy splits off the start or end of a word as a token of its own."""
    return _is_punct(char) or char in "<>" or unicodedata.category(char) in ("Sc", "So")


def _all_punct(chunk: str) -> bool:
    return all(map(_is_punct, chunk))


def _dot_splits(stem: str) -> bool:
    """Whether spaCy splits the final dot of `stem` (a word without its leading punctuation) off as a token."""
    stem = _JOINER.split(stem)[-1]  # D-Minn.: the infix split leaves Minn. alone
    if stem in ABBREVIATIONS or len(stem) == 1:
        return len(stem) == 1  # a lone dot is a token
    before = stem[-2]
    if before.isdigit() or _is_affix(before) or before in "%²-+" or (before.isalpha() and not before.isupper()):
        return True
    return before.isupper() and len(stem) > 2 and stem[-3].isupper()


def _ends_sentence(piece: str, lead: int) -> bool:
    """Whether the suffix tokens spaCy makes of `piece` (no whitespace; `lead` prefix characters) end a sentence."""
    end = len(piece)
    while end > lead and _is_affix(piece[end - 1]):
        char = piece[end - 1]
        if char == "." and end >= 2 and piece[end - 2] == ".":  # an ellipsis: one token that ends nothing
            end = len(piece[:end].rstrip("."))
            continue
        if char == ".":
            return _dot_splits(piece[lead:end])
        if char in SENTENCE_ENDS:
            return True
        end -= 1
    return False


def _pieces(text: str):
    """(offset, piece, whether an infix dot follows it, whether one comes before it: then it is one token, its
    punctuation no prefix) for each whitespace-separated chunk of `text`, cut at an
    infix dot (end.Next: spaCy makes three tokens of it, the dot a sentence end) that does not end an
    abbreviation (Inc.'s) and is not in a URL, path or e-mail address."""
    for match in _CHUNK.finditer(text):
        offset, chunk = match.start(), match.group()
        if chunk.isalnum():  # most words: no punctuation, nothing to cut (a fast path, checked in C)
            yield offset, chunk, False, False
            continue
        affixes = "".join(filter(_is_affix, chunk))
        core = chunk.strip(affixes)
        # spaCy matches URLs, paths and e-mail addresses whole
        whole = (
            any(mark in chunk for mark in ("/", "@", "www.")) or core in ABBREVIATIONS or core + "." in ABBREVIATIONS
        )
        cuts = [] if whole else [m.start() for m in _INFIX_DOT.finditer(chunk)]
        cuts = [cut for cut in cuts if chunk[: cut + 1].lstrip(affixes) not in ABBREVIATIONS]
        begin = 0
        for cut in cuts:
            yield offset + begin, chunk[begin:cut], True, begin > 0
            begin = cut + 1
        yield offset + begin, chunk[begin:], False, begin > 0


def sentence_starts(text: str) -> list[int]:
    """The offset where each sentence of `text` starts, as the sentencizer would put it (the first is 0): at the
    first token after a sentence end that is not all punctuation."""
    starts = [0]
    after_end = False
    gap_start = 0  # where the whitespace before the piece starts
    for offset, piece, dot_follows, dot_before in _pieces(text):
        # Whitespace other than one space (a newline, two spaces) is a token of its own to spaCy, and no
        # punctuation: after a sentence end, the next sentence starts there (before any opening quote).
        if after_end and text[gap_start:offset] not in ("", " "):
            starts.append(gap_start + text.startswith(" ", gap_start))
            after_end = False
        gap_start = offset + len(piece) + dot_follows
        if piece.isalnum():  # a plain word: one token, not punctuation; only an infix dot after it ends a sentence
            if after_end:
                starts.append(offset)
            after_end = dot_follows
            continue
        lead = 0 if dot_before else len(piece) - len(piece.lstrip("".join(filter(_is_affix, piece))))
        # the prefix tokens, one character each (in a word, dots are not prefixes; alone, each run is a token)
        ending = SENTENCE_ENDS if lead == len(piece) and ".." not in piece else _ENDS_IN_A_WORD
        for i, char in enumerate(piece[:lead]):
            if after_end and not _is_punct(char):
                starts.append(offset + i)
                after_end = False
            after_end = after_end or char in ending
        if lead < len(piece) and after_end and not _all_punct(piece[lead:]):
            starts.append(offset + lead)
            after_end = False
        after_end = after_end or dot_follows or _ends_sentence(piece, lead)
    return starts


def sentences(text: str) -> list[str]:
    """`text` cut where each sentence starts (datatrove's split_into_sentences, whose pieces are then stripped)."""
    starts = sentence_starts(text)
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def count_sentences(text: str) -> int:
    return len(sentence_starts(text))


def count_words(text: str) -> int:
    """How many non-space tokens spaCy's blank English tokenizer makes of `text` (datatrove's split_into_words)."""
    return sum(map(_chunk_tokens, _CHUNK.findall(text)))


def _word_tokens(word: str) -> int:
    """Tokens of a word without punctuation at its edges: one, unless spaCy splits it as an exception or a unit."""
    if word.isalpha():
        return _SPLIT_WORDS.get(word.lower(), 1) if word.islower() or word.istitle() else 1
    return 2 if _UNIT.fullmatch(word) else 1


def _chunk_tokens(chunk: str) -> int:
    if chunk.isalnum():  # a plain word (the fast path)
        return _word_tokens(chunk)
    if _all_punct(chunk):  # each punctuation mark a token, except a run of dots or of hyphens
        return len(re.sub(r"\.\.+|--+", ".", chunk))
    core = chunk.strip("".join(filter(_is_affix, chunk)))
    lead = chunk.index(core)
    tail = chunk[lead + len(core) :]
    tokens = lead + len(re.sub(r"\.\.+", ".", tail))
    if tail.startswith(".") and not tail.startswith("..") and not _dot_splits(core + "."):
        tokens -= 1  # an abbreviation keeps its dot
    if "://" in core or core.startswith("www."):  # spaCy's URL match: one token
        return tokens + 1
    if core == "and/or" or core in ABBREVIATIONS or core + "." in ABBREVIATIONS:  # exceptions: one token
        return tokens + 1
    if core.isalnum():  # no infix in it (the usual case, checked in C)
        return tokens + _word_tokens(core)
    parts = _INFIX.split(core)  # words and, at odd positions, the infixes between them
    infixes = len(parts) // 2
    contraction = len(core) > 2 and _CONTRACTION.search(core) is not None  # don't: do n't
    return tokens + infixes + sum(map(_word_tokens, filter(None, parts[::2]))) + contraction
