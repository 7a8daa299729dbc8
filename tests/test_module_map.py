"""The maps cannot drift: docs/core.md and docs/webui.md list every module of their package (and
docs/webui.md every file of webui/static), everything they list exists, and no doc names a path
or a ``core.x`` / ``webui.x`` name that is not there.

A module is "listed" when its path appears in backticks, relative to its package (``nn/encoding.py``
in docs/core.md) or to the repository (``webui/options.py``). ``__init__.py`` files are a package's
face (a docstring); the map names the package folder instead (``audio/``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAPS = {"core": ROOT / "docs" / "core.md", "webui": ROOT / "docs" / "webui.md"}
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
_LISTED = re.compile(r"`([\w./-]+\.(?:py|js|css))`")
_FOLDER = re.compile(r"`(\w+)/`")
_PATH = re.compile(r"(?<![\w/.-])((?:core|webui|tests|bench|deploy|scripts|docs)/[\w./-]*[\w/])")
_DOTTED = re.compile(r"`((?:core|webui)(?:\.\w+)+)")


def package_files(package: str) -> set[str]:
    """Every module of ``package`` (and, for webui, every file of its static folder), relative to it."""
    base = ROOT / package
    files = {p.relative_to(base).as_posix() for p in base.rglob("*.py") if p.name != "__init__.py"}
    if package == "webui":
        files |= {p.relative_to(base).as_posix() for p in (base / "static").glob("*") if p.suffix in (".js", ".css")}
    return files


def listed(package: str) -> set[str]:
    return {name.removeprefix(package + "/") for name in _LISTED.findall(MAPS[package].read_text())}


@pytest.mark.parametrize("package", sorted(MAPS))
def test_every_module_is_in_its_map(package):
    missing = package_files(package) - listed(package)
    assert not missing, f"{MAPS[package].name} does not list: {sorted(missing)}"


@pytest.mark.parametrize("package", sorted(MAPS))
def test_every_subpackage_has_its_place_in_the_map(package):
    folders = {p.parent.relative_to(ROOT / package).as_posix() for p in (ROOT / package).glob("*/__init__.py")}
    named = set(_FOLDER.findall(MAPS[package].read_text()))
    assert folders <= named, f"{MAPS[package].name} has no section for: {sorted(folders - named)}"


@pytest.mark.parametrize("package", sorted(MAPS))
def test_everything_the_map_lists_exists(package):
    gone = [n for n in listed(package) if not (ROOT / package / n).is_file() and not (ROOT / n).is_file()]
    assert not gone, f"{MAPS[package].name} lists modules that do not exist: {gone}"


def test_paths_named_in_the_docs_exist():
    """A path counts as there when it is; a pattern (``webui/static/player_*.js``,
    ``bench/results/lab_overhead.{json,md}``) when some file matches its start."""
    gone = []
    for doc in DOCS:
        text = doc.read_text()
        for match in _PATH.finditer(text):
            path = match.group(1).rstrip(".")
            pattern = text[match.end() : match.end() + 1] in ("*", "{") or text[match.end() : match.end() + 2] == ".{"
            if (ROOT / path).exists() or (pattern and list((ROOT / path).parent.glob((ROOT / path).name + "*"))):
                continue
            gone.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not gone, "paths in the docs that are not in the tree:\n" + "\n".join(sorted(set(gone)))


def _docstrings_and_comments(path: Path):
    """(line, text) of every docstring and comment of a Python file."""
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield (node.body[0].lineno, doc)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield (token.start[0], token.string)


def _named_path_exists(text: str, match: re.Match) -> bool:
    """A path is there when it is; a pattern (``webui/static/player_*.js``, ``results/x.{json,md}``)
    when some file matches its start."""
    path = match.group(1).rstrip(".")
    after = text[match.end() : match.end() + 2]
    pattern = after[:1] in ("*", "{", "<") or after == ".{"
    return (ROOT / path).exists() or bool(pattern and list((ROOT / path).parent.glob((ROOT / path).name + "*")))


def test_paths_named_in_docstrings_and_comments_exist():
    """A docstring that says which test pins a number must name a test file that is there: every
    repository path a docstring or a comment of the code, the tests or the benchmarks names."""
    gone = []
    for folder in ("core", "webui", "bench", "tests", "deploy", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, text in _docstrings_and_comments(path):
                gone += [
                    f"{path.relative_to(ROOT)}:{line}: {m.group(1).rstrip('.')}"
                    for m in _PATH.finditer(text)
                    if not _named_path_exists(text, m)
                ]
    assert not gone, "paths named in docstrings and comments that are not in the tree:\n" + "\n".join(gone)


def _module_file(parts: list[str]) -> Path | None:
    path = ROOT.joinpath(*parts)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _defined(module: Path) -> set[str]:
    names = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def test_dotted_names_in_the_docs_exist():
    """``core.model.engine.Engine``: the longest prefix that is a module exists, and the next part is
    defined in it (``core.analysis.compare`` would name a function that moved to ``metrics``)."""
    gone = []
    for doc in DOCS:
        for dotted in set(_DOTTED.findall(doc.read_text())):
            parts = dotted.split(".")
            depth = next((n for n in range(len(parts), 0, -1) if _module_file(parts[:n])), 0)
            module = _module_file(parts[:depth])
            rest = parts[depth:]
            if module is None or (rest and rest[0] not in _defined(module)):
                gone.append(f"{doc.relative_to(ROOT)}: {dotted}")
    assert not gone, "names in the docs that are not in the code:\n" + "\n".join(sorted(gone))


def test_the_package_docstring_names_only_what_exists():
    """core/__init__.py says what the package offers; every ``core.x`` it names is there."""
    import core

    for dotted in re.findall(r"``(core(?:\.\w+)+)``", core.__doc__ or ""):
        parts = dotted.split(".")
        depth = next((n for n in range(len(parts), 0, -1) if _module_file(parts[:n])), 0)
        assert depth >= 2, f"core/__init__.py names {dotted}, which is not a module"
        rest = parts[depth:]
        assert not rest or rest[0] in _defined(_module_file(parts[:depth])), f"{dotted} is not defined"


def test_the_readme_is_a_first_page():
    """At most 150 lines, and the three commands for a machine without a GPU or weights are in it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for command in ("-m core build-checkpoint --tiny checkpoints/tiny", "-m webui --model checkpoints/tiny"):
        assert command in text, command
