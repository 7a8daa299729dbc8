"""The round trip's verdict in words and its shareable report (a section of the round trip).

The verdict is a follow-up event after the metrics (``/verdict``): DistillMOS on both clips plus
the PESQ/STOI values the metrics event just computed, as one traffic-light line. "Report" packs
what the round trip made into a zip and an offline HTML page (``/report``).
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import gradio as gr

from core.audio.files import load_audio
from core.codec import SAMPLE_RATE
from core.judging import report, verdict
from webui import i18n
from webui.common import TabHandlers, need_file, path_of, user_errors
from webui.jobs.common import stem_of
from webui.queues import METRICS_GROUP

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

MAX_EVALUATE_FILES = 50  # uploads per evaluation run in the UI (the CLI has no limit)
_WORDS = {"green": "verdict.green", "amber": "verdict.amber", "red": "verdict.red", "unknown": "verdict.unknown"}
_LIGHTS = {"green": "🟢", "amber": "🟠", "red": "🔴"}


def verdict_markdown(v: dict, lang: str) -> str:
    """The traffic-light line, the reasons, and the random-weights caveat."""
    words = i18n.text(_WORDS[v["level"]], lang)
    lines = [f"### {_LIGHTS.get(v['level'], '⚪')} {words}"]
    mos = [x for x in (v["mos_original"], v["mos_reconstruction"]) if x is not None]
    if len(mos) == 2:
        lines.append(i18n.text("verdict.mos", lang, original=mos[0], reconstruction=mos[1]))
    lines.append(html.escape("; ".join(v["reasons"])))
    if v.get("caveat"):
        lines.append(f"> ⚠️ {i18n.text('verdict.random_caveat', lang)}")
    return "\n\n".join(lines)


@dataclass
class ReviewHandlers(TabHandlers):
    """The verdict and the report of the round trip on screen."""

    def _random(self) -> bool:
        return bool(self.engine.info().get("random_weights"))

    def verdict(self, original_path, reconstruction_path, metrics_details, request: gr.Request, progress=gr.Progress()):
        """DistillMOS on both clips + the metrics' PESQ-WB and STOI -> one line."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        with user_errors("action.verdict", lang):
            progress(0.2, desc=i18n.text("verdict.running", lang))
            a = load_audio(original, self.limits).samples
            b = load_audio(reconstruction, self.limits).samples
            values = verdict.metric_values((metrics_details or {}).get("metrics"))
            if not values:  # called through the API without metrics: compute them here
                from core.analysis import metrics as analysis

                values = verdict.metric_values(analysis.compare(a, b))
            v = verdict.judge(
                a, b, values, SAMPLE_RATE, self.engine.device, self._random(), self.engine.settings.mos_windows
            ).to_dict()
        return verdict_markdown(v, lang), v

    @staticmethod
    def clear():
        return "", None, None

    def report(
        self,
        original_path,
        reconstruction_path,
        downloads,
        details,
        metrics_details,
        verdict_details,
        request: gr.Request,
    ):
        """The zip and the offline HTML page of the round trip on screen."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        token_files = [f for f in (downloads or []) if str(path_of(f)).endswith(".npz")]
        token_file = need_file(path_of(token_files[0]) if token_files else None, "what.token_file", lang)
        with user_errors("action.report", lang):
            folder = self.workspace.new_dir("report")
            stem = stem_of(original).removesuffix("_24k_mono")
            timings = (details or {}).get("timing") or {}
            timings = timings | {
                "metrics_s": (metrics_details or {}).get("seconds"),
                "verdict_s": (verdict_details or {}).get("seconds"),
            }
            zip_path, html_path = report.build_roundtrip_report(
                folder,
                stem,
                original,
                reconstruction,
                token_file,
                (metrics_details or {}).get("metrics") or [],
                verdict_details,
                self.engine.info(),
                timings,
                self.limits,
            )
        return [str(zip_path), str(html_path)]


def verdict_components() -> tuple[gr.Markdown, gr.Button, gr.File]:
    """Place the verdict line and the Report button (call in the round-trip tab's layout)."""
    verdict_line = gr.Markdown(elem_id="roundtrip-verdict")
    with gr.Row():
        make = gr.Button(i18n.label("report.button"), elem_id="roundtrip-report", scale=1)
        files = gr.File(
            label=i18n.label("report.files"),
            file_count="multiple",
            interactive=False,
            elem_id="roundtrip-report-files",
            scale=4,
        )
    return verdict_line, make, files


def wire(handlers: ReviewHandlers, run: gr.Button, after_metrics, parts: dict) -> None:
    """The verdict after the metrics, and the Report button. ``parts``: the round-trip tab's
    components (original, reconstruction, downloads, details, metrics_details) and ours."""
    verdict_json = gr.JSON(visible=False)
    run.click(
        handlers.clear,
        outputs=[parts["verdict"], verdict_json, parts["report_files"]],
        api_name="verdict_clear",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    after_metrics.success(
        handlers.verdict,
        inputs=[parts["original"], parts["reconstruction"], parts["metrics_details"]],
        outputs=[parts["verdict"], verdict_json],
        api_name="verdict",
        **METRICS_GROUP,
    )
    parts["report"].click(
        handlers.report,
        inputs=[
            parts["original"],
            parts["reconstruction"],
            parts["downloads"],
            parts["details"],
            parts["metrics_details"],
            verdict_json,
        ],
        outputs=[parts["report_files"]],
        api_name="report",
        **METRICS_GROUP,
    )
