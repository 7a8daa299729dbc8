"""The status bar above the tabs: one line ("Ready · CPU · float32 · 4 MiB") that opens to the three
readiness steps, model, device, dtype, resident memory (``/status``); failures open it. *Re-run
checks* (``/readiness``) loads the model if it is not loaded."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from webui import i18n
from webui.common import TabHandlers, user_errors
from webui.i18n import label
from webui.queues import MODEL_GROUP, STATUS_GROUP
from webui.views import formatting

logger = logging.getLogger(__name__)


@dataclass
class StatusHandlers(TabHandlers):
    """The status bar's two events."""

    def status(self, request: gr.Request | None = None):
        """The status bar as it stands (no new check), in the browser's language."""
        report = self.engine.last_report.to_dict() if self.engine.last_report else None
        info = self.engine.info()
        return formatting.status_html(report, info, i18n.language_of(request)), {"readiness": report, "engine": info}

    def readiness(self, request: gr.Request | None = None, progress=gr.Progress()):
        """Re-run the three checks; loads the model first if it is not loaded."""
        lang = i18n.language_of(request)
        with user_errors("action.readiness", lang):
            progress(0.1, desc=i18n.text("progress.readiness", lang))
            self.engine.warm_up()
        return self.status(request)


def build(demo: gr.Blocks, handlers: StatusHandlers) -> None:
    """One line (it opens to the three steps) with *Re-run checks* at its right end."""
    with gr.Row(elem_id="status-row"):
        status = gr.HTML(elem_id="status-bar")
        rerun = gr.Button(label("status.rerun"), elem_id="rerun-checks", size="sm", scale=0, min_width=0)
    raw = gr.JSON(visible=False)
    demo.load(
        handlers.status,
        outputs=[status, raw],
        api_name="status",
        show_progress="hidden",
        **STATUS_GROUP,
    )
    rerun.click(handlers.readiness, outputs=[status, raw], api_name="readiness", **MODEL_GROUP)
