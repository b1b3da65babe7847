"""Prompts through a model's own chat template (``--prompt-style chat``, or ``auto`` when the GGUF
carries a chat template and its name says instruct/chat/-it).

A ``prompts.Prompt`` becomes messages: the instruction as the system turn (folded into the first
user turn for templates without a system role, such as Gemma's), each few-shot exemplar as an earlier
user/assistant exchange, the documents and the request as the last user turn, and the answer so far
after the assistant header, so the model continues its own turn. The exemplars are real earlier
turns, never text inside the task the model might mistake for its own. The order is the completion
prompt's, so KV-prefix reuse works the same way.

Templates are Jinja, rendered in a sandbox and compiled once per template.
"""

from __future__ import annotations

import re
from functools import lru_cache

_INSTRUCT_NAME = re.compile(r"(instruct|chat|[-_.]it\b|[-_.]it[-_.])", re.IGNORECASE)


def use_chat(style: str, template: str | None, model_name: str) -> bool:
    if style == "chat":
        return bool(template)
    if style == "completion":
        return False
    return bool(template) and bool(_INSTRUCT_NAME.search(model_name))


@lru_cache(maxsize=8)
def _compiled(template: str):
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template)


def _raise(message):  # templates call raise_exception("...") to reject a conversation
    raise ValueError(message)


def messages(prompt, *, exemplars: bool = True) -> list[dict[str, str]]:
    """The chat messages of a ``Prompt`` (without the answer so far)."""
    out: list[dict[str, str]] = []
    if prompt.instruction.strip():
        out.append({"role": "system", "content": prompt.instruction.strip()})
    if exemplars:
        for request, response in prompt.exemplars:
            out.append({"role": "user", "content": request})
            out.append({"role": "assistant", "content": f"{prompt.cue} {response}" if prompt.cue_in_chat else response})
    out.append({"role": "user", "content": prompt.user_text()})
    return out


def render(prompt, template: str, *, exemplars: bool = True, eos: str = "") -> str:
    """The prompt as the chat model sees it: the conversation, the assistant header, the answer so far.
    A plain string (not a ``Prompt``) is sent as one user message."""
    from ragcli.prompts import Prompt

    if not isinstance(prompt, Prompt):
        convo, prefix = [{"role": "user", "content": str(prompt)}], ""
    else:
        convo, prefix = messages(prompt, exemplars=exemplars), prompt.answer_prefix()
    compiled = _compiled(template)

    def go(msgs):
        return compiled.render(messages=msgs, add_generation_prompt=True, bos_token="", eos_token=eos,
                               raise_exception=_raise)

    try:
        rendered = go(convo)
    except ValueError:
        if convo[0]["role"] != "system":
            raise
        # no system role (Gemma): the instruction opens the first user turn
        system, rest = convo[0]["content"], convo[1:]
        rest[0] = {"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}
        rendered = go(rest)
    return rendered + prefix
