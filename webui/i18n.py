"""The page's languages: one JSON catalogue per language under ``webui/locales``.

Component labels use Gradio's own i18n (``label("key")`` returns an ``I18nData`` that the browser
translates by its language). Text made on the server (status bar, messages, errors) uses
``text("key", lang, **fields)`` with the language taken from the request's ``Accept-Language``
(``language_of(request)``). The CLI and logs stay English and never come through here.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import gradio as gr

LOCALES_DIR = Path(__file__).resolve().parent / "locales"  # en.json, zh-CN.json
DEFAULT_LANGUAGE = "en"  # used when the browser asks for a language we do not have
LANGUAGES = ("en", "zh-CN")  # every key must exist in each of these catalogues


@functools.lru_cache(maxsize=1)
def catalogues() -> dict[str, dict[str, str]]:
    """Every catalogue, read once: {language: {key: text}}."""
    return {lang: json.loads((LOCALES_DIR / f"{lang}.json").read_text(encoding="utf-8")) for lang in LANGUAGES}


@functools.lru_cache(maxsize=1)
def gradio_i18n() -> gr.I18n:
    """The object passed to ``Blocks.launch(i18n=...)`` / ``gr.mount_gradio_app(i18n=...)``."""
    return gr.I18n(**catalogues())


def label(key: str):
    """A translatable component string (label, button text, Markdown value) for ``key``."""
    if key not in catalogues()[DEFAULT_LANGUAGE]:
        raise KeyError(f"i18n key {key!r} is missing from {LOCALES_DIR / 'en.json'}")
    return gradio_i18n()(key)


def language_of(request: gr.Request | None) -> str:
    """The best of LANGUAGES for the request's Accept-Language header (default English)."""
    header = ""
    if request is not None:
        header = (getattr(request, "headers", None) or {}).get("accept-language", "") or ""
    for part in header.split(","):
        tag = part.split(";")[0].strip().lower()
        if tag.startswith("zh"):
            return "zh-CN"
        if tag.startswith("en"):
            return "en"
    return DEFAULT_LANGUAGE


def text(key: str, lang: str = DEFAULT_LANGUAGE, **fields) -> str:
    """Server-made text in ``lang``; ``fields`` fill its ``{placeholders}``."""
    table = catalogues().get(lang) or catalogues()[DEFAULT_LANGUAGE]
    template = table.get(key)
    if template is None:
        template = catalogues()[DEFAULT_LANGUAGE][key]  # KeyError for an unknown key: a bug, caught by tests
    return template.format(**fields) if fields else template
