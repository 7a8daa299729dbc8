"""The Round trip tab: audio in, *Encode → Decode*, then what the codec kept and lost: players,
input facts, token summary, spectrograms, downloads (``/roundtrip``); the metrics as its follow-up
(``/metrics``); the listening lab and the verdict below (``webui.tabs.lab``, ``webui.tabs.review``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import gradio as gr

from webui import i18n
from webui.common import TabHandlers, need_file, user_errors
from webui.i18n import label
from webui.jobs import codec as jobs
from webui.queues import FETCH_GROUP, METRICS_GROUP, MODEL_GROUP
from webui.serving import url_input
from webui.tabs import lab, review
from webui.tabs.inputs import audio_input, examples
from webui.views import formatting as fmt

if TYPE_CHECKING:
    from webui.app import UiOptions

logger = logging.getLogger(__name__)


class RoundTripView(NamedTuple):
    """The round trip's outputs, named once: the handler returns one, app.py wires the page's
    components in this order by building one of components, the tests read it by name."""

    original: Any  # player: the codec's input as 24 kHz mono (a WAV path)
    reconstruction: Any  # player: the decoder's output (a WAV path)
    timing: Any  # Markdown: model time and ours
    facts: Any  # Markdown: what was done to the input
    tokens: Any  # Markdown: frames, rates, compression
    spectrogram: Any  # image: original / reconstruction / difference (a PNG path)
    downloads: Any  # files: the token file and the reconstruction
    details: Any  # JSON: input facts, token summary, timing


@dataclass
class RoundTripHandlers(TabHandlers):
    """The round trip's events; ``url_policy`` None: audio from a URL is off."""

    url_policy: url_input.UrlPolicy | None = None

    def roundtrip(self, audio_path, request: gr.Request | None = None, progress=gr.Progress()):
        """Encode → decode: players, facts, token summary, spectrograms, downloads."""
        lang = i18n.language_of(request)
        source = need_file(audio_path, "what.audio", lang)
        with user_errors("action.roundtrip", lang, self.workspace.root):
            out = jobs.roundtrip(
                self.engine, source, self.workspace.new_dir("roundtrip"), self.limits, i18n.progress_in(lang, progress)
            )
        logger.info(
            "round trip of %s: model %.2f s, ours %.3f s", source.name, out.timing["model_s"], out.timing["ui_s"]
        )
        details = {"input": out.facts, "tokens": out.summary, "timing": out.timing}
        return RoundTripView(
            original=str(out.original_wav),
            reconstruction=str(out.reconstruction_wav),
            timing=fmt.timing_markdown(out.timing, lang),
            facts=fmt.facts_markdown(out.facts, lang),
            tokens=fmt.tokens_markdown(out.summary, lang),
            spectrogram=str(out.spectrogram_png),
            downloads=[str(out.token_file), str(out.reconstruction_wav)],
            details=details,
        )

    def metrics(self, original_path, reconstruction_path, request: gr.Request | None = None, progress=gr.Progress()):
        """Objective metrics of a reconstruction against its original (the round trip's
        follow-up; the API accepts any two clips)."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        with user_errors("action.metrics", lang):
            out = jobs.measure(original, reconstruction, self.limits, i18n.progress_in(lang, progress))
        return fmt.metrics_markdown(out.metrics, out.seconds, lang), {"metrics": out.metrics, "seconds": out.seconds}

    @staticmethod
    def clear_metrics():
        """Blank the previous clip's metrics while a new round trip runs."""
        return "", None

    def fetch_url(self, url: str, request: gr.Request | None = None, progress=gr.Progress()):
        """Download audio from a URL into a request folder (only when enabled)."""
        lang = i18n.language_of(request)
        if self.url_policy is None:
            raise gr.Error(i18n.text("error.url_off", lang))
        with user_errors("action.fetch", lang, self.workspace.root):
            progress(0.1, desc=i18n.text("progress.downloading", lang))
            path = url_input.fetch(url, self.workspace.new_dir("url"), self.url_policy)
        return str(path)


def build(handlers: RoundTripHandlers, options: UiOptions) -> gr.Audio:
    """The tab's input, results, lab and verdict (call inside a ``gr.Tab``); returns the audio input
    (the Live tab hands its recording over to it)."""
    reviewer = review.ReviewHandlers(handlers.engine, handlers.workspace)
    with gr.Row():
        with gr.Column(scale=3):
            audio_in = audio_input("roundtrip-input")
            examples(audio_in, options.examples, "roundtrip_example")
        with gr.Column(scale=1, min_width=200):
            run = gr.Button(label("roundtrip.run"), variant="primary", size="lg", elem_id="roundtrip-run")
            gr.Markdown(label("roundtrip.hint"))
    if options.url_policy is not None:
        _url_row(handlers, audio_in, options.url_policy)
    timing = gr.Markdown(elem_id="roundtrip-timing")
    with gr.Row():
        original = gr.Audio(
            label=label("roundtrip.original"),
            type="filepath",
            interactive=False,
            elem_id="roundtrip-original",
            buttons=["download"],
        )
        reconstruction = gr.Audio(
            label=label("roundtrip.reconstruction"),
            type="filepath",
            interactive=False,
            elem_id="roundtrip-reconstruction",
            buttons=["download"],
        )
    with gr.Row():
        facts = gr.Markdown(elem_id="roundtrip-facts")
        summary = gr.Markdown(elem_id="roundtrip-tokens")
    spectrogram = gr.Image(
        label=label("roundtrip.spectrogram"),
        type="filepath",
        interactive=False,
        elem_id="roundtrip-spectrogram",
        buttons=["download", "fullscreen"],
    )
    metrics = gr.Markdown(elem_id="roundtrip-metrics")
    verdict, report, report_files = review.verdict_components()
    downloads = gr.File(
        label=label("roundtrip.downloads"), file_count="multiple", interactive=False, elem_id="roundtrip-downloads"
    )
    with gr.Accordion(label("common.raw_json"), open=False):
        details = gr.JSON(label=label("roundtrip.json"))
        metrics_details = gr.JSON(label=label("roundtrip.metrics_json"))
    done = run.click(
        handlers.clear_metrics,
        outputs=[metrics, metrics_details],
        api_name="roundtrip_clear",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    ).then(
        handlers.roundtrip,
        inputs=[audio_in],
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
        api_name="roundtrip",
        **MODEL_GROUP,
    )
    after_metrics = done.success(
        handlers.metrics,
        inputs=[original, reconstruction],
        outputs=[metrics, metrics_details],
        api_name="metrics",
        **METRICS_GROUP,
    )
    lab.build(lab.LabHandlers(handlers.engine, handlers.workspace), done, original, reconstruction, downloads)
    review.wire(
        reviewer,
        run,
        after_metrics,
        dict(
            original=original,
            reconstruction=reconstruction,
            downloads=downloads,
            details=details,
            metrics_details=metrics_details,
            verdict=verdict,
            report=report,
            report_files=report_files,
        ),
    )
    return audio_in


def _url_row(handlers: RoundTripHandlers, audio_in: gr.Audio, policy: url_input.UrlPolicy) -> None:
    with gr.Row(equal_height=True):
        url = gr.Textbox(
            label=label("url.label", mib=f"{policy.max_bytes / url_input.MIB:g}"), scale=4, elem_id="url-input"
        )
        fetch = gr.Button(label("url.fetch"), scale=1, elem_id="url-fetch")
    fetch.click(
        handlers.fetch_url,
        inputs=[url],
        outputs=[audio_in],
        api_name="fetch_url",
        **FETCH_GROUP,
    )
