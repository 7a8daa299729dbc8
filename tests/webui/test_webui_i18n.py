"""The page's two languages: complete catalogues, every key the code uses, no user-facing text
left hard-coded in webui/, the request's language on server-made text and errors."""

from __future__ import annotations

import ast
import json
import re
import string
import urllib.request
from pathlib import Path

import gradio as gr
import pytest

import core.errors
from core import anchors
from core.analysis import catalog as metric_catalog
from core.codec import NUM_CODEBOOKS
from core.judging import sources
from core.judging.sources import CODEC_ID, COMPARE_ID, ORIGINAL_ID, RESIDUAL_ID
from tests.webui.tab_handlers import Tabs
from webui import i18n
from webui.serving import url_input
from webui.serving.workspace import Workspace
from webui.views import formatting

WEBUI = Path(i18n.__file__).resolve().parent
ZH = gr.Request(headers={"accept-language": "zh-CN,zh;q=0.9"})  # what Chromium sends with a zh-CN locale
EN = gr.Request(headers={"accept-language": "en-US,en;q=0.9"})
# modules whose strings reach the page; i18n.py itself only holds mechanism text (KeyError for bugs)
# not scanned: the command line, flags, logs and HTTP-level answers (English by design, docs/i18n.md)
NOT_PAGE_TEXT = {"i18n.py", "__main__.py", "options.py", "server.py", "queues.py"} | {
    f"serving/{name}.py"
    for name in ("guard", "health", "storage", "throttle", "timeouts", "uploads", "workspace", "files", "limits")
}
SCANNED = tuple(
    name
    for name in (str(p.relative_to(WEBUI)) for p in sorted(WEBUI.rglob("*.py")) if p.name != "__init__.py")
    if name not in NOT_PAGE_TEXT
)
_KEY = re.compile(r"^[a-z_]+(\.[A-Za-z0-9_ -]+)+$")
_WORDS = re.compile(r"[A-Za-z]{2,}[ ,:;]+[A-Za-z]{2,}")  # two words in a row: prose, not an identifier
_MARKUP = re.compile(r"<[^>]*>|\{[^}]*\}|`[^`]*`")
_KEYED_CALLS = {"text", "label", "user_errors", "UrlInputError", "TranslatedError", "need_file", "progress", "_span"}


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


# --------------------------------------------------------------------------- catalogues


def test_every_key_is_in_every_catalogue_with_the_same_placeholders():
    tables = i18n.catalogues()
    english = tables[i18n.DEFAULT_LANGUAGE]
    for lang in i18n.LANGUAGES:
        assert set(tables[lang]) == set(english), f"{lang}: keys differ from the English catalogue"
        for key, value in tables[lang].items():
            assert value.strip(), f"{lang}/{key} is empty"
            assert _fields(value) == _fields(english[key]), f"{lang}/{key}: placeholders differ from English"


def test_chinese_is_translated_not_copied():
    english, chinese = i18n.catalogues()["en"], i18n.catalogues()["zh-CN"]
    for key, value in chinese.items():
        prose = _WORDS.search(_MARKUP.sub("", english[key]))
        if prose:  # anything with English words in it must read differently in Chinese
            assert value != english[key] and re.search(r"[\u4e00-\u9fff]", value), key


def test_catalogue_files_are_sorted_and_named_after_their_keys_for_clean_merges():
    for lang in i18n.LANGUAGES:
        files = i18n.catalogue_files(lang)
        assert [p.name for p in files] == [p.name for p in i18n.catalogue_files(i18n.DEFAULT_LANGUAGE)], lang
        for path in files:
            keys = list(json.loads(path.read_text(encoding="utf-8")))
            assert keys == sorted(keys), f"{path}: keys are not in sorted order"
            assert {key.split(".")[0] for key in keys} == {path.stem}, f"{path}: a key of another prefix"


def _string_constants(tree: ast.AST):
    """(node, text) of every string literal; an f-string is one text with ``{}`` for its fields."""
    inside_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside_fstrings.update(id(part) for part in ast.walk(node) if part is not node)
            yield node, "".join(str(p.value) if isinstance(p, ast.Constant) else "{}" for p in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_fstrings:
            yield node, node.value


def _named_keys(tree: ast.AST):
    """Literal keys handed to the i18n functions (and the jobs' keyed progress), and any literal
    that looks like a key of a namespace the catalogues already have."""
    namespaces = {key.split(".")[0] for key in i18n.catalogues()["en"]}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            args = list(node.args) + [k.value for k in node.keywords if (k.arg or "").endswith("_key")]
            if name in _KEYED_CALLS:
                for arg in args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _KEY.match(arg.value):
                        yield node.lineno, arg.value
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _KEY.match(node.value)
            and node.value.split(".")[0] in namespaces
        ):
            yield node.lineno, node.value


def test_every_key_the_code_names_exists():
    english = i18n.catalogues()["en"]
    missing = []
    for path in sorted(WEBUI.glob("*.py")):
        for line, key in _named_keys(ast.parse(path.read_text(encoding="utf-8"))):
            if key not in english:
                missing.append(f"{path.name}:{line}: {key}")
    assert not missing, missing


def test_every_metric_and_source_has_its_words_in_every_language():
    """A row of the metric catalogue or the source catalogue is named on the page by its keys: each
    language has every one (core.analysis.catalog.MetricRow.locale_keys, core.judging.sources.entry)."""
    source_ids = [ORIGINAL_ID, CODEC_ID, RESIDUAL_ID, COMPARE_ID, *(f"k{k}" for k in range(1, NUM_CODEBOOKS + 1))]
    source_ids += [a.id for a in anchors.ANCHORS]
    needed = {key: f"metric {m.id}" for m in metric_catalog.METRICS for key in m.locale_keys()}
    needed |= {sources.entry(sid).key: f"source {sid}" for sid in source_ids}
    assert len(needed) > len(metric_catalog.METRICS) + len(anchors.ANCHORS)  # the test reads the catalogues
    missing = [
        f"{lang}: {key} ({owner})"
        for lang, words in i18n.catalogues().items()
        for key, owner in needed.items()
        if key not in words
    ]
    assert not missing, "keys a catalogue row needs that a language lacks:\n" + "\n".join(missing)


def test_keys_built_from_names_exist(engine):
    english = i18n.catalogues()["en"]
    for operation in ("roundtrip", "encode", "decode"):  # jobs._preflight
        assert f"job.estimate.{operation}" in english
    steps = [step.name for step in engine.last_report.steps]
    assert tuple(steps) == formatting.READINESS_STEPS
    for name in steps:
        assert f"status.step.{name}" in english
    for word in formatting.STATUS_ICONS:
        assert f"status.word.{word}" in english
    for name in metric_catalog.ids(metric_catalog.COMPARED):
        assert f"metrics.meaning.{name}" in english
    for cls in vars(core.errors).values():
        if isinstance(cls, type) and issubclass(cls, core.errors.CodecError):
            assert f"error.lead.{cls.__name__}" in english
    for address in ("127.0.0.1", "10.0.0.1", "169.254.1.1", "224.0.0.1", "240.0.0.1", "0.0.0.0", "100.64.0.1"):
        key = url_input.blocked_key(address)
        assert key is not None and key in english, address


# --------------------------------------------------------------------------- hard-coded strings


def hard_coded(source: str) -> list[tuple[int, str]]:
    """User-facing-looking literals (two words of prose once tags, {fields} and `code` are
    removed), except docstrings, logger calls, and lines marked ``i18n-exempt`` (or the line above)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            skip.add(id(body[0].value))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "logger"
        ):
            skip.update(id(n) for n in ast.walk(node))
    found = []
    for node, value in _string_constants(tree):
        near = lines[max(node.lineno - 2, 0) : node.lineno]
        if id(node) in skip or any("i18n-exempt" in line for line in near):
            continue
        if _WORDS.search(_MARKUP.sub(" ", value)):
            found.append((node.lineno, value))
    return found


def test_the_detector_finds_prose_and_spares_keys_and_markup():
    source = (
        "import gradio as gr\n"
        "def f(x):\n"
        '    """A docstring is fine."""\n'
        '    logger.info("logs stay English %s", x)\n'
        "    html = f'<div class=\"cw-step cw-{x}\">{x}</div>'\n"
        '    raise gr.Error("Please upload a file first.")\n'
    )
    assert [line for line, _ in hard_coded(source)] == [6]
    assert hard_coded('x = "status.not_ready"\ny = f"{a} × {b}"\n') == []


@pytest.mark.parametrize("name", SCANNED)
def test_no_user_facing_string_is_left_hard_coded(name):
    found = hard_coded((WEBUI / name).read_text(encoding="utf-8"))
    assert not found, f"webui/{name}: put these in webui/locales/*.json: {found}"


# --------------------------------------------------------------------------- the request's language


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("zh-CN,zh;q=0.9", "zh-CN"),
        ("zh-TW", "zh-CN"),
        ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
        ("fr-FR,zh;q=0.5", "zh-CN"),
        ("en;q=0.4,zh-Hans;q=0.8", "zh-CN"),
        ("de-DE", "en"),
        ("", "en"),
    ],
)
def test_language_of_follows_accept_language(header, expected):
    assert i18n.language_of(gr.Request(headers={"accept-language": header})) == expected


def test_language_of_without_a_request_is_english():
    assert i18n.language_of(None) == "en"


def test_labels_with_fields_are_filled_in_every_language():
    data = i18n.label("system.refreshed", seconds="2")
    tables = i18n.gradio_i18n().translations_dict
    assert tables["en"][data.key] == "Refreshed every 2 s." and "2" in tables["zh-CN"][data.key]
    assert tables["zh-CN"][data.key] != tables["en"][data.key]
    with pytest.raises(KeyError, match="missing"):
        i18n.label("no.such.key")


def test_status_bar_is_chinese_for_a_chinese_browser(tabs):
    html, raw = tabs.status.status(ZH)
    for words in ("就绪", "CUDA 可用", "权重已驻留", "测试往返", "模型", "随机权重", "CPU（未使用 GPU）"):
        assert words in html
    assert "Ready" not in html and raw["readiness"]["ok"] is True  # JSON stays English
    assert "Ready" in tabs.status.status(EN)[0]


def test_errors_follow_the_request_language(tabs, bad_tokens):
    with pytest.raises(gr.Error, match="还没有音频"):
        tabs.roundtrip.roundtrip(None, ZH)
    with pytest.raises(gr.Error, match="No audio yet"):
        tabs.roundtrip.roundtrip(None, EN)
    with pytest.raises(gr.Error) as info:  # a core error: Chinese lead sentence, English detail
        tabs.decode.decode(str(bad_tokens), ZH)
    lead = i18n.text("error.lead.TokenFileError", "zh-CN", detail="")
    assert info.value.message.startswith(lead) and re.search(r"[A-Za-z]{4,} [a-z]{2,}", info.value.message)
    with pytest.raises(gr.Error, match="已关闭从 URL 获取音频"):
        tabs.roundtrip.fetch_url("https://example.com/a.wav", ZH)


def test_url_errors_made_in_webui_are_translated_whole(engine, tmp_path):
    h = Tabs.of(engine, Workspace(tmp_path / "work"), url_input.UrlPolicy())
    with pytest.raises(gr.Error, match="这是环回地址") as info:
        h.roundtrip.fetch_url("http://127.0.0.1/a.wav", ZH)
    assert "Refused" not in info.value.message
    with pytest.raises(url_input.AudioInputError, match="Refused: 127.0.0.1 resolves to 127.0.0.1, a loopback"):
        url_input.check("http://127.0.0.1/a.wav")  # the English text stays for logs and the CLI


def test_progress_steps_are_in_the_request_language(engine, tmp_path, clip):
    seen = []
    Tabs.of(engine, Workspace(tmp_path / "work")).encode.encode(
        str(clip), ZH, progress=lambda f, desc="": seen.append(desc)
    )
    assert "正在读取音频" in seen and "正在编码" in seen
    assert any(d.startswith("编码 ") and d.endswith("可以容纳。") for d in seen)  # the estimate, in Chinese too


def test_the_served_page_carries_both_catalogues(server):
    url, _demo = server
    with urllib.request.urlopen(url.rstrip("/") + "/config", timeout=30) as response:
        config = json.load(response)
    tables = config["i18n_translations"]
    assert set(tables) == set(i18n.LANGUAGES) and tables["zh-CN"]["tab.roundtrip"] == "往返"
    labels = json.dumps([c.get("props", {}).get("label") for c in config["components"]], ensure_ascii=False)
    assert "tab.roundtrip" in labels and "Round trip" not in labels  # keys, translated in the browser


def test_a_bare_gr_error_gets_the_toast_title_in_the_pages_language():
    import gradio as gr

    from webui.common import user_errors

    with pytest.raises(gr.Error) as raised, user_errors("action.abx_start", "zh-CN"):
        raise gr.Error("没有可重复的测试", print_exception=False)
    assert raised.value.title == i18n.text("running.error_title", "zh-CN") != "Error"
    with pytest.raises(gr.Error) as kept, user_errors("action.abx_start", "zh-CN"):
        raise gr.Error("x", title="自己的标题")
    assert kept.value.title == "自己的标题"  # a title a handler chose stays


def test_every_error_toast_made_in_webui_is_titled():
    """gr.Error's own title is the English "Error": every toast names its title (``webui.common.refusal``)."""
    import ast

    untitled = []
    for path in sorted(WEBUI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("Error", "Warning")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "gr"
                and not any(k.arg == "title" for k in node.keywords)
            ):
                untitled.append(f"{path.relative_to(WEBUI.parent)}:{node.lineno}")
    assert untitled == []
