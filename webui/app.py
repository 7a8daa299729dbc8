"""The Gradio Blocks app, built as a function of the engine: ``build_app(engine)``.

Layout: the status bar (``webui.tabs.status_bar``, one line) above the tabs, one module each under
``webui/tabs/``: Round trip (input, verdict card, the lab's player, the blind test from the result,
details folded), Live (``live``), Blind test (``abx_page``), Evaluate files, Check a port, Fine-tune
(``finetune``), Encode, Decode, System. Styles and the tab list's keys: ``webui/static/page.css`` and ``page.js``. Which events share a queue: ``webui.queues``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import gradio as gr

from webui.i18n import DEFAULT_LANGUAGE, LANGUAGES, catalogues, label, text
from webui.jobs import finetune as finetune_jobs
from webui.jobs import finetune_runs
from webui.options import FINETUNE_RUNS, UiOptions
from webui.serving.share_link import LinkSettings
from webui.serving.workspace import Workspace
from webui.tabs import (
    abx_page,
    decode,
    encode,
    evaluate,
    finetune,
    live,
    parity,
    roundtrip,
    second_model,
    shared_test,
    status_bar,
    system,
)

logger = logging.getLogger(__name__)

GRADIO_CACHE_CLEANUP = (3600, 3600)  # (every, older than) seconds: Gradio's own upload/output cache
TITLE = "Codec Workbench"  # i18n-exempt: the product's name, in the browser tab (not a component prop)
STATIC = Path(__file__).resolve().parent / "static"
CSS = (STATIC / "page.css").read_text(encoding="utf-8")  # the page's styles (server.py hands them to launch)
PAGE_JS = (STATIC / "page.js").read_text(encoding="utf-8")  # the tab list's keyboard, run once on load
TOAST_KINDS = {"error": "running.error_title", "warning": "running.warning_title", "info": "running.info_title"}


def page_js() -> str:
    """page.js with the toasts' titles and the presenter view's words in every language (Gradio's own
    toast titles are English)."""
    titles = {lang: {kind: text(key, lang) for kind, key in TOAST_KINDS.items()} for lang in LANGUAGES}
    view = {lang: {"presenter": text("view.presenter", lang), "hint": text("view.hint", lang)} for lang in LANGUAGES}
    clips = [k for k in catalogues()[DEFAULT_LANGUAGE] if k.startswith("input.example.")]
    examples = {
        lang: {text(k, DEFAULT_LANGUAGE): text(k, lang) for k in clips}
        for lang in LANGUAGES
        if lang != DEFAULT_LANGUAGE
    }
    # i18n-exempt: JavaScript that declares the tables (their words come from the catalogues)
    head = (
        f"() => {{\n  const TOAST_TITLES = {json.dumps(titles, ensure_ascii=False)};"  # i18n-exempt: code
        f"\n  const VIEW_WORDS = {json.dumps(view, ensure_ascii=False)};"  # i18n-exempt: code
        f"\n  const EXAMPLE_WORDS = {json.dumps(examples, ensure_ascii=False)};"  # i18n-exempt: code
    )
    return PAGE_JS.replace("() => {", head, 1)


def build_app(engine, options: UiOptions | None = None) -> gr.Blocks:
    """The whole page for ``engine``; nothing outside this call holds UI state."""
    options = options or UiOptions()
    workspace = Workspace(options.temp_root, options.max_age_s, options.max_temp_bytes)
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=GRADIO_CACHE_CLEANUP) as demo:
        gr.Markdown(label("app.intro"), elem_id="app-intro")
        status_bar.build(demo, status_bar.StatusHandlers(engine, workspace))
        with gr.Tabs() as tabs:
            with gr.Tab(label("tab.roundtrip"), id="roundtrip"):
                result = roundtrip.build(
                    roundtrip.RoundTripHandlers(engine, workspace, options.url_policy), options.examples
                )
            with gr.Tab(label("tab.live"), id="live"):
                live.build(demo, live.LiveHandlers(engine, workspace), result.audio_in, tabs)
            with gr.Tab(label("abx.tab"), id="abx"):
                links = LinkSettings(options.public_origin, options.trusted_proxies, _address_of(demo))
                blind = abx_page.build(
                    abx_page.AbxPageHandlers(engine, workspace, trusted=options.trusted_proxies), links
                )
            with gr.Tab(label("evaluate.tab"), id="evaluate"):
                evaluate.build(evaluate.EvaluateHandlers(engine, workspace), result.audio_in, tabs)
            with gr.Tab(label("parity.tab"), id="parity"):
                parity.build(parity.ParityHandlers(engine, workspace))
            with gr.Tab(label("finetune.tab"), id="finetune") as finetune_tab:
                finetune.build(
                    demo,
                    _finetune_handlers(engine, workspace, options),
                    finetune_tab,
                    tabs,
                    result.audio_in,
                    result.with_second,
                )
            with gr.Tab(label("tab.encode"), id="encode"):
                encode.build(encode.EncodeHandlers(engine, workspace), options.examples)
            with gr.Tab(label("tab.decode"), id="decode"):
                decode.build(decode.DecodeHandlers(engine, workspace))
            with gr.Tab(label("tab.system"), id="system"):
                system.build(
                    system.SystemHandlers(engine, workspace, _address_of(demo), options.trusted_proxies),
                    options.stats_every_s,
                )
                second = second_model.SecondHandlers(
                    engine, workspace, options.compare_models_dir, options.second_for_visitors, options.trusted_proxies
                )
                second_model.build(demo, second)
        abx_page.wire_from_result(blind, result.blind_run, result.original, result.blind_what, tabs)
        if blind.shared is not None and result.report_files is not None:  # a shared test's results in the report
            shared_test.wire_report(blind.shared, result.report_files)
        demo.load(None, js=page_js(), api_name="page_keys", api_visibility="private")
    return demo


def _finetune_handlers(engine, workspace: Workspace, options: UiOptions) -> finetune.FinetuneHandlers:
    """The Fine-tune tab's roots (data root, runs folder, example clips) and its one run at a time."""
    runs = options.finetune_runs_dir or Path(engine.settings.data_dir) / FINETUNE_RUNS
    roots = finetune_jobs.Roots(options.finetune_data_root, runs, options.examples)
    return finetune.FinetuneHandlers(
        engine, workspace, roots, finetune_runs.FinetuneRuns(runs), options.trusted_proxies
    )


def _address_of(demo: gr.Blocks):
    """Where ``demo`` listens once launched, (host, port), as it was started: for the doctor, which
    must never take it from a request's Host header."""
    return lambda: (getattr(demo, "server_name", None), getattr(demo, "server_port", None))
