"""The Blind test tab as the page shows it: A, B and X in one flip transport
(``webui/static/abx_player.js``), answer buttons only while a test runs, the score at the end and
one click to test again with fewer codebooks. A test starts from the round trip's result (the whole
clip, the lab's looped region or a worst moment: ``wire_from_result``) or from another clip
uploaded here. The server side (sessions, trials, answers, scores) is ``webui.tabs.abx``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from core import anchors
from core.codec import NUM_CODEBOOKS, bitrate_bps
from core.judging.sources import ANCHOR, familiar_first
from core.listening import abx
from webui import i18n
from webui.common import GONE, path_of, refusal
from webui.jobs.common import stem_of
from webui.queues import ABX_GROUP, MODEL_GROUP
from webui.serving.share_link import LinkSettings
from webui.tabs import shared_test, shared_test_mine
from webui.tabs.abx import AbxHandlers, b_choices
from webui.views import compare_view
from webui.views.player_assets import STATIC, player_css, player_js

logger = logging.getLogger(__name__)

TRIAL_CHOICES = (4, 6, 8, 10, 12, 16, 20)  # trials offered; 10 is the default
WORST_REGION_S = 3.0  # s; a blind test of a worst moment hears this much around it
REGION_FROM_PLAYER_JS = "\n".join(  # an arrow function for the event's js=: its comment lines go
    line for line in (STATIC / "blind_region.js").read_text(encoding="utf-8").splitlines() if not line.startswith("//")
).replace("HALF", str(WORST_REGION_S / 2))


@dataclass
class AbxPageHandlers(AbxHandlers):
    """The page's own steps around the blind test's handlers."""

    def start_from_result(
        self, audio_path, what, start_s, end_s, trials, level, request: gr.Request, progress=gr.Progress()
    ):
        """The round trip's *Blind-test this clip*: ``what`` is "whole", "loop" or "worstN"; the
        page filled the region from its player."""
        lang = i18n.language_of(request)
        start_s, end_s = float(start_s or 0.0), float(end_s or 0.0)
        if what == "loop" and not end_s > start_s:
            raise refusal(i18n.text("abx.no_loop", lang), lang)
        if what == "whole":
            start_s = end_s = 0.0
        out = self.start(audio_path, start_s, end_s, trials, level, request, progress)
        last = {"audio": str(path_of(audio_path)), "start_s": start_s, "end_s": end_s, "what": what}
        return (*out, last, clip_words(last, lang))

    def again_fewer(self, last, trials, level, request: gr.Request, progress=gr.Progress()):
        """The same clip and region again, B with the next level down."""
        lang = i18n.language_of(request)
        fewer = next_level(level)
        if not last or fewer is None:
            raise refusal(i18n.text("abx.nothing_to_repeat", lang), lang)
        out = self.start(last["audio"], last["start_s"], last["end_s"], trials, fewer, request, progress)
        return (*out, gr.Dropdown(value=fewer), clip_words(last, lang))

    @staticmethod
    def remember(audio_path, start_s, end_s, request: gr.Request):
        """A test started from an uploaded clip: what *test again* repeats."""
        last = {"audio": str(path_of(audio_path)), "start_s": float(start_s or 0), "end_s": float(end_s or 0)}
        return last, clip_words(last | {"what": "upload"}, i18n.language_of(request))

    def again_other(self, last, trials, level, request: gr.Request, progress=gr.Progress()):
        """The same clip and region again, B a reference codec people know."""
        lang = i18n.language_of(request)
        other = self.other_source(level)
        if not last or other is None:
            raise refusal(i18n.text("abx.nothing_to_repeat", lang), lang)
        out = self.start(last["audio"], last["start_s"], last["end_s"], trials, other, request, progress)
        return (*out, gr.Dropdown(value=other), clip_words(last, lang))

    def other_source(self, level) -> str | None:
        """The reference codec to test against next: the most familiar of the server's anchors that
        B was not (None without anchors)."""
        made = anchors.anchor_ids(self.engine.settings.anchors)  # in the table's order
        return next((a for a in familiar_first(made) if a != str(level)), None)

    @staticmethod
    def running():
        """A test runs: the answer buttons, not *test again*."""
        hidden = gr.Button(elem_classes=GONE)
        return gr.Button(elem_classes=[]), gr.Button(elem_classes=[]), hidden, hidden

    def finished(self, csv_path, level, request: gr.Request):
        """After each answer: at the end (the CSV is there) the answer buttons go and *test again*
        comes: with fewer codebooks, and against a reference codec."""
        if not csv_path:
            return gr.Button(), gr.Button(), gr.Button(), gr.Button()
        lang = i18n.language_of(request)
        fewer, other = next_level(level), self.other_source(level)
        again = (
            gr.Button(
                value=i18n.text("abx.again_fewer", lang, k=fewer, bitrate=f"{bitrate_bps(fewer):g}"), elem_classes=[]
            )
            if fewer
            else gr.Button(elem_classes=GONE)
        )
        label = compare_view.source_label({"id": other, "kind": ANCHOR}, lang) if other else ""
        against = (
            gr.Button(value=i18n.text("abx.again_other", lang, label=label), elem_classes=[])
            if other
            else gr.Button(elem_classes=GONE)
        )
        return gr.Button(elem_classes=GONE), gr.Button(elem_classes=GONE), again, against


def next_level(level) -> int | None:
    """The next level down in the page's list (None below the lowest, or when B was not the codec)."""
    try:
        current = int(float(level)) if level not in (None, "") else NUM_CODEBOOKS
    except ValueError:
        return None  # B was a reference codec or the second checkpoint: no ladder to walk down
    lower = [k for k in abx.LEVEL_CHOICES if k < current]
    return max(lower) if lower else None


def clip_words(last: dict, lang: str) -> str:
    """Which clip and which part of it the test plays, in words."""
    name = stem_of(last["audio"]).removesuffix("_24k_mono")
    start, end = last.get("start_s") or 0.0, last.get("end_s") or 0.0
    part = (
        i18n.text("abx.part_whole", lang)
        if end <= start
        else i18n.text("abx.part_region", lang, start=f"{start:.1f}", end=f"{end:.1f}")
    )
    what = last.get("what") or ""
    if what.startswith("worst"):
        part += i18n.text("abx.part_worst", lang, n=what.removeprefix("worst"))
    return i18n.text("abx.clip", lang, name=name, part=part)


@dataclass
class AbxPage:
    """The tab's components that the round trip's *Blind-test this clip* feeds."""

    handlers: AbxPageHandlers
    trials: gr.Radio
    level: gr.Dropdown
    started: list  # the outputs of a start: token, trial, references, x, prompt, results, csv
    last: gr.State
    clip: gr.Markdown
    running: list  # answer A, answer B, test again (fewer codebooks, against a reference codec)
    shared: shared_test.SharePanel | None = None  # *Share with listeners*


def build(handlers: AbxPageHandlers, links: LinkSettings | None = None) -> AbxPage:
    """The tab's components and events (call inside a ``gr.Tab``)."""
    with gr.Column(elem_id="abx-panel"):
        gr.Markdown(i18n.label("abx.intro"))
        clip = gr.Markdown(i18n.label("abx.no_clip"), elem_id="abx-clip")
        with gr.Row():
            trials = gr.Radio(
                list(TRIAL_CHOICES), value=abx.DEFAULT_TRIALS, label=i18n.label("abx.trials"), elem_id="abx-trials"
            )
            level = gr.Dropdown(
                [*((f"{k} · {bitrate_bps(k):g} bit/s", k) for k in abx.LEVEL_CHOICES), *b_choices()],
                value=NUM_CODEBOOKS,
                allow_custom_value=True,  # API callers may ask for any 1..16; abx._what_b checks it
                label=i18n.label("abx.level"),
                info=i18n.label("compare.abx_b_info"),
                elem_id="abx-level",
            )
            a_codec = gr.Checkbox(False, label=i18n.label("compare.abx_a_choice"), elem_id="abx-a-codec")
        prompt = gr.Markdown(elem_id="abx-prompt")
        gr.HTML(
            "",
            html_template='<div class="cw-abx-root cw-lab-root"></div>',
            css_template=player_css(),
            js_on_load=player_js("abx_player.js"),
            elem_id="abx-transport",
        )
        with gr.Row(elem_classes="cw-abx-data"):  # the sources for the transport; not shown
            references = gr.HTML(elem_id="abx-references")
            x_player = gr.HTML(elem_id="abx-x")
        with gr.Row():
            answer_a = gr.Button(i18n.label("abx.answer_a"), elem_id="abx-answer-a", size="lg", elem_classes=GONE)
            answer_b = gr.Button(i18n.label("abx.answer_b"), elem_id="abx-answer-b", size="lg", elem_classes=GONE)
        gr.Markdown(i18n.label("abx.keys"), elem_classes="cw-hint", elem_id="abx-keys")
        results = gr.Markdown(elem_id="abx-results")
        with gr.Row():
            again = gr.Button(i18n.label("abx.again"), elem_id="abx-again-fewer", elem_classes=GONE)
            against = gr.Button(i18n.label("abx.again"), elem_id="abx-again-other", elem_classes=GONE)
        with gr.Accordion(i18n.label("abx.other_clip"), open=False, elem_id="abx-other"):
            with gr.Row():
                audio_in = gr.Audio(
                    sources=["upload", "microphone"],
                    type="filepath",
                    label=i18n.label("abx.input"),
                    elem_id="abx-input",
                    scale=3,
                )
                with gr.Column(scale=1, min_width=220):
                    start_s = gr.Number(0.0, label=i18n.label("abx.start_s"), minimum=0, elem_id="abx-start-s")
                    end_s = gr.Number(0.0, label=i18n.label("abx.end_s"), minimum=0, elem_id="abx-end-s")
                    start = gr.Button(i18n.label("abx.start"), variant="primary", elem_id="abx-start")
        token = gr.Textbox(visible=False, elem_id="abx-token")
        trial = gr.Number(0, visible=False, precision=0, elem_id="abx-trial")
        last = gr.State(None)
        with gr.Accordion(i18n.label("abx.raw"), open=False, elem_id="abx-raw"):
            csv_file = gr.File(label=i18n.label("abx.csv"), interactive=False, elem_id="abx-csv")
            raw = gr.JSON()
    started = [token, trial, references, x_player, prompt, results, csv_file]
    running = [answer_a, answer_b, again, against]
    start.click(
        handlers.start,
        inputs=[audio_in, start_s, end_s, trials, level, a_codec],
        outputs=started,
        api_name="abx_start",
        **MODEL_GROUP,
    ).success(
        handlers.remember,
        inputs=[audio_in, start_s, end_s],
        outputs=[last, clip],
        queue=False,
        api_visibility="private",
    ).success(handlers.running, outputs=running, queue=False, api_visibility="private")
    for button, repeat, name in (
        (again, handlers.again_fewer, "abx_again"),
        (against, handlers.again_other, "abx_again_other"),
    ):
        button.click(
            repeat,
            inputs=[last, trials, level],
            outputs=[*started, level, clip],
            api_name=name,
            api_visibility="private",
            **MODEL_GROUP,
        ).success(handlers.running, outputs=running, queue=False, api_visibility="private")
    end = [answer_a, answer_b, again, against]
    for button, fn, letter in ((answer_a, handlers.answer_a, "a"), (answer_b, handlers.answer_b, "b")):
        button.click(
            fn,
            inputs=[token, trial],
            outputs=[trial, x_player, prompt],
            api_name=f"abx_answer_{letter}",
            api_visibility="private",
            **ABX_GROUP,
        ).success(
            handlers.results,
            inputs=[token],
            outputs=[results, csv_file, raw],
            api_visibility="private",
            api_name=f"abx_results_after_{letter}",
            **ABX_GROUP,
        ).success(handlers.finished, inputs=[csv_file, level], outputs=end, queue=False, api_visibility="private")
    # the documented API: one answer endpoint taking "A" or "B", and the results on demand
    choice = gr.Textbox(visible=False)
    choice.submit(
        handlers.answer,
        inputs=[token, trial, choice],
        outputs=[trial, x_player, prompt],
        api_name="abx_answer",
        **ABX_GROUP,
    )
    token.submit(
        handlers.results, inputs=[token], outputs=[results, csv_file, raw], api_name="abx_results", **ABX_GROUP
    )
    shared = shared_test_mine.build(
        shared_test.ShareHandlers(
            handlers.engine, handlers.workspace, links or LinkSettings(), trusted=handlers.trusted
        ),
        last,
    )  # *Share with listeners*
    return AbxPage(handlers, trials, level, started, last, clip, running, shared)


def wire_from_result(page: AbxPage, button: gr.Button, audio, what: gr.Radio, tabs: gr.Tabs) -> None:
    """The round trip's *Blind-test this clip*: to the Blind test tab, then the test on that clip."""
    region = [gr.Number(visible=False), gr.Number(visible=False)]  # filled by REGION_FROM_PLAYER_JS
    button.click(lambda: gr.Tabs(selected="abx"), outputs=[tabs], queue=False, api_visibility="private").success(
        page.handlers.start_from_result,
        inputs=[audio, what, *region, page.trials, page.level],
        outputs=[*page.started, page.last, page.clip],
        js=REGION_FROM_PLAYER_JS,
        api_name="abx_start_from_result",
        api_visibility="private",
        **MODEL_GROUP,
    ).success(page.handlers.running, outputs=page.running, queue=False, api_visibility="private")
