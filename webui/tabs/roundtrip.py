"""The Round trip tab, the page a demo is given on: audio in, *Encode → Decode* (``/roundtrip``), then
one flow: the verdict card (``webui.tabs.review``), the one player (the lab's, ``webui.tabs.lab``),
*Blind-test this clip* (``webui.tabs.abx_page``), and the details folded: downloads, spectrograms,
the metrics (``/metrics``), the ladder's figures, token usage, input facts, raw JSON. Nothing of the
result shows before there is one."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr

from core.analysis.judges import Judges
from webui import i18n
from webui.common import afterwards, need_file, refusal, user_errors
from webui.i18n import label
from webui.jobs import codec, results
from webui.queues import CHECK_GROUP, LAB_GROUP, METRICS_GROUP, MODEL_GROUP
from webui.serving import url_input
from webui.tabs import compare, lab, review
from webui.tabs.inputs import audio_input, examples, url_row
from webui.tabs.roundtrip_progress import ProgressBoxHandlers, session_of
from webui.views import figure_words, formatting

logger = logging.getLogger(__name__)

# on a phone, the page scrolls to the verdict card when the result lands
TO_RESULT_JS = (Path(__file__).resolve().parent.parent / "static" / "to_result.js").read_text(encoding="utf-8")
TO_PROGRESS_JS = (Path(__file__).resolve().parent.parent / "static" / "to_progress.js").read_text(encoding="utf-8")


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
class RoundTripHandlers(ProgressBoxHandlers):
    """The round trip's events; ``url_policy`` None: audio from a URL is off."""

    url_policy: url_input.UrlPolicy | None = None

    def roundtrip(
        self,
        audio_path,
        request: gr.Request | None = None,
        anchors=None,
        with_second=None,
        progress=gr.Progress(),  # noqa: B008 - Gradio's way to ask for a progress bar
    ):
        """Encode → decode: players, facts, token summary, spectrograms, downloads; beside the codec
        the chosen reference codecs (``anchors``: ids, None for the server's --anchors) and the
        second checkpoint when one is loaded (``with_second``), listed in ``details["compare"]``."""
        lang = i18n.language_of(request)
        job = session_of(request)
        running = self.board.snapshot(job) if job is not None else None
        if job is not None and (running is None or running.done):  # the click started it, or an API call
            self.board.start(job)
        audio_s = None
        try:
            source = need_file(audio_path, "what.audio", lang)
            with user_errors("action.roundtrip", lang, self.workspace.root):
                out = codec.roundtrip(
                    self.engine,
                    source,
                    self.workspace.new_dir("roundtrip"),
                    self.limits,
                    self.board.reporter(job, i18n.progress_in(lang, progress)),
                    compare.chosen(anchors, with_second, self.engine.settings),
                    figure_words.of(lang),
                )
            audio_s = out.facts.get("duration_s")
        except gr.Error as e:
            if job is not None:
                self.board.refuse(job, str(e.message))
            raise
        finally:
            if job is not None:
                self.board.finish(job, audio_s)
        logger.info(
            "round trip of %s: model %.2f s, ours %.3f s", source.name, out.timing["model_s"], out.timing["ui_s"]
        )
        assert out.samples is not None  # the round trip hands its record what it wrote
        rate = out.rates.get("compared_at_hz") or self.engine.output_rate
        record = results.open_record(self.engine, out.original_wav, out.reconstruction_wav, out.samples, rate)
        details: dict[str, Any] = {
            "input": out.facts,
            "tokens": out.summary,
            "timing": out.timing,
            "compare": out.compare,
            "rates": out.rates,
        }
        details[results.ID_KEY] = record.result_id  # the follow-up events read the record by it
        results.remember(record, "roundtrip", details)
        return RoundTripView(
            original=str(out.original_wav),
            reconstruction=str(out.reconstruction_wav),
            timing=formatting.timing_markdown(out.timing, lang),
            facts=formatting.facts_markdown(out.facts, lang),
            tokens=formatting.tokens_markdown(out.summary, lang),
            spectrogram=str(out.spectrogram_png),
            downloads=[str(out.token_file), str(out.reconstruction_wav)],
            details=details,
        )

    def metrics(
        self,
        original_path,
        reconstruction_path,
        request: gr.Request | None = None,
        details=None,
        progress=gr.Progress(),  # noqa: B008 - Gradio's way to ask for a progress bar
    ):
        """Objective metrics of a reconstruction against its original (the round trip's follow-up:
        its record's samples, named by ``details["result_id"]``; the API accepts any two clips)."""
        lang = i18n.language_of(request)
        original = need_file(original_path, "what.original", lang)
        reconstruction = need_file(reconstruction_path, "what.reconstruction", lang)
        record = results.find(self.engine, details, original, reconstruction)
        with user_errors("action.metrics", lang):
            judges = Judges.of(self.engine.settings)
            if record is not None:
                i18n.progress_in(lang, progress)(0.1, "job.metrics")
                clips = results.samples_of(record, self.limits)
                measure = functools.partial(codec.measure_samples, rate_hz=record.rate_hz)
                out = self.engine.live.cpu.batch(measure, *clips, judges)  # yields to live sessions
            else:
                say = i18n.progress_in(lang, progress)
                out = self.engine.live.cpu.batch(codec.measure, original, reconstruction, self.limits, say, judges)
            measured = {"metrics": out.metrics, "seconds": out.seconds}
            results.remember(record, "metrics", measured)
        if record is not None:
            measured = measured | {results.ID_KEY: record.result_id}  # the verdict reads the record by it
        return formatting.metrics_markdown(out.metrics, out.seconds, lang), measured

    def fetch_url(self, url: str, request: gr.Request | None = None, progress=gr.Progress()):
        """Download audio from a URL into a request folder (only when enabled)."""
        lang = i18n.language_of(request)
        if self.url_policy is None:
            raise refusal(i18n.text("error.url_off", lang), lang)
        with user_errors("action.fetch", lang, self.workspace.root):
            progress(0.1, desc=i18n.text("progress.downloading", lang))
            path = url_input.fetch(url, self.workspace.new_dir("url"), self.url_policy)
        return str(path)


@dataclass
class RoundTripPage:
    """What app.py wires to other tabs: the blind test starts from this result."""

    original: gr.Audio  # hidden: the codec's input as 24 kHz mono (the lab and the blind test read it)
    blind_what: gr.Radio  # whole clip, looped region or a worst moment
    blind_run: gr.Button
    audio_in: gr.Audio  # the input: the Live tab hands a stopped session's recording to it
    report_files: gr.File | None = None  # the report's zip and page (a shared test's results go in)
    with_second: gr.Checkbox | None = None  # "also the second checkpoint": the Fine-tune tab ticks it


def blind_choices(timeline_data, request: gr.Request | None = None):
    """The blind test's choices for this result: the whole clip, the loop, each worst moment."""
    lang = i18n.language_of(request)
    choices = [(i18n.text("roundtrip.blind.whole", lang), "whole"), (i18n.text("roundtrip.blind.loop", lang), "loop")]
    for n, moment in enumerate((timeline_data or {}).get("worst") or [], start=1):
        words = i18n.text("roundtrip.blind.worst", lang, n=n, time=formatting.clock(moment["time_s"]))
        choices.append((words, f"worst{n}"))
    return gr.Radio(choices=choices, value="whole")


def show_result():
    """The round trip is done: its result column appears (nothing of it shows before)."""
    return gr.Column(visible=True)


def build(handlers: RoundTripHandlers, example_paths: tuple[Path, ...]) -> RoundTripPage:
    """The tab in the order a listener needs it: input, *Encode → Decode*, the verdict card, the
    player, *Blind-test this clip*, then the details folded (call inside a ``gr.Tab``)."""
    reviewer = review.ReviewHandlers(handlers.engine, handlers.workspace)
    lab_handlers = lab.LabHandlers(handlers.engine, handlers.workspace)
    with gr.Row(elem_classes="cw-input-row"):
        with gr.Column(scale=3, min_width=280):
            audio_in = audio_input("roundtrip-input")
        with gr.Column(scale=1, min_width=200, elem_classes="cw-run-column"):
            run = gr.Button(label("roundtrip.run"), variant="primary", size="lg", elem_id="roundtrip-run")
            progress_box = gr.HTML(visible=False, elem_id="roundtrip-progress", padding=False)
            gr.Markdown(label("roundtrip.hint"), elem_classes="cw-hint")
    ticks = gr.Timer(0.5, active=False)
    examples(audio_in, example_paths, "roundtrip_example", then_focus="roundtrip-run")
    audio_in.change(  # a file dropped, an example, a recording, the input cleared
        handlers.check_upload,
        inputs=[audio_in],
        outputs=[progress_box],
        api_name="roundtrip_check_upload",
        api_visibility="private",
        show_progress="hidden",
        **CHECK_GROUP,  # CPU: a read, behind neither the model nor the lab
    )
    with gr.Accordion(label("compare.anchors"), open=False, elem_id="roundtrip-compare"):
        anchors, with_second = compare.inputs(handlers.engine.settings)
    if handlers.url_policy is not None:
        url_row(handlers.fetch_url, audio_in, handlers.url_policy)
    # the codec's input and output: inputs of the lab, the metrics, the verdict and the blind test;
    # the one player is the lab's (loudness-matched, same position), so these are not shown
    original = gr.Audio(type="filepath", interactive=False, visible=False, elem_id="roundtrip-original")
    reconstruction = gr.Audio(type="filepath", interactive=False, visible=False, elem_id="roundtrip-reconstruction")
    with gr.Column(visible=False, elem_id="roundtrip-result") as result:
        verdict, report, report_links, report_files = review.verdict_components()
        parts = lab.build_player()
        with gr.Row(elem_id="roundtrip-blind"):
            blind_what = gr.Radio(
                [("whole", "whole")],
                value="whole",
                label=label("roundtrip.blind.label"),
                elem_id="roundtrip-blind-what",
                scale=4,
            )
            blind_run = gr.Button(
                label("roundtrip.blind.run"), variant="secondary", elem_id="roundtrip-blind-run", scale=0, min_width=200
            )
        with gr.Accordion(label("roundtrip.details"), open=False, elem_id="roundtrip-details"):
            # the engineering line (model time, ours, the memory estimate) is a detail: the first
            # lines of a result are the verdict's; the progress box said how long it took
            timing = gr.Markdown(elem_id="roundtrip-timing", elem_classes="cw-hint")
            downloads = gr.File(
                label=label("roundtrip.downloads"),
                file_count="multiple",
                interactive=False,
                elem_id="roundtrip-downloads",
            )
            spectrogram = gr.Image(
                label=label("roundtrip.spectrogram"),
                type="filepath",
                interactive=False,
                elem_id="roundtrip-spectrogram",
                buttons=["download", "fullscreen"],
            )
            metrics = gr.Markdown(elem_id="roundtrip-metrics", elem_classes="cw-tables")
            lab.build_details(parts)
            with gr.Row(elem_classes="cw-tables"):
                facts = gr.Markdown(elem_id="roundtrip-facts")
                summary = gr.Markdown(elem_id="roundtrip-tokens")
            with gr.Accordion(label("common.raw_json"), open=False):
                details = gr.JSON(label=label("roundtrip.json"))
                metrics_details = gr.JSON(label=label("roundtrip.metrics_json"))
    clicked = run.click(
        handlers.clear_metrics,
        outputs=[metrics, metrics_details, progress_box, run, ticks],
        api_name="roundtrip_clear",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    clicked.then(None, js=TO_PROGRESS_JS, api_name="roundtrip_to_progress", api_visibility="private", queue=False)
    ticks.tick(
        handlers.progress_now,
        outputs=[progress_box],
        api_name="roundtrip_progress",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    give_back = dict(  # the button back, the progress box put away: after the job, and after any failure
        fn=handlers.progress_end,
        outputs=[progress_box, run, ticks],
        api_name="roundtrip_progress_end",
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    done = afterwards(
        clicked,
        handlers.roundtrip,
        failure=give_back | {"api_name": "roundtrip_clear_failed"},
        inputs=[audio_in, anchors, with_second],
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
        show_progress="hidden",  # the progress box above says what runs (Gradio's overlay sat on an empty line)
        **MODEL_GROUP,
    )
    ended = {k: v for k, v in give_back.items() if k != "fn"}
    afterwards(done, handlers.progress_end, failure=give_back | {"api_name": "roundtrip_failed"}, **ended)
    done.success(show_result, outputs=[result], queue=False, api_visibility="private").success(
        None, js=TO_RESULT_JS, api_name="roundtrip_to_result", api_visibility="private", queue=False
    )
    done.success(
        lambda request: blind_choices(None, request), outputs=[blind_what], queue=False, api_visibility="private"
    )
    after_metrics = done.success(
        handlers.metrics,
        inputs=[original, reconstruction, details],
        outputs=[metrics, metrics_details],
        api_name="metrics",
        show_progress="hidden",  # the verdict card says that the metrics are being measured
        **METRICS_GROUP,
    )
    anchors_added = anchors.input(  # ticked on a result: added to it, no new encode
        compare.CompareHandlers(handlers.engine, handlers.workspace).add_anchors,
        inputs=[original, reconstruction, anchors, details],
        outputs=[details],
        api_name="add_anchors",
        api_visibility="private",
        show_progress="hidden",
        trigger_mode="always_last",  # a box ticked while the last one is added is added after it, never dropped
        **LAB_GROUP,
    )
    timeline_done = lab.wire(lab_handlers, parts, done, original, reconstruction, downloads, details, anchors_added)
    timeline_done.success(
        blind_choices, inputs=[parts.timeline_json], outputs=[blind_what], queue=False, api_visibility="private"
    )
    review.wire(
        reviewer,
        done,
        after_metrics,
        dict(
            original=original,
            reconstruction=reconstruction,
            downloads=downloads,
            details=details,
            metrics_details=metrics_details,
            verdict=verdict,
            report=report,
            report_links=report_links,
            report_files=report_files,
            comparison=parts.comparison,
        ),
    )
    return RoundTripPage(original, blind_what, blind_run, audio_in, report_files, with_second)
