"""Chat-template wrapping for instruct models (``--prompt-style chat``, or ``auto`` when the GGUF
carries a chat template and its name says instruct/chat/-it).

ragcli's prompts are completion-style and end with ``Answer:`` plus the answer so far. In chat
style the part before the last ``Answer:`` becomes the user message (rendered with the model's
own Jinja template) and the answer so far is appended after the assistant header, so the KV
cache prefix logic works the same way.
"""

from __future__ import annotations

import re

ANSWER_MARK = "\nAnswer:"
_INSTRUCT_NAME = re.compile(r"(instruct|chat|[-_.]it\b|[-_.]it[-_.])", re.IGNORECASE)


def use_chat(style: str, template: str | None, model_name: str) -> bool:
    if style == "chat":
        return bool(template)
    if style == "completion":
        return False
    return bool(template) and bool(_INSTRUCT_NAME.search(model_name))


def wrap(prompt: str, template: str, *, bos: str = "", eos: str = "") -> str:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    cut = prompt.rfind(ANSWER_MARK)
    if cut == -1:
        user, continuation = prompt, ""
    else:
        user, continuation = prompt[:cut], prompt[cut + len(ANSWER_MARK):].lstrip()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message):  # some templates call it
        raise ValueError(message)

    rendered = env.from_string(template).render(
        messages=[{"role": "user", "content": user.strip()}], add_generation_prompt=True,
        bos_token="", eos_token=eos, raise_exception=raise_exception)
    return rendered + continuation
