"""One home per fact: the codec's numbers, the units, the bitrate formula, the safe-name rule, the
audio limits and the service options each live in one module, and a second copy fails here.

The rules, read from the code's tokens and syntax tree (comments and docstrings never count):

- **Codec literals** (``core/`` and ``webui/``, Python and ``webui/static/*.js``): a number token
  whose value is 24000 (however written: ``24_000``, ``24000.0``, ``24e3``), 1920, 12.5 or 2048
  appears only in ``core/codec.py``; 7860 (the web UI's port) only in ``core/settings.py``.
  In JavaScript 2048 counts only in codebook context (below): ``AnalyserNode.fftSize = 2048`` is
  the Web Audio FFT size, not the codebook size.
- **16 that means codebooks**: a number token 16 on a (physical) line whose names or strings speak of
  codebooks: ``codebook`` / ``codebooks`` as a word (``codebook_dim``, a vector width, does not
  count), ``quantizers``, ``NUM_CODEBOOKS`` or ``codes`` (``reshape(-1, 16)`` of ``batch["codes"]``).
  A 16 elsewhere (16-bit PCM, 16 kHz, a 16-byte digest) is some other fact.
- **One definition** (``core/``, ``webui/``, ``bench/``, ``deploy/``): the names below are defined
  (assigned or ``def``-ed at module level) only in their home; a mebibyte is not spelled
  ``1 << 20`` / ``2 ** 20`` / ``1024 * 1024`` (nor a gibibyte ``1 << 30``) outside ``core/units.py``;
  ``BITS_PER_CODE`` is multiplied (the bitrate formula) only in ``core/codec.py``; a safe-name
  character class (``[^A-Za-z0-9``) is written only in ``core/names.py``; ``AudioLimits(...)`` with
  arguments is built only in ``core/settings.py`` (``Settings.audio_limits()``; a bare
  ``AudioLimits()`` is the settings' defaults, checked equal below).
- **Imported from their homes**: ``from M import NAME`` or ``M.NAME`` for a name below names its home,
  never a module that merely imported it (``core.audio.files.SAMPLE_RATE`` was such a second door).
- **Metric ids** (``core/``, ``webui/``, ``bench/``): a string that is a metric's id (``"SI-SDR"``,
  ``"PESQ-WB"``: the ``id`` of a row of ``core/analysis/catalog.py``) is written only in the catalogue;
  everywhere else the id is its constant, taken from the row (``catalog.SI_SDR``, ``catalog.PESQ_WB``),
  so that renaming a metric is one edit. A longer string that merely holds an id (a label, a
  sentence) is not an id.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("core", "webui")  # literal scan
DEFINITIONS_SCANNED = ("core", "webui", "bench", "deploy")  # one-definition and import checks

CODEC = "core/codec.py"
HOMES: dict[str, str] = {  # name -> the one module that defines it
    **dict.fromkeys(
        (
            "SAMPLE_RATE",
            "SAMPLES_PER_FRAME",
            "FRAME_RATE",
            "SAMPLES_PER_STEP",
            "NUM_CODEBOOKS",
            "CODEBOOK_SIZE",
            "BITS_PER_CODE",
            "bitrate_bps",
            "code_bits",
        ),
        CODEC,
    ),
    **dict.fromkeys(("MIB", "GIB", "minutes"), "core/units.py"),
    **dict.fromkeys(("safe_name",), "core/names.py"),
    **dict.fromkeys(
        (
            "AudioLimits",
            "Settings",
            "ServiceOptions",
            "DEFAULT_HOST",
            "DEFAULT_PORT",
            "TEMP_FOLDER",
            "default_temp_root",
            "MAX_DURATION_S",
            "MAX_FILE_MB",
        ),
        "core/settings.py",
    ),
}
METRIC_IDS_SCANNED = ("core", "webui", "bench")
METRIC_CATALOGUE = "core/analysis/catalog.py"
LITERAL_HOMES = {24000: CODEC, 1920: CODEC, 12.5: CODEC, 2048: CODEC, 7860: "core/settings.py"}
CODEBOOK_CONTEXT = re.compile(r"\bcodebooks?\b|quantizers|NUM_CODEBOOKS|codes", re.IGNORECASE)
SAFE_NAME_CLASS = "[^A-Za-z0-9"


def python_files(folders: tuple[str, ...]) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _number(text: str) -> float | int | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def literal_problems(source: str, where: str) -> list[str]:
    """Codec literals outside their home in one Python source (the rules in the module docstring)."""
    problems = []
    words: dict[int, str] = {}  # physical line -> its names and strings (the context of a 16)
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for tok in tokens:
        if tok.type in (tokenize.NAME, tokenize.STRING):
            words[tok.start[0]] = words.get(tok.start[0], "") + " " + tok.string
    for tok in tokens:
        value = _number(tok.string) if tok.type == tokenize.NUMBER else None
        if value is None:
            continue
        home = LITERAL_HOMES.get(value)
        if home is not None and home != where:
            problems.append(f"{where}:{tok.start[0]}: {tok.string} (its home is {home})")
        elif value == 16 and where != CODEC and CODEBOOK_CONTEXT.search(words.get(tok.start[0], "")):
            problems.append(f"{where}:{tok.start[0]}: 16 codebooks (use NUM_CODEBOOKS from {CODEC})")
    return problems


_JS_TOKEN = re.compile(
    r"//[^\n]*|/\*.*?\*/"  # comments
    r"|`(?:\\.|[^`\\])*`|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\""  # strings
    r"|(?<![\w.$])(\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![\w$])",  # numbers
    re.DOTALL,
)


def js_literal_problems(source: str, where: str) -> list[str]:
    """The same rules in JavaScript, comments and strings left out; 2048 only in codebook context."""
    problems = []
    for m in _JS_TOKEN.finditer(source):
        if m.group(1) is None:
            continue
        value = float(m.group(1).replace("_", ""))
        lineno = source.count("\n", 0, m.start()) + 1
        code_line = _JS_TOKEN.sub(lambda t: t.group(0) if t.group(1) else " ", source.splitlines()[lineno - 1])
        in_context = bool(CODEBOOK_CONTEXT.search(code_line))
        if value in (24000, 1920, 12.5, 7860) or (value in (2048, 16) and in_context):
            problems.append(f"{where}:{lineno}: {m.group(1)} (codec facts come from the page, not the script)")
    return problems


def _module_of(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


HOME_MODULES = {name: _module_of(home) for name, home in HOMES.items()}


def definition_problems(tree: ast.Module, where: str) -> list[str]:
    """Second definitions, MIB spelled out, the bitrate formula, safe-name classes, hand-built limits,
    and fact names taken from a module that is not their home."""
    problems = []
    for stmt in tree.body:  # module-level definitions of a fact's name
        names: list[str] = []
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        for name in names:
            if HOMES.get(name, where) != where:
                problems.append(f"{where}:{stmt.lineno}: defines {name} (its home is {HOMES[name]})")
    modules: dict[str, str] = {}  # local name -> module it stands for
    for imp in ast.walk(tree):
        if isinstance(imp, ast.Import):
            for alias in imp.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:  # ``import a.b`` binds ``a``
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(imp, ast.ImportFrom) and imp.module:
            for alias in imp.names:
                modules[alias.asname or alias.name] = f"{imp.module}.{alias.name}"
                home = HOME_MODULES.get(alias.name)
                if home and imp.module != home:
                    problems.append(
                        f"{where}:{imp.lineno}: imports {alias.name} from {imp.module} (its home is {home})"
                    )
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and node.attr in HOME_MODULES and isinstance(node.value, ast.Name):
            module = modules.get(node.value.id)
            if module and module.startswith(("core", "webui")) and module != HOME_MODULES[node.attr]:
                problems.append(f"{line}: {node.value.id}.{node.attr} (import it from {HOME_MODULES[node.attr]})")
        if isinstance(node, ast.BinOp) and where != "core/units.py":
            pair = (_const(node.left), type(node.op).__name__, _const(node.right))
            if pair in {(1, "LShift", 20), (1, "LShift", 30), (2, "Pow", 20), (2, "Pow", 30), (1024, "Mult", 1024)}:
                problems.append(f"{line}: a MiB/GiB spelled out (use MIB / GIB from core/units.py)")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and where != CODEC:
            if "BITS_PER_CODE" in {_name(node.left), _name(node.right)}:
                problems.append(f"{line}: the bitrate formula (use bitrate_bps / code_bits from {CODEC})")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SAFE_NAME_CLASS in node.value:
            if where != "core/names.py":
                problems.append(f"{line}: a safe-name character class (use safe_name from core/names.py)")
        if isinstance(node, ast.Call) and _name(node.func) == "AudioLimits" and (node.args or node.keywords):
            if where != "core/settings.py":
                problems.append(f"{line}: AudioLimits built by hand (use Settings.audio_limits())")
    return problems


def metric_id_problems(tree: ast.Module, where: str, metric_ids: set[str]) -> list[str]:
    """Metric ids written as string literals outside the catalogue (the rule in the module docstring)."""
    if where == METRIC_CATALOGUE:
        return []
    return [
        f"{where}:{node.lineno}: {node.value!r} (a metric id: take its constant from {METRIC_CATALOGUE})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in metric_ids
    ]


def _metric_ids() -> set[str]:
    from core.analysis import catalog

    return set(catalog.BY_ID)


def _const(node: ast.expr):
    return node.value if isinstance(node, ast.Constant) else None


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def test_codec_literals_live_only_in_core_codec():
    problems = [p for path in python_files(SCANNED) for p in literal_problems(path.read_text(), rel(path))]
    problems += [
        p
        for path in sorted((ROOT / "webui" / "static").glob("*.js"))
        for p in js_literal_problems(path.read_text(), rel(path))
    ]
    assert not problems, "codec facts outside their home:\n" + "\n".join(problems)


def test_each_fact_has_one_definition_and_is_imported_from_it():
    problems = []
    for path in python_files(DEFINITIONS_SCANNED):
        problems += definition_problems(ast.parse(path.read_text(), str(path)), rel(path))
    assert not problems, "second homes:\n" + "\n".join(problems)


def test_metric_ids_are_taken_from_the_catalogue():
    problems = []
    for path in python_files(METRIC_IDS_SCANNED):
        problems += metric_id_problems(ast.parse(path.read_text(), str(path)), rel(path), _metric_ids())
    assert not problems, "metric ids written out:\n" + "\n".join(problems)


def test_every_home_defines_its_names():
    """The table above is true: each name is defined where it says (so a move updates the test)."""
    for name, home in HOMES.items():
        tree = ast.parse((ROOT / home).read_text())
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        for n in tree.body:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
            defined |= {t.id for t in targets if isinstance(t, ast.Name)}
        assert name in defined, f"{name} is not defined in {home}"


def test_default_audio_limits_are_the_settings_defaults():
    from core.settings import AudioLimits, Settings

    assert AudioLimits() == Settings().audio_limits()


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("x = y / 24_000\n", True),
        ("x = 24e3\n", True),
        ('"""24000 in a docstring"""\n# 1920 in a comment\nx = "12.5 in a string"\n', False),
        ('codes = np.frombuffer(batch["codes"][row]).reshape(-1, 16)\n', True),
        ('config = {"num_quantizers": 16}\n', True),
        ('config = {"codebook_dim": 16, "head_dim": 16}\n', False),
        ("PCM_BITS = 16\n", False),
    ],
)
def test_the_literal_rule_sees_what_it_should(source, found):
    assert bool(literal_problems(source, "core/x.py")) is found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("const rate = 24000;\n", True),
        ("analyser.fftSize = 2048; // 12.5 in a comment\n", False),
        ("const label = 'of 2048';\n", False),
        ("const perFrame = codes.length / 16;\n", True),
    ],
)
def test_the_js_rule_sees_what_it_should(source, found):
    assert bool(js_literal_problems(source, "webui/static/x.js")) is found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("MIB = 1 << 20\n", True),
        ("BLOCK = 2 ** 20\n", True),
        ("from core.audio.files import SAMPLE_RATE\n", True),
        ("from core.analysis import metrics\nx = metrics.SAMPLE_RATE\n", True),
        ("from core.codec import SAMPLE_RATE\nx = SAMPLE_RATE\n", False),
        ("from core import codec\nx = codec.SAMPLE_RATE\n", False),
        ("bps = 12 * NUM_CODEBOOKS * BITS_PER_CODE\n", True),
        ('SAFE = re.compile(r"[^A-Za-z0-9_-]+")\n', True),
        ("limits = AudioLimits(max_duration_s=s.max_duration_s)\n", True),
        ("def f(limits=AudioLimits()):\n    pass\n", False),
        ("def minutes(s):\n    return s / 60\n", True),
    ],
)
def test_the_definition_rules_see_what_they_should(source, found):
    assert bool(definition_problems(ast.parse(source), "webui/x.py")) is found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('row = {"si_sdr_db": metrics["SI-SDR"]}\n', True),
        ('values = {"PESQ-WB": 3.0}\n', True),
        ('def f(m="Log-mel distance"):\n    pass\n', True),
        ('row = {"si_sdr_db": metrics[catalog.SI_SDR]}\n', False),
        ('label = "SI-SDR (dB)"\nkey = "si_sdr"\n', False),
    ],
)
def test_the_metric_id_rule_sees_what_it_should(source, found):
    assert bool(metric_id_problems(ast.parse(source), "webui/x.py", _metric_ids())) is found
    assert not metric_id_problems(ast.parse(source), METRIC_CATALOGUE, _metric_ids())
