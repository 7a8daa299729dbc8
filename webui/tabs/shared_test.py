"""*Share with listeners*: the owner's side of a shared listening test, in the Blind test tab.

From the clip and region the blind test holds (started from a round trip's result or an upload),
the owner makes a MUSHRA test (hidden reference, both low-pass anchors, up to 6 chosen conditions)
or a blind ABX test, with an expiry (default 7 days, ``--share-ttl-s``). The page shows the link
and a QR code for phones in the room; responses arrive live (a timer reads the store every few
seconds); *Close the test* stops new answers. The pooled result (``core.listening.shared_test_results``)
is shown as the sentence, a bar chart with intervals and the listener rows, with the screening
rule and a toggle to include the excluded; the CSV has one row per rating, by id.

The owner key lives only in this page (a ``gr.State``); the store keeps its hash.
"""

from __future__ import annotations

import html
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from core import anchors, csv_cells
from core.audio import rates
from core.audio.files import audio_from_array, load_audio
from core.codec import SAMPLE_RATE
from core.judging import sources
from core.judging.sources import short_label
from core.listening import abx, abx_store, mushra, shared_test_results
from core.listening.shared_test_store import SharedTestStore, store_for
from webui import i18n
from webui.common import GONE, TabHandlers, refusal, user_errors
from webui.jobs import abx as abx_jobs
from webui.jobs import shared_test
from webui.queues import MODEL_GROUP
from webui.serving import visitors
from webui.serving.share_link import LinkBase, LinkSettings
from webui.tabs.abx import job_words, source_words
from webui.views import shared_test_view

logger = logging.getLogger(__name__)

# what may be rated: the codec, three ladder levels, every codec anchor of the catalogue (best known
# first; the low-pass anchors are MUSHRA's own), the second checkpoint
CODEC_ANCHORS = tuple(sources.familiar_first(a.id for a in anchors.ANCHORS if a.kind == "codec"))
CHOICES = (sources.CODEC_ID, "k8", "k4", "k2", *CODEC_ANCHORS, sources.COMPARE_ID)
DEFAULT_CHOSEN = (sources.CODEC_ID, *CODEC_ANCHORS[:1])
EXPIRY_CHOICES_S = (3600.0, 86400.0, 7 * 86400.0, 30 * 86400.0)
REFRESH_S = 2.0  # how often the owner's page reads the responses
CSV_FIELDS = (
    "test_kind",
    "listener",
    "nickname",
    "item",
    "condition",
    "rating",
    "trial",
    "x_is",
    "answer",
    "correct",
    "at",
    "excluded",
    "flag",
)


@dataclass
class ShareHandlers(TabHandlers):
    links: LinkSettings = field(default_factory=LinkSettings)  # where a test's link points
    store: SharedTestStore = field(init=False)
    trusted: frozenset[str] = frozenset()  # --trusted-proxies: the owner's address counts the caps per visitor

    def __post_init__(self):
        self.store = store_for(self.engine.settings)

    def share(self, last, kind, chosen, trials, expiry_s, request: gr.Request, progress=gr.Progress()):
        """Make the test from the blind test's clip and region; show its link and QR code."""
        owned, base = self.make(last, kind, chosen, trials, expiry_s, request, progress)
        lang = i18n.language_of(request)
        return owned, link_html(owned["url"], lang, base), self.responses(owned, False, request)

    def make(self, last, kind, chosen, trials, expiry_s, request: gr.Request, progress=gr.Progress()):
        """The test made from ``last`` (``{"audio": path, "start_s", "end_s"}``): its ``owned``
        (link, owner key, kind, url, created, expires) and where its link points."""
        lang = i18n.language_of(request)
        kind = "abx" if kind == "abx" else "mushra"
        if not last:
            raise refusal(i18n.text("share.no_clip", lang), lang)
        with user_errors("share.action", lang), job_words():
            progress(0.1, desc=i18n.text("share.making", lang))
            samples = abx_jobs.region(
                load_audio(last["audio"], self.limits).samples,
                last.get("start_s") or 0.0,
                last.get("end_s") or 0.0,
                self.engine.settings.abx_max_region_s,
            )
            audio = audio_from_array(samples, SAMPLE_RATE, limits=self.limits)
            ttl = float(expiry_s or self.engine.settings.share_ttl_s)
            where = (last.get("start_s") or 0.0, last.get("end_s") or 0.0, self.engine.settings.abx_max_region_s)

            def original_at(rate: int):  # the region from the file's own samples, above 24 kHz
                return abx_jobs.region(rates.read_at(last["audio"], self.limits, rate), *where, rate_hz=rate)

            if kind == "abx":
                if len(chosen or []) > 1:  # B is one condition: never the first of several, silently
                    raise refusal(i18n.text("share.abx_one", lang, n=len(chosen)), lang)
                b = str((chosen or [abx.A_CODEC])[0])
                ids = [abx.A_ORIGINAL, b]
                made, rate = shared_test.make_conditions(self.engine, samples, ids, audio, original_at)
                count = int(trials or abx.DEFAULT_TRIALS)
                abx.plan_trials(count, 0)  # the range check, before anything is stored
                plan = {"a_source": abx.A_ORIGINAL, "b_source": b, "trials": count, "rate_hz": rate}
            else:
                mplan = mushra.plan(chosen, [(0.0, samples.size / SAMPLE_RATE)], known=set(CHOICES))
                made, rate = shared_test.make_conditions(self.engine, samples, mplan.conditions, audio, original_at)
                plan = mplan.to_dict() | {"rate_hz": rate}
            steps = {(0, sid): shared_test.to_steps(x) for sid, x in made.items()}
            link, owner = self.store.create(
                "abx" if kind == "abx" else "mushra",
                abx_store.clip_checksum(samples),
                plan,
                steps,
                ttl,
                visitor=visitors.address_of(request, self.trusted),
            )
        base = self.links.for_scope(request_scope(request))
        url = base.url + "/listen/" + link
        logger.info("shared %s test made: %d conditions, expires in %.0f h", kind, len(made), ttl / 3600)
        now = time.time()
        owned = {"link": link, "owner": owner, "kind": kind, "url": url, "created": now, "expires": now + ttl}
        return owned, base

    def responses(self, owned, include_excluded, request: gr.Request) -> str:
        """The pooled result so far (the timer calls this every REFRESH_S)."""
        return self._pooled(owned, include_excluded, request)[0]

    def csv(self, owned, include_excluded, request: gr.Request) -> str | None:
        """Every rating or answer so far as a CSV, one row each, by id."""
        lang = i18n.language_of(request)
        if not owned:
            raise refusal(i18n.text("share.nothing_shared", lang), lang)
        return self._csv(*self._pooled(owned, include_excluded, request)[1])

    def _pooled(self, owned, include_excluded, request: gr.Request):
        lang = i18n.language_of(request)
        if not owned:
            return "", None
        with user_errors("share.action", lang):
            got = self.store.responses(owned["link"], owned["owner"])
        info = got["info"]
        nicknames = {x["listener"]: x["nickname"] for x in got["listeners"]}
        state = i18n.text(f"share.state_{info.state(time.time())}", lang)
        head = i18n.text("share.joined", lang, n=len(got["listeners"]), state=state)
        name_of = lambda sid: source_words(sid, lang)  # noqa: E731
        # answers that could not come from listening (core.listening.shared_test_fetches) are left out like
        # a screening exclusion, unless the owner counts the excluded in
        counted = lambda rows: [r for r in rows if include_excluded or not r["flag"]]  # noqa: E731
        flagged = sum(1 for r in got["ratings"] + got["answers"] if r["flag"])
        if info.kind == "mushra":
            ratings = counted(got["ratings"])
            pooled = shared_test_results.pool_mushra(info.plan["conditions"], ratings, bool(include_excluded))
            body = shared_test_view.mushra_html(pooled, nicknames, lang, name_of)
            excluded = {s.listener for s in pooled.screened if s.excluded}
        else:
            pooled_abx = shared_test_results.pool_abx(counted(got["answers"]))
            pair = (name_of(info.plan.get("a_source", abx.A_ORIGINAL)), name_of(info.plan.get("b_source", abx.A_CODEC)))
            body = shared_test_view.abx_html(pooled_abx, nicknames, lang, pair)
            excluded = set()
        if flagged:
            body = shared_test_view.flagged_html(flagged, bool(include_excluded), lang) + body
        return f"<p>{html.escape(head)}</p>{body}", (got, nicknames, excluded)

    def _csv(self, got: dict, nicknames: dict, excluded: set) -> str | None:
        if not (got["ratings"] or got["answers"]):
            return None
        folder = self.workspace.new_dir("share")
        path = Path(folder) / f"listening-test-{secrets.token_hex(4)}.csv"
        kind = got["info"].kind
        with open(path, "x", newline="", encoding="utf-8") as f:
            writer = csv_cells.dict_writer(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
            writer.writeheader()
            for row in got["ratings"] + got["answers"]:
                who = row["listener"]
                writer.writerow(
                    {"test_kind": kind, "nickname": nicknames.get(who, ""), "excluded": int(who in excluded), **row}
                )
        return str(path)

    def add_to_report(self, files, owned, request: gr.Request) -> None:
        """Put the shared test's results (pooled JSON, CSV of every rating, the result's section)
        into the round trip's report zip and page, when a test was shared from this page."""
        if not owned or not files:
            return
        lang = i18n.language_of(request)
        shown, (got, nicknames, excluded) = self._pooled(owned, False, request)
        csv_path = self._csv(got, nicknames, excluded)
        pooled = self._pooled_dict(got)
        paths = [Path(str(f.get("path") if isinstance(f, dict) else getattr(f, "path", f))) for f in files]
        shared_test.add_to_report(
            paths, shown, pooled, csv_path, i18n.text("share.report_title", lang), shared_test_view.CSS
        )

    @staticmethod
    def _pooled_dict(got: dict) -> dict:
        """What the owner's panel shows by default: screening applied, flagged answers left out."""
        info = got["info"]
        ratings, answers = ([r for r in rows if not r["flag"]] for rows in (got["ratings"], got["answers"]))
        if info.kind == "mushra":
            pooled = shared_test_results.pool_mushra(info.plan["conditions"], ratings).to_dict()
        else:
            pooled = shared_test_results.pool_abx(answers).to_dict()
        return {"kind": info.kind, "plan": info.plan, "listeners": got["listeners"], "pooled": pooled}

    def close(self, owned, include_excluded, request: gr.Request):
        lang = i18n.language_of(request)
        if not owned:
            raise refusal(i18n.text("share.nothing_shared", lang), lang)
        with user_errors("share.action", lang):
            self.store.close(owned["link"], owned["owner"])
        return self.responses(owned, include_excluded, request)


def request_scope(request: gr.Request | None):
    """The request's ASGI scope (its Host, its peer), or None outside a server."""
    return getattr(getattr(request, "request", None), "scope", None)


def link_html(url: str, lang: str, base: LinkBase | None = None) -> str:
    """The link, and its QR code (segno, an inline SVG) for phones in the room; above them what
    ``base`` notes (this machine's address was used; a loopback link no other device can open)."""
    import segno

    qr = segno.make(url, error="m").svg_inline(scale=4, border=2, omitsize=True)  # a viewBox: the page sizes it
    words = html.escape(i18n.text("share.link", lang))
    note = ""
    if base is not None and base.note:
        kind = "warning" if base.note == "share.link_loopback" else "note"
        note = f'<p class="cw-share-{kind}" role="{"alert" if kind == "warning" else "note"}">'
        note += html.escape(i18n.text(base.note, lang, **(base.fields or {}))) + "</p>"
    return (
        f'<div class="cw-share-link">{note}<p>{words}<br><a id="share-url" href="{html.escape(url)}" target="_blank" '
        f'rel="noopener">{html.escape(url)}</a></p><div class="cw-share-qr" role="img" '
        f'aria-label="{html.escape(i18n.text("share.qr", lang))}">{qr}</div></div>'
    )


def choice_label(source_id: str) -> str:
    """A condition's checkbox label, the same in every language (Gradio does not translate choices):
    the source catalogue's short label, the codec's marked as such."""
    short = short_label(source_id)
    return f"codec · {short}" if source_id == abx.A_CODEC or source_id.startswith("k") else short


def expiry_label(seconds: float) -> str:
    """ "1 h", "7 d": the same in every language."""
    return f"{seconds / 3600:g} h" if seconds < 86400 else f"{seconds / 86400:g} d"


@dataclass
class SharePanel:
    """What app.py wires to other tabs (the owned test, for the round trip's report) and the list
    of the owner's tests (``webui.tabs.shared_test_mine``) reads."""

    handlers: ShareHandlers
    owned: gr.State
    link: gr.HTML | None = None
    results: gr.HTML | None = None
    include: gr.Checkbox | None = None
    view: gr.Column | None = None  # what shows once a test exists: its result, Close, Export
    shared: Any = None  # the *Share* event
    extra: Any = None  # what ``before_link`` placed


def build(handlers: ShareHandlers, last: gr.State, before_link: Callable[[], Any] | None = None) -> SharePanel:
    """The *Share with listeners* panel (call inside the Blind test tab); ``last`` is the blind
    test's clip and region; ``before_link`` places more above the link (the owner's list)."""
    with gr.Accordion(i18n.label("share.title"), open=False, elem_id="share-panel"):
        gr.Markdown(i18n.label("share.intro"))
        with gr.Row():
            kind = gr.Radio(
                [("MUSHRA", "mushra"), ("ABX", "abx")],  # i18n-exempt: the tests' names, the same in every language
                value="mushra",
                label=i18n.label("share.kind"),
                info=i18n.label("share.kind_info"),
                elem_id="share-kind",
            )
            chosen = gr.CheckboxGroup(
                [(choice_label(c), c) for c in CHOICES],
                value=list(DEFAULT_CHOSEN),
                label=i18n.label("share.chosen"),
                info=i18n.label("share.chosen_info"),
                elem_id="share-chosen",
            )
        with gr.Row():
            trials = gr.Number(  # ABX only: shown when ABX is chosen
                abx.DEFAULT_TRIALS,
                precision=0,
                label=i18n.label("share.trials"),
                elem_id="share-trials",
                elem_classes=GONE,
            )
            expiry = gr.Dropdown(
                [(expiry_label(s), s) for s in EXPIRY_CHOICES_S],
                value=handlers.engine.settings.share_ttl_s,
                allow_custom_value=True,
                label=i18n.label("share.expiry"),
                elem_id="share-expiry",
            )
        button = gr.Button(i18n.label("share.button"), variant="primary", elem_id="share-button")
        extra = before_link() if before_link is not None else None
        link = gr.HTML(elem_id="share-link")
        with gr.Column(elem_id="share-owned", elem_classes=GONE) as view:  # nothing to show before a test exists
            include = gr.Checkbox(False, label=i18n.label("share.include_excluded"), elem_id="share-include")
            results = gr.HTML(elem_id="share-results", css_template=shared_test_view.CSS)
            with gr.Row():
                close = gr.Button(i18n.label("share.close"), variant="stop", elem_id="share-close")
                export = gr.Button(i18n.label("share.csv_button"), elem_id="share-csv-button")
            csv_file = gr.File(label=i18n.label("share.csv"), interactive=False, elem_id="share-csv")
        owned = gr.State(None)
        timer = gr.Timer(REFRESH_S, active=True)
    kind.change(  # ABX compares the original with one condition: the first ticked stays ticked
        lambda k, c: (gr.Number(elem_classes=[] if k == "abx" else GONE), (c or [])[:1] if k == "abx" else c),
        inputs=[kind, chosen],
        outputs=[trials, chosen],
        queue=False,
        api_visibility="private",
    )
    shared = button.click(
        handlers.share,
        inputs=[last, kind, chosen, trials, expiry],
        outputs=[owned, link, results],
        api_name="share_start",
        api_visibility="private",
        **MODEL_GROUP,
    )
    timer.tick(
        handlers.responses,
        inputs=[owned, include],
        outputs=[results],
        api_name="share_responses",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    include.change(
        handlers.responses, inputs=[owned, include], outputs=[results], api_visibility="private", queue=False
    )
    export.click(
        handlers.csv, inputs=[owned, include], outputs=[csv_file], api_name="share_csv", api_visibility="private"
    )
    close.click(
        handlers.close,
        inputs=[owned, include],
        outputs=[results],
        api_name="share_close",
        api_visibility="private",
        queue=False,
    )
    return SharePanel(handlers, owned, link, results, include, view, shared, extra)


def wire_report(panel: SharePanel, report_files: gr.File) -> None:
    """The round trip's report: once its zip and page are written, the shared test's results go in
    (``add_to_report``)."""
    report_files.change(
        panel.handlers.add_to_report,
        inputs=[report_files, panel.owned],
        api_visibility="private",
        queue=False,
    )
