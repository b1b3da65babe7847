"""Every prompt template, as plain functions, in one place.

The default model is a 270M *base* model: prompts are completion-style with short few-shot
exemplars and clear stop sequences. Order is always [instruction/exemplars, documents, question,
answer so far] so that what changes least comes first (the KV cache reuses the longest common
prefix) and documents sit before the input as in FLARE's official code.
"""

from __future__ import annotations

from typing import Sequence

from ragcli.types import Document

ANSWER_STOP = ("\nQuestion:", "\n\n", "\nDocuments:", "\n[1]", "<end_of_turn>", "<eos>")

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


def _request(question: str) -> tuple[str, str]:
    """The question without leading quotes and "please"/"can you"/"could you", as is and lower-cased."""
    q = " ".join(question.split()).lstrip("\"'([ ")
    for prefix in ("please ", "can you ", "could you "):
        if q.lower().startswith(prefix):
            q = q[len(prefix):]
    return q, q.lower()


ANSWER_STYLES = ("short", "long", "cot")


def answer_style(question: str, setting: str = "auto") -> str:
    """``short`` (a phrase, then one sentence), ``long`` (a paragraph) or ``cot`` (reasoning sentences,
    then "So the answer is: X."). ``auto`` picks long only for requests that ask for an explanation or
    overview ("Tell me about …", "Describe …", "Explain …"); factoid questions, the eval data sets'
    kind, stay short."""
    if setting in ANSWER_STYLES:
        return setting
    return "long" if _request(question)[1].startswith(_LONG_OPENINGS) else "short"


def request_topic(question: str) -> str:
    """What a long-form request is about, for the search query: "Tell me about Christer Fuglesang."
    searches "Christer Fuglesang." ("tell me" is rare, so BM25 would rank song lyrics for it)."""
    q, low = _request(question)
    for opening in sorted(_LONG_OPENINGS, key=len, reverse=True):
        if low.startswith(opening):
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


def answer_prompt(question: str, documents: Sequence[Document] = (), answer_so_far: str = "",
                  style: str = "short") -> str:
    """The main QA prompt (none, single, FLARE drafts and regenerations, windows); ``style`` is
    ``short`` or ``long`` (see answer_style)."""
    intro = {"long": LONG_INSTRUCTION + LONG_EXEMPLARS, "cot": COT_INSTRUCTION + COT_EXEMPLARS}.get(
        style, INSTRUCTION + EXEMPLARS)
    head = f"{intro}{format_documents(documents)}Question: {question.strip()}\nAnswer:"
    return head + _continuation(answer_so_far)


def instruct_prompt(question: str, documents: Sequence[Document] = (), answer_so_far: str = "") -> str:
    """FLARE-instruct: exemplars teach the model to write [Search(query)]."""
    head = f"{INSTRUCT_EXEMPLARS}{format_documents(documents)}Question: {question.strip()}\nAnswer:"
    return head + _continuation(answer_so_far)


def question_generation_prompt(context: str, span: str) -> str:
    """FLARE's generated-question query mode: ask for a question whose answer is ``span``."""
    return (
        "Write a question whose answer is the given phrase, using the sentence as context.\n\n"
        "Sentence: Joe Biden attended the University of Delaware.\nPhrase: the University of Delaware\n"
        "Question: Which university did Joe Biden attend?\n\n"
        "Sentence: The Nile flows through eleven countries.\nPhrase: eleven\n"
        "Question: How many countries does the Nile flow through?\n\n"
        f"Sentence: {context.strip()}\nPhrase: {span.strip()}\nQuestion:"
    )


QUESTION_STOP = ("\n",)


def concludes(sentence: str) -> bool:
    """True for the sentence that gives a reasoning answer's short answer ("So the answer is: X.")."""
    return "answer is" in sentence.lower()


# ---------------------------------------------------------------------------- IRCoT
DIRECT_READER = (
    "Answer the question with a short phrase from the documents.\n\n"
    "Question: In which country is the city where the Eiffel Tower stands?\n"
    "Answer: France\n\n"
)


def direct_reader_prompt(question: str, documents: Sequence[Document] = ()) -> str:
    return f"{DIRECT_READER}{format_documents(documents)}Question: {question.strip()}\nAnswer:"


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


def self_ask_prompt(question: str, documents: Sequence[Document] = (), scratchpad: str = "") -> str:
    return (f"{SELF_ASK_EXEMPLARS}{format_documents(documents)}Question: {question.strip()}\n"
            f"Are follow up questions needed here: Yes.\n{scratchpad}")
