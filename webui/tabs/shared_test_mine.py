"""The owner's shared tests, in the *Share with listeners* panel: the tests this browser made, kept
in the browser's own storage (``gr.BrowserState``), so a reload, a restart of the server or a
second test loses none; each reopens with its link, QR code and pooled result. And the same for a
script: ``/share_create`` (a test from an audio file and a region) and ``/share_results`` (its
pooled result and CSV by link and owner key).

The owner key is the owner's: it lives in this browser (as the link does in the room's phones), and
the store keeps only its hash. The browser's copy is obfuscated by Gradio, not protected.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import gradio as gr

from webui import i18n
from webui.common import GONE, need_file, refusal, user_errors
from webui.queues import ABX_GROUP, MODEL_GROUP, STATUS_GROUP
from webui.tabs import shared_test
from webui.tabs.shared_test import CHOICES, ShareHandlers, SharePanel, link_html

MAX_KEPT = 20  # tests a browser remembers, newest first
STORAGE_KEY = "codec-workbench-shared-tests"
# Gradio encrypts a BrowserState with a secret it sends to the page anyway; a fixed one keeps the
# list readable after the server restarts (a random one, Gradio's default, lost it)
STORAGE_SECRET = "codec-workbench-shared-tests-v1"
ENTRY_KEYS = ("link", "owner", "kind", "url", "created", "expires")


def remember(mine, owned: dict) -> list[dict]:
    """``mine`` with ``owned`` first (once), at most MAX_KEPT."""
    entry = {k: owned.get(k) for k in ENTRY_KEYS}
    rest = [m for m in _entries(mine) if m["link"] != entry["link"]]
    return [entry, *rest][:MAX_KEPT]


def _entries(mine) -> list[dict]:
    """The well-formed entries of what the browser sent back (anything else is dropped)."""
    items = mine if isinstance(mine, list) else []
    return [m for m in items if isinstance(m, dict) and isinstance(m.get("link"), str) and m.get("owner")][:MAX_KEPT]


def choices(mine, lang: str) -> list[tuple[str, str]]:
    """(label, link) for each remembered test: kind, when it was made (UTC), the link's end."""
    out = []
    for m in _entries(mine):
        made = time.strftime("%Y-%m-%d %H:%M", time.gmtime(float(m.get("created") or 0)))
        kind = "ABX" if m.get("kind") == "abx" else "MUSHRA"  # i18n-exempt: the tests' names
        out.append((i18n.text("share.mine_item", lang, kind=kind, made=made, end=m["link"][-6:]), m["link"]))
    return out


@dataclass
class MineHandlers:
    share: ShareHandlers

    def after_share(self, owned, mine, request: gr.Request):
        """A test was made: it joins the list, first, and is the one shown."""
        mine = remember(mine, owned)
        lang = i18n.language_of(request)
        return (
            mine,
            gr.Dropdown(choices=choices(mine, lang), value=owned["link"], elem_classes=[]),
            gr.Column(elem_classes=[]),
        )

    def pick(self, link, mine, include_excluded, request: gr.Request):
        """Show the test chosen from the list (or, on load, the newest): its link, QR code, result."""
        lang = i18n.language_of(request)
        entries = _entries(mine)
        chosen = next((m for m in entries if m["link"] == link), entries[0] if entries else None)
        if chosen is None:
            return None, "", "", gr.Dropdown(elem_classes=GONE), gr.Column(elem_classes=GONE)
        shown = gr.Dropdown(choices=choices(entries, lang), value=chosen["link"], elem_classes=[])
        results = self.share.responses(chosen, include_excluded, request)
        # the note beside the link (this machine's address was used; a loopback link) holds while
        # the link still points where this request's links would
        base = self.share.links.for_scope(shared_test.request_scope(request))
        noted = base if str(chosen.get("url") or "").startswith(base.url + "/") else None
        return chosen, link_html(chosen["url"], lang, noted), results, shown, gr.Column(elem_classes=[])

    def restore(self, mine, include_excluded, request: gr.Request):
        """The page loads: the newest of this browser's tests, shown again."""
        return self.pick(None, mine, include_excluded, request)

    def create(
        self, audio, start_s, end_s, kind, chosen, trials, expiry_s, request: gr.Request, progress=gr.Progress()
    ):
        """``/share_create``: a test from an audio file's region, as the page's *Share* makes one."""
        lang = i18n.language_of(request)
        path = need_file(audio, "what.audio", lang)
        last = {"audio": str(path), "start_s": float(start_s or 0.0), "end_s": float(end_s or 0.0)}
        owned, _base = self.share.make(last, kind, chosen or list(CHOICES[:1]), trials, expiry_s, request, progress)
        return owned

    def results(self, link, owner, include_excluded, request: gr.Request):
        """``/share_results``: the pooled result (as the owner's panel shows it) and every answer as a CSV."""
        lang = i18n.language_of(request)
        if not link or not owner:
            raise refusal(i18n.text("share.nothing_shared", lang), lang)
        owned = {"link": str(link).rsplit("/", 1)[-1], "owner": str(owner)}
        with user_errors("share.action", lang):
            _shown, (got, nicknames, excluded) = self.share._pooled(owned, include_excluded, request)
            pooled = self.share._pooled_dict(got)
            info = got["info"]
        pooled |= {"state": info.state(time.time()), "created": info.created, "expires": info.expires}
        return pooled, self.share._csv(got, nicknames, excluded)


@dataclass
class MineParts:
    mine: gr.BrowserState
    which: gr.Dropdown


def build_list() -> MineParts:
    """The list of this browser's tests (call in the panel, above the link)."""
    mine = gr.BrowserState([], storage_key=STORAGE_KEY, secret=STORAGE_SECRET)
    which = gr.Dropdown(
        [], value=None, label=i18n.label("share.mine"), interactive=True, elem_id="share-mine", elem_classes=GONE
    )
    return MineParts(mine, which)


def build(handlers: ShareHandlers, last: gr.State) -> SharePanel:
    """The *Share with listeners* panel with the owner's list and the API (call inside the Blind test tab)."""
    panel = shared_test.build(handlers, last, before_link=build_list)
    assert panel.view is not None and panel.include is not None
    _wire(
        MineHandlers(handlers),
        panel.extra,
        panel.shared,
        panel.owned,
        panel.link,
        panel.results,
        panel.include,
        panel.view,
    )
    return panel


def _wire(handlers: MineHandlers, parts: MineParts, shared, owned, link, results, include, owned_view) -> None:
    """The list follows each new test (``shared``: the *Share* event), reopens the chosen one, and
    shows the newest when the page loads; the API's two endpoints."""
    shared.success(
        handlers.after_share,
        inputs=[owned, parts.mine],
        outputs=[parts.mine, parts.which, owned_view],
        api_visibility="private",
        queue=False,
    )
    shown = [owned, link, results, parts.which, owned_view]
    parts.which.input(
        handlers.pick, inputs=[parts.which, parts.mine, include], outputs=shown, api_visibility="private", queue=False
    )
    # the page loads: the newest test shown again. The browser's copy reaches the server as a change
    # of ``mine`` (Gradio 6.17 reads localStorage after the page's load event has sent its inputs)
    parts.mine.change(
        handlers.restore,
        inputs=[parts.mine, include],
        outputs=shown,
        api_name="share_mine",
        api_visibility="private",
        **STATUS_GROUP,
    )
    with gr.Row(visible=False):  # the API's inputs and outputs: a script's, never shown
        audio = gr.Audio(type="filepath", label="audio")  # i18n-exempt: API parameter names
        start_s, end_s = gr.Number(0.0, label="start_s"), gr.Number(0.0, label="end_s")  # i18n-exempt
        kind, chosen = gr.Textbox("mushra", label="kind"), gr.JSON(label="conditions")  # i18n-exempt
        trials, expiry = gr.Number(10, label="trials"), gr.Number(None, label="expiry_s")  # i18n-exempt
        made, go = gr.JSON(label="test"), gr.Button("create")  # i18n-exempt
        key, owner, pooled = gr.Textbox(label="link"), gr.Textbox(label="owner"), gr.JSON(label="pooled")  # i18n-exempt
        every, read = gr.File(label="csv"), gr.Button("results")  # i18n-exempt
        counted = gr.Checkbox(False, label="include_excluded")  # i18n-exempt
    go.click(
        handlers.create,
        inputs=[audio, start_s, end_s, kind, chosen, trials, expiry],
        outputs=[made],
        api_name="share_create",
        **MODEL_GROUP,
    )
    read.click(
        handlers.results, inputs=[key, owner, counted], outputs=[pooled, every], api_name="share_results", **ABX_GROUP
    )
