"""The flip player's JavaScript and CSS (``webui/static/``), put together for a ``gr.HTML``'s
``js_on_load`` and ``css_template``: the four player modules (audio engine, drawing, input and
keys, controls), then the entry of the page section that uses it (the lab or the blind test)."""

from __future__ import annotations

import functools
from pathlib import Path

STATIC = Path(__file__).resolve().parents[1] / "static"
PLAYER_MODULES = ("player_audio.js", "player_draw.js", "player_input.js", "player_view.js")  # in load order


@functools.cache
def player_js(entry: str) -> str:
    """The modules and ``entry`` (``flip_player.js`` or ``abx_player.js``) as one js_on_load body."""
    return "\n".join((STATIC / name).read_text(encoding="utf-8") for name in (*PLAYER_MODULES, entry))


@functools.cache
def player_css() -> str:
    return (STATIC / "flip_player.css").read_text(encoding="utf-8")
