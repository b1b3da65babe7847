"""Fitting documents into the main prompt: the most useful pages that fit the context window beside
the question and the answer's reserve, shortened rather than lost where one page alone is too long,
ordered so the KV cache reuses what the last prompt held. A part of ``Strategy`` (its base class),
on its own for its one job: it uses the strategy's generator, settings and ``cite``/``reuse_order``."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Collection, Sequence

from ragcli.errors import ContextOverflowError
from ragcli.types import Document

MIN_SHORTENED_CHARS = 120  # a page shorter than this is dropped, not cut, when it does not fit


class DocumentFitting:
    def prompt_documents(self, docs: Sequence[Document], build: Callable[[Sequence[Document]], str],
                         reserve: int, *, last: Collection[tuple[str, str]] = ()) -> list[Document]:
        """The documents for the next main-slot prompt (``cache_fit``), cited."""
        ordered = self.cache_fit(docs, build, reserve, last=last)
        self.cite(ordered)
        return ordered

    def cache_fit(self, docs: Sequence[Document], build: Callable[[Sequence[Document]], str],
                  reserve: int, *, last: Collection[tuple[str, str]] = ()) -> list[Document]:
        """``docs`` (most useful first) fitted to the context in that order (the least useful go
        first when it is tight), then put in reuse order for the KV cache (those with a key in
        ``last`` at the end, next to the question) and remembered for the next call."""
        kept = self.fit_documents(docs, build, reserve)
        ordered = (self.reuse_order([d for d in kept if d.key not in last], self._prompt_docs)
                   + [d for d in kept if d.key in last])
        if ordered != kept and self.gen.count_tokens(build(ordered)) > self.gen.n_ctx - reserve:
            ordered = kept  # the reordered prompt tokenizes longer: keep the order that was checked
        self._prompt_docs = ordered
        return ordered

    def fit_documents(self, docs: Sequence[Document], build: Callable[[Sequence[Document]], str],
                      reserve: int) -> list[Document]:
        """Keep the prompt inside the context window: drop the lowest-ranked documents first,
        then shorten the last one (by words; by characters where it has few: a page of base64 or
        minified data is one "word" of up to 20,000 characters, and was dropped, so the answer was
        written from no document at all). Raises only when the prompt does not fit even without
        documents. The kept documents come back in prompt order (``--page-order``: by rank, or the
        best last)."""
        budget = self.gen.n_ctx - reserve
        fits = lambda ds: self.gen.count_tokens(build(ds)) <= budget  # noqa: E731
        kept = list(docs)
        while not fits(kept):  # each candidate tokenized once
            if not kept:
                hint = self.gen.context_hint
                asked = self.gen.count_tokens(build([]))
                if reserve == self.settings.max_tokens and reserve >= asked:  # the answer's room, not the question
                    hint = _more_room(self.gen.in_process, whole_answer=True)
                raise ContextOverflowError(
                    f"the question and answer need more than the {self.gen.n_ctx}-token context window "
                    f"(the prompt: {asked} tokens; the answer: up to {reserve})",
                    hint=hint,
                )
            d = kept[0]
            if len(kept) > 1 or len(d.text) <= MIN_SHORTENED_CHARS:  # another page to drop, or too short to cut
                kept.pop()
                continue
            words = d.text.split()
            text = (" ".join(words[: len(words) * 2 // 3]) if len(words) > 20
                    else d.text[: len(d.text) * 2 // 3].rstrip())
            kept[0] = replace(d, text=text + " …")
        cut = bool(kept) and kept[0] is not docs[0]
        if len(kept) < len(docs) or cut:
            self.fit_note = _fit_note(len(docs), len(kept), cut, self.gen.n_ctx, reserve,
                                      _more_room(self.gen.in_process, reserve == self.settings.max_tokens))
        if self.settings.page_order == "near" and len(kept) > 1:
            near = kept[::-1]
            if fits(near):  # token boundaries differ by order
                return near
        return kept


def _more_room(in_process: bool, whole_answer: bool) -> str:
    """How to give a prompt more room, for the overflow error and the fit note alike: a larger window
    (--ctx sizes an in-process model's; a server's own -c sizes its), or, where the answer's whole
    --max-tokens is what is kept, a smaller answer."""
    fix = "raise --ctx" if in_process else "give the server a larger context"
    return fix + (", or lower --max-tokens" if whole_answer else "")


def _fit_note(given: int, kept: int, cut: bool, n_ctx: int, reserve: int, fix: str) -> str:
    """What fitting did to a prompt's documents, for the user: pages left out or cut were read by no
    one, and nothing said so (an answer written from one shortened page of three looked complete)."""
    done = [f"{given - kept} of {given} document(s) left out" if kept < given else "",
            "the best one shortened" if cut else ""]
    return (f"{' and '.join(d for d in done if d)} to fit the {n_ctx}-token context window with {reserve} "
            f"tokens kept for the answer ({fix})")
