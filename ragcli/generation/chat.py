"""Prompts through a model's own chat template (``--prompt-style chat``, or ``auto`` when the GGUF
carries a chat template and its name says instruct/chat/-it).

A ``prompts.Prompt`` becomes messages: the instruction and the documents as the system turn (folded
into the first user turn for templates without a system role, such as Gemma's), each few-shot
exemplar as an earlier user/assistant exchange, the request alone as the last user turn, and the
answer so far after the assistant header, so the model continues its own turn. The exemplars are
real earlier turns, never text inside the task the model might mistake for its own.

Why the documents go in the system turn and not before the question in the user turn: measured with
SmolLM2-135M-Instruct (single retrieval, F1 on 60 dev questions of HotpotQA, 2WikiMultihopQA and
MuSiQue / the 28 sample questions / 40 SQuAD questions), documents in the user turn scored 9.0 / 14.3
/ 8.0 and the model often answered with the title of the document nearest the question ("Who is Ulf
Merbold?" → "Ben Palmer."); in the system turn 15.1 / 17.0 / 10.8 (paired over all 128: +4.3, 95% CI
+1.1 to +7.8), answering about the page that matches. Without the exemplar turns the answer-first
format was lost (8.4 / 12.7 / 5.3); a sentence telling the model to answer from the documents changed
nothing (-0.6). The README has the table and the commands.

The order is [instruction, documents, exemplars, request, answer so far]: the instruction is the
stable prefix the KV cache reuses, then the documents as in a completion prompt; templates put the
system turn first, so the exemplar turns come after the documents and a change of documents
re-evaluates them too (about 70 tokens for a short answer's two exemplars).

Templates are Jinja, rendered in a sandbox and compiled once per template.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

# "…-Instruct", "…-chat", "gemma-3-1b-it" in a file name; "Gemma 3 1b it" in the GGUF's name and finetune fields
_INSTRUCT_NAME = re.compile(r"(instruct|chat|(?:^|[-_.\s])it(?:$|[-_.\s]))", re.IGNORECASE)


def use_chat(style: str, template: str | None, model_name: str) -> bool:
    if style == "chat":
        return bool(template)
    if style == "completion":
        return False
    return bool(template) and bool(_INSTRUCT_NAME.search(model_name))


@lru_cache(maxsize=8)
def _compiled(template: str):
    """The template compiled as Hugging Face's ``apply_chat_template`` compiles it (and llama.cpp's
    template engine reads it): ``{% break %}``/``{% continue %}``, the ``{% generation %}`` block of
    templates trained for assistant-only loss (rendered as its body), and ``strftime_now``."""
    from datetime import datetime

    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)


def template_problem(template: str) -> str | None:
    """Why the model's chat template cannot render a conversation here (a tag or function no Jinja
    environment has), or None: its prompts then go the completion way, said in a notice, not an
    internal error in the middle of the first answer."""
    from jinja2 import TemplateError

    try:
        _render(template, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    except (TemplateError, ValueError, TypeError) as exc:  # ValueError: its raise_exception refused a plain exchange
        return f"{type(exc).__name__}: {exc}"
    return None


def _raise(message):  # templates call raise_exception("...") to reject a conversation
    raise ValueError(message)


def messages(prompt, *, exemplars: bool = True) -> list[dict[str, str]]:
    """The chat messages of a ``Prompt`` (without the answer so far)."""
    from ragcli.prompts import format_documents, split_follow_up

    out: list[dict[str, str]] = []
    system = "\n\n".join(part for part in (prompt.instruction.strip(), format_documents(prompt.documents).strip())
                         if part)
    if system:
        out.append({"role": "system", "content": system})
    if exemplars:
        for request, response in prompt.exemplars:
            out.append({"role": "user", "content": request})
            out.append({"role": "assistant", "content": f"{prompt.cue} {response}" if prompt.cue_in_chat else response})
    # a REPL follow-up's thread as the earlier turns it is (in brackets after the question, a small
    # model took "he" for the exemplar turns' subject: "Where was he born?" → "William Shakespeare was
    # born in …"); the question of an exchange cancelled before its answer opens the next user turn
    # (turns must alternate; left out, a thread of one such exchange was no thread at all)
    question, earlier = split_follow_up(prompt.request)
    label = "Question: " if question.startswith("Question: ") else ""  # as the exemplars' turns ask
    unanswered: list[str] = []
    for request, response in earlier:
        unanswered.append(label + request)
        if response:
            out += [{"role": "user", "content": " ".join(unanswered)}, {"role": "assistant", "content": response}]
            unanswered = []
    out.append({"role": "user", "content": " ".join(unanswered + [question])})
    return out


def _render(template: str, convo: list[dict[str, str]], *, generation_prompt: bool = True, eos: str = "",
            bos: str = "", bos_added: bool = True) -> str:
    """The conversation through the template, with the model's own BOS and EOS texts where it writes
    them (Zephyr, Mistral and Llama 2 close or open every turn with them), but no BOS in front where
    the tokenizer adds that one (``bos_added``; SmolLM2's adds none, and its BOS is the "<|im_start|>"
    its template opens with)."""
    compiled = _compiled(template)

    def go(msgs):
        text = compiled.render(messages=msgs, add_generation_prompt=generation_prompt, bos_token=bos,
                               eos_token=eos, raise_exception=_raise)
        return text[len(bos):] if bos and bos_added and text.startswith(bos) else text

    try:
        return go(convo)
    except ValueError:
        if convo[0]["role"] != "system":
            raise
        # no system role (Gemma): the instruction opens the first user turn
        system, rest = convo[0]["content"], [dict(m) for m in convo[1:]]
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
        return go(rest)


def render(prompt, template: str, *, exemplars: bool = True, eos: str = "", bos: str = "",
           bos_added: bool = True, defuse: Callable[[str], str] | None = None) -> str:
    """The prompt as the chat model sees it: the conversation, the assistant header, the answer so far.
    A plain string (not a ``Prompt``) is sent as one user message. ``defuse`` rewrites what the
    messages and the answer so far say (documents, questions: not the template's own markers);
    ``eos`` and ``bos`` are the model's end- and begin-of-sequence texts, for templates that write them;
    ``bos_added``: whether the tokenizer adds the BOS (a leading one is then left to it)."""
    from ragcli.prompts import Prompt

    same = defuse or (lambda text: text)
    if not isinstance(prompt, Prompt):
        return _render(template, [{"role": "user", "content": same(str(prompt))}], eos=eos, bos=bos,
                       bos_added=bos_added)
    convo = [{**m, "content": same(m["content"])} for m in messages(prompt, exemplars=exemplars)]
    return _render(template, convo, eos=eos, bos=bos, bos_added=bos_added) + same(prompt.answer_prefix())


_MARK = "\x00ragcli-reply\x00"


def end_of_turn(template: str, eos: str = "") -> str:
    """The text the template writes right after an assistant message ("<|im_end|>", "<end_of_turn>",
    "<|eot_id|>", "</s>"): where the model's turn, and so its answer, ends. Empty when the template
    shows none."""
    try:
        text = _render(template, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": _MARK}],
                       generation_prompt=False, eos=eos)
    except Exception:  # noqa: BLE001 - a template that cannot render a plain exchange has no marker to find
        return ""
    after = text.partition(_MARK)[2]
    return after.split()[0] if after.split() else ""
