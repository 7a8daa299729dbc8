"""The "Evaluate files" tab: several uploads round-tripped and judged at once (``/evaluate``) with
``core.judging.evaluate``: a table, ``metrics.csv``, ``report.html`` and a zip of it all."""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from core.analysis import catalog
from core.judging import evaluate
from webui import i18n
from webui.common import TabHandlers, path_of, refusal, user_errors
from webui.queues import MODEL_GROUP
from webui.views import words
from webui.views.formatting import metric_name

logger = logging.getLogger(__name__)

MAX_EVALUATE_FILES = 50  # uploads per evaluation run in the UI (the CLI has no limit)
TAB_MOS = ("mos_original", "mos_reconstruction")  # the CSV's DistillMOS columns the tab's table shows


@dataclass
class EvaluateHandlers(TabHandlers):
    """The tab's one event."""

    def evaluate(self, files, request: gr.Request, progress=gr.Progress()):
        """Round-trip several uploaded files: a table, metrics.csv, report.html and a zip of it all."""
        lang = i18n.language_of(request)
        paths = [Path(path_of(f)) for f in (files or []) if path_of(f)]
        if not paths:
            raise refusal(i18n.text("evaluate.no_files", lang), lang)
        if len(paths) > MAX_EVALUATE_FILES:
            raise refusal(i18n.text("evaluate.too_many", lang, n=len(paths), max=MAX_EVALUATE_FILES), lang)
        with user_errors("action.evaluate", lang):
            folder = self.workspace.new_dir("evaluate")
            names: dict[str, int] = {}
            pairs = []
            for path in paths:  # two uploads with one name get distinct rows
                names[path.name] = names.get(path.name, 0) + 1
                pairs.append((path, path.name if names[path.name] == 1 else f"{path.name} ({names[path.name]})"))
            result = evaluate.evaluate_files(
                self.engine, pairs, folder / "evaluation", self.limits, progress=lambda f, d: progress(f, desc=d)
            )
            archive = shutil.make_archive(str(folder / "evaluation"), "zip", folder / "evaluation")
        header = ["file", "verdict", *catalog.ids(m for m in catalog.COMPARED if m.votes), *TAB_MOS, "error"]
        table = [[_cell(c, r[c], lang) for c in header] for r in result.rows]
        failed = sum(1 for r in result.rows if r["error"])
        summary = i18n.text("evaluate.summary", lang, n=len(result.rows), failed=failed, seconds=result.seconds)
        openable = [(r["file"], str(path)) for r, (path, _) in zip(result.rows, pairs, strict=False) if not r["error"]]
        return (
            summary,
            gr.Dataframe(value=table, headers=[_heading(c, lang) for c in header]),
            [str(result.csv_path), str(result.html_path), archive],
            gr.Dropdown(choices=openable, value=openable[0][1] if openable else None, visible=bool(openable)),
            gr.Button(visible=bool(openable)),
            [str(path) if not r["error"] else "" for r, (path, _) in zip(result.rows, pairs, strict=False)],  # row i's
        )

    @staticmethod
    def pick_row(files, event: gr.SelectData):
        """A click on a row of the table picks that file for *Open in the lab* (a failed row has none)."""
        row = event.index[0] if isinstance(event.index, (list, tuple)) else event.index
        ok = isinstance(row, int) and 0 <= row < len(files or []) and files[row]
        return gr.Dropdown(value=files[row]) if ok else gr.Dropdown()

    def open_in_lab(self, path, files, request: gr.Request | None = None):
        """The chosen file into the Round trip's input, that tab in front; the page then runs it: its
        round trip is the evaluation's (the same checkpoint, the same codes), in the lab's flip player
        with the verdict and the blind test."""
        lang = i18n.language_of(request)
        if not path or path not in (files or []) or not Path(path).is_file():  # only this session's evaluated files
            raise refusal(i18n.text("evaltab.open_gone", lang), lang)
        return path, gr.Tabs(selected="roundtrip")


_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")  # a library's error number says nothing to a person


def _heading(column: str, lang: str) -> str:
    """A column of the tab's table in ``lang`` (the CSV keeps its ids: mos_original, PESQ-WB, ...)."""
    if column in ("file", "verdict", "error"):
        return i18n.text(f"evaltab.{column}", lang)
    if column in TAB_MOS:
        return i18n.text(f"report.{column}", lang)
    return metric_name(column, lang)


def _cell(column: str, value, lang: str):
    """A cell in words: the verdict as the card says it, an error without errno, in ``lang`` where known."""
    if column == "verdict" and value in ("green", "amber", "red"):
        return i18n.text(f"verdict.{value}", lang)
    if column == "error" and value:
        return words.sentence(_ERRNO.sub("", str(value)), lang)
    return round(value, 2) if isinstance(value, float) else value


def build(handlers: EvaluateHandlers, roundtrip_input: gr.Audio | None = None, tabs: gr.Tabs | None = None) -> None:
    """Several files at once (call inside a ``gr.Tab``); ``roundtrip_input`` and ``tabs`` for
    *Open in the lab* (a row's file as a round trip)."""
    gr.Markdown(i18n.label("evaluate.intro"))
    with gr.Row():
        files = gr.File(
            label=i18n.label("evaluate.input"),
            file_count="multiple",
            file_types=["audio"],
            elem_id="evaluate-input",
            scale=3,
        )
        run = gr.Button(i18n.label("evaluate.run"), variant="primary", elem_id="evaluate-run", scale=1)
    summary = gr.Markdown(elem_id="evaluate-summary")
    table = gr.Dataframe(interactive=False, wrap=True, elem_id="evaluate-table")  # an error is read whole
    with gr.Row():
        which = gr.Dropdown(
            label=i18n.label("evaltab.open_which"), visible=False, elem_id="evaluate-open-which", scale=3
        )
        open_lab = gr.Button(i18n.label("evaltab.open"), visible=False, elem_id="evaluate-open-lab", scale=1)
    outputs = gr.File(
        label=i18n.label("evaluate.outputs"), file_count="multiple", interactive=False, elem_id="evaluate-outputs"
    )
    row_files = gr.State([])
    run.click(
        handlers.evaluate,
        inputs=[files],
        outputs=[summary, table, outputs, which, open_lab, row_files],
        api_name="evaluate",
        **MODEL_GROUP,
    )
    if roundtrip_input is None or tabs is None:
        return
    table.select(
        EvaluateHandlers.pick_row,
        inputs=[row_files],
        outputs=[which],
        api_visibility="private",
        queue=False,
    )
    open_lab.click(
        handlers.open_in_lab,
        inputs=[which, row_files],
        outputs=[roundtrip_input, tabs],
        api_name="evaluate_open_in_lab",
        api_visibility="private",
        queue=False,
    ).success(None, js="() => { document.querySelector('#roundtrip-run')?.click(); }")
