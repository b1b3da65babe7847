"""A streamed chunk's token entries as the ``Token`` stream strategies see, for ``OpenAIGenerator.stream``:
one Token per logprob entry, its text from the entry's exact bytes (llama-server) or its text (vLLM,
others), with each server's way of spelling what is not a whole token of text read here: a token held
back for a stop string (llama-server: no text now, its text with the token that releases it), a token
ending inside a character (llama-server sends none; vLLM writes "" or U+FFFD, the chunk's text has
it), an end-of-generation entry (no text of its own). No I/O: ``openai_wire`` reads the JSON into
``Chunk`` and ``Piece``, this turns them into Tokens."""

from __future__ import annotations

from typing import Iterator

from ragcli.generation.openai_wire import Chunk, Piece
from ragcli.generation.sampling import TOP_N
from ragcli.types import Token


def chunk_tokens(chunk: Chunk, decoder, held: list[str] | None = None) -> Iterator[Token]:
    """The chunk's tokens as Tokens: one per logprob entry (the text comes from them, so a server
    holding text back for its stop strings, or releasing it later, changes nothing), or, from a
    server without logprobs, its text as one token. ``held`` collects the text of the tokens the
    server holds back and has not released yet (llama-server sends it with the next token, or
    never: when they made a stop string)."""
    if not chunk.has_logprobs:  # (text without its log-probabilities, from a server that sends
        if chunk.text:          # them for the rest: kept, as sure as can be, not dropped)
            yield Token(chunk.text, 0.0)
        return
    for p in chunk.pieces:
        text = piece_text(p, chunk, decoder)
        if text is None:
            continue
        logprob = p.logprob if p.logprob is not None else 0.0
        if held is not None:
            if text:
                held.clear()  # released: the held tokens' text came with this one
                if p.data and own_text(p) == "":
                    # a token of no text of its own (llama-server's end of generation) releasing what was
                    # held: the held tokens speak for that text, as in-process, where no such token is
                    logprob = 0.0
            elif p.data == b"":  # held back: what it says, by its own entry among the alternatives
                held.append(own_text(p) or "")
        yield Token(text, logprob, p.id, p.entropy, p.top[:TOP_N])


def piece_text(p: Piece, chunk: Chunk, decoder) -> str | None:
    if p.data is None:
        if p.logprob is not None and (not p.text or "\ufffd" in p.text) and len(chunk.pieces) == 1:
            # vLLM writes a token that ends inside a character "" (the character's text comes with the
            # token completing it) or, in earlier versions, as decoded alone (U+FFFD, the completing
            # token's too): the chunk's text is what the token adds. Passed on empty, the stop filter
            # merges it with the token that completes the character, as in-process
            return chunk.text
        return p.text or None  # an empty token is an end-of-generation or control token: no text
    if not p.data:
        # llama-server sends a token it holds back (it may start a stop string) with no text, and
        # its text later with the token that releases it: passed on empty, the stop filter merges it
        # with that one, so the least likely of them speaks for the text, as in-process
        return "" if p.logprob is not None else None
    if p.data[0] & 0xC0 == 0x80 and not decoder.getstate()[0] and len(chunk.pieces) == 1 and chunk.text:
        # llama-server sends no token whose bytes end inside a character: the chunk's text has them
        return chunk.text
    return decoder.decode(p.data)


def own_text(p: Piece) -> str | None:
    """The text of a llama-server entry's own token, from its alternatives (the entry's text is what the
    server sent with it: "" for a token held back, the held text for the one releasing it); None when it
    is not among them."""
    return next((t for (t, _), i in zip(p.top, p.top_ids) if i == p.id), None)
