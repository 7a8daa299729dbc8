"""The Gradio Blocks app, built as a function of the engine: ``build_app(engine)``.

Layout: the status bar (``webui.tabs.status_bar``) above the tabs, one module each under
``webui/tabs/``: Round trip (with the listening lab and the verdict), Blind test, Evaluate files,
Encode, Decode, System. Which events share a queue: ``webui.queues``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from webui.i18n import label
from webui.serving import storage, url_input
from webui.serving.workspace import DEFAULT_MAX_AGE_S, Workspace
from webui.tabs import abx, decode, encode, evaluate, roundtrip, status_bar, system

logger = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent / "assets"  # example clips
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
    workspace = Workspace(options.temp_root, options.max_age_s)
    with gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=GRADIO_CACHE_CLEANUP) as demo:
        gr.Markdown(label("app.intro"))
        status_bar.build(demo, status_bar.StatusHandlers(engine, workspace))
        with gr.Tabs():
            with gr.Tab(label("tab.roundtrip"), id="roundtrip"):
                roundtrip.build(roundtrip.RoundTripHandlers(engine, workspace, options.url_policy), options.examples)
            with gr.Tab(label("abx.tab"), id="abx"):
                abx.build(demo, abx.AbxHandlers(engine, workspace))
            with gr.Tab(label("evaluate.tab"), id="evaluate"):
                evaluate.build(evaluate.EvaluateHandlers(engine, workspace))
            with gr.Tab(label("tab.encode"), id="encode"):
                encode.build(encode.EncodeHandlers(engine, workspace), options.examples)
            with gr.Tab(label("tab.decode"), id="decode"):
                decode.build(decode.DecodeHandlers(engine, workspace))
            with gr.Tab(label("tab.system"), id="system"):
                system.build(system.SystemHandlers(engine, workspace, _address_of(demo)), options.stats_every_s)
    return demo


def _address_of(demo: gr.Blocks):
    """Where ``demo`` listens once launched, (host, port), as it was started: for the doctor, which
    must never take it from a request's Host header."""
    return lambda: (getattr(demo, "server_name", None), getattr(demo, "server_port", None))
