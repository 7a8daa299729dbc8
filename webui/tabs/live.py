"""The Live tab: talk through the codec in real time.

The microphone, the level meter, the latency parts and the original/codec switch are one widget
(webui/static/live.js in a gr.HTML); its audio goes over the /live/ws WebSocket
(``webui.serving.live_socket``), not through Gradio's queue. When a session stops, the widget fires
``submit`` with the result id and ``show`` fills the players and facts as the Round trip does;
*Open in Round trip* loads the recording there (its codes are the streamed ones, so the lab, the
metrics, the verdict and the blind test show this session).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from webui import i18n
from webui.common import TabHandlers, refusal
from webui.i18n import label
from webui.jobs import live as jobs_live
from webui.queues import STATUS_GROUP
from webui.serving.live_socket import PATH
from webui.tabs.roundtrip import RoundTripView
from webui.views import formatting

logger = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parents[1] / "static"
WIDGET_TEXTS = (  # live.widget.* keys the page's script shows, sent in the page's language
    "closed",
    "connecting",
    "done",
    "hear",
    "hear_codec",
    "hear_original",
    "lat_algorithmic",
    "lat_algorithmic_note",
    "lat_algorithmic_packet",
    "lat_compute",
    "lat_compute_packet",
    "lat_other",
    "lat_other_note",
    "lat_playback",
    "lat_total",
    "lat_total_note",
    "lat_transport",
    "level",
    "no_microphone",
    "running",
    "saving",
    "start",
    "stop",
)


@dataclass
class LiveHandlers(TabHandlers):
    """The Live tab's events (the audio itself never goes through them)."""

    def config(self, request: gr.Request | None = None) -> dict:
        """The widget's settings and texts in the page's language (on page load)."""
        lang = i18n.language_of(request)
        return {
            "path": PATH,
            "sample_rate": self.engine.output_rate if self.engine.ready else SAMPLE_RATE,  # what the server sends back
            "frame_s": SAMPLES_PER_FRAME / SAMPLE_RATE,  # one code frame
            "lang": lang,
            "limit": self.engine.live.limit,
            "max_s": self.engine.live.max_seconds(),
            "device": formatting.device_label(self.engine.info(), lang),  # in the page's language
            "texts": {key: i18n.text(f"live.widget.{key}", lang) for key in WIDGET_TEXTS},
        }

    def show(self, event: gr.EventData, request: gr.Request | None = None):
        """A stopped session's result (the id the widget got), shown as the Round trip shows one."""
        lang = i18n.language_of(request)
        result_id = str((getattr(event, "_data", None) or {}).get("id", ""))
        out = jobs_live.load_result(self.workspace.root, result_id)
        if out is None:
            raise refusal(i18n.text("live.error.result_gone", lang), lang)
        live = out.timing.get("live", {})
        details = {"input": out.facts, "tokens": out.summary, "timing": out.timing}
        return RoundTripView(
            original=str(out.original_wav),
            reconstruction=str(out.reconstruction_wav),
            timing=i18n.text(
                "live.result.timing",
                lang,
                frames=live.get("frames", 0),
                median=f"{live.get('compute_ms_median', 0):.1f}",
                p95=f"{live.get('compute_ms_p95', 0):.1f}",
                rtf=f"{live.get('realtime_factor', 0):.2f}",
            ),
            facts=formatting.facts_markdown(out.facts, lang, captured=True),  # the browser chose rate and channels
            tokens=formatting.tokens_markdown(out.summary, lang),
            spectrogram=str(out.spectrogram_png),
            downloads=[str(out.token_file), str(out.original_wav), str(out.reconstruction_wav)],
            details=details,
        )

    @staticmethod
    def to_roundtrip(original, request: gr.Request | None = None):
        """The recording into the Round trip's input, and that tab in front."""
        if not original:
            lang = i18n.language_of(request)
            raise refusal(i18n.text("live.error.nothing_yet", lang), lang)
        return original, gr.Tabs(selected="roundtrip")


def build(demo: gr.Blocks, handlers: LiveHandlers, roundtrip_input: gr.Audio, tabs: gr.Tabs) -> None:
    """The tab (call inside a ``gr.Tab``); ``roundtrip_input`` and ``tabs`` for *Open in Round trip*."""
    gr.Markdown(label("live.intro"), elem_id="live-intro")
    widget = gr.HTML(
        None,
        html_template='<div class="cw-live-root"></div>',
        css_template=(STATIC / "live.css").read_text(encoding="utf-8"),
        js_on_load=(STATIC / "live.js").read_text(encoding="utf-8"),
        elem_id="live-widget",
    )
    with gr.Column(visible=False, elem_id="live-result") as result:  # appears once a session has stopped
        timing = gr.Markdown(elem_id="live-timing")
        open_trip = gr.Button(label("live.open_roundtrip"), variant="primary", elem_id="live-open-roundtrip")
        # the session's two files, for the button above: a result is listened to in the lab (the round
        # trip's flip player, timeline, verdict, blind test), not in two plain players
        with gr.Row(visible=False):
            original = gr.Audio(
                label=label("live.original"), type="filepath", interactive=False, elem_id="live-original"
            )
            reconstruction = gr.Audio(
                label=label("live.reconstruction"), type="filepath", interactive=False, elem_id="live-reconstruction"
            )
        with gr.Row():
            facts = gr.Markdown(elem_id="live-facts")
            summary = gr.Markdown(elem_id="live-tokens")
        spectrogram = gr.Image(
            label=label("roundtrip.spectrogram"), type="filepath", interactive=False, elem_id="live-spectrogram"
        )
        downloads = gr.File(
            label=label("roundtrip.downloads"), file_count="multiple", interactive=False, elem_id="live-downloads"
        )
        with gr.Accordion(label("common.raw_json"), open=False):
            details = gr.JSON(label=label("roundtrip.json"))
    demo.load(handlers.config, outputs=[widget], api_name="live_config", api_visibility="private", **STATUS_GROUP)
    widget.submit(
        handlers.show,
        outputs=list(
            RoundTripView(
                original=original,
                reconstruction=reconstruction,
                timing=timing,
                facts=facts,
                tokens=summary,
                spectrogram=spectrogram,
                downloads=downloads,
                details=details,
            )
        ),
        api_name="live_result",
        api_visibility="private",
        **STATUS_GROUP,
    ).success(lambda: gr.Column(visible=True), outputs=[result], api_name="live_result_show", api_visibility="private")
    open_trip.click(
        handlers.to_roundtrip,
        inputs=[original],
        outputs=[roundtrip_input, tabs],
        api_name="live_to_roundtrip",
        api_visibility="private",
        **STATUS_GROUP,
    ).success(None, js="() => { document.querySelector('#roundtrip-run')?.click(); }")
