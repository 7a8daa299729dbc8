"""The page a listener opens from a shared test's link: only that test, in the reader's language.

One HTML document with the flip transport (``webui/static/player_*.js``, the same modules as the
lab and the blind test) and ``webui/static/listen.js`` inline: a nickname box, then MUSHRA sliders
(the scale's words beside them) or ABX buttons. It names no condition: the sounds are handles the
server hands out per listener (``webui.serving.shared_test_routes``).
"""

from __future__ import annotations

import html
import json

from core.codec import SAMPLE_RATE
from core.listening import mushra
from webui import i18n
from webui.views.player_assets import STATIC, player_css, player_js

TRANSPORT_WORDS = ("play", "pause", "loop", "zoom_in", "zoom_out", "zoom_all", "sources", "alt_track", "alt_loop")
PAGE_KEYS = (
    "title",
    "intro_mushra",
    "intro_abx",
    "nickname",
    "join",
    "reference",
    "sound",
    "send",
    "screen",
    "trial",
    "answer_a",
    "answer_b",
    "x_is",
    "done",
    "closed",
    "expired",
    "rate_all",
    "keys_mushra",
    "keys_abx",
    "thanks_nickname",
)


def words(lang: str) -> dict:
    """Every word the page shows, in ``lang``: its own, the scale's, the transport's."""
    out: dict[str, object] = {key: i18n.text(f"listen.{key}", lang) for key in PAGE_KEYS}
    out["scale"] = [i18n.text(f"listen.scale.{word}", lang) for word in mushra.SCALE]
    out["player"] = {key: i18n.text(f"lab.player.{key}", lang) for key in TRANSPORT_WORDS}
    return out


def page(kind: str, lang: str, rate_hz: int = SAMPLE_RATE) -> str:
    """The whole document for a test of ``kind`` ("mushra" or "abx") whose sounds are at ``rate_hz``."""
    config = {"kind": kind, "rate": rate_hz, "words": words(lang)}
    css = player_css() + (STATIC / "listen.css").read_text(encoding="utf-8")
    script = player_js("listen.js").replace("</script", "<\\/script")
    # i18n-exempt: markup only; every word in it comes from the catalogue
    return f"""<!doctype html>
<html lang="{html.escape(lang)}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{html.escape(i18n.text("listen.title", lang))}</title>
<style>{css}</style></head>
<body><main id="listen" class="cw-listen">
<h1>{html.escape(i18n.text("listen.title", lang))}</h1>
<p id="listen-intro"></p>
<div id="listen-join" hidden><label>{html.escape(i18n.text("listen.nickname", lang))}
<input id="listen-nickname" maxlength="40" autocomplete="nickname"></label>
<button type="button" id="listen-join-button">{html.escape(i18n.text("listen.join", lang))}</button></div>
<p id="listen-status" role="status" aria-live="polite"></p>
<div id="listen-test" hidden><div class="cw-listen-player cw-lab-root"></div>
<div id="listen-controls"></div></div>
<p id="listen-error" role="alert"></p>
</main>
<script>const CW_LISTEN = {json.dumps(config)};
const element = document.getElementById("listen");
{script}</script></body></html>"""
