"""The System tab: memory and CPU refreshed live (``/stats``), *Clear VRAM* (``/clear_vram``), and
*Diagnose*: every doctor check as a panel (``/doctor``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from core.doctor import run_doctor
from webui import i18n
from webui.common import TabHandlers, user_errors
from webui.i18n import label
from webui.queues import DOCTOR_GROUP, MODEL_GROUP, STATS_GROUP
from webui.serving import visitors
from webui.views import doctor_panel, formatting

logger = logging.getLogger(__name__)


@dataclass
class SystemHandlers(TabHandlers):
    """The tab's events. ``address``: where this server listens, (host, port), as it was started
    (``build_app`` reads them from the running Blocks); None: the doctor's defaults."""

    address: Callable[[], tuple[str | None, int | None]] | None = None
    trusted: frozenset[str] = frozenset()  # proxies whose X-Real-IP names the client (webui.serving.visitors)

    def clear_vram(self, request: gr.Request | None = None):
        lang = i18n.language_of(request)
        with user_errors("action.clear_vram", lang):
            result = self.engine.clear_vram()
        return formatting.vram_markdown(result, lang), result

    def doctor(self, request: gr.Request | None = None):
        """Every doctor check (``python -m core doctor``) as a panel, plus its JSON report."""
        lang = i18n.language_of(request)
        with user_errors("action.doctor", lang):
            address = self.address() if self.address is not None else (None, None)
            report = run_doctor(self.engine, doctor_panel.options_for(address, self.workspace.root)).to_dict()
        if not visitors.may_see_server(request, self.trusted):  # no login, not the operator: no paths, versions
            report = visitors.redacted(report)
        return doctor_panel.panel_html(report, lang), report

    def stats(self, request: gr.Request | None = None):
        lang = i18n.language_of(request)
        with user_errors("action.stats", lang):
            stats = self.engine.stats()
        return formatting.stats_markdown(stats, lang), stats


def build(handlers: SystemHandlers, stats_every_s: float) -> None:
    gr.Markdown(label("system.refreshed", seconds=f"{stats_every_s:g}"))
    stats = gr.Markdown(elem_id="system-stats")
    with gr.Row():
        on_gpu = bool(handlers.engine.settings.is_cuda)  # a CPU-only engine has no VRAM to clear
        clear = gr.Button(label("system.clear_vram"), elem_id="clear-vram", scale=1, visible=on_gpu)
        cleared = gr.Markdown(elem_id="clear-vram-result")
    with gr.Accordion(label("common.raw_json"), open=False):
        raw = gr.JSON(label=label("system.stats_json"))
        cleared_raw = gr.JSON(label=label("system.clear_vram_json"))
    with gr.Row():
        diagnose = gr.Button(label("doctor.run"), elem_id="doctor-run", scale=1)
        gr.Markdown(label("doctor.hint"), elem_classes="cw-hint")
    report = gr.HTML(elem_id="doctor-panel")
    with gr.Accordion(label("doctor.json"), open=False):
        report_raw = gr.JSON()
    diagnose.click(handlers.doctor, outputs=[report, report_raw], api_name="doctor", **DOCTOR_GROUP)
    timer = gr.Timer(stats_every_s)
    timer.tick(
        handlers.stats,
        outputs=[stats, raw],
        api_name="stats",
        show_progress="hidden",
        **STATS_GROUP,
    )
    clear.click(handlers.clear_vram, outputs=[cleared, cleared_raw], api_name="clear_vram", **MODEL_GROUP)
