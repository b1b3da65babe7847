"""Which legacy encoding a text file that is not UTF-8 was written in.

A Windows-1252 note and a Windows-1250 or Windows-1254 one differ only in their accented letters, so a
statistical detector (charset-normalizer) finds them equally good on a short file and often picks the
wrong one: "Le café était" came back as Mac Central European ("Le cafť ťtait"), a Turkish note as
Windows-1252 ("Þubat"). Here every candidate encoding decodes a sample of the file, and each decoding
is scored the way a reader would judge it: are its letters those one language writes, and as often as
that language writes them? A naive Bayes score over the characters beyond ASCII (each one's
probability under the best-fitting language, by its frequency rank there) plus how common the
encoding is. What no language explains costs the most: letters of two scripts in one word, an upper-
case letter inside a lower-case word, a symbol stuck to a word, Cyrillic or Greek words without a
vowel, Greek without accents, Han characters read where Japanese would have kana or Korean Hangul.
"""

from __future__ import annotations

import codecs
import math
import re
from collections import Counter
from functools import lru_cache
from typing import NamedTuple

# Letters beyond ASCII each language writes, most frequent first (lower case).
LANGUAGES = {
    "french": "éàèêçùôîâûëïüœæÿ", "german": "üäöß", "spanish": "óíáéñúü", "portuguese": "ãçéáóíêâõúôà",
    "italian": "èàùòìéóí", "catalan": "àèéòíóçúïü", "dutch": "ëéïöèáüóê", "swedish": "äåöé",
    "danish_norwegian": "øåæéó", "finnish": "äöå", "icelandic": "áðíéóúýþæö", "polish": "łąęóśżćńź",
    "czech": "íáéěýřčšžůúťďň", "slovak": "áíéýčšžúľôťďňäĺŕó", "hungarian": "éáóöőüíúű",
    "romanian": "ăîâşţ", "romanian_comma": "ăîâșț", "croatian_slovene": "čšžćđ", "turkish": "ıüşçğöİâîû", "lithuanian": "ėųšžąįūčę",
    "latvian": "āīēšūņļčžķģ", "estonian": "äõüöšž",
    "russian": "оеаинтсрвлкмдпуяызьбгчйхжшюцщэфъё", "ukrainian": "оанвиітерсклудмпзяьгбчхжйшцюєїщфґ",
    "bulgarian": "аоеинтрсвлкдпмзяугбъчйшжцфхщью", "serbian": "аоиенјсртвлкдпмузбгшчцњћхфљжђџ",
    "greek": "αοιετσνηκυρπμλςάίόγέδήωθχύφβξώζψϊΐϋΰ", "hebrew": "יוהלרבתמאשנעםדקחפסכגטצןזךףץ",
    "arabic": "اليمونرتبعدسهفكقحجشصطزثخضغذظءأإآةىئؤیکپچژگ",
}


def _probabilities(letters: str) -> dict[str, float]:
    weights = [DECAY ** rank for rank in range(len(letters))]  # each letter a little rarer than the one before
    total = sum(weights)
    return {c: math.log(w / total) for c, w in zip(letters, weights)}


DECAY = 0.75
LOG_P = {name: _probabilities(letters) for name, letters in LANGUAGES.items()}
UNEXPLAINED = -7.0  # log-probability of a character no language explains
# Punctuation and symbols of 8-bit code pages that real text uses; quotes and dashes may touch a word
QUOTES = frozenset("“”‘’„‚«»‹›–—…")
DASHES = frozenset("–—")
SYMBOLS = frozenset("€£¥¢•·°¿¡©®™§¶×÷±¹²³½¼¾µ\u00a0")
BEFORE_WORD = frozenset("¿¡")
AFTER_WORD = frozenset("®™©°")
LOG_PUNCT = math.log(0.5)
# Candidates in order of how common they are among legacy files (log prior), Windows code pages first
# (Windows' supersets of Shift JIS, EUC-KR and Big5: they read everything those do, and ① or ㈱ too)
CANDIDATES = {
    "cp1252": 0.0, "cp1250": -1.0, "cp1251": -1.0, "cp932": -1.0, "gb18030": -1.0, "cp950": -1.5,
    "cp949": -1.5, "iso8859_2": -2.0, "cp1254": -2.0, "cp1253": -2.0, "cp1255": -2.0, "cp1256": -2.0,
    "koi8_r": -2.0, "euc_jp": -2.0, "cp1257": -2.5, "koi8_u": -3.0, "mac_roman": -4.0, "cp850": -4.0,
}
OTHER_PRIOR = -5.0  # an encoding the detector proposes that is not listed above
DETECTED_BONUS = 0.75  # the detector's own choice: a tie-break between readings equally good here
SAMPLE_BYTES = 16 * 1024  # enough for a verdict (a few pages of text); a big file is scored on a sample
LEAD_BYTES = 256  # ASCII kept before a line's first byte beyond it
_WORD = re.compile(r"[^\W\d_]+")
_NON_ASCII = re.compile(rb"[\x80-\xff]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_VOWELS = {"cyrillic": frozenset("аеёиоуыэюяієї"), "greek": frozenset("αάεέηήιίϊΐοόυύϋΰωώ")}
_GREEK_ACCENTED = frozenset("άέήίόύώΐΰ")


def sample(raw: bytes) -> bytes:
    """Up to SAMPLE_BYTES of the lines of ``raw`` that hold bytes beyond ASCII (what tells the
    encodings apart: a file whose first 16 KB are ASCII code or headers has them further on). Lines
    are cut at line breaks, a byte no multi-byte character of these encodings contains; a line cut
    at the limit may end inside a character, which ``_decoded`` allows."""
    if len(raw) <= SAMPLE_BYTES:
        return raw
    lines, size, pos = [], 0, 0
    while size < SAMPLE_BYTES:
        m = _NON_ASCII.search(raw, pos)
        if m is None:
            break
        # from the line's start, or a little before its first such byte where that is far into a long
        # line (a file of one line, old-Mac "\r" line ends): the ASCII before it, cut anywhere, is whole
        # characters, and the sample held nothing but ASCII from the line's start
        start = max(raw.rfind(b"\n", 0, m.start()) + 1, m.start() - LEAD_BYTES)
        end = raw.find(b"\n", m.start())
        end = len(raw) if end < 0 else end
        lines.append(raw[start:min(end, start + SAMPLE_BYTES - size)])
        size += len(lines[-1]) + 1
        pos = end + 1
    return b"\n".join(lines) if lines else raw[:SAMPLE_BYTES]


def _decoded(head: bytes, name: str) -> str:
    """``head`` decoded strictly, except that it may end in the middle of a character."""
    return codecs.getincrementaldecoder(name)("strict").decode(head, final=False)


# The mean log-probability per character beyond ASCII from which a decoding reads as text even when the
# detector refuses it (a soft hyphen in a Swedish line, a Japanese note of kanji and ①): an alphabet's
# letters score about -2 to -3.5 each, CJK characters -3.5 to -5.5 (thousands of them). Random bytes read
# at best -4.3 as a Latin code page and -5.45 as a CJK one (600 samples of 30 to 2,000 bytes).
TEXT_FLOOR = -4.0
CJK_TEXT_FLOOR = -5.0


class Reading(NamedTuple):
    encoding: str
    mean: float  # log-probability per character beyond ASCII
    floor: float  # what ``mean`` must reach to read as text without the detector's word (its script's)

    @property
    def reads_as_text(self) -> bool:
        return self.mean >= self.floor


def best_encoding(raw: bytes, extra: tuple[str, ...] = ()) -> Reading | None:
    """The encoding whose decoding of ``raw`` reads most like text, with that decoding's mean log-
    probability per character beyond ASCII and the floor for its script; None if no candidate decodes it."""
    head = sample(raw)
    scored = []
    for order, name in enumerate([*CANDIDATES, *(e for e in extra if e not in CANDIDATES)]):
        try:
            text = _decoded(head, name)
        except (UnicodeDecodeError, LookupError):
            continue
        fit = score(text, name)
        beyond = [c for c in text if ord(c) > 127]
        cjk = sum(1 for c in beyond if _script(c) == "cjk")
        floor = CJK_TEXT_FLOOR if beyond and cjk >= len(beyond) / 2 else TEXT_FLOOR
        prior = CANDIDATES.get(name, OTHER_PRIOR) + (DETECTED_BONUS if name in extra else 0.0)
        scored.append((fit + prior, -order, Reading(name, fit / (len(beyond) or 1), floor)))
    if not scored:
        return None
    return max(scored)[2]


def _script(c: str) -> str:
    o = ord(c)
    if o < 0x250:
        return "latin"
    if 0x370 <= o < 0x400:
        return "greek"
    if 0x400 <= o < 0x530:
        return "cyrillic"
    if 0x590 <= o < 0x600:
        return "hebrew"
    if 0x600 <= o < 0x700 or 0xFB50 <= o <= 0xFEFF:
        return "arabic"
    if (_kana(o) or _han(o) or _hangul(o) or 0x3000 <= o <= 0x303F or 0x3130 <= o <= 0x318F or 0xFF00 <= o <= 0xFFEF
            or 0x2460 <= o <= 0x24FF or 0x3200 <= o <= 0x33FF):  # ① ㈱ ㎡: the symbols of CJK code pages
        return "cjk"
    return "other"


def _kana(o: int) -> bool:
    return 0x3040 <= o <= 0x30FF


def _halfwidth_kana(o: int) -> bool:
    return 0xFF66 <= o <= 0xFF9F


_VOICED = frozenset("ｳｶｷｸｹｺｻｼｽｾｿﾀﾁﾂﾃﾄﾊﾋﾌﾍﾎ")  # the half-width kana that take ﾞ
_SEMI_VOICED = frozenset("ﾊﾋﾌﾍﾎ")  # ... and ﾟ
_NO_START = frozenset("ｧｨｩｪｫｬｭｮｯｰﾞﾟ")  # small kana, the long vowel mark and the two voicing marks


def _odd_halfwidth(word: str) -> bool:
    """Half-width kana no word is written in: starting with a small kana or a mark, or a voicing mark
    after a kana that takes none ("ﾃﾞｰﾀ" is a word, "ｯﾞｱ" none)."""
    if word[0] in _NO_START:
        return True
    return any((c == "ﾞ" and p not in _VOICED) or (c == "ﾟ" and p not in _SEMI_VOICED)
               for p, c in zip(word, word[1:]))


def _han(o: int) -> bool:
    return 0x4E00 <= o <= 0x9FFF


def _hangul(o: int) -> bool:
    return 0xAC00 <= o <= 0xD7AF  # syllables: text is written in them, not in loose jamo


def _lower(c: str) -> str:
    low = c.lower()
    return low if len(low) == 1 else c  # "İ".lower() is two characters


def score(text: str, encoding: str = "") -> float:
    """Log-likelihood of ``text``'s characters beyond ASCII being text (higher is more plausible)."""
    spots = [(i, c) for i, c in enumerate(text) if ord(c) > 127]
    controls = len(_CONTROL.findall(text))  # no text file holds these; binary data does
    if not spots:
        return controls * UNEXPLAINED
    bad = _odd_positions(text)
    total = controls * UNEXPLAINED
    letters = []
    cjk: list[str] = []
    for i, c in spots:
        if i in bad:
            total += UNEXPLAINED
        elif _script(c) == "cjk":
            cjk.append(c)
        elif c.isalpha():
            letters.append(_lower(c))
        elif _between_symbols(text, i):
            total += UNEXPLAINED  # "≈—”«·": a run of symbols is no punctuation
        elif c == "\u00ad" and 0 < i < len(text) - 1 and text[i - 1].isalpha() and text[i + 1].isalpha():
            total += LOG_PUNCT  # a soft hyphen, where a word may break
        elif c in DASHES and not _dash_fits(text, i):
            total += UNEXPLAINED  # "–uro": a dash opens no word
        elif c in QUOTES or (c in SYMBOLS and _symbol_fits(text, i, c)):
            total += LOG_PUNCT
        else:
            total += UNEXPLAINED
    if letters:  # the one language that explains them best, among those the encoding can write
        counts = Counter(letters).items()
        total += max((sum(n * probs.get(c, UNEXPLAINED) for c, n in counts) for name, probs in LOG_P.items()
                      if _writes(encoding, name)), default=UNEXPLAINED * len(letters))
    if cjk:
        total += _cjk_log_p(encoding, cjk)
    return total


@lru_cache(maxsize=None)
def _writes(encoding: str, language: str) -> bool:
    """Whether ``encoding`` can write ``language`` (85 % of its letters). Nobody writes Romanian or
    Turkish in Windows-1252: î, â or ü read in it are French, German, Portuguese or Swedish. Any
    language when the encoding is not known here."""
    if not encoding:
        return True
    letters = LANGUAGES[language]
    try:
        writable = sum(1 for c in letters if _encodable(c, encoding))
    except LookupError:
        return True
    return writable >= 0.85 * len(letters)


def _encodable(c: str, encoding: str) -> bool:
    try:
        c.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _cjk_log_p(encoding: str, chars: list[str]) -> float:
    """Of a decoding's CJK characters. Japanese writes kana in nearly every sentence, Korean writes
    Hangul, Chinese neither: a decoding without what its language writes (or with what it does not)
    is most likely another one read in the wrong code page. Among Han characters, those of the
    language's first level (the 3,000-odd in everyday use, where its national code page puts them
    first) are common, the others rare: "①日時 ㈱山田商事" read as GB18030 is "嘆擔帪 噴嶳揷彜帠". Hangul
    likewise: Shift JIS read as cp949 is all syllables, but rare ones ("됵땉궼뽜")."""
    counts = Counter(chars)
    kana = sum(n for c, n in counts.items() if _kana(ord(c)) or _halfwidth_kana(ord(c)))
    hangul = sum(n for c, n in counts.items() if _hangul(ord(c)))
    japanese = encoding in ("shift_jis", "euc_jp", "cp932")
    han = sum(n for c, n in counts.items() if _han(ord(c)))
    if encoding in ("euc_kr", "cp949") and hangul < 0.9 * (hangul + han + kana):  # of the letters: not "１", "："
        return UNEXPLAINED * len(chars)
    if not (japanese or encoding in ("euc_kr", "cp949")) and (kana or hangul):
        return UNEXPLAINED * len(chars)  # kana or Hangul read in a Chinese code page
    total = 0.0
    for c, n in counts.items():
        o = ord(c)
        if _kana(o):
            p = -3.5
        elif _halfwidth_kana(o):  # ｶﾀｶﾅ: Japanese of older systems (Shift JIS' single bytes)
            p = -4.0 if japanese else UNEXPLAINED
        elif 0xFF01 <= o <= 0xFF5E or o == 0x3000:  # full-width letters, digits, ：（ ）and the ideographic space
            p = -4.0
        elif _hangul(o):  # the 2,350 syllables of KS X 1001 are those Korean text uses; cp949's other 8,822 are rare
            p = -3.5 if _common_hangul(c) else UNEXPLAINED
        elif _han(o):
            p = -4.5 if _common_han(c, encoding) else UNEXPLAINED
            p -= 0.5 if japanese and not kana else 0.0  # a note in kanji alone is Japanese too, if less often
        else:
            p = -5.5  # CJK punctuation and symbols: 。「」①㈱
        total += n * p
    return total


@lru_cache(maxsize=16384)
def _common_hangul(c: str) -> bool:
    """One of KS X 1001's 2,350 syllables: two bytes in EUC-KR (Python writes the others as 8-byte
    make-up sequences)."""
    try:
        return len(c.encode("euc_kr")) == 2
    except UnicodeEncodeError:
        return False


# Where each family's national code page puts its first-level Han characters: (codec, lead bytes)
_FIRST_LEVEL = {"japanese": ("cp932", 0x88, 0x9F), "simplified": ("gb2312", 0xB0, 0xD7),
                "traditional": ("big5", 0xA4, 0xC6)}


@lru_cache(maxsize=8192)
def _common_han(c: str, encoding: str) -> bool:
    family = ("japanese" if encoding in ("shift_jis", "euc_jp", "cp932")
              else "traditional" if encoding in ("big5", "cp950", "big5hkscs") else "simplified")
    if encoding in ("euc_kr", "cp949"):
        return False  # Hanja: rare in Korean text
    codec, low, high = _FIRST_LEVEL[family]
    try:
        raw = c.encode(codec)
    except UnicodeEncodeError:
        return False
    return len(raw) == 2 and low <= raw[0] <= high


def _between_symbols(text: str, i: int) -> bool:
    """Whether a neighbour of the symbol at ``i`` is another symbol beyond ASCII."""
    return any(0 <= j < len(text) and ord(text[j]) > 127 and not text[j].isalnum() and not text[j].isspace()
               for j in (i - 1, i + 1))


def _dash_fits(text: str, i: int) -> bool:
    """A dash between spaces, digits ("1990–95") or words ("well—known"), not glued to one side only."""
    before = text[i - 1] if i else " "
    after = text[i + 1] if i + 1 < len(text) else " "
    return (before.isalnum() and after.isalnum()) or not (before.isalpha() or after.isalpha())


def _symbol_fits(text: str, i: int, c: str) -> bool:
    """A symbol is not stuck to a word ("£ukasz", "W³aœciwie"), unless it is one that goes there."""
    before = text[i - 1] if i else " "
    after = text[i + 1] if i + 1 < len(text) else " "
    if before.isalpha() and c not in AFTER_WORD:
        return False
    return not (after.isalpha() and c not in BEFORE_WORD)


def _odd_positions(text: str) -> set[int]:
    """Positions of characters beyond ASCII in words no language writes."""
    bad: set[int] = set()
    greek_words = greek_accented = 0
    greek_spots: list[int] = []
    for m in _WORD.finditer(text):
        word, start = m.group(), m.start()
        spots = [start + k for k, c in enumerate(word) if ord(c) > 127]
        if not spots:
            continue
        scripts = {_script(c) for c in word}
        if len(scripts) > 1 and "cjk" not in scripts:
            bad.update(spots)  # "Crиme": two alphabets in one word
            continue
        if any(_halfwidth_kana(ord(c)) for c in word) and ("latin" in scripts or _odd_halfwidth(word)):
            bad.update(spots)  # "aｶb", "ｯﾞｱ": no Japanese word (random bytes read as Shift JIS)
            continue
        if any(text[k].isupper() and k > start and text[k - 1].islower() for k in spots):
            bad.update(spots)  # "trŤs"
            continue
        (script,) = scripts if len(scripts) == 1 else ("cjk",)
        low = word.lower()
        if script in _VOWELS and len(word) >= 3 and not any(c in _VOWELS[script] for c in low):
            bad.update(spots)  # "ргзъд": no Slavic or Greek word goes without a vowel
        elif script == "greek":
            if "ς" in low[:-1]:
                bad.update(spots)  # final sigma inside a word
            elif len(word) >= 4:
                greek_words += 1
                greek_accented += any(c in _GREEK_ACCENTED for c in low)
                greek_spots += spots
    if greek_words >= 3 and not greek_accented:
        bad.update(greek_spots)  # modern Greek puts an accent on nearly every word of two syllables
    return bad
