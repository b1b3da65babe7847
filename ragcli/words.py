"""Words that carry content: one stop-word list and one tokenizer for every module that compares
texts by their words (attribution, CRAG's lexical evidence, the entropy trigger, masked queries);
the words that hold a draft's low tokens; and counted nouns for messages."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Sequence

import regex

if TYPE_CHECKING:
    from ragcli.types import Sentence, Token

# Letters, digits and the marks written on them: Python's \w alone cut "दिल्ली" into "दिल" and "ली"
# (a vowel sign or virama is a mark, not a letter), and so did every word of Hindi, Tamil, Thai or
# vowel-marked Arabic: citations went by fragments ("सूरत" matched "भारत" by "रत"), masks hid pieces.
WORD = regex.compile(r"[\w\p{M}\p{N}]+")  # \p{N}: "km²" and "½" as Python's \w took them
# A word as a reader sees it: with inner apostrophes and hyphens ("O'Neill", "well-known") and a number's
# decimal point or separator ("4.5", "1,200"); what a masked query hides whole.
WHOLE_WORD = regex.compile(r"[\w\p{M}\p{N}]+(?:(?:['’-]|(?<=\p{N})[.,](?=\p{N}))[\w\p{M}\p{N}]+)*")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each every few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself just me
    may might more most much must my myself no nor not now of off on once one only onto or other our ours
    ourselves out over own same shall she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up upon us very was we were what when where
    which while who whom whose why will with would yes you your yours yourself yourselves answer question
    s t""".split()
)


# Function words of French, German, Spanish, Italian, Portuguese and Dutch that English text holds only
# inside names ("de", "la", "van"); those that are English words too (German "die", "war", "man", Spanish
# "con", "era", French "car", "par", "sans", Dutch "met", and "seine", "notre", "non") stay content words.
# For attribution, where "Le chat de la voisine est dans le jardin." shared le, de, la, est, dans with
# any French page and was cited to it.
FOREIGN_FUNCTION_WORDS = frozenset(
    """le la les un une des du et est sont au aux en dans sur pour avec ce cet cette ces qui que qu il elle ils
    elles nous vous je tu on ne pas mais ou où donc leur leurs mon ma mes ta tes sa ses nos votre vos était
    être été avoir avait ont se lui eux même aussi très sous entre vers chez der das dem des ein eine einer
    eines einem einen und ist sind waren wird werden wurde von zu zum zur im auf für an am aus bei nach über
    unter vor durch nicht auch noch nur sich er sie es wir ihr ich du sein ihre ihren seinem dass wie als
    oder aber wenn dann haben hatte el los las unos unas es del al por para su sus lo les como más pero fue
    ser está están este esta estos estas ese esa muy ya también sobre hasta desde cuando donde il lo gli uno
    di della dei degli delle da dalla nel nella sul tra fra è sono che più anche questo questa quello quella
    si ci ne suo sua suoi loro os uns umas do da das na nos nas com é são foi não mas seu ele ela eles elas
    muito já sem de het een van te dat zijn voor niet aan er om ook bij naar uit maar wordt worden werd hij
    zij ze wij ik je haar mijn""".split()
)


def is_content_word(word: str) -> bool:
    """Not a stopword, and not a single letter (single digits count)."""
    w = word.lower()
    return (len(w) > 1 or w.isdigit()) and w not in STOPWORDS


# Chinese, Japanese and Korean: Han, kana (with 々) and Hangul. Chinese and Japanese write no spaces and
# Korean glues particles to its words, so a "word" of them is a whole clause ("东京是日本的首都").
HAN_KANA_CHARS = "\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"  # for a [class]
CJK_CHARS = HAN_KANA_CHARS + "\uac00-\ud7af"  # and Hangul
CJK_RUN = regex.compile(f"[{CJK_CHARS}]+")


def cjk_pairs(run: str) -> list[str]:
    """Overlapping pairs of characters of a CJK run ("东京都" -> 东京, 京都); a run of one: itself."""
    return [run[i:i + 2] for i in range(len(run) - 1)] or [run]


def content_words(text: str, *, any_language: bool = False, as_written: bool = False) -> list[str]:
    """Lower-cased content words of ``text``, in order of first appearance, each once;
    ``any_language``: not the FOREIGN_FUNCTION_WORDS either, and a Chinese, Japanese or Korean run
    counts by its pairs of characters (``cjk_pairs``), so that a sentence shares words with the page
    it was taken from even where the two cut their clauses differently. ``as_written``: each word
    as it was first written ("Neil Peart", for a query a user sees), still once whatever its case."""
    out: dict[str, str] = {}
    for m in WORD.finditer(text if as_written else text.lower()):
        word = m.group(0).strip("_")
        w = word.lower() if as_written else word
        if any_language and not w.isascii() and CJK_RUN.search(w):
            for part in CJK_RUN.splititer(w):  # what is not CJK ("2020" of "2020年")
                if part and is_content_word(part):
                    out.setdefault(part, part)
            for run in CJK_RUN.findall(w):
                for pair in cjk_pairs(run):
                    out.setdefault(pair, pair)
            continue
        if w and is_content_word(w) and not (any_language and w in FOREIGN_FUNCTION_WORDS):
            out.setdefault(w, word)
    return list(out.values())


HAN_KANA = regex.compile(f"[{HAN_KANA_CHARS}]")  # Chinese and Japanese: written without spaces


def low_words(sentence: Sentence, low: Sequence[Token]) -> list[tuple[str, float]]:
    """The words of ``sentence`` that hold a low token, each with its lowest probability, in the
    sentence's order: a number or name the tokenizer cut into pieces ("1966" as 1, 9, 6, 6) shows
    once ("1966=0.11"), not as "6=0.31, 6=0.11". Punctuation stands alone (".=0.23"), and so does a
    token of Chinese or Japanese, written without spaces (a whole clause was one "word"; Korean spaces
    its words)."""
    flagged = {id(t) for t in low}
    words: list[list] = []  # [text, lowest probability of its flagged tokens, or None]
    joins = False  # the last token ended in a letter or digit: a piece of the same word may follow
    for t in sentence.tokens:
        text = t.text.strip()
        piece = text[:1].isalnum() and not HAN_KANA.match(text[:1])
        if not words or not text or t.text[:1].isspace() or not piece or not joins:
            words.append([text, None])
        else:
            words[-1][0] += text
        if id(t) in flagged:
            words[-1][1] = t.prob if words[-1][1] is None else min(words[-1][1], t.prob)
        joins = piece and text[-1:].isalnum() and not HAN_KANA.match(text[-1:])
    found = [(w, p) for w, p in words if p is not None and w]
    return found or [(t.text.strip(), t.prob) for t in low]  # tokens not from this sentence: as they are


def composed(text: str) -> str:
    """``text`` in Unicode's composed form (NFC): "Zu\\u0308rich", an accent written as a combining mark (macOS
    file names, some PDFs' text), is "Zürich". tantivy's tokenizer cuts words at a combining mark ("zu",
    "rich": found by neither "Zürich" nor "Zurich"), so what is indexed and what is asked are composed
    first. ASCII, and text already composed, is returned as it is (known without a copy)."""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def same_words_key(text: str) -> str:
    """``text`` as compared with another for being the same words, case and punctuation aside (a
    search or a follow-up question a small model writes again)."""
    return " ".join(WORD.findall(text.lower()))


def counted(n: int, noun: str) -> str:
    """"1 file", "2 files": a count and its noun for a message."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
