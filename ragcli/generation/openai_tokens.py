"""What an OpenAI-compatible server's tokenizer says, for ``OpenAIGenerator`` (a mixin of it, as
``strategies.fitting`` is of Strategy): the prompt as the model sees it (its chat template, control
tokens spelled in documents defused), token ids from the server's ``/tokenize`` (llama-server's or
vLLM's; cached), counts of prompts (exact where the server can count them, a generous estimate where
it cannot) and logit biases by token id. The generator's state these read (``kind``, ``http``,
``props``, ``chat_template``, the caches) is set up by ``OpenAIGenerator`` and its probe."""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from ragcli.errors import ServerError
from ragcli.prompts import Prompt

BAN = -100.0  # OpenAI's strongest bias (llama-server takes false: -inf)
# a chat template's tokens where the server cannot count them: per message (role markers, end of turn) and
# once (a BOS, a default system prompt such as Llama 3.1's knowledge-date lines); generous, as counts fit
# prompts into the context
CHAT_TOKENS_PER_MESSAGE, CHAT_TOKENS_ONCE = 8, 32


def estimate_tokens(text: str) -> int:
    """A count no tokenizer should exceed by much, for servers without ``/tokenize``: a token per
    digit, punctuation mark, line break and non-ASCII character, one per 4 letters of a word, plus 10%."""
    n = 1  # BOS
    for m in re.finditer(r"[A-Za-z]+|\n| {2,}|\S", text):
        piece = m.group(0)
        n += math.ceil(len(piece) / 4) if piece[0].isascii() and piece[0].isalpha() else 1
    return math.ceil(n * 1.1)


def chat_messages(prompt: str, defuse=lambda text: text) -> tuple[list[dict[str, str]], bool]:
    """A prompt as chat messages (``chat.messages``: instruction, exemplar turns, documents and
    request) and whether the answer so far follows as a final assistant message the server continues
    (llama-server does; vLLM with continue_final_message; other servers may start a new answer).
    A plain string is one user message. ``defuse`` rewrites what each message says."""
    from ragcli.generation.chat import messages

    if not isinstance(prompt, Prompt):
        return [{"role": "user", "content": defuse(str(prompt).strip())}], False
    convo = [{**m, "content": defuse(m["content"])} for m in messages(prompt)]
    so_far = prompt.answer_prefix()
    if so_far:
        convo.append({"role": "assistant", "content": defuse(so_far)})
    return convo, bool(so_far)


class ServerTokens:
    def format(self, prompt: str) -> str:
        """The prompt as the model sees it: wrapped in its chat template where in-process would, with
        control tokens spelled in what it says (documents, the question) defused (``_defuse``)."""
        if not self.chat_template:
            return self._defuse(str(prompt))
        from ragcli.generation.chat import render

        bos = str(self.props.get("bos_token") or "")
        added = self._tokenize("", special=True) if bos else None  # [BOS] where the server's tokenizer adds one
        return render(prompt, self.chat_template, defuse=self._defuse, eos=str(self.props.get("eos_token") or ""),
                      bos=bos, bos_added=added is None or bool(added))

    def _defuse(self, text: str) -> str:
        """``text`` with each control token it spells broken by a word joiner (``ControlTexts``). The
        servers parse control tokens in the text they are sent (llama-server's ``parse_special``; vLLM's
        tokenizer splits on added tokens), so a page quoting "<|im_end|>" or "<eos>" ended the turn or
        the prompt; in-process tokenizes a completion prompt without parsing them and defuses chat
        messages the same way."""
        return self._control.defuse(text) if self._control is not None else text

    def _controls(self, texts: list[str]) -> set[str]:
        """Which of ``texts`` (shaped "<…>" or "[…]") the server reads as control tokens. llama-server
        says exactly: a text's tokens differ with ``parse_special`` off. All of them are asked at once
        (joined by line breaks; one by one only when that finds one), so a page of tags costs two
        requests. vLLM's /tokenize cannot turn parsing off: there a text of one token counts (a plain
        one-token tag such as "<b>" then gets a harmless word joiner too), asked one by one."""
        if self.kind == "llama.cpp":
            def differs(text: str) -> bool:
                parsed = self._tokenize(text, special=False)
                plain = self._tokenize(text, special=False, parse=False) if parsed is not None else None
                return plain is not None and parsed != plain

            return {t for t in texts if differs(t)} if differs("\n".join(texts)) else set()
        return {t for t in texts if len(self._tokenize(t, special=False) or ()) == 1}

    def _tokenize(self, text: str, *, special: bool, parse: bool = True) -> list[int] | None:
        """Token ids from the server's /tokenize (llama-server's or vLLM's); None where it has none.
        ``special``: with the BOS the server adds; ``parse``: text spelling a control token is that
        token (llama-server only; vLLM always parses)."""
        key = (text, special, parse)
        if key in self._ids:
            return self._ids[key]
        if self._tokenizer is False:
            return None
        if self.kind == "llama.cpp":
            body = {"content": text, "add_special": special, "parse_special": parse}
        else:
            body = {"model": self.model, "prompt": text, "add_special_tokens": special}
        data = self.http.post_json(self.root + "/tokenize", body, missing_ok=True)
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            if self._tokenizer is None:
                self.notices.append(f"the server at {self.base} has no /tokenize: token counts are estimated "
                                    "(generously) and logit biases are not applied")
            self._tokenizer = False
            return None
        self._tokenizer = True
        if len(self._ids) > 4096:
            self._ids.clear()
        self._ids[key] = tokens
        return tokens

    def _chat_ids(self, text: str) -> list[int] | None:
        """The tokens of ``text`` sent as chat messages, the server's template around them: llama-server
        renders it (``/apply-template``) for its ``/tokenize``, vLLM's ``/tokenize`` takes messages.
        None where the server can do neither."""
        if self._chat_counts is False or self.kind not in ("llama.cpp", "vllm"):
            return None
        convo, continued = chat_messages(text, self._defuse)
        try:
            if self.kind == "llama.cpp":
                data = self.http.post_json(self.root + "/apply-template", {"messages": convo}, missing_ok=True)
                rendered = data.get("prompt") if isinstance(data, dict) else None
                ids = self._tokenize(rendered, special=True) if isinstance(rendered, str) else None
            else:
                data = self.http.post_json(self.root + "/tokenize", {
                    "model": self.model, "messages": convo, "add_generation_prompt": not continued,
                    "continue_final_message": continued, "add_special_tokens": False}, missing_ok=True)
                ids = data.get("tokens") if isinstance(data, dict) else None
        except ServerError:  # a template the server cannot render for a count: estimated instead
            ids = None
        if not isinstance(ids, list):
            self._chat_counts = False
            return None
        self._chat_counts = True
        return ids

    def count_tokens(self, text: str) -> int:
        if text in self._counts:
            return self._counts[text]
        if self.endpoint == "chat":
            ids = self._chat_ids(text)
            if ids is None:  # the messages' own tokens, and a generous allowance for the template
                shown = self._defuse(str(text))
                ids = self._tokenize(shown, special=True)
                n = (len(ids) if ids is not None else estimate_tokens(shown)) + CHAT_TOKENS_ONCE
                n += CHAT_TOKENS_PER_MESSAGE * len(chat_messages(text)[0])
            else:
                n = len(ids)
        else:
            shown = self.format(text)
            ids = self._tokenize(shown, special=True)
            n = len(ids) if ids is not None else estimate_tokens(shown)
        if len(self._counts) > 4096:
            self._counts.clear()
        self._counts[text] = n
        return n

    def _logit_bias(self, strings: Mapping[str, float | None]) -> dict[str, Any]:
        """Token ids spelling each string alone (with and without a leading space, as in-process) -> bias;
        None bans (llama-server's false, -100 elsewhere)."""
        out: dict[str, Any] = {}
        for s, value in strings.items():
            for variant in (s, " " + s):
                ids = self._tokenize(variant, special=False)
                if ids is not None and len(ids) == 1:
                    out[str(ids[0])] = (False if self.kind == "llama.cpp" else BAN) if value is None else float(value)
        return out
