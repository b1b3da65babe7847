"""A REPL conversation: which questions are follow-ups, the thread of exchanges a follow-up carries,
and the subject its searches go by. No I/O: the REPL asks and prints.

A follow-up ("When was he born?") is asked with the exchanges of its thread (the prompt: the model
reads them) and searched with the question and the thread's subject (names, never the rest of an
earlier answer: cut to the query's budget, an answer on a band's drummers searched "diabetes" and
"touring"). Any other question is asked alone and starts a thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragcli.sentences import split_sentences
from ragcli.words import WORD, content_words, is_content_word

THREAD_EXCHANGES = 3  # the earlier exchanges a follow-up's prompt carries, at most
SUBJECT_WORDS = 12  # content words of the subject a follow-up searches with, at most
SHORT_ANSWER_WORDS = 12  # an answer of one sentence this short names the subject ("Christer Fuglesang.")

# Words that point back at the previous exchange: personal pronouns (not "that" or "there", mostly
# relative or existential: "the first person that walked on the Moon", "how many moons are there")
REFERRING = frozenset("he him his she her hers it its they them their theirs former latter".split())
ONE_PERSON = (frozenset("he him his".split()), frozenset("she her hers".split()))
# "And Christer Fuglesang?", "What about 1990?", "Same for the Rolling Stones?", "Tell me more."
_ELLIPTICAL_START = re.compile(r"^\s*(?:and|but|also|what about|how about|same(?!-)|tell me more|are you sure|why not)\b",
                               re.IGNORECASE)
# "that" standing for what was said: "Is that right?", "When did that happen?", "What year was that?"
_THAT = re.compile(r"^\s*(?:is|was|isn't|wasn't)\s+that\b|\b(?:did|does)\s+that\b|\bthat\s+(?:many|much)\b"
                   r"|\bthat\s*[?.!]*\s*$",
                   re.IGNORECASE)
# "Which one died first?", "How old was the youngest one?": a "one" standing for something earlier
# (see ``_elliptical_one`` for the ones that do not)
_ONE = re.compile(r"\b(?:which|that|this|the other|the \w+) ones?\b", re.IGNORECASE)
# what "one" is, said in the question: "which one of the Beatles", "the number one single", "the first
# one to climb Everest" (not "one of them", "one of the two": those are the earlier exchange's)
_ONE_SAID = re.compile(r"\bones?\s+of\s+(?!them\b|these\b|those\b|us\b|both\b|the\s+(?:two|three|four|five|other)"
                       r"\s*(?:\b(?:is|was|are|were|has|had|did|won|sold|came|died)\b|[?,.!:]|$))"
                       r"|\bnumber\s+one\b|\bones?\s+(?:to|who)\b", re.IGNORECASE)
# "Which Beatles album is the best one?": "which" and a word of its own say what "one" is
_WHICH_NOUN = re.compile(r"^\s*which\s+(?:\w+\s+){1,3}(?:is|are|was|were)\s+the\s+\w+\s+ones?\b", re.IGNORECASE)
# "Is the same true for Sweden?", "Did the same happen to Paul and Ringo?": "the same" as a thing of its own
_SAME_THING = re.compile(r"\bthe same\s+(?:thing\s+)?(?:true|false|happen\w*|appl\w+|go(?:es)?|hold\w*|for|about)\b",
                         re.IGNORECASE)
# "Are they the same?", "Is it the same thing?" (unless the question joins the two: "Are Holland and the
# Netherlands the same?", or says what it is the same as: "Is Mercury the same as quicksilver?")
_SAME_END = re.compile(r"\bthe same(?:\s+thing)?\s*[?.!]*\s*$", re.IGNORECASE)
# "Was Haydn born in the same city?": one thing named, the other earlier ("Do identical twins have the same
# fingerprints?" names none, "Were Bach and Handel born in the same year?" both)
_SAME_NOUN = re.compile(r"\bthe same\s+(?!as\b)\w+", re.IGNORECASE)
# "Who was the youngest?", "Which is bigger?", "Who came second?": "which" or "who", a verb, and the
# comparison alone, its terms earlier (not "Which river is the longest?", "Who invented the computer?")
_COMPARED = re.compile(r"^\s*(?:which|who)\s+(?:is|was|are|were|came|comes|died|won|did|does|finished|sold)\s+"
                       r"(?:the\s+)?(?:\w+est|bigger|smaller|older|younger|taller|shorter|longer|larger|higher|lower|"
                       r"faster|slower|richer|heavier|earlier|later|first|second|third|last|next|better|worse|more|less)"
                       r"\s*[?.!]*\s*$", re.IGNORECASE)
# "it" that stands for nothing earlier. Always: "Is it true that…", "Is it safe to…", "How long does it
# take to…", "What does it mean to…". In a question that names what it asks about: "Is it true Keith
# Moon died in 1978?", "How far is it from London to Paris?", "Was it Edison who…" ("Is it true?" and
# "Is it cold?" alone: the earlier answer, the earlier place)
# (a "to" with a verb and more after it: "How long does it take to boil an egg?"; not "How long did it take
# to build?" or "What does it mean to the locals?", whose "it" is the earlier subject)
_TO_CLAUSE = r"\bto\s+(?!the\b|a\b|an\b|his\b|her\b|their\b|its\b|this\b|that\b|my\b|our\b|your\b)\w+\s+\w+"
_DUMMY_IT = re.compile(r"\bit\s+(?:is\s+|was\s+)?(?:true|false|possible|likely|the case)\s+(?:that|if|whether)\b"
                       r"|\bit\s+(?:is\s+|was\s+)?(?:true|false|possible|likely|safe|necessary|hard|easy|worth|better|"
                       r"legal|illegal|dangerous|expensive|cheap)\s+(?:for\s+\w+\s+)?" + _TO_CLAUSE +
                       r"|\bit\s+(?:takes?|took|means?|meant|costs?|cost)\b(?=.*" + _TO_CLAUSE + ")"
                       r"|\bfar\s+is\s+it\s+(?:from\b.*\bto|between)\b", re.IGNORECASE)
_DUMMY_IT_NAMED = re.compile(r"\bit\s+(?:is\s+|was\s+)?(?:true|the case|possible|likely)\b"
                             r"|\b(?:is|was|does|did|will)\s+it\s+(?:like|cold|hot|warm|get|rain\w*|snow\w*)\b"
                             r"|\b(?:cold|hot|warm|like|hard|easy)\s+(?:is|was|does|did)\s+it\b"
                             r"|^\s*(?:was|is)\s+it\s+(?-i:[A-Z])\w*.*\b(?:who|that)\b", re.IGNORECASE)
# "the libtasn1 library and its functions": an "its" that stands for what the question itself names with an
# article, a name in lower case that ``_named_before`` does not see. Not "their" ("When was the album released
# and their tour?" is the Beatles of the exchange before), nor "his", "her" ("the king and his sons" may be the
# earlier exchange's king)
_OWN_POSSESSIVE = re.compile(r"\b(?:the|a|an|this|these|those)\s+(?:[\w'-]+\s+){0,2}[\w'-]+\s+(?:and|or|with)\s+"
                             r"(?P<pronoun>its)\b", re.IGNORECASE)
_DETERMINERS = frozenset("the this these those".split())  # not "that": mostly relative ("the film that won")
_CLAUSE_BREAK = re.compile(r"[,;:]|\b(?:and|but|so|then)\b", re.IGNORECASE)
# capitalised, and no name: a date's month or day ("born on 8 March 1957")
_CALENDAR = frozenset("january february march april may june july august september october november december "
                      "monday tuesday wednesday thursday friday saturday sunday".split())


@dataclass
class Exchange:
    question: str
    answer: str
    sources: list = field(default_factory=list)
    strategy: str = ""
    citations: tuple = ()  # per sentence: start, end, indices into sources (ragcli.attribution)
    subject: str = ""  # what it was about, for a follow-up's searches (``Conversation.remember``)
    follow_up: bool = False  # asked with the exchanges of its thread
    stop_reason: str = "end"  # why the answer ended ("max_tokens": cut, shown so by /save as on screen)


def is_follow_up(question: str, earlier: str = "") -> bool:
    """Whether ``question`` leans on the previous exchange (``earlier``: its question and answer): a
    personal pronoun ("When was he born?"), unless a name of the question's own stands before it in an
    earlier clause ("What instrument did Keith Moon play, and when was he born?"); an elliptical
    start ("And Christer Fuglesang?") or reference ("Which one is older?", "Is the same true for
    Sweden?"; not "Which Beatles album is the best one?" nor "Are Lake Huron and Lake Michigan at the
    same elevation?"); no content word at all
    ("Why?", "And then?"); or a definite reference to something the exchange named ("Did the album
    win a Grammy?" after a question on an album), unless the question says which ("the capital of
    France", "the book Dune")."""
    words = list(WORD.finditer(question))
    groups = _name_groups(question)
    own = groups > 0 or _has_number(question)  # it names what it asks about
    pronoun = next((i for i, m in enumerate(words) if _refers(question, m, own)), None)
    if pronoun is not None and _named_choice(question):  # "Who was older when they died, Mozart or Schubert?"
        pronoun = None
    if pronoun is not None and not _named_before(question, words, pronoun) or _ELLIPTICAL_START.search(question):
        return True
    if _THAT.search(question) or _elliptical_one(question) or _SAME_THING.search(question):
        return True
    if _SAME_END.search(question) and groups < 2 and not re.search(r"\band\b", question, re.IGNORECASE):
        return True
    if _SAME_NOUN.search(question) and groups == 1 and not _SAME_END.search(question) or _COMPARED.search(question):
        return True
    if not content_words(question):
        return True
    return bool(earlier) and _refers_back(question, set(content_words(earlier)))


def _refers(question: str, m: re.Match, own: bool) -> bool:
    """Whether the word ``m`` is a pronoun standing for something earlier: not a dummy "it" (see
    ``_DUMMY_IT``), nor the "It" of a title ("Who wrote Let It Be?": capitalised inside the question),
    nor an "its" after a thing the question names ("the libtasn1 library and its functions")."""
    word = m.group(0)
    if word.lower() not in REFERRING:
        return False
    if word == "It" and not _starts_sentence(question, m.start()):
        return False
    if any(o.start("pronoun") == m.start() for o in _OWN_POSSESSIVE.finditer(question)):
        return False
    dummy = [*_DUMMY_IT.finditer(question), *(_DUMMY_IT_NAMED.finditer(question) if own else ())]
    return not any(d.start() <= m.start() < d.end() for d in dummy)


def _elliptical_one(question: str) -> bool:
    """A "one" that stands for something earlier: not when the question says what it is ("which one
    of the Beatles", "the number one single", "Which Beatles album is the best one?") or offers the
    choice ("Which one is taller, Everest or K2?", "Tea or coffee: which one…"; not "…, this one or
    the first one?")."""
    if not _ONE.search(question) or _ONE_SAID.search(question) or _WHICH_NOUN.search(question):
        return False
    cut = re.search(r"[,:]", question)
    if cut is None:
        return True
    choices = [question[cut.end():]] + ([question[:cut.start()]] if cut.group(0) == ":" else [])
    return not any(re.search(r"\bor\b", part, re.IGNORECASE) and not _ONE.search(part) for part in choices)


def _named_choice(question: str) -> bool:
    """Whether the question ends by naming the things it asks about: ", Mozart or Schubert?"."""
    cut = re.search(r"[,:]([^,:]*)$", question)
    if cut is None or re.search(r"\b(?:or|and)\b", cut.group(1), re.IGNORECASE) is None:
        return False
    return len(re.findall(r"(?-i:[A-Z])\w+(?:\s+(?-i:[A-Z])\w+)*", cut.group(1))) >= 2


def _has_number(question: str) -> bool:
    return any(c.isdigit() for c in question)


def _name_groups(question: str) -> int:
    """How many names the question gives ("Lake Huron and Lake Michigan": two; "Rush and Yes": two,
    a capitalised word within the question being a name even when it is a common word elsewhere)."""
    named = set(names(question).split())
    groups, inside = 0, False
    for m in WORD.finditer(question):
        word = m.group(0)
        if word.lower() in _CALENDAR:  # "in August": no name of its own
            inside = False
            continue
        if word in named or len(word) > 1 and word[:1].isupper() and not _starts_sentence(question, m.start()):
            groups += not inside
            inside = True
        else:
            inside = False
    return groups


def _named_before(question: str, words: list[re.Match], i: int) -> bool:
    """Whether the pronoun ``words[i]`` refers to a name of the question's own: a capitalised content
    word that starts no sentence ("Great. Where did he study?", "Thanks! And when…": capitalised
    anyway), with a clause break between it and the pronoun ("…did Keith Moon play, and when was he
    born?"; not "Did NASA fund his flight?", where "his" is the earlier exchange's)."""
    end = words[i].start()
    for m in words[:i]:
        word = m.group(0)
        if not (word[:1].isupper() and is_content_word(word)) or _starts_sentence(question, m.start()):
            continue
        if _CLAUSE_BREAK.search(question, m.end(), end):
            return True
    return False


def _starts_sentence(text: str, at: int) -> bool:
    before = text[:at].rstrip()
    return not before or before[-1] in ".!?…"


def _refers_back(question: str, named: set[str]) -> bool:
    """A determiner, then within two words ("the album", "the first album") a word the earlier
    exchange used, not itself a name, and not followed by what says which one ("of France", or a
    name: "the book Dune")."""
    words = WORD.findall(question)
    for i, det in enumerate(words):
        if det.lower() not in _DETERMINERS:
            continue
        for j in (i + 1, i + 2):
            if j >= len(words) or words[j][:1].isupper():
                break
            word = words[j].lower()
            if word in named or word.rstrip("s") in named or word + "s" in named:
                following = words[j + 1] if j + 1 < len(words) else ""
                if following.lower() != "of" and not following[:1].isupper():
                    return True
                break
    return False


def _one_person(words: set[str]) -> bool:
    """Whether a question's pronouns point at one person: one gender's ("he … his", "she … her"), no
    "it" or "they" beside them, and not "he" and "him" ("Did he fly with him?" is two people; "her" is
    as often "she"'s own: "Where did she spend her childhood?")."""
    male, female = (words & forms for forms in ONE_PERSON)
    return (bool(male) != bool(female) and not {"he", "him"} <= male
            and not words & (REFERRING - ONE_PERSON[0] - ONE_PERSON[1]))


def names(text: str, *, starters: bool = False) -> str:
    """The names in ``text`` ("Christer Fuglesang", "NASA"): what a pronoun in the next question can
    stand for. Capitalised content words, but not a sentence's first word unless a capitalised word
    follows it ("Christer Fuglesang." yes, "However, he…" no) or ``starters`` (an answer that is a
    name: "Rush."), nor a month or day."""
    words = list(WORD.finditer(text))
    out = []
    for k, m in enumerate(words):
        word = m.group(0)
        if not word[:1].isupper() or not is_content_word(word) or word.lower() in _CALENDAR:
            continue
        nxt = words[k + 1] if k + 1 < len(words) else None
        joined = nxt is not None and not text[m.end():nxt.start()].strip()  # "Christer Fuglesang", not "However, NASA"
        follower = nxt.group(0) if joined else ""
        if not starters and _starts_sentence(text, m.start()) and not (follower[:1].isupper()
                                                                      and is_content_word(follower)):
            continue
        out.append(word)
    return " ".join(out)


def named_in_answer(answer: str) -> str:
    """The names an answer gives for the thread's subject: those of a short answer, one sentence of a
    few words ("Christer Fuglesang.", "Rush."), which is what a next "he" or "it" means. A longer one
    is a description, whose names are details (and a small model's inventions: its answer to "Tell
    me about Neil Peart." had him born in "Stratford-upon-Avon, England", and "Where was he born?"
    searched for that)."""
    short = len(answer.split()) <= SHORT_ANSWER_WORDS and len(split_sentences(answer)) <= 1
    return names(answer, starters=True) if short else ""


def subject(*texts: str, n: int = SUBJECT_WORDS) -> str:
    """The content words of ``texts``, in order, each once, at most ``n``, as first written."""
    return " ".join(content_words(" ".join(texts), as_written=True)[:n])


class Conversation:
    """The thread a follow-up belongs to: the exchanges since the last question asked alone, at most
    THREAD_EXCHANGES of them (the third question of "Who was the first Swede in space?", "When was
    he born?", "Where did he study?" still knows who "he" is)."""

    def __init__(self) -> None:
        self.thread: list[Exchange] = []

    def clear(self) -> None:
        self.thread = []

    def texts(self, question: str) -> tuple[str, str | None]:
        """The question as the engine gets it, and what its searches start from (None: the question).
        A follow-up carries its thread's exchanges and searches with the thread's subject; a question
        that names its own subject goes alone (the earlier topic in its text outweighed the new one in
        every search: "When was Neil Peart born?" after a question on Ulf Merbold was answered from
        Sigmund Jähn's page)."""
        prev = self.thread[-1] if self.thread else None
        if not prev or not is_follow_up(question, f"{prev.question} {prev.answer}"):
            return question, None
        from ragcli.prompts import follow_up_request

        return (follow_up_request(question, [(e.question, e.answer) for e in self._read_by(question)]),
                f"{question} {self._carried(question)}".strip())

    def _carried(self, question: str) -> str:
        """What of the thread's subject a follow-up searches with: all of it, but for one that asks the
        same of a subject it names ("And Sentinel?", "What about Sigmund Jähn?"): without the names the
        thread's answers gave, which answered the question for the earlier subject, not this one.
        Searched with them it found the earlier page again ("And Sentinel?" after "Who owns the
        dashboard?" "Loki." searched "Loki" and answered "Loki." from the same page). The names its
        questions asked about stay: "Which one is older?" may come next."""
        carried = self.thread[-1].subject
        replaced = self._replaced(question)  # "Where was he born?" after "What about Christer Fuglesang?"
        if replaced:
            return " ".join(w for w in carried.split() if w.lower() not in replaced)
        words = {w.lower() for w in WORD.findall(question)}
        refers = bool(words & REFERRING)  # "And when did he fly with NASA?"
        if refers or not (_ELLIPTICAL_START.match(question) and names(question)):
            return carried
        asked = {w.lower() for e in self.thread for w in names(e.question).split()}
        answered = {w.lower() for e in self.thread for w in named_in_answer(e.answer).split()} - asked
        return " ".join(w for w in carried.split() if w.lower() not in answered)

    def _replaced(self, question: str) -> set[str]:
        """The names (lower case) that one person's pronoun in ``question`` no longer stands for: those
        the thread asked about before its last exchange asked the same of a new name ("What about
        Christer Fuglesang?" after questions on Ulf Merbold: a "he" next is Fuglesang). SmolLM2, searching
        and reading both, answered "Ulf Merbold was born in Stockholm" (Fuglesang's city). Empty for any
        other question or last exchange."""
        last = self.thread[-1]
        new = {w.lower() for w in names(last.question).split()}
        if (len(self.thread) < 2 or not new or not _ELLIPTICAL_START.match(last.question)
                or not _one_person({w.lower() for w in WORD.findall(question)})):
            return set()
        return {w.lower() for e in self.thread[:-1] for w in names(e.question).split()} - new

    def _read_by(self, question: str) -> list[Exchange]:
        """The exchanges a follow-up's prompt carries: the thread, or from the exchange that named the
        person its pronoun stands for (``_replaced``), the earlier person's exchanges left out."""
        return self.thread[-1:] if self._replaced(question) else self.thread

    def remember(self, exchange: Exchange, follow_up: bool) -> None:
        """Keep ``exchange`` (answered, or cancelled with no answer) for the follow-ups to come. Its
        subject: a question asked alone, its topic; a follow-up, the names it gives, then the thread's
        subject (first, so that a long answer never pushes out whom the thread is about); and either,
        the names a short answer gave (``named_in_answer``)."""
        prev = self.thread[-1] if follow_up and self.thread else None
        given = named_in_answer(exchange.answer)
        if prev is None:
            from ragcli.prompts import request_topic

            exchange.subject = subject(request_topic(exchange.question), given)
            self.thread = [exchange]
        else:
            exchange.subject = subject(names(exchange.question), self._carried(exchange.question), given)
            self.thread = (self._read_by(exchange.question) + [exchange])[-THREAD_EXCHANGES:]
