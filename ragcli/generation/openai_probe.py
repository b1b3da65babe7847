"""What an OpenAI-compatible server is, found out once when the generator is made: which model it
serves (``--api-model``, or its only one), what kind of server it is (llama-server by its ``/props``,
vLLM by ``max_model_len`` in ``/v1/models``, any other), its context window, what stands for the
model's file hash, and the prompt format (a chat template llama-server reports, rendered here, or
completion prompts). Probing for logprobs is the generator's (it sends a request)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ragcli.errors import ServerError

# llama.cpp's ChatML stand-in (CHATML_TEMPLATE_SRC), which llama-server's /props reports for a GGUF that
# carries no chat template of its own
LLAMA_SERVER_FALLBACK_TEMPLATE = (
    "{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\n' + message.content + "
    "'<|im_end|>\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n  {{- '<|im_start|>assistant\n' -}}\n"
    "{%- endif -%}")


@dataclass
class ServerFacts:
    model: str  # the name requests carry
    kind: str  # "llama.cpp", "vllm" or "openai"
    n_ctx: int
    identity: str  # the model behind the name, not the server's build: what stands for a file hash (eval resume)
    reported: str  # what the server says of it, for the generator's fingerprint
    props: dict[str, Any]  # llama-server's /props ({} elsewhere)
    endpoint: str  # "completions" or "chat"
    chat_template: str | None  # a template to render completion prompts with (llama-server's)
    notices: list[str] = field(default_factory=list)


def identify(http, model: str, n_ctx: int, prompt_style: str) -> ServerFacts:
    """Ask the server at ``http`` (an ``openai_http.ServerClient``) what it serves; ``n_ctx`` stands
    where it does not say. Raises ServerError for a server that lists no model or several without
    ``model`` naming one."""
    notices: list[str] = []
    listed = http.get_json("models", missing_ok=True)
    data = listed.get("data") if isinstance(listed, dict) else None
    entries = [m for m in data or [] if isinstance(m, dict) and m.get("id")]
    names = [str(m["id"]) for m in entries]
    if model:
        entry = next((m for m in entries if model == m["id"] or model in (m.get("aliases") or [])), None)
        if names and entry is None:
            raise ServerError(f"the server at {http.base} has no model {model!r}; it serves: {', '.join(names)}",
                              hint="pass one of them with --api-model, or leave --api-model empty")
    elif len(names) == 1:
        entry, model = entries[0], names[0]
    elif not isinstance(listed, dict):  # no model list at all: a wrong path, or not such a server
        raise ServerError(f"the server at {http.base} gives no model list (GET {http.base}/models): it does not "
                          "answer as an OpenAI-compatible server",
                          hint="check --base-url (e.g. http://127.0.0.1:8080 for llama-server); a server that "
                               "lists no models needs --api-model NAME")
    else:
        raise ServerError(f"the server at {http.base} serves {len(names)} models"
                          + (f" ({', '.join(names)})" if names else "") + "; say which with --api-model")
    http.model = model  # (named in a 404's message: "has no model 'qwen'", as before this probe had a module)
    props = http.get_json(http.root + "/props", missing_ok=True)
    props = props if isinstance(props, dict) and "default_generation_settings" in props else {}
    entry = entry or {}
    if props:
        kind = "llama.cpp"
        n_ctx = int(props["default_generation_settings"].get("n_ctx") or n_ctx)
        path = str(props.get("model_path") or "")
        meta = entry.get("meta") or {}
        identity = f"{os.path.basename(path)} n_params={meta.get('n_params')} size={meta.get('size')}"
        reported = f"{identity} build={props.get('build_info')}"
    elif "max_model_len" in entry:
        kind, n_ctx = "vllm", int(entry["max_model_len"])
        identity = str(entry.get("root") or model)
        reported = f"{identity} max_model_len={entry['max_model_len']}"
    else:
        kind, n_ctx, reported = "openai", n_ctx, str(entry.get("owned_by") or "")
        identity = ""
    # the model behind the name, not the server's build: what stands for a file hash (eval resume)
    identity = model if identity in ("", model) else f"{model} {identity}"
    endpoint = "chat" if prompt_style == "chat" else "completions"
    chat_template = None
    if kind == "llama.cpp":
        from ragcli.generation.chat import template_problem, use_chat

        template = props.get("chat_template") or None
        if template == LLAMA_SERVER_FALLBACK_TEMPLATE:
            template = None  # what llama-server serves for a GGUF without a template: a base model
        if prompt_style == "chat" and template is None:
            endpoint = "completions"  # as in-process: its chat endpoint would wrap it in ChatML anyway
            notices.append("--prompt-style chat: the model has no chat template; using completion prompts")
        # the names, not the folders: llama-server's model id is the file's whole path
        name = f"{os.path.basename(model)} {os.path.basename(str(props.get('model_path') or ''))}"
        if endpoint == "completions":
            chat_template = template if use_chat(prompt_style, template, name) else None
        problem = template_problem(chat_template) if chat_template else None
        if problem:  # (the server's own /v1/chat/completions renders it, but gives no prompt to continue)
            chat_template = None
            notices.append(f"the model's chat template cannot be rendered here ({problem}); "
                           "using completion prompts")
    return ServerFacts(model, kind, n_ctx, identity, reported, props, endpoint, chat_template, notices)
