"""The page's languages: one catalogue per language, kept as one JSON file per key prefix under
``webui/locales/<language>/`` (``abx.json`` holds every ``abx.*`` key), so that work on one area
of the page touches that area's files only.

How Gradio 6 does it (gradio/i18n.py and the page's i18n bundle, 6.17): ``gr.I18n(en={...},
**{"zh-CN": {...}})`` is passed to ``Blocks.launch(i18n=...)`` (or ``gr.mount_gradio_app``); the
page receives every catalogue in its config and translates, in the browser, component props
``label``, ``info``, ``placeholder``, ``description``, ``title`` and ``value`` that carry an
``I18nData`` key. The language is the browser's (``navigator.language``); a key missing from it
falls back to English. That only covers text fixed when the page is built.

Text made on the server (status bar, Markdown results, progress, ``gr.Error``) is translated
here, with the language of the request: a handler declares ``request: gr.Request`` and calls
``text("key", language_of(request), **fields)``. Browsers send their language as
``Accept-Language`` (Chromium with a ``zh-CN`` locale sends ``zh-CN,zh;q=0.9``), so both halves
of the page agree. The CLI and logs stay English and never come through here.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # gradio is imported where it is used: `python -m webui` checks its flags and port first
    import gradio as gr

LOCALES_DIR = Path(__file__).resolve().parent / "locales"  # <language>/<key prefix>.json
DEFAULT_LANGUAGE = "en"  # used when the browser asks for a language we do not have
LANGUAGES = ("en", "zh-CN")  # every key must exist in each of these catalogues
_PREFIXES = {"zh": "zh-CN", "en": "en"}  # primary language subtag -> the catalogue that serves it


@functools.lru_cache(maxsize=1)
def catalogues() -> dict[str, dict[str, str]]:
    """Every catalogue, read once: {language: {key: text}}."""
    return {lang: _catalogue(lang) for lang in LANGUAGES}


def catalogue_files(lang: str) -> list[Path]:
    """The files of one language's catalogue, one per key prefix."""
    return sorted((LOCALES_DIR / lang).glob("*.json"))


def _catalogue(lang: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for path in catalogue_files(lang):
        part = json.loads(path.read_text(encoding="utf-8"))
        wrong = [key for key in part if key.split(".")[0] != path.stem]
        if wrong:
            raise KeyError(f"{path}: keys {wrong} belong in the file named after their prefix")
        table.update(part)
    return table


@functools.lru_cache(maxsize=1)
def gradio_i18n() -> gr.I18n:
    """The object passed to ``Blocks.launch(i18n=...)`` / ``gr.mount_gradio_app(i18n=...)``.

    Its tables are copies: ``label(key, **fields)`` adds the filled-in variants of a key to them
    while the page is built (Gradio reads the tables when it serves the page's config)."""
    import gradio as gr

    return gr.I18n(**{lang: dict(table) for lang, table in catalogues().items()})


def label(key: str, **fields: Any) -> Any:
    """A translatable component string (label, button text, Markdown value) for ``key``.

    With ``fields``, the browser has no way to fill placeholders, so every language's filled-in
    text is registered under a derived key when the page is built: ``filled.<key with _ for
    .>_<hash of the fields>``. The page's lookup takes neither braces nor "=" in a key, and a key
    under another key that has a text of its own breaks its catalogue (Gradio 6.17)."""
    if key not in catalogues()[DEFAULT_LANGUAGE]:
        raise KeyError(f"i18n key {key!r} is missing from {LOCALES_DIR / 'en' / (key.split('.')[0] + '.json')}")
    if not fields:
        return gradio_i18n()(key)
    filled_in = ",".join(f"{name}={value}" for name, value in sorted(fields.items()))
    derived = f"filled.{key.replace('.', '_')}_{hashlib.sha1(filled_in.encode('utf-8')).hexdigest()[:10]}"
    for lang, table in gradio_i18n().translations_dict.items():
        table[derived] = text(key, lang, **fields)
    return gradio_i18n()(derived)


def language_of(request: gr.Request | None) -> str:
    """The best of LANGUAGES for the request's Accept-Language header (default English).

    Tags are taken in the browser's order of preference (q-values, highest first); the first
    whose primary subtag we serve wins (zh, zh-CN, zh-Hans, zh-TW all get Simplified Chinese)."""
    header = ""
    if request is not None:
        header = (getattr(request, "headers", None) or {}).get("accept-language", "") or ""
    ranked = []
    for position, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        ranked.append((-q, position, tag.strip().lower()))
    for _q, _position, tag in sorted(ranked):
        lang = _PREFIXES.get(tag.split("-")[0])
        if lang:
            return lang
    return DEFAULT_LANGUAGE


def text(key: str, lang: str = DEFAULT_LANGUAGE, **fields: Any) -> str:
    """Server-made text in ``lang``; ``fields`` fill its ``{placeholders}``."""
    table = catalogues().get(lang) or catalogues()[DEFAULT_LANGUAGE]
    template = table.get(key)
    if template is None:
        template = catalogues()[DEFAULT_LANGUAGE][key]  # KeyError for an unknown key: a bug, caught by tests
    return template.format(**fields) if fields else template


def filled(fields: dict[str, Any], lang: str) -> dict[str, Any]:
    """``fields`` for a template: one named ``<name>_key`` is itself a key, said in ``lang`` as ``{<name>}``."""
    return {
        name.removesuffix("_key"): text(value, lang) if name.endswith("_key") else value
        for name, value in fields.items()
    }


def progress_in(lang: str, progress: Callable[..., Any]) -> Callable[..., None]:
    """Adapt a ``gr.Progress`` (``progress(fraction, desc=...)``) to the jobs' keyed progress
    (``progress(fraction, key, **fields)``), translating each step into ``lang``."""

    def say(fraction: float, key: str, **fields: Any) -> None:
        progress(fraction, desc=text(key, lang, **filled(fields, lang)))

    return say


class TranslatedError(Exception):
    """Mixin for errors made in webui/ whose message is a catalogue key: ``str()`` is the English
    text (logs, CLI), and ``handlers.user_errors`` shows it in the request's language."""

    def __init__(self, key: str, **fields: Any):
        self.key = key
        self.fields = fields  # a field named ``<name>_key`` is itself a key, filled in as ``{<name>}``
        super().__init__(self.in_language(DEFAULT_LANGUAGE))

    def in_language(self, lang: str) -> str:
        return text(self.key, lang, **filled(self.fields, lang))
