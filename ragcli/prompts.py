"""Every prompt template, as plain functions, in one place.

Each function returns a ``Prompt``: the prompt in parts (instruction, few-shot exemplars, documents,
the request, the answer so far), which *is* its completion-style text (a ``str``) and which a chat
model's generator renders through the model's own chat template instead (``generation/chat.py``):
the instruction and the documents as the system turn, exemplars as earlier turns, the request as
the last user turn, the answer so far after the assistant header. The completion text's order is
[instruction, exemplars, documents, request, answer so far] (the chat form's: [instruction,
documents, exemplars, request, answer so far]): what changes least comes first (the KV cache reuses
the longest common prefix) and documents sit before the input as in FLARE's official code.

The default model is a 270M *base* model: completion-style prompts with short exemplars and clear
stop sequences.
"""

from __future__ import annotations

import re
from typing import ClassVar, Sequence

from ragcli.types import Document


class Prompt(str):
    """A prompt's completion-style text, with its parts kept for chat templates.

    Completion text: ``instruction`` + each exemplar as "{input}\n{cue} {output}\n\n" + the
    documents + "{request}\n{cue}" + ``continuation`` (verbatim: it carries its own leading space).
    In chat form the cue labels nothing, so it is dropped, unless ``cue_in_chat`` (a format whose
    answer starts with it, like self-ask's "Are follow up questions needed here:").
    """

    instruction: str
    exemplars: tuple[tuple[str, str], ...]
    documents: tuple
    request: str
    cue: str
    continuation: str
    cue_in_chat: bool
    PARTS: ClassVar[tuple[str, ...]] = ("instruction", "exemplars", "documents", "request", "cue", "continuation",
                                        "cue_in_chat")  # the constructor's arguments, carried by extended()

    def __new__(cls, *, instruction: str = "", exemplars: Sequence[tuple[str, str]] = (),
                documents: Sequence = (), request: str, cue: str, continuation: str = "",
                cue_in_chat: bool = False) -> "Prompt":
        shots = "".join(f"{q}\n{cue} {a}\n\n" for q, a in exemplars)
        text = f"{instruction}{shots}{format_documents(documents)}{request}\n{cue}{continuation}"
        self = super().__new__(cls, text)
        self.instruction, self.exemplars, self.documents = instruction, tuple(exemplars), tuple(documents)
        self.request, self.cue, self.continuation, self.cue_in_chat = request, cue, continuation, cue_in_chat
        return self

    def extended(self, text: str) -> "Prompt":
        """The same prompt with ``text`` added to the answer so far."""
        parts = {name: getattr(self, name) for name in self.PARTS}
        return Prompt(**{**parts, "continuation": self.continuation + text})

    def answer_prefix(self) -> str:
        """What the assistant has written so far, in chat form."""
        if self.cue_in_chat:
            return f"{self.cue}{self.continuation}"
        return self.continuation.lstrip()


def starts_answer(prompt: str) -> bool:
    """Whether ``prompt`` asks for the start of an output: a Prompt with nothing after its cue yet, or
    whose text so far ends with the conclusion's cue ("… So the answer is:"), which a phrase must follow."""
    if not isinstance(prompt, Prompt):
        return False
    so_far = prompt.continuation.strip()
    return not so_far or so_far.endswith(CONCLUSION)


def _shots(text: str, cue: str = "Answer:") -> tuple[tuple[str, str], ...]:
    """Exemplars written as completion text ("Question: …\nAnswer: …\n\n" blocks) as (input, output) pairs."""
    pairs = []
    for block in text.strip().split("\n\n"):
        head, _, tail = block.partition(f"\n{cue} ")
        pairs.append((head, tail))
    return tuple(pairs)

# A line that starts "[n]" is the model listing the prompt's documents ("\n[4] List of hoards in Great
# Britain: …" stayed in a flare-instruct answer, its "[4]" another page than the Sources' [4]): any n a
# prompt numbers ends it; "[2021-03-04 02:00]" of a log quoted from a note does not.
ANSWER_STOP = ("\nQuestion:", "\nAnswer:", "\n\n", "\nDocuments:", *(f"\n[{n}]" for n in range(1, 21)),
               "<end_of_turn>", "<eos>")

# Answer first, then one sentence of explanation. Measured on 20 HotpotQA questions with the
# gold paragraphs, the bundled 270M model scored F1 24 with this format against 10 with
# chain-of-thought exemplars ("... So the answer is X"), which it parrots instead of following.
INSTRUCTION = "Answer each question with a short phrase, then one sentence of explanation.\n\n"

EXEMPLARS = (
    "Question: In which country is the Eiffel Tower?\n"
    "Answer: France. The Eiffel Tower stands in Paris, the capital of France.\n\n"
    "Question: Who wrote Hamlet?\n"
    "Answer: William Shakespeare. Hamlet is a tragedy written by William Shakespeare around 1600.\n\n"
)

INSTRUCT_EXEMPLARS = (
    "Answer the question. When you need a fact, write [Search(query)] to look it up, then continue. "
    'End with "So the answer is ..."\n\n'
    "Question: Who was born first, Alan Turing or John von Neumann?\n"
    "Answer: [Search(Alan Turing birth date)] Alan Turing was born on 23 June 1912. "
    "[Search(John von Neumann birth date)] John von Neumann was born on 28 December 1903. "
    "So the answer is John von Neumann.\n\n"
    "Question: In which country is the city where the Eiffel Tower stands?\n"
    "Answer: [Search(Eiffel Tower city)] The Eiffel Tower stands in Paris. [Search(Paris country)] Paris is "
    "the capital of France. So the answer is France.\n\n"
)


# Reasoning answers (FLARE's, IRCoT's and DRAGIN's multi-hop setting): short sentences, each of which
# may need its own retrieval, and the short answer last, where evidence found along the way can reach it.
COT_INSTRUCTION = ('Answer each question by reasoning step by step in short sentences. End with "So the answer '
                   'is:" and a short answer.\n\n')

COT_EXEMPLARS = (
    "Question: In which country is the city where the Eiffel Tower stands?\n"
    "Answer: The Eiffel Tower stands in Paris. Paris is the capital of France. So the answer is: France.\n\n"
    "Question: Who was born first, Alan Turing or John von Neumann?\n"
    "Answer: Alan Turing was born on 23 June 1912. John von Neumann was born on 28 December 1903. "
    "So the answer is: John von Neumann.\n\n"
)

CONCLUSION = "So the answer is:"

# Long-form answers (FLARE's setting: several sentences, each of which may need its own retrieval).
LONG_INSTRUCTION = "Answer each question with a paragraph of several sentences.\n\n"

LONG_EXEMPLARS = (
    "Question: Tell me about the Eiffel Tower.\n"
    "Answer: The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the company of "
    "Gustave Eiffel and built for the 1889 World's Fair. At 330 metres, it was the tallest man-made structure in the "
    "world until 1930. Today it is one of the most visited monuments in the world.\n\n"
    "Question: Who was William Shakespeare?\n"
    "Answer: William Shakespeare was an English playwright and poet, born in Stratford-upon-Avon in 1564. He wrote "
    "about 39 plays, including Hamlet, Macbeth and Romeo and Juliet. He was also an actor and a part-owner of the "
    "Globe Theatre in London. He died in 1616 and is widely regarded as the greatest writer in the English language.\n\n"
)

_LONG_OPENINGS = ("tell me about", "tell me more about", "describe", "explain", "summarize", "summarise",
                  "give an overview", "give me an overview", "write about", "write a paragraph", "write a summary",
                  "what do you know about", "an overview of", "overview of")
_LONG_OPENING = re.compile("(?:" + "|".join(map(re.escape, _LONG_OPENINGS)) + r")\b")  # not "Explainable AI: …"


# "Please, ", "can you ", "could you please ", "would you kindly ": politeness before the request
_POLITE = re.compile(r"^(?:(?:please|kindly|can you|could you|would you|will you|can u)\b[\s,]*)+", re.IGNORECASE)


def _request(question: str) -> tuple[str, str]:
    """The question without leading quotes and politeness ("please", "can you", "could you
    please", …), as is and lower-cased."""
    q = " ".join(question.split()).lstrip("\"'([ ")
    q = _POLITE.sub("", q)
    return q, q.lower()


ANSWER_STYLES = ("short", "long", "cot")


def answer_style(question: str, setting: str = "auto") -> str:
    """``short`` (a phrase, then one sentence), ``long`` (a paragraph) or ``cot`` (reasoning sentences,
    then "So the answer is: X."). ``auto`` picks long only for requests that ask for an explanation or
    overview ("Tell me about …", "Describe …", "Explain …"); factoid questions, the eval data sets'
    kind, stay short."""
    if setting in ANSWER_STYLES:
        return setting
    return "long" if _LONG_OPENING.match(_request(question)[1]) else "short"


def follow_up_request(question: str, earlier: Sequence[tuple[str, str]]) -> str:
    """A REPL follow-up as the engine gets it: the question, then its thread's exchanges in brackets
    ("Where was he born? (Earlier question: … Earlier answer: …)"; a cancelled one has no answer). The
    question comes first, so what reads a question's start (its answer style, yes or no) reads this
    one's; ``split_follow_up`` takes it apart again (a chat model's earlier turns)."""
    said = " ".join(f"{_EARLIER_Q}{q}" + (f"{_EARLIER_A}{a}" if a else "") for q, a in earlier)
    return f"{question} ({said})"


_EARLIER_Q, _EARLIER_A = "Earlier question: ", " Earlier answer: "
_FOLLOW_UP = re.compile(rf"(.*?) \(({_EARLIER_Q}.*)\)", re.DOTALL)


def split_follow_up(request: str) -> tuple[str, list[tuple[str, str]]]:
    """(the question, its earlier (question, answer) exchanges) of a ``follow_up_request``; a request
    that is none: itself and no exchanges."""
    m = _FOLLOW_UP.fullmatch(request)
    if m is None:
        return request, []
    exchanges = [part.partition(_EARLIER_A) for part in m.group(2).split(_EARLIER_Q)[1:]]
    return m.group(1), [(q.strip(), a.strip()) for q, _, a in exchanges]


def request_topic(question: str) -> str:
    """What a long-form request is about, for the search query: "Tell me about Christer Fuglesang."
    searches "Christer Fuglesang." ("tell me" is rare, so BM25 would rank song lyrics for it)."""
    q, low = _request(question)
    for opening in sorted(_LONG_OPENINGS, key=len, reverse=True):
        if re.match(re.escape(opening) + r"\b", low):
            rest = q[len(opening):].strip(" :,")
            for filler in ("about ", "of ", "me "):
                if rest.lower().startswith(filler):
                    rest = rest[len(filler):]
            return rest or question
    return question


def format_documents(documents: Sequence[Document]) -> str:
    if not documents:
        return ""
    lines = ["Documents:"]
    for i, d in enumerate(documents, start=1):
        title = f"{d.title}: " if d.title else ""
        lines.append(f"[{i}] {title}{d.text}")
    return "\n".join(lines) + "\n\n"


def _continuation(answer_so_far: str) -> str:
    # No trailing space: the model's next token carries its own leading space.
    text = answer_so_far.strip()
    return f" {text}" if text else ""


_STYLES = {"short": (INSTRUCTION, EXEMPLARS), "long": (LONG_INSTRUCTION, LONG_EXEMPLARS),
           "cot": (COT_INSTRUCTION, COT_EXEMPLARS)}


def answer_prompt(question: str, documents: Sequence[Document] = (), answer_so_far: str = "",
                  style: str = "short") -> Prompt:
    """The main QA prompt (none, single, FLARE drafts and regenerations, windows, the final read) in
    an answer style (see answer_style)."""
    instruction, exemplars = _STYLES.get(style, _STYLES["short"])
    return Prompt(instruction=instruction, exemplars=_shots(exemplars), documents=documents,
                  request=f"Question: {question.strip()}", cue="Answer:", continuation=_continuation(answer_so_far))


def instruct_prompt(question: str, documents: Sequence[Document] = (), answer_so_far: str = "") -> Prompt:
    """FLARE-instruct: exemplars teach the model to write [Search(query)]."""
    instruction, _, shots = INSTRUCT_EXEMPLARS.partition("\n\n")
    return Prompt(instruction=instruction + "\n\n", exemplars=_shots(shots), documents=documents,
                  request=f"Question: {question.strip()}", cue="Answer:", continuation=_continuation(answer_so_far))


def question_generation_prompt(context: str, span: str) -> Prompt:
    """FLARE's generated-question query mode: ask for a question whose answer is ``span``."""
    return Prompt(
        instruction="Write a question whose answer is the given phrase, using the sentence as context.\n\n",
        exemplars=(("Sentence: Joe Biden attended the University of Delaware.\nPhrase: the University of Delaware",
                    "Which university did Joe Biden attend?"),
                   ("Sentence: The Nile flows through eleven countries.\nPhrase: eleven",
                    "How many countries does the Nile flow through?")),
        request=f"Sentence: {context.strip()}\nPhrase: {span.strip()}", cue="Question:")


QUESTION_STOP = ("\n",)


from ragcli.answers import concludes  # noqa: E402 - (re-exported) the strategies' one test for "So the answer is: X."


# ---------------------------------------------------------------------------- self-ask
SELF_ASK_EXEMPLARS = (
    "Question: Who lived longer, Muhammad Ali or Alan Turing?\n"
    "Are follow up questions needed here: Yes.\n"
    "Follow up: How old was Muhammad Ali when he died?\n"
    "Intermediate answer: Muhammad Ali was 74 years old when he died.\n"
    "Follow up: How old was Alan Turing when he died?\n"
    "Intermediate answer: Alan Turing was 41 years old when he died.\n"
    "So the final answer is: Muhammad Ali\n\n"
    "Question: Who was the father of the founder of Microsoft?\n"
    "Are follow up questions needed here: Yes.\n"
    "Follow up: Who founded Microsoft?\n"
    "Intermediate answer: Microsoft was founded by Bill Gates and Paul Allen.\n"
    "Follow up: Who was the father of Bill Gates?\n"
    "Intermediate answer: The father of Bill Gates was William H. Gates Sr.\n"
    "So the final answer is: William H. Gates Sr.\n\n"
)
SELF_ASK_STOP = ("Intermediate answer:", "\nQuestion:", "\n\n")


SELF_ASK_CUE = "Are follow up questions needed here:"


def self_ask_prompt(question: str, documents: Sequence[Document] = (), scratchpad: str = "") -> Prompt:
    return Prompt(exemplars=_shots(SELF_ASK_EXEMPLARS, SELF_ASK_CUE), documents=documents,
                  request=f"Question: {question.strip()}", cue=SELF_ASK_CUE, continuation=f" Yes.\n{scratchpad}",
                  cue_in_chat=True)


# ---------------------------------------------------------------------------- CRAG
def grading_prompt(question: str, text: str) -> Prompt:
    """Relevance grading; the next token is " Yes" or " No". The question comes before the document
    so that grading several documents shares the longest prompt prefix."""
    return Prompt(
        instruction="Does the document contain information that answers the question? Answer Yes or No.\n\n",
        exemplars=(("Question: In which city is the Eiffel Tower?\nDocument: The Eiffel Tower is a wrought-iron "
                    "lattice tower on the Champ de Mars in Paris, France.", "Yes"),
                   ("Question: Who wrote the play Hamlet?\nDocument: Mount Everest is Earth's highest mountain above "
                    "sea level, in the Himalayas.", "No")),
        request=f"Question: {question.strip()}\nDocument: {' '.join(text.split())}", cue="Answer:")


def keyword_prompt(question: str) -> Prompt:
    """CRAG's query rewrite: a web query of at most three keywords."""
    return Prompt(
        instruction="Extract at most three keywords from the question, to use as a web search query.\n\n",
        exemplars=(("Question: What is Henry Feilden's occupation?", "Henry Feilden occupation"),
                   ("Question: In which city was the director of the film Titanic born?", "Titanic director birthplace")),
        request=f"Question: {question.strip()}", cue="Keywords:")
