"""Sentence splitting with NLTK Punkt, without any run-time download.

Punkt is unsupervised. ragcli ships Punkt parameters trained on Wikipedia paragraphs from the
development corpus (``ragcli/data/punkt_en.json``, rebuilt with ``python -m ragcli.sentences
train CORPUS.jsonl``) plus a hand-checked list of common English abbreviations, so "Dr. Smith",
"the U.S. Army", initials ("J. R. R. Tolkien") and decimals ("3.5") stay inside one sentence.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator

PARAMS_FILE = Path(__file__).parent / "data" / "punkt_en.json"

# Abbreviations Punkt should always know (lower case, without the final period).
EXTRA_ABBREVIATIONS = {
    "dr", "mr", "mrs", "ms", "prof", "sr", "jr", "st", "mt", "ft", "gen", "col", "lt", "sgt", "capt", "gov",
    "sen", "rep", "rev", "hon", "pres", "vs", "etc", "e.g", "i.e", "cf", "al", "approx", "vol",
    "vols", "pp", "p", "fig", "figs", "ed", "eds", "inc", "ltd", "co", "corp", "dept", "univ", "assn", "bros",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "u.n",
    "u.s.a", "d.c", "a.m", "p.m", "b.c", "a.d", "ph.d", "m.d", "b.a", "m.a", "b.sc", "m.sc", "est", "op",
    "ca", "c", "approx", "mx", "messrs", "mme", "mlle", "ave", "blvd", "rd",
}


# Capitalised words that start a sentence even right after an abbreviation ("the U.S. In 1990 ...").
SENT_STARTERS = {
    "the", "he", "she", "it", "they", "in", "this", "his", "her", "their", "after", "during", "however",
    "there", "we", "i", "on", "at", "its", "these", "although", "when", "while", "since", "so",
}


def _punkt():  # -> the module nltk.tokenize.punkt
    """Import NLTK's Punkt module without running ``nltk/__init__.py``.

    That file imports all of NLTK (corpora, translation metrics, numpy): about 0.25 s here, paid
    by every ``ragcli ask`` and ``ragcli index``, against ~0.05 s for Punkt and the few modules it
    needs. Empty stand-ins for the two packages are in ``sys.modules`` only during the import, and
    the modules loaded under them are dropped from it afterwards, so a later ``import nltk`` loads
    the ordinary package. Any surprise (a different NLTK layout) falls back to the plain import.
    The price: ragcli's tokenizer is an instance of its own copy of the Punkt classes, so it is not
    picklable and not an ``isinstance`` of a later-imported ``nltk.tokenize.punkt`` class (ragcli
    does neither). Called once, from the cached ``_tokenizer``.
    """
    import importlib
    import importlib.util
    import sys
    import types

    if "nltk" in sys.modules:
        return importlib.import_module("nltk.tokenize.punkt")
    before = set(sys.modules)
    try:
        root = Path(list(importlib.util.find_spec("nltk").submodule_search_locations)[0])
        for name, path in (("nltk", root), ("nltk.tokenize", root / "tokenize")):
            stand_in = types.ModuleType(name)
            stand_in.__path__ = [str(path)]
            sys.modules[name] = stand_in
        return importlib.import_module("nltk.tokenize.punkt")
    except Exception:  # noqa: BLE001 - not installed, or laid out differently: the plain import decides
        pass
    finally:
        # Forget every nltk module loaded here (the returned one keeps what it uses), so a later
        # ``import nltk`` in this process gets the whole, ordinary package.
        for name in set(sys.modules) - before:
            if name == "nltk" or name.startswith("nltk."):
                del sys.modules[name]
    return importlib.import_module("nltk.tokenize.punkt")


@lru_cache(maxsize=1)
def _tokenizer():  # -> nltk PunktSentenceTokenizer
    punkt = _punkt()
    PunktParameters, PunktSentenceTokenizer = punkt.PunktParameters, punkt.PunktSentenceTokenizer

    params = PunktParameters()
    if PARAMS_FILE.is_file():
        data = json.loads(PARAMS_FILE.read_text(encoding="utf-8"))
        params.abbrev_types = set(data.get("abbrev_types", []))
        params.collocations = {tuple(c) for c in data.get("collocations", [])}
        # Trained sentence starters are noisy on Wikipedia text ("in", "louis"): after an
        # abbreviation they force a break ("St. | Louis"). The orthographic heuristic below
        # already breaks before capitalised words that normally appear in lower case.
        for word, flag in data.get("ortho_context", {}).items():
            params.ortho_context[word] = flag
    params.abbrev_types |= EXTRA_ABBREVIATIONS
    params.sent_starters |= SENT_STARTERS
    # single letters are initials ("J. R. R. Tolkien", "George W. Bush")
    params.abbrev_types |= set("abcdefghijklmnopqrstuvwxyz")
    lang_vars, token_cls = _untimed_classes(punkt)
    return PunktSentenceTokenizer(params, lang_vars=lang_vars(), token_cls=token_cls)


def _untimed(pattern):
    """A pattern of Punkt's own as its engine compiled it. NLTK 3.10 wraps every regular expression
    in ``redos.TimedPattern``, which runs it in the ``regex`` engine under a wall-clock timeout: a
    guard against patterns a caller supplies, paid here on each of Punkt's fixed, linear patterns,
    several times a word (~60 % of the time of splitting: cutting a 1.6 MB folder of articles into
    passages took 165 ms of CPU, mostly this). The compiled ``regex`` pattern inside it (``_rx``)
    matches exactly as the wrapper does, without the timer. An older NLTK hands plain ``re``
    patterns: used as they are. tests/test_sentences.py fails if a NLTK upgrade moves ``_rx``."""
    return getattr(pattern, "_rx", pattern)


def _untimed_classes(punkt):
    """Punkt's language variables and token class with their patterns unwrapped (``_untimed``);
    otherwise NLTK's own: the splits are the same."""
    class LangVars(punkt.PunktLanguageVars):
        __slots__ = ()
        re_boundary_realignment = _untimed(punkt.PunktLanguageVars.re_boundary_realignment)

        def _word_tokenizer_re(self):
            return _untimed(super()._word_tokenizer_re())

        def period_context_re(self):
            return _untimed(super().period_context_re())

    class Token(punkt.PunktToken):
        __slots__ = ()
        _RE_ELLIPSIS = _untimed(punkt.PunktToken._RE_ELLIPSIS)
        _RE_NUMERIC = _untimed(punkt.PunktToken._RE_NUMERIC)
        _RE_INITIAL = _untimed(punkt.PunktToken._RE_INITIAL)
        _RE_ALPHA = _untimed(punkt.PunktToken._RE_ALPHA)
        _RE_NON_PUNCT = _untimed(punkt._re_non_punct)  # (a module global in Punkt, read by this property)

        @property
        def is_non_punct(self):
            return self._RE_NON_PUNCT.search(self.type)

    return LangVars, Token


def split_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences in ``text``: Punkt's, each cut again after a Chinese or
    Japanese full stop (。！？) that more text follows. Punkt looks for a sentence end only before
    whitespace, and those languages write none, so a whole paragraph was one "sentence": FLARE
    drafted it as one, and a passage of it was cut nowhere."""
    if not text.strip():
        return []
    spans = list(_tokenizer().span_tokenize(text))
    if text.isascii() or not _CJK_STOP.search(text):
        return spans
    out = []
    for a, b in spans:
        for m in _CJK_STOP.finditer(text, a, b):
            nxt = m.end()
            while nxt < b and text[nxt].isspace():
                nxt += 1
            if nxt < b and not (m.group(0)[-1] in CLOSERS and text[nxt] in _QUOTED_BY):
                out.append((a, m.end()))
                a = nxt
        out.append((a, b))
    return out


_PLAIN_WORD = re.compile(r"[\"'(\[“‘]*([^\W\d_]{2,})\.")
_NUMBER_WORD = re.compile(r"\d+\.")  # a year or count that ends a sentence: "It was founded in 1957."
# a period after a quote or bracket ('called "Girl".', "(in 2001)."): Punkt's word tokenizer cuts the mark
# off, and a period standing alone ends a sentence (no abbreviation, initial or number before it)
_MARK_THEN_PERIOD = re.compile(r"\S*[)\";}\]*:@'({\[]\.")
# The type Punkt gives the word after a candidate (lower case) where its token is plain letters: they end
# where Punkt's word tokenizer ends a token (a space, a non-word mark, a final comma, "--" or ".."); a
# word that goes on ("Jean-Paul", "R.", "B52") is left to Punkt.
_NEXT_TYPE = re.compile(r"([^\W\d_]+)(?:\Z|[?!)\";}\]*:@'({\[]|,(?:\Z|[?!)\";}\]*:@'({\[])|--|\.\.)")


@lru_cache(maxsize=1)
def _collocation_starts() -> frozenset[str]:
    return frozenset(first for first, _ in _tokenizer()._params.collocations)


def plain_sentence_end(word: str, next_word: str) -> bool:
    """True when Punkt ends a sentence after ``word`` followed by ``next_word`` (the next
    whitespace-free stretch of text, starting with a letter or digit), deciding the plain cases
    without Punkt: a word of letters with a period that is no abbreviation, or a number with a
    period before a capitalised word, and no learned collocation across the two ("anachronism.
    What": Punkt's pair); a period after a closing quote or bracket; a word ending in ? or !. Punkt's later passes only revisit abbreviations,
    initials, numbers and collocations, so deciding these here saves running Punkt on the text around
    most candidate sentence ends (False means: ask Punkt)."""
    if not next_word[:1].isalnum():
        return False
    if word.endswith(("?", "!")):
        return word.rstrip("?!")[-1:].isalpha()
    params = _tokenizer()._params
    if _MARK_THEN_PERIOD.fullmatch(word):
        return "." not in _collocation_starts()
    number = _NUMBER_WORD.fullmatch(word)
    if number:  # Punkt's "##number##": a break unless the next word is lower case (its orthographic test)
        if not next_word[0].isupper() or word[:-1] in params.abbrev_types:
            return False
        core = "##number##"
    else:
        m = _PLAIN_WORD.fullmatch(word)
        if not m:
            return False
        core = m.group(1).lower()
        if core in params.abbrev_types:
            return False
        if core not in _collocation_starts():
            return True
        if m.start(1):  # quotes before the word: Punkt's type may hold them; its collocations are its own
            return False
    nxt = _NEXT_TYPE.match(next_word)
    return nxt is not None and (core, nxt.group(1).lower()) not in params.collocations


CJK_STOPS = "。！？｡"  # Chinese and Japanese sentence ends: never an abbreviation's, no space after them
SENTENCE_ENDS = frozenset(".!?…" + CJK_STOPS)
CLOSERS = "\"'”’)]」』）】〕》〉"  # what may follow a sentence's final mark: quotes, brackets
_QUOTED_BY = "とっ"  # 「行きます。」と言った: a quotation's own stop, inside the sentence that quotes it
_CJK_STOP = re.compile(f"[{CJK_STOPS}]+[{re.escape(CLOSERS)}]*")


def ends_with_stop(text: str) -> bool:
    """Whether ``text`` ends with a sentence's final mark (closing quotes and brackets aside): the
    cheap test, without Punkt, for "this sentence was finished"."""
    stripped = text.rstrip().rstrip(CLOSERS)
    return stripped[-1:] in SENTENCE_ENDS and bool(stripped)


def split_sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_spans(text)]


_END = re.compile(rf"[.!?…][\"')\]]*\s+\S|[{CJK_STOPS}][{re.escape(CLOSERS)}]*\s*\S|\n\s*\n")


def first_sentence_end(text: str) -> int | None:
    """Offset just past the first complete sentence of ``text``, or None if none is complete yet.

    A sentence counts as complete once text after it has started (Punkt needs the next word to
    tell "Dr. Smith" from "... the end. Then"), or at a blank line.
    """
    if not _END.search(text):
        return None
    spans = split_spans(text)
    if len(spans) >= 2:
        return spans[0][1]
    blank = re.search(r"\n\s*\n", text)
    if blank and text[: blank.start()].strip():
        return blank.start()
    return None


def train(texts: Iterable[str]) -> dict:
    """Train Punkt parameters on raw text (used to build ``punkt_en.json``)."""
    trainer = _punkt().PunktTrainer()
    trainer.INCLUDE_ALL_COLLOCS = True
    for text in texts:
        trainer.train(text, finalize=False)
    trainer.finalize_training()
    params = trainer.get_params()
    return {
        "abbrev_types": sorted(params.abbrev_types),
        "collocations": sorted([list(c) for c in params.collocations]),
        "ortho_context": {w: f for w, f in sorted(params.ortho_context.items()) if f},
    }


def _iter_corpus(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line).get("text", "")


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "train":
        raise SystemExit("usage: python -m ragcli.sentences train CORPUS.jsonl")
    data = train(_iter_corpus(Path(sys.argv[2])))
    PARAMS_FILE.parent.mkdir(parents=True, exist_ok=True)
    PARAMS_FILE.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    print(f"wrote {PARAMS_FILE} ({len(data['abbrev_types'])} abbreviations)")
