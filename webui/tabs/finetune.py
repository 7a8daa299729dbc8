"""The Fine-tune tab: the decoder fine-tuned on a folder of clips (under ``--finetune-data-root``) or
the example clips, and judged in the workbench. Data, steps and precision; the plan before a run
(``/finetune_plan``); *Start* (``/finetune_start``) and *Stop* (``/finetune_stop``); a progress line
and the loss curve (train and held-out) that follow the run (``/finetune_progress``, a timer);
at the end *Compare with the base in the lab* (``/finetune_compare``): the exported model loaded as
the second checkpoint (``core.model.second``) and a held-out clip run as a round trip, so the lab
flips base and fine-tuned at the same moment, and the table, the blind test, the shared test and
the report have both.

The work is ``webui.jobs.finetune`` (data, settings, plan) and ``webui.jobs.finetune_runs`` (the run
in a process of its own: training never holds the engine's lock, and its events have their own
queue, ``FINETUNE_GROUP``). Starting, stopping and comparing are the operator's (a client on the
server's loopback, as for loading a second checkpoint); a visitor sees the run, not the controls.
"""

from __future__ import annotations

import logging
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import gradio as gr

from core.errors import EngineNotReady
from core.model import second
from webui import i18n
from webui.common import TabHandlers, refusal, user_errors
from webui.i18n import label
from webui.jobs import finetune as finetune_jobs
from webui.jobs import finetune_runs
from webui.queues import FINETUNE_GROUP, MODEL_GROUP
from webui.serving.visitors import is_operator
from webui.views import finetune_view

logger = logging.getLogger(__name__)

TICK_S = 1.0  # how often the page reads the run's progress while it runs
CLICK_RUN_JS = "() => { document.querySelector('#roundtrip-run')?.click(); }"  # the lab's round trip, started


class RunView(NamedTuple):
    """The run's outputs, named once (the handlers return one; build wires the components in this order)."""

    status: Any  # HTML: the progress line, or how the run ended
    curve: Any  # HTML: the loss curve
    start: Any  # Button: interactive unless a run is active
    stop: Any  # Button: interactive while a run is active
    timer: Any  # Timer: active while a run is active
    compare: Any  # Column of the compare button: shown when the latest run exported a model (to the operator)
    hear: Any  # Column of the two players below: shown once the trainer decoded a held-out clip
    original: Any  # Audio: that held-out clip as it was
    decoded: Any  # Audio: its latest decoding by the decoder in training
    heard: Any  # State: which decoding the players hold ("run:step"), so a tick replaces them only when it changes


@dataclass
class FinetuneHandlers(TabHandlers):
    """The tab's events. ``roots``: where runs read and write; ``runs``: the one run at a time;
    ``trusted``: proxies whose X-Real-IP names the client."""

    roots: finetune_jobs.Roots | None = None
    runs: finetune_runs.FinetuneRuns | None = None
    trusted: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.roots is None:
            self.roots = finetune_jobs.Roots(None, self.workspace.root / "finetune-runs")
        if self.runs is None:
            self.runs = finetune_runs.FinetuneRuns(self.roots.runs)

    def _operator(self, request) -> bool:
        return is_operator(request, self.trusted)

    def _check_operator(self, request, lang: str) -> None:
        if not self._operator(request):
            raise refusal(i18n.text("finetune.error.operator_only", lang), lang)

    def open(self, request: gr.Request | None = None):
        """The tab as this client may use it: the controls for the operator (the data folders it may
        pick), the run's state for everyone."""
        lang = i18n.language_of(request)
        operator = self._operator(request)
        assert self.roots is not None
        choices = [(i18n.text("finetune.examples", lang), finetune_jobs.EXAMPLES)] if self.roots.examples else []
        if operator:
            choices += [(name, name) for name in finetune_jobs.data_folders(self.roots.data)]
        first = choices[0][1] if choices else None
        return (
            gr.Column(visible=operator),
            gr.Markdown(visible=not operator),
            gr.Dropdown(choices=choices, value=first),
            *self.view(None, request),
        )

    def plan(self, data, steps, precision, adversarial=None, request: gr.Request | None = None):
        """The run these choices would make, before it starts: clips, audio, held-out clips, memory,
        precision, time."""
        lang = i18n.language_of(request)
        if not self._operator(request):  # a visitor has no controls: nothing to plan
            return ""
        try:
            fields = self._fields(data, steps, precision, adversarial, lang)
            with user_errors("action.finetune_plan", lang):
                made = finetune_jobs.plan(fields)
        except gr.Error as e:  # a refusal is the plan's answer, said where the plan goes
            return finetune_view.refused_html(str(e.message), lang)
        return finetune_view.plan_html(made, lang)

    def _fields(self, data, steps, precision, adversarial, lang: str) -> dict:
        assert self.roots is not None and self.runs is not None
        with user_errors("action.finetune_plan", lang), _input_errors(lang):
            folder = finetune_jobs.data_path(data, self.roots)
            out = self.runs.new_folder(folder)
            return finetune_jobs.settings_fields(self.engine, data, steps, precision, out, self.roots, adversarial)

    def start(self, data, steps, precision, adversarial=None, heard=None, request: gr.Request | None = None):
        """The plan checked again (a refusal says why, before anything runs), then the run started
        in its own process; the page follows it with the timer."""
        lang = i18n.language_of(request)
        self._check_operator(request, lang)
        assert self.runs is not None
        fields = self._fields(data, steps, precision, adversarial, lang)
        with user_errors("action.finetune_start", lang, self.workspace.root), _input_errors(lang):
            made = finetune_jobs.plan(fields)
            name = self.runs.start(fields)
        logger.info("fine-tuning %s: %s", name, made)
        return finetune_view.plan_html(made, lang), *self.view(heard, request)

    def stop(self, heard=None, request: gr.Request | None = None):
        """Ask the run to stop after its current step (its checkpoint and exported model are kept)."""
        lang = i18n.language_of(request)
        self._check_operator(request, lang)
        assert self.runs is not None
        self.runs.stop()
        return self.view(heard, request)

    def view(self, heard=None, request: gr.Request | None = None) -> RunView:
        """The latest run as the page shows it (the timer's tick, and after every action); the
        players get a held-out clip's newest decoding when there is one they do not hold yet."""
        lang = i18n.language_of(request)
        assert self.runs is not None
        state = self.runs.state()
        random_weights = self.engine.random_weights
        active = state.active
        files = finetune_runs.sample_files(state.folder, state.progress) if state.folder else None
        now = f"{state.name}:{state.progress.sample[0]}" if files else ""
        original: Any = gr.skip()
        decoded: Any = gr.skip()
        if files and now != heard:  # copied where the page serves files from (the runs folder may be anywhere)
            folder = self.workspace.new_dir("finetune-sample")
            step = state.progress.sample[0]
            copies = [folder / f"original_{files[0].name}", folder / f"step{step}_{files[1].name}"]
            for source, copy in zip(files, copies, strict=True):
                shutil.copyfile(source, copy)
            original = gr.Audio(str(copies[0]), label=i18n.text("finetune.hear.original", lang))
            decoded = gr.Audio(str(copies[1]), label=i18n.text("finetune.hear.decoded", lang, step=step))
        return RunView(
            status=finetune_view.status_html(state, lang, random_weights),
            curve=finetune_view.curve_svg(state, lang),
            start=gr.Button(interactive=not active),
            stop=gr.Button(interactive=active),
            timer=gr.Timer(active=active),
            compare=gr.Column(visible=state.has_model and not active and self._operator(request)),
            hear=gr.Column(visible=bool(files)),
            original=original,
            decoded=decoded,
            heard=now if files else heard,
        )

    def compare(self, request: gr.Request | None = None, progress=gr.Progress()):  # noqa: B008 - Gradio's progress
        """The latest run's exported model loaded as the second checkpoint (refused before loading
        when it does not fit beside the first), and a held-out clip of its data into the Round trip's
        input, that tab in front; the page then runs it (the lab, the table, the blind test)."""
        lang = i18n.language_of(request)
        self._check_operator(request, lang)
        assert self.runs is not None and self.roots is not None
        state = self.runs.state()
        run = self.runs.folder(state.name)
        if run is None or not state.has_model or state.active:
            raise refusal(i18n.text("finetune.error.no_model", lang), lang)
        with user_errors("action.finetune_compare", lang, self.workspace.root):
            i18n.progress_in(lang, progress)(0.1, "finetune.job.loading")
            loaded = second.load_second(self.engine, str(run / finetune_runs.MODEL_FOLDER))
            if not loaded.ready:
                raise EngineNotReady(second.not_ready_message(self.engine))
            folder = self.workspace.new_dir("finetune")
            clip = finetune_runs.held_out_clip(run, folder)
            if clip is None and self.roots.examples:  # no held-out clip found: an example clip
                clip = folder / self.roots.examples[0].name
                shutil.copyfile(self.roots.examples[0], clip)
        logger.info("fine-tuned %s loaded as the second checkpoint; comparing on %s", run.name, clip)
        return str(clip) if clip else None, gr.Checkbox(value=True), gr.Tabs(selected="roundtrip")


@contextmanager
def _input_errors(lang: str):
    """The jobs' input errors (a catalogue key, ``FinetuneInputError``) as translated errors (inside
    ``user_errors``, which passes a ``gr.Error`` on)."""
    try:
        yield
    except finetune_jobs.FinetuneInputError as e:
        title = i18n.text("running.error_title", lang)
        raise gr.Error(i18n.text(e.key, lang, **e.fields), title=title, print_exception=False) from e


def build(
    demo: gr.Blocks,
    handlers: FinetuneHandlers,
    tab: gr.Tab,
    tabs: gr.Tabs | None = None,
    roundtrip_input: gr.Audio | None = None,
    with_second: gr.Checkbox | None = None,
) -> None:
    """The tab (call inside its ``gr.Tab``); ``tabs``, ``roundtrip_input`` and ``with_second`` for
    *Compare with the base in the lab*."""
    gr.Markdown(label("finetune.intro"), elem_id="finetune-intro")
    visitor_note = gr.Markdown(label("finetune.visitors"), visible=False, elem_id="finetune-visitors")
    with gr.Column(visible=False, elem_id="finetune-controls") as controls:
        with gr.Row(equal_height=False):
            data = gr.Dropdown(
                [],
                allow_custom_value=True,
                label=label("finetune.data"),
                info=label("finetune.data_info"),
                elem_id="finetune-data",
                scale=3,
                min_width=240,
            )
            steps = gr.Number(
                finetune_jobs.DEFAULT_STEPS,
                minimum=finetune_jobs.MIN_STEPS,
                maximum=finetune_jobs.MAX_STEPS,
                precision=0,
                label=label("finetune.steps"),
                info=label("finetune.steps_info"),
                elem_id="finetune-steps",
                scale=1,
                min_width=140,
            )
            precision = gr.Radio(
                list(finetune_jobs.PRECISIONS),
                value="auto",
                label=label("finetune.precision"),
                info=label("finetune.precision_info"),
                elem_id="finetune-precision",
                scale=2,
                min_width=240,
            )
        adversarial = gr.Checkbox(
            bool(handlers.engine.settings.is_cuda),  # on a CPU a step with the discriminators takes far longer
            label=label("finetune.adversarial"),
            info=label("finetune.adversarial_info"),
            elem_id="finetune-adversarial",
        )
        plan = gr.HTML(elem_id="finetune-plan", padding=False)
        with gr.Row(elem_classes="cw-ft-buttons"):
            start = gr.Button(label("finetune.start"), variant="primary", elem_id="finetune-start", scale=1)
            stop = gr.Button(
                label("finetune.stop"), variant="stop", interactive=False, elem_id="finetune-stop", scale=1
            )
    status = gr.HTML(elem_id="finetune-status", padding=False)
    curve = gr.HTML(elem_id="finetune-curve", padding=False)
    # built shown, hidden by the page's first view until a run has a model: a column hidden when the page was
    # built, in a tab not open then, stayed hidden when a tick showed it (Gradio 6.17)
    with gr.Column(elem_id="finetune-compare-box") as compare_box:
        compare = gr.Button(label("finetune.compare"), variant="primary", elem_id="finetune-compare")
    with gr.Column(elem_id="finetune-hear") as hear:  # built shown: see the compare button's column
        gr.Markdown(label("finetune.hear_heading"))
        with gr.Row():
            original = gr.Audio(type="filepath", interactive=False, elem_id="finetune-original")
            decoded = gr.Audio(type="filepath", interactive=False, elem_id="finetune-decoded")
    heard = gr.State(None)
    ticks = gr.Timer(TICK_S, active=False)
    view = list(RunView(status, curve, start, stop, ticks, compare_box, hear, original, decoded, heard))
    opened: dict[str, Any] = dict(outputs=[controls, visitor_note, data, *view], **FINETUNE_GROUP)
    demo.load(handlers.open, api_name="finetune_open", api_visibility="private", **opened)
    tab.select(handlers.open, api_name="finetune_open_tab", api_visibility="private", **opened).success(
        handlers.plan,
        inputs=[data, steps, precision, adversarial],
        outputs=[plan],
        api_name="finetune_plan_on_open",
        api_visibility="private",
        show_progress="hidden",
        **FINETUNE_GROUP,
    )
    gr.on(  # a choice changed by the user (not by the tab's opening): the plan again
        [data.input, steps.input, precision.input, adversarial.input],
        handlers.plan,
        inputs=[data, steps, precision, adversarial],
        outputs=[plan],
        api_name="finetune_plan",
        show_progress="hidden",
        **FINETUNE_GROUP,
    )
    start.click(
        handlers.start,
        inputs=[data, steps, precision, adversarial, heard],
        outputs=[plan, *view],
        api_name="finetune_start",
        show_progress_on=[plan],  # the plan is checked again: the run's line and curve keep their place
        **FINETUNE_GROUP,
    )
    stop.click(
        handlers.stop, inputs=[heard], outputs=view, api_name="finetune_stop", show_progress="hidden", **FINETUNE_GROUP
    )
    ticks.tick(
        handlers.view, inputs=[heard], outputs=view, api_name="finetune_progress", queue=False, show_progress="hidden"
    )
    if tabs is None or roundtrip_input is None or with_second is None:
        return
    compare.click(
        handlers.compare,
        outputs=[roundtrip_input, with_second, tabs],
        api_name="finetune_compare",
        **MODEL_GROUP,  # it loads a model on the device
    ).success(None, js=CLICK_RUN_JS, api_name="finetune_compare_run", api_visibility="private", queue=False)
