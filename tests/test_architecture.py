"""The import graph of ragcli/, lazy imports inside functions included, has no circles, and the
layers import only downward."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "ragcli"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Each ragcli module and the ragcli modules it imports anywhere in its body (``from ragcli.x
    import y`` counts ``ragcli.x.y`` when that is a module, else ``ragcli.x``)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("ragcli")}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ragcli"):
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    deps.add(sub if sub in modules else node.module)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def test_no_import_circles_lazy_imports_included():
    graph = imports()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(dep):] + [dep]))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_layers_import_only_downward():
    graph = imports()
    below = {  # a layer and the modules it must never import
        "ragcli.strategies": ("ragcli.engine", "ragcli.cli", "ragcli.render", "ragcli.eval", "ragcli.calibration",
                              "ragcli.repl", "ragcli.ingest"),
        "ragcli.generation": ("ragcli.strategies", "ragcli.engine", "ragcli.cli", "ragcli.retrieval", "ragcli.eval"),
        "ragcli.retrieval": ("ragcli.ingest", "ragcli.strategies", "ragcli.engine", "ragcli.generation"),
        "ragcli.render": ("ragcli.strategies", "ragcli.engine", "ragcli.generation"),
    }
    for name, deps in graph.items():
        for layer, forbidden in below.items():
            if name == layer or name.startswith(layer + "."):
                bad = [d for d in deps if any(d == f or d.startswith(f + ".") for f in forbidden)]
                assert not bad, f"{name} imports {bad}"


def test_the_suite_does_not_depend_on_the_terminal_settings_of_the_shell_it_runs_from():
    """A narrow terminal's COLUMNS (tables folded, names cut), FORCE_COLOR (escape codes in captured
    output) and TERM=dumb exported by a developer's shell failed tests that pass on CI; conftest clears them."""
    import os
    import subprocess
    import sys

    tests = ["tests/test_cli.py::test_strategies_lists_the_registry",  # fails with COLUMNS=50
             "tests/test_render.py::test_answer_on_stdout_is_word_wrapped_only_on_a_terminal",  # FORCE_COLOR=1
             "tests/test_render.py::test_every_step_label_fits_the_label_column"]  # TERM=dumb
    env = {**os.environ, "COLUMNS": "50", "FORCE_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
