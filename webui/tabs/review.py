"""The round trip's verdict card and its shareable report (a section of the round trip).

The card (``webui.views.verdict_card``) shows from the moment the round trip is done: *measuring*,
then *preliminary* as soon as the metrics are in (a light from PESQ and STOI, and an estimate of
when the final verdict comes), then the verdict (``/verdict``: DistillMOS plus the PESQ/STOI values
the metrics event computed). *Report* (``/report``) packs what the round trip made into a zip and an
offline HTML page; until the verdict is in, its button says it is waiting for it.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import soundfile

from core import tokens
from core.analysis.judges import Judges
from core.audio.files import load_audio
from core.codec import SAMPLE_RATE
from core.judging import report, verdict
from webui import i18n
from webui.common import TabHandlers, afterwards, need_file, path_of, user_errors
from webui.jobs import codec as jobs_codec
from webui.jobs import results
from webui.jobs.common import stem_of
from webui.queues import METRICS_GROUP, REPORT_GROUP
from webui.serving.report_route import report_url
from webui.tabs import compare
from webui.views import compare_view, figure_words, report_page, verdict_card

logger = logging.getLogger(__name__)

# DistillMOS seconds per second of audio heard, until this server has timed a verdict of its own
# (both clips of a 10 s round trip took 2-3 s on the 2-core CPU of the test machine).
DEFAULT_MOS_S_PER_AUDIO_S = 0.15


@dataclass
class ReviewHandlers(TabHandlers):
    """The verdict and the report of the round trip on screen. ``pace``: the last verdict's
    seconds per second of audio judged, for the next estimate (this app's only memory)."""

    pace: list[float] = field(default_factory=lambda: [DEFAULT_MOS_S_PER_AUDIO_S])

    def _random(self) -> bool:
        return self.engine.random_weights

    def measuring(self, request: gr.Request | None = None):
        """The round trip is done, the metrics are being measured: the card says so, Report waits."""
        lang = i18n.language_of(request)
        waiting = gr.Button(value=i18n.text("report.waiting", lang), interactive=False)
        return verdict_card.measuring(lang, self._random()), None, waiting, ""

    def preliminary(self, original_path, metrics_details, request: gr.Request | None = None):
        """The metrics are in: a light from them alone, and when the verdict will follow."""
        lang = i18n.language_of(request)
        duration_s = _duration_s(original_path)
        windows = self._planned_windows(duration_s)
        judged = verdict_card.judged_words({"windows": windows}, duration_s, lang)
        estimate_s = 2 * _heard_s(windows, duration_s) * self.pace[0] if duration_s else None  # both clips
        values = verdict.metric_values((metrics_details or {}).get("metrics"))
        return verdict_card.preliminary(values, estimate_s, judged, lang, self._random())

    def _planned_windows(self, duration_s: float) -> list[tuple[float, float]]:
        """The stretches DistillMOS will hear, (start s, end s): the bounded verdict's windows
        (``verdict.window_starts``, at most ``Settings.mos_windows`` per clip)."""
        if duration_s <= 0:
            return [(0.0, 0.0)]
        rate, length = verdict.MOS_RATE, verdict.WINDOW_SAMPLES / verdict.MOS_RATE
        starts = verdict.window_starts(int(duration_s * rate), self.engine.settings.mos_windows)
        return [(start / rate, start / rate + length) for start in starts]

    def verdict(
        self,
        original_path,
        reconstruction_path,
        metrics_details,
        request: gr.Request | None = None,
        progress=gr.Progress(),  # noqa: B008 - Gradio's way to ask for a progress bar
    ):
        """DistillMOS on both clips + the metrics' PESQ-WB and STOI -> the card (and its dict). The
        round trip's record (named by ``metrics_details["result_id"]``) gives the clips and their
        metrics; without one the two files are read and measured here. The client's metric values
        are never used."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        record = results.find(self.engine, metrics_details, original, reconstruction)
        with user_errors("action.verdict", lang):
            progress(0.2, desc=i18n.text("verdict.running", lang))
            clips = self._clips(record, original, reconstruction)
            measured = self._metrics(record, clips)
            v = self._judge(record, clips, measured)
        duration_s = clips[0].size / (record.rate_hz if record is not None else SAMPLE_RATE)
        heard_s = _heard_s([tuple(w) for w in v.get("windows") or [(0.0, duration_s)]], duration_s)
        if heard_s > 0 and v.get("seconds"):
            self.pace[0] = v["seconds"] / (2 * heard_s)
        return self._final_card(record, v, measured, duration_s, lang), v

    def placing_card(self, original_path, reconstruction_path, request: gr.Request | None = None, details=None):
        """The table of every source is in: the final card again, now saying where the codec stands
        among the clip's other sources (nothing changes before the verdict and the table are both in)."""
        record = results.find(self.engine, details, path_of(original_path), path_of(reconstruction_path))
        v, measured = results.recall(record, "verdict"), results.recall(record, "metrics")
        if record is None or not v or not measured:
            return gr.skip()
        lang = i18n.language_of(request)
        comparison = results.recall(record, "comparison")
        if not (compare_view.card_placing(comparison, lang) or verdict_card.beside(comparison, lang)):
            return gr.skip()
        return self._final_card(record, v, measured, _duration_s(record.original), lang)

    def _final_card(self, record, v: dict, measured: dict, duration_s: float, lang: str) -> str:
        """The final card: the verdict, its numbers, and where the codec stands when the table is in."""
        comparison = results.recall(record, "comparison")
        placing, anchors = compare_view.card_placing(comparison, lang), verdict_card.beside(comparison, lang)
        values = verdict.metric_values(measured["metrics"])
        rates = (results.recall(record, "roundtrip") or {}).get("rates")
        judged = verdict_card.judged_words(v, duration_s, lang)
        return verdict_card.final(v, values, judged, lang, placing, anchors, rates)

    @staticmethod
    def report_ready(request: gr.Request | None = None):
        """The verdict is in (or failed: the report goes without it): Report can be pressed."""
        return gr.Button(value=i18n.text("report.button", i18n.language_of(request)), interactive=True)

    def _clips(self, record, original, reconstruction) -> tuple[np.ndarray, np.ndarray]:
        """Both clips' samples: the record's (held since the round trip), else read from the files."""
        if record is not None:
            return results.samples_of(record, self.limits)
        return load_audio(original, self.limits).samples, load_audio(reconstruction, self.limits).samples

    def _metrics(self, record, clips) -> dict:
        """The server's metrics of these clips: the record's (from /metrics), or measured now."""
        measured = results.recall(record, "metrics")
        if measured is None:
            rate = record.rate_hz if record is not None else SAMPLE_RATE
            out = jobs_codec.measure_samples(clips[0], clips[1], Judges.of(self.engine.settings), rate_hz=rate)
            measured = {"metrics": out.metrics, "seconds": out.seconds}
            results.remember(record, "metrics", measured)
        return measured

    def _judge(self, record, clips, measured: dict) -> dict:
        """The one verdict path (the card's and the report's): DistillMOS on both clips with the metrics."""
        values = verdict.metric_values(measured["metrics"])
        v = verdict.judge(
            clips[0],
            clips[1],
            values,
            record.rate_hz if record is not None else SAMPLE_RATE,
            self.engine.device,
            self._random(),
            self.engine.settings.mos_windows,
        ).to_dict()
        results.remember(record, "verdict", v)
        return v

    def report(
        self,
        original_path,
        reconstruction_path,
        downloads,
        details,
        metrics_details,
        verdict_details,
        request: gr.Request | None = None,
        comparison=None,
    ):
        """The zip and the offline HTML page of the round trip on screen, with the round trip's other
        sources and the table of every source; from the server's own results for these files (round
        trip details, metrics, verdict, the table: ``webui.jobs.results``), computed here when
        missing. What the client sends in ``details``, ``metrics_details``, ``verdict_details`` and
        ``comparison`` is not believed (a made-up verdict is never printed); only where the
        server has no record of the round trip (``details["result_id"]``) are the client's sources
        taken, checked to be files this server wrote."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        token_files = [f for f in (downloads or []) if str(path_of(f)).endswith(".npz")]
        token_file = need_file(path_of(token_files[0]) if token_files else None, "what.token_file", lang)
        with user_errors("action.report", lang):
            tokens.load_tokens(token_file, max_duration_s=self.limits.max_duration_s)  # a bad one: refused first
            record = results.find(self.engine, details, original, reconstruction)
            if record is not None:  # the record's own files, never others a client names beside its id
                original, reconstruction = record.original, record.reconstruction
            made = results.recall(record, "roundtrip") or {}
            others = compare.checked_sources(made or details or {}, self.workspace.root)
            comparison = results.recall(record, "comparison")
            folder = self.workspace.new_dir("report")
            stem = stem_of(original).removesuffix("_24k_mono")
            clips = self._clips(record, original, reconstruction)
            measured = self._metrics(record, clips)
            judged = results.recall(record, "verdict") or self._judge(record, clips, measured)
            timings = (made.get("timing") or {}) | {"metrics_s": measured["seconds"], "verdict_s": judged["seconds"]}
            zip_path, html_path = report.build_roundtrip_report(
                folder,
                stem,
                original,
                reconstruction,
                token_file,
                measured["metrics"],
                judged,
                self.engine.info(),
                timings,
                self.limits,
                report_page.renderer(lang),
                [s | {"label": compare_view.source_label(s, lang), "path": s["wav"]} for s in others],
                comparison if isinstance(comparison, dict) else None,
                compare_view.report_words(comparison, lang),
                figure_words.of(lang),
                clips,
                record.rate_hz if record is not None else SAMPLE_RATE,
            )
        return [str(zip_path), str(html_path)]

    def report_links(self, files, request: gr.Request | None = None) -> str:
        """The report's two files as links under the button (there is no box before there are files)."""
        lang = i18n.language_of(request)
        links = []
        for item in files or []:
            path = str(path_of(item))
            name = html.escape(Path(path).name)
            page = report_url(self.workspace.root, path) if path.endswith(".html") else None
            if page:  # the page opens in a new tab (our route serves it inline; Gradio's sends HTML as a download)
                words = html.escape(i18n.text("reportpage.open", lang))
                links.append(f'<a href="{html.escape(page)}" target="_blank" rel="noopener">{words}</a>')
            else:
                links.append(f'<a href="gradio_api/file={html.escape(path)}" download="{name}">{name}</a>')
        if not links:
            return ""
        return (
            f"<p class='cw-report-links'>{html.escape(i18n.text('report.files', lang))}: " + " · ".join(links) + "</p>"
        )


def _heard_s(windows, duration_s: float) -> float:
    """Seconds of one clip the listener-score model hears in ``windows`` (each inside the clip)."""
    return sum(max(0.0, min(end, duration_s) - max(start, 0.0)) for start, end in windows)


def _duration_s(path) -> float:
    """Seconds of a WAV the round trip wrote (its header only); 0 when it cannot be read."""
    try:
        return float(soundfile.info(str(path_of(path))).duration)
    except Exception:  # noqa: BLE001 - only an estimate depends on it
        return 0.0


def verdict_components() -> tuple[gr.HTML, gr.Button, gr.HTML, gr.File]:
    """Place the verdict card, the Report button and its links (call in the round trip's layout).
    The files themselves are the /report endpoint's output, not shown: a box that comes and goes
    would need visibility updates, which Gradio 6.17 gets wrong once a hidden box is hidden again."""
    card = gr.HTML(elem_id="roundtrip-verdict")
    with gr.Row(elem_classes="cw-report-row"):
        make = gr.Button(
            i18n.label("report.button"),
            elem_id="roundtrip-report",
            size="sm",
            interactive=False,
            scale=0,
            min_width=220,
        )
        links = gr.HTML(elem_id="roundtrip-report-files")
    files = gr.File(file_count="multiple", interactive=False, visible=False)
    return card, make, links, files


def wire(handlers: ReviewHandlers, roundtrip_done, after_metrics, parts: dict) -> None:
    """The card after the round trip and the metrics, and the Report button. ``parts``: the round
    trip's components (original, reconstruction, downloads, details, metrics_details) and ours."""
    verdict_json = gr.JSON(visible=False)
    card, button, links, files = parts["verdict"], parts["report"], parts["report_links"], parts["report_files"]
    roundtrip_done.success(
        handlers.measuring,
        outputs=[card, verdict_json, button, links],
        api_name="verdict_measuring",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    # Report can be pressed once the verdict is in, or once a step before it failed (the report goes without it)
    report_back: dict[str, Any] = dict(outputs=[button], api_name="report_ready", api_visibility="private", queue=False)
    after_metrics.failure(handlers.report_ready, **report_back | {"api_name": "report_ready_no_metrics"})
    preliminary = after_metrics.success(
        handlers.preliminary,
        inputs=[parts["original"], parts["metrics_details"]],
        outputs=[card],
        api_name="verdict_preliminary",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    preliminary.failure(handlers.report_ready, **report_back | {"api_name": "report_ready_no_preliminary"})
    judged = preliminary.success(
        handlers.verdict,
        inputs=[parts["original"], parts["reconstruction"], parts["metrics_details"]],
        outputs=[card, verdict_json],
        api_name="verdict",
        show_progress="hidden",  # the card itself says what runs and for how long
        **METRICS_GROUP,
    )
    afterwards(judged, handlers.report_ready, **report_back)
    if parts.get("comparison") is not None:  # the table of every source is in: the card says where the codec stands
        parts["comparison"].change(
            handlers.placing_card,
            inputs=[parts["original"], parts["reconstruction"], parts["details"]],
            outputs=[card],
            api_name="verdict_placing",
            api_visibility="private",
            queue=False,
            show_progress="hidden",
        )
    inputs = [
        parts["original"],
        parts["reconstruction"],
        parts["downloads"],
        parts["details"],
        parts["metrics_details"],
        verdict_json,
        *([parts["comparison"]] if parts.get("comparison") is not None else []),
    ]
    button.click(
        handlers.report,
        inputs=inputs,
        outputs=[files],
        show_progress_on=[button],  # the files are not shown yet: the button says it works
        api_name="report",
        **REPORT_GROUP,
    ).success(handlers.report_links, inputs=[files], outputs=[links], api_visibility="private", queue=False)
