"""The Gradio Blocks app, built as a function of the engine: ``build_app(engine)``.

Layout: a status bar (readiness steps, model, device, dtype, resident memory) above four
tabs: Round trip, Encode, Decode, System. Every model event shares one concurrency group
(``MODEL_GROUP``, limit 1) so the device runs one job at a time; the stats timer and the
status read are outside it and answer while a job runs.
"""

from __future__ import annotations

import logging
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from . import abx, lab, review, storage, url_input
from .handlers import Handlers, RoundTripView
from .i18n import label
from .workspace import DEFAULT_MAX_AGE_S, Workspace

logger = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent / "assets"  # example clips
MODEL_GROUP: dict[str, Any] = dict(concurrency_limit=1, concurrency_id="model")  # one device job at a time
METRICS_GROUP = dict(concurrency_limit=1, concurrency_id="metrics")  # CPU only: PESQ, STOI, ...
GRADIO_CACHE_CLEANUP = (3600, 3600)  # (every, older than) seconds: Gradio's own upload/output cache
STATS_EVERY_S = 2.0  # seconds between system stats refreshes
TITLE = "Codec Workbench"  # i18n-exempt: the product's name, in the browser tab (not a component prop)
CSS = """
.cw-status {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px 12px;}
.cw-status.cw-ok {border-left: 6px solid #2e9d4f;}
.cw-status.cw-bad {border-left: 6px solid #d2372c;}
.cw-status.cw-wait {border-left: 6px solid #d9a400;}
.cw-verdict {font-weight: 700; font-size: 1.05em; margin-bottom: 4px;}
.cw-steps {display: flex; gap: 12px; flex-wrap: wrap;}
.cw-step {flex: 1 1 220px; padding: 4px 8px; border-radius: 6px; background: var(--background-fill-secondary);}
.cw-step-pass .cw-icon, .cw-step-pass .cw-word {color: #2e9d4f; font-weight: 700;}
.cw-step-fail .cw-icon, .cw-step-fail .cw-word {color: #d2372c; font-weight: 700;}
.cw-step-skipped .cw-icon, .cw-step-skipped .cw-word {color: #888; font-weight: 700;}
.cw-detail {font-size: 0.85em; opacity: 0.85;}
.cw-meta {margin-top: 6px; font-size: 0.9em;}
.cw-meta span {margin-right: 4px;}
.cw-hint {font-size: 0.8em; opacity: 0.8;}
.cw-fix {margin-top: 8px; padding: 6px 8px; border-radius: 6px; background: #fdecea; color: #611a15;}
.cw-doctor {width: 100%; margin-top: 6px; font-size: 0.9em;}
.cw-doctor td {vertical-align: top; padding: 4px 6px;}
.cw-step-warn .cw-icon, .cw-step-warn .cw-word {color: #d9a400; font-weight: 700;}
"""


def default_temp_root() -> Path:
    return storage.default_root()


@dataclass(frozen=True)
class UiOptions:
    temp_root: Path = field(default_factory=default_temp_root)  # where request folders go
    max_age_s: float = DEFAULT_MAX_AGE_S  # request folders older than this are deleted
    url_policy: url_input.UrlPolicy | None = None  # None: audio from a URL is off
    examples: tuple[Path, ...] = field(default_factory=lambda: tuple(sorted(ASSETS.glob("*.wav"))))
    stats_every_s: float = STATS_EVERY_S


def build_app(engine, options: UiOptions | None = None) -> gr.Blocks:
    """The whole page for ``engine``; nothing outside this call holds UI state."""
    options = options or UiOptions()
    handlers = Handlers(engine, Workspace(options.temp_root, options.max_age_s), options.url_policy)
    reviewer = review.ReviewHandlers(engine, handlers.workspace)
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=GRADIO_CACHE_CLEANUP) as demo:
        gr.Markdown(label("app.intro"))
        _status_bar(demo, handlers)
        with gr.Tabs():
            with gr.Tab(label("tab.roundtrip"), id="roundtrip"):
                _roundtrip_tab(handlers, options, reviewer)
            with gr.Tab(label("abx.tab"), id="abx"):
                abx.abx_tab(demo, abx.AbxHandlers(engine, handlers.workspace), MODEL_GROUP)
            with gr.Tab(label("evaluate.tab"), id="evaluate"):
                review.evaluate_tab(reviewer, MODEL_GROUP)
            with gr.Tab(label("tab.encode"), id="encode"):
                _encode_tab(handlers, options)
            with gr.Tab(label("tab.decode"), id="decode"):
                _decode_tab(handlers)
            with gr.Tab(label("tab.system"), id="system"):
                _system_tab(handlers, options)
    return demo


def _status_bar(demo: gr.Blocks, handlers: Handlers) -> None:
    with gr.Row():
        with gr.Column(scale=6):
            status = gr.HTML(elem_id="status-bar")
        with gr.Column(scale=1, min_width=160):
            rerun = gr.Button(label("status.rerun"), elem_id="rerun-checks", size="sm")
            gr.Markdown(label("status.rerun_hint"), elem_classes="cw-hint")
    raw = gr.JSON(visible=False)
    demo.load(
        handlers.status,
        outputs=[status, raw],
        api_name="status",
        show_progress="hidden",
        concurrency_limit=None,
        concurrency_id="status",
    )
    rerun.click(handlers.readiness, outputs=[status, raw], api_name="readiness", **MODEL_GROUP)


def _audio_input(elem_id: str) -> gr.Audio:
    return gr.Audio(sources=["upload", "microphone"], type="filepath", label=label("input.audio"), elem_id=elem_id)


def _examples(inputs: gr.Audio, options: UiOptions, api_name: str) -> None:
    if options.examples:
        gr.Examples(
            [[str(p)] for p in options.examples],
            inputs=[inputs],
            label=label("input.examples"),
            api_name=api_name,
            api_visibility="private",
        )


def _roundtrip_tab(handlers: Handlers, options: UiOptions, reviewer: review.ReviewHandlers) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            audio_in = _audio_input("roundtrip-input")
            _examples(audio_in, options, "roundtrip_example")
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
    lab.add_lab(handlers, done, original, reconstruction, downloads)
    review.wire_verdict_and_report(
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
        METRICS_GROUP,
    )


def _url_row(handlers: Handlers, audio_in: gr.Audio, policy: url_input.UrlPolicy) -> None:
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
        concurrency_limit=2,
        concurrency_id="fetch",
    )


def _encode_tab(handlers: Handlers, options: UiOptions) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            audio_in = _audio_input("encode-input")
            _examples(audio_in, options, "encode_example")
        with gr.Column(scale=1, min_width=200):
            run = gr.Button(label("encode.run"), variant="primary", size="lg", elem_id="encode-run")
    with gr.Row():
        token_file = gr.File(label=label("encode.token_file"), interactive=False, elem_id="encode-tokens")
        summary = gr.Markdown(elem_id="encode-summary")
    heatmap = gr.Image(label=label("encode.heatmap"), type="filepath", interactive=False, elem_id="encode-heatmap")
    with gr.Accordion(label("common.raw_json"), open=False):
        details = gr.JSON()
    run.click(
        handlers.encode,
        inputs=[audio_in],
        outputs=[token_file, summary, heatmap, details],
        api_name="encode",
        **MODEL_GROUP,
    )


def _decode_tab(handlers: Handlers) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            token_in = gr.File(label=label("decode.token_file"), file_types=[".npz"], elem_id="decode-input")
        with gr.Column(scale=1, min_width=200):
            run = gr.Button(label("decode.run"), variant="primary", size="lg", elem_id="decode-run")
    with gr.Row():
        audio_out = gr.Audio(
            label=label("decode.audio"),
            type="filepath",
            interactive=False,
            elem_id="decode-audio",
            buttons=["download"],
        )
        summary = gr.Markdown(elem_id="decode-summary")
    spectrogram = gr.Image(
        label=label("decode.spectrogram"), type="filepath", interactive=False, elem_id="decode-spectrogram"
    )
    with gr.Accordion(label("common.raw_json"), open=False):
        details = gr.JSON()
    run.click(
        handlers.decode,
        inputs=[token_in],
        outputs=[audio_out, summary, spectrogram, details],
        api_name="decode",
        **MODEL_GROUP,
    )


def _system_tab(handlers: Handlers, options: UiOptions) -> None:
    gr.Markdown(label("system.refreshed", seconds=f"{options.stats_every_s:g}"))
    stats = gr.Markdown(elem_id="system-stats")
    with gr.Row():
        clear = gr.Button(label("system.clear_vram"), elem_id="clear-vram", scale=1)
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
    diagnose.click(handlers.doctor, outputs=[report, report_raw], api_name="doctor", **MODEL_GROUP)
    timer = gr.Timer(options.stats_every_s)
    timer.tick(
        handlers.stats,
        outputs=[stats, raw],
        api_name="stats",
        show_progress="hidden",
        concurrency_limit=None,
        concurrency_id="stats",
    )
    clear.click(handlers.clear_vram, outputs=[cleared, cleared_raw], api_name="clear_vram", **MODEL_GROUP)
