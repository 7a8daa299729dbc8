"""The front doors a newcomer walks through run, and the hand-written lists in the docs are the code's:
the example in ``core/__init__.py``; the "Adding a metric" and "Adding an anchor" recipes of
docs/judging.md, followed on the tiny checkpoint (the row added to the catalogue's source in a fresh
interpreter, the tree untouched); the tabs in docs/webui.md against app.py, the commands in
docs/cli.md against the CLI's parser, the anchor ids in docs/compare.md (and none by hand in docs/api.md) against the anchor catalogue,
and no anchor id written by hand in webui (the shared tests' choices read the catalogue)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import soundfile as sf

from tests.conftest import speechlike

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_the_package_example_runs(tiny_checkpoint, tmp_path, monkeypatch):
    import core

    block = re.search(r"\n\n((?:    .+\n)+)", core.__doc__ or "")
    assert block, "core/__init__.py's docstring has no example"
    code = textwrap.dedent(block.group(1)).replace("checkpoints/tiny", str(tiny_checkpoint))
    monkeypatch.chdir(tmp_path)
    sf.write("speech.wav", speechlike(1.0, 1, 24_000), 24_000)
    exec(compile(code, "core/__init__.py example", "exec"), {})
    assert sf.info("speech.decoded.wav").frames == 24_000


def _with_row(module_path: str, tuple_start: str, row: str, script: str, tiny: Path) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh interpreter where ``module_path`` (a catalogue) has ``row`` first in
    the tuple that opens with ``tuple_start``: the recipe's step 1, without touching the tree."""
    source = (ROOT / module_path).read_text(encoding="utf-8")
    assert source.count(tuple_start) == 1, f"{module_path} no longer has {tuple_start!r}: update the recipe"
    edited = source.replace(tuple_start, tuple_start + "\n" + textwrap.indent(row.strip(), "    ") + ",")
    name = module_path.removesuffix(".py").replace("/", ".")
    prelude = (
        "import sys, types\nimport core\n"
        f"module = types.ModuleType({name!r}); module.__file__ = {str(ROOT / module_path)!r}\n"
        f"sys.modules[{name!r}] = module\nexec(compile({edited!r}, module.__file__, 'exec'), module.__dict__)\n"
        "from core.model.engine import Engine\nfrom core.settings import Settings\nfrom core.audio.files import audio_from_array\n"
        "from tests.conftest import speechlike\n"
        f"engine = Engine(Settings(model={str(tiny)!r})); assert engine.load(), engine.error\n"
        "audio = audio_from_array(speechlike(2.0, 3, 24_000), 24_000)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.slow  # two fresh interpreters loading torch and the model: ~30 s
def test_the_metric_recipe_adds_a_metric_everywhere(tiny_checkpoint, tmp_path):
    row = 'MetricRow("STOI-whole", "stoi_whole", "intelligibility, whole clip: 0 .. 1", HIGHER, "", "stoi", PAIR, WHOLE, source_table=True)'
    script = """
        import csv
        from core.analysis import metrics
        from core.judging import source_table, sources
        made = sources.make_sources(engine, audio, [])
        assert "STOI-whole" in [m.name for m in metrics.compare(made.original.samples, made.sources[0].samples)]
        table = source_table.measure(made.original, made.sources, "cpu", mos=False)
        rows = [r[0] for r in table.csv_rows()]
        assert any("STOI-whole" in str(r) for r in rows), rows
        print("ok", rows)
    """
    done = _with_row("core/analysis/catalog.py", "METRICS: tuple[MetricRow, ...] = (", row, script, tiny_checkpoint)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]


@pytest.mark.slow  # a fresh interpreter loading torch and the model: ~20 s
def test_the_anchor_recipe_adds_an_anchor_everywhere(tiny_checkpoint, tmp_path):
    row = """Anchor("opus8", "Opus 8 kbit/s", "h", "codec", 8_000.0, ("libopus",), "ogg",
        options=(("application", "voip"), ("vbr", "off")))"""
    script = f"""
        from pathlib import Path
        from core.anchors import parse_anchors
        from core.judging import sources
        from core.settings import Settings
        assert Settings(anchors="opus8").anchors  # --anchors accepts it
        made = sources.make_sources(engine, audio, parse_anchors("opus8"))
        assert [s.id for s in made.sources] == ["reconstruction", "opus8"], made.problems
        assert sources.entry("opus8").short == "Opus 8 kbit/s"
        written = sources.write_sources(made.sources, lambda s: Path({str(tmp_path)!r}) / sources.file_name("clip", s.id))
        assert written["opus8"].name == "clip_opus8.wav" and written["opus8"].stat().st_size > 0
        from webui.tabs import shared_test
        assert "opus8" in shared_test.CHOICES
        print("ok")
    """
    done = _with_row("core/anchors/catalog.py", "ANCHORS: tuple[Anchor, ...] = (", row, script, tiny_checkpoint)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]


def test_the_tabs_in_docs_webui_are_the_apps():
    from webui import i18n

    app = (ROOT / "webui" / "app.py").read_text(encoding="utf-8")
    served = [i18n.text(key, "en") for key in re.findall(r'gr\.Tab\(label\("([^"]+)"\)', app)]
    documented = re.findall(r"^\| ([^|`]+?) tab \|", (DOCS / "webui.md").read_text(encoding="utf-8"), re.M)
    assert len(served) >= 8 and documented == served, f"docs/webui.md's Layout: {documented}; app.py: {served}"


def test_the_commands_in_docs_cli_are_the_parsers():
    from core.cli.main import build_parser

    parser, _ = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse keeps them here
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"python -m core ([a-z][a-z-]+)", text))
    assert shown == set(commands), f"docs/cli.md shows {sorted(shown)}; the parser has {sorted(commands)}"
    without = {name for name, sub in commands.items() if "--model" not in sub._option_string_actions}  # noqa: SLF001
    said = re.search(r"Every subcommand but (.+?) takes `--model`", text)
    assert said, "docs/cli.md no longer says which subcommands take --model"
    assert set(re.findall(r"`([a-z-]+)`", said.group(1))) == without


def test_the_anchor_ids_in_the_docs_are_the_catalogues():
    """docs/compare.md's table of anchors is the catalogue's, row for row; docs/api.md points to it
    instead of a list of its own (a new anchor is one doc line)."""
    from core.anchors import ANCHORS

    table = re.findall(r"^\| `([^`]+)` \| \*\*[A-Z]\*\* ", (DOCS / "compare.md").read_text(encoding="utf-8"), re.M)
    assert table == [a.id for a in ANCHORS], f"docs/compare.md's anchors: {table}"
    roundtrip = re.search(r"^\| `/roundtrip` \|.*$", (DOCS / "api.md").read_text(encoding="utf-8"), re.M)
    assert roundtrip, "docs/api.md has no /roundtrip row"
    named = {a.id for a in ANCHORS} & set(re.findall(r"`([^`]+)`", roundtrip.group(0)))
    assert not named, f"docs/api.md lists anchor ids by hand: {sorted(named)} (point to compare.md's table)"


def test_no_anchor_id_is_written_by_hand_in_webui():
    from core.anchors import ANCHORS

    ids = {a.id for a in ANCHORS} | {alias for a in ANCHORS for alias in a.aliases}
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}"
        for path in sorted((ROOT / "webui").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids
    ]
    assert not found, f"read the anchor catalogue (core.anchors.ANCHORS) instead: {found}"
