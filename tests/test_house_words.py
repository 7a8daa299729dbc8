"""House rules for the words in the code (docs/development.md): a module of this project is imported
under its own name, and the code says the rule it keeps, never the round or the tracker entry it came
from (history is CHANGELOG.md's).

An alias hides which module a name is: ``from core.analysis import metrics as analysis`` made
``analysis.x`` mean the metrics module in nine files, and ``jobs`` meant three different modules. Where
two modules of one name meet in a file, the alias still carries the module's name (``jobs_live``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OWN = ("core", "webui", "bench", "tests")
HISTORY = re.compile(r"\bissues? [0-9]+\b", re.IGNORECASE)


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def aliased_own_modules(source: str) -> list[str]:
    """``line: module as alias`` for each own module imported under a name that does not carry its own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: {a.name} as {a.asname}"
                for a in node.names
                if a.asname and a.name.split(".")[0] in OWN and a.name.split(".")[-1] not in a.asname
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] in OWN:
            found += [
                f"{node.lineno}: {node.module}.{a.name} as {a.asname}"
                for a in node.names
                if a.asname and a.name not in a.asname and _is_module(f"{node.module}.{a.name}")
            ]
    return found


def test_own_modules_are_imported_under_their_own_names():
    aliased = {
        str(path.relative_to(ROOT)): found
        for folder in OWN
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (found := aliased_own_modules(path.read_text(encoding="utf-8")))
    }
    assert not aliased, f"import these modules under their own names: {aliased}"


def test_the_rule_catches_an_alias_and_lets_a_name_that_carries_the_module_pass():
    assert aliased_own_modules("from core.analysis import metrics as analysis\n") == [
        "1: core.analysis.metrics as analysis"
    ]
    assert aliased_own_modules("import core.analysis.metrics as m\n") == ["1: core.analysis.metrics as m"]
    assert (
        aliased_own_modules("from webui.jobs import live as jobs_live\nfrom core.units import db as decibels\n") == []
    )


def test_the_code_names_no_tracker_entry():
    """Comments and docstrings in core, webui and bench state the rule, not "issue 29"."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("core", "webui", "bench")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".js", ".css", ".md", ".html"}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not found, f"say the rule instead of the tracker entry (the story goes to CHANGELOG.md): {found}"
