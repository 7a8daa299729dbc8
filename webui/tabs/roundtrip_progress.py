"""The Round trip's progress box under *Encode → Decode*: a file checked as soon as it is given (what
is wrong with it, said in the box at once), the click that shows the box and starts the session's
job, the timer's ticks while it runs, and the end that gives the button back, whatever the job's
outcome. The numbers come from ``webui.jobs.progress``; the words from ``webui.views.progress_view``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from core.audio.files import load_audio
from webui import i18n
from webui.common import TabHandlers, path_of, user_errors
from webui.jobs.progress import ProgressBoard
from webui.views import progress_view


@dataclass
class ProgressBoxHandlers(TabHandlers):
    """The box's events; the Round trip's handlers are these and the job's own."""

    board: ProgressBoard = field(init=False)  # what each session's round trip has done

    def __post_init__(self):  # a fresh server's first job: the time left from the model's readiness check
        self.board = ProgressBoard(first_pace=self._model_pace)

    def _model_pace(self) -> float | None:
        report = self.engine.last_report
        return report.model_pace() if report is not None else None

    def check_upload(self, audio_path, request: gr.Request | None = None):
        """A file just given: read it now (within the limits) and say at once, in the box under the
        button, what is wrong with it, instead of after *Encode → Decode*; a good file puts the last
        job's box away. The file stays in the input either way; a running job's box is left alone."""
        snap = self.board.snapshot(session_of(request) or "")
        if snap is not None and not snap.done:
            return gr.skip()
        if not audio_path:  # cleared
            return gr.HTML("", visible=False)
        lang = i18n.language_of(request)
        try:
            with user_errors("action.roundtrip", lang, self.workspace.root):
                load_audio(Path(path_of(audio_path)), self.limits)
        except gr.Error as e:
            return gr.HTML(progress_view.refused(str(e.message), lang, before_the_job=True), visible=True)
        return gr.HTML("", visible=False)

    def clear_metrics(self, request: gr.Request | None = None):
        """The click: blank the previous clip's metrics, show the progress box at once, disable the
        button, start the box's timer (all before the job is even queued). The session's job counts
        as running from here, so a file check still under way leaves the box alone."""
        lang = i18n.language_of(request)
        job = session_of(request)
        if job is not None:
            self.board.start(job)
        busy = gr.Button(interactive=False)
        return "", None, gr.HTML(progress_view.starting(lang), visible=True), busy, gr.Timer(active=True)

    def progress_now(self, request: gr.Request | None = None):
        """The timer's tick while this session's round trip runs: the box as it is now."""
        snap = self.board.snapshot(session_of(request) or "")
        if snap is None or snap.done:
            return gr.skip()
        return gr.HTML(progress_view.running(snap, i18n.language_of(request)), visible=True)

    def progress_end(self, request: gr.Request | None = None):
        """The round trip ended, well or not (after a failure too: ``webui.common.afterwards``): the
        button back, the timer off, the box says how it went (why, when it was refused)."""
        lang = i18n.language_of(request)
        job = session_of(request) or ""
        snap = self.board.snapshot(job)
        if snap is not None and not snap.done:  # the job never ran (refused before it started)
            self.board.finish(job)
            snap = self.board.snapshot(job)
        ok = snap is not None and snap.done and snap.fraction >= 1.0
        box = progress_view.done(snap.elapsed_s, snap.audio_s, lang) if ok and snap else ""
        if snap is not None and snap.refused:
            box = progress_view.refused(snap.refused, lang)
        return gr.HTML(box, visible=bool(box)), gr.Button(interactive=True), gr.Timer(active=False)


def session_of(request: gr.Request | None) -> str | None:
    """The browser session a request comes from (the progress box's key); None outside a page."""
    return getattr(request, "session_hash", None) or None
