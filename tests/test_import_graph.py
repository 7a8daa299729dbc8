"""The house has no import circles and core never reaches up into webui (docs/core.md).

Every import is read with ``ast`` — those inside functions too, since a lazy import still ties two
modules together (a merge brought in ``core/dataset/inputs.py`` -> ``tables.py`` -> ``inputs.py``
through one). Relative imports are not used in this tree; a module's package ``__init__`` is not
counted as an edge target unless named."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "webui")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # "from core.dataset import tables" names a module; "from core.x import y" a name in x
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            for target in targets:
                if target in modules and target != name and modules[target].name != "__init__.py":
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    assert circles(import_graph()) == []


def test_core_never_imports_webui():
    upward = sorted(
        f"{m} -> {t}" for m, ts in import_graph().items() if m.startswith("core") for t in ts if t.startswith("webui")
    )
    assert upward == []


@pytest.mark.parametrize("planted", [{"core.a": {"core.b"}, "core.b": {"core.c"}, "core.c": {"core.a"}}])
def test_the_circle_finder_finds_a_planted_circle(planted):
    """The check can fail: a three-module loop is reported as one circle."""
    assert circles({**planted, "core.d": {"core.a"}}) == [["core.a", "core.b", "core.c"]]
