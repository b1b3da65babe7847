"""Split text into passages of about ``target_words`` words, aligned on sentence boundaries."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ragcli.sentences import split_spans

TARGET_WORDS = 100


@dataclass(frozen=True, slots=True)
class Passage:
    pid: str
    title: str
    text: str
    path: str
    location: str  # "path:12-30" for text files, "path#L42" for JSONL records


def passage_id(title: str, text: str) -> str:
    """Same scheme as the QA data (``"p_" + sha1(title + "\\n" + text)[:16]``), so recall by pid works."""
    return "p_" + hashlib.sha1(f"{title}\n{text}".encode("utf-8")).hexdigest()[:16]




def chunk_text(text: str, target_words: int = TARGET_WORDS) -> list[tuple[int, int]]:
    """Character spans of passages: whole sentences packed up to about ``target_words`` words.

    A paragraph break (blank line) ends a passage once it holds at least half the target, so
    passages follow the document's structure. A single sentence longer than twice the target is
    cut on word boundaries.
    """
    spans: list[tuple[int, int]] = []
    start: int | None = None
    end = 0
    words = 0
    for a, b in _sentence_spans(text):
        n = len(text[a:b].split())
        if n > 2 * target_words:  # a run-on "sentence" (tables, code): cut it by words
            if start is not None:
                spans.append((start, end))
                start, words = None, 0
            spans.extend(_cut_words(text, a, b, target_words))
            continue
        paragraph_break = start is not None and "\n\n" in text[end:a].replace("\r", "")
        if start is not None and (words + n > target_words or (paragraph_break and words >= target_words // 2)):
            spans.append((start, end))
            start, words = None, 0
        if start is None:
            start = a
        end = b
        words += n
    if start is not None:
        spans.append((start, end))
    return spans


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    # Split paragraphs first (cheap, and Punkt never joins across a blank line), then sentences.
    out: list[tuple[int, int]] = []
    for m in re.finditer(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*$)", text, flags=re.S):
        base = m.start()
        for a, b in split_spans(m.group(0)):
            out.append((base + a, base + b))
    return out


def _cut_words(text: str, a: int, b: int, target: int) -> list[tuple[int, int]]:
    positions = [m.span() for m in re.finditer(r"\S+", text[a:b])]
    out = []
    for i in range(0, len(positions), target):
        group = positions[i : i + target]
        out.append((a + group[0][0], a + group[-1][1]))
    return out


def normalise(text: str) -> str:
    """Collapse whitespace (fast path: text that is already collapsed is returned as is)."""
    if "  " in text or "\n" in text or "\t" in text or "\r" in text:
        return " ".join(text.split())
    return text.strip()
