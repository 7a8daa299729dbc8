"""The second checkpoint on the System tab: what is loaded beside the first model, and, when the
server allows it (``--compare-models-dir DIR``), loading one of the checkpoint folders under DIR or
unloading it (``/second_load``, ``/second_unload``). The work is ``core.model.second``: the same
readiness checks as the first model, and a refusal before any weight is read when both do not fit.

Only folder names under the operator's DIR can be picked (never a path from the page), so the page
cannot make the server read anything else. Loading and unloading are the operator's actions (no visitor
unloads the checkpoint the operator started with ``--compare-model``, nor holds the engine's lock
for everyone with a load): a client on this machine's loopback (the operator,
or one named by a trusted proxy's ``X-Real-IP``) may; visitors only with ``--second-for-visitors``.
The first model is never touched by either.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from core.model import second
from webui import i18n
from webui.common import TabHandlers, refusal, user_errors
from webui.queues import MODEL_GROUP, STATUS_GROUP
from webui.serving.visitors import is_operator

logger = logging.getLogger(__name__)

PRECISIONS = {  # the choice on the page -> (dtype, decode dtype) of the second checkpoint; None: as the first's
    "same": (None, None),
    "bf16-decoder": (None, "bfloat16"),
    "bf16": ("bfloat16", None),
}


def checkpoint_folders(root: Path | None) -> list[str]:
    """The folders right under ``root`` that look like checkpoints (a config.json), sorted."""
    if root is None or not Path(root).is_dir():
        return []
    return sorted(p.name for p in Path(root).iterdir() if p.is_dir() and (p / "config.json").is_file())


@dataclass
class SecondHandlers(TabHandlers):
    """The section's events; ``root``: the folder whose checkpoints may be picked (None: picking is off);
    ``visitors``: anyone who reaches the page may load and unload (else the operator alone);
    ``trusted``: proxies whose X-Real-IP names the client."""

    root: Path | None = None
    visitors: bool = False
    trusted: frozenset[str] = frozenset()

    def _check_operator(self, request: gr.Request | None, lang: str) -> None:
        """Refuse a visitor's load or unload unless the operator allowed it."""
        if self.visitors or is_operator(request, self.trusted):
            return
        raise refusal(i18n.text("trust.second_operator_only", lang), lang)

    def state(self, request: gr.Request | None = None):
        """What is loaded beside the first model, in words (and as JSON)."""
        lang = i18n.language_of(request)
        info = second.describe(self.engine)
        if info["state"] == "none":
            text = i18n.text("compare.system.none", lang)
        elif info["state"] == "ready":
            text = i18n.text(
                "compare.system.ready", lang, model=info["model"], dtype=info["dtype"], decode=info["decode_dtype"]
            )
        else:
            text = i18n.text("compare.system.failed", lang, model=info["model"], error=info.get("error") or "")
        return text, info

    def load(self, name, precision, request: gr.Request | None = None, progress=gr.Progress()):
        """Load the picked checkpoint folder beside the first model (refused before loading when it
        does not fit), with its readiness check."""
        lang = i18n.language_of(request)
        if self.root is None:
            raise refusal(i18n.text("compare.system.pick_off", lang), lang)
        self._check_operator(request, lang)
        if name not in checkpoint_folders(self.root):  # only what the operator's folder holds
            raise refusal(i18n.text("compare.system.pick_unknown", lang, name=name or ""), lang)
        dtype, decode = PRECISIONS.get(str(precision), PRECISIONS["same"])
        with user_errors("action.second_load", lang):
            progress(0.1, desc=i18n.text("compare.job.second_load", lang))
            loaded = second.load_second(self.engine, str(Path(self.root) / name), dtype, decode)
        logger.info("second checkpoint %s: %s", name, loaded.state.value)
        return self.state(request)

    def folders(self, current=None):
        """The picker's choices as the operator's folder holds them now (never fixed at
        start); the current pick kept while it is still there."""
        names = checkpoint_folders(self.root)
        return gr.Dropdown(choices=names, value=current if current in names else (names[0] if names else None))

    def unload(self, request: gr.Request | None = None):
        lang = i18n.language_of(request)
        self._check_operator(request, lang)
        with user_errors("action.second_unload", lang):
            second.unload_second(self.engine)
        return self.state(request)


def build(demo: gr.Blocks, handlers: SecondHandlers) -> None:
    """The section (call in the System tab)."""
    with gr.Accordion(i18n.label("compare.system.heading"), open=True, elem_id="system-second"):
        state = gr.Markdown(elem_id="system-second-state")
        raw = gr.JSON(visible=False)
        demo.load(handlers.state, outputs=[state, raw], api_name="second_state", **STATUS_GROUP)
        if handlers.root is None:
            gr.Markdown(i18n.label("compare.system.pick_hint"), elem_classes="cw-hint")
            return
        with gr.Row():
            folders = checkpoint_folders(handlers.root)
            name = gr.Dropdown(
                folders, value=folders[0] if folders else None, label=i18n.label("compare.system.folder"), scale=3
            )
            precision = gr.Radio(
                [("--dtype", "same"), ("bf16 decoder", "bf16-decoder"), ("bf16", "bf16")],
                value="same",
                label=i18n.label("compare.system.precision"),
                info=i18n.label("compare.system.precision_info"),
                scale=3,
                elem_id="system-second-precision",
            )
        with gr.Row():
            load = gr.Button(i18n.label("compare.system.load"), elem_id="system-second-load", scale=1)
            unload = gr.Button(i18n.label("compare.system.unload"), elem_id="system-second-unload", scale=1)
    rescan = dict(inputs=[name], outputs=[name], api_visibility="private", **STATUS_GROUP)  # the picker, on open
    demo.load(handlers.folders, api_name="second_folders", **rescan)  # type: ignore[arg-type]
    name.focus(handlers.folders, api_name="second_folders_focus", **rescan)  # type: ignore[arg-type]
    load.click(handlers.load, inputs=[name, precision], outputs=[state, raw], api_name="second_load", **MODEL_GROUP)
    unload.click(handlers.unload, outputs=[state, raw], api_name="second_unload", **MODEL_GROUP)
