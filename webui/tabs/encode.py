"""The Encode tab: audio -> a token file, its input facts and token summary, token usage (``/encode``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from webui import i18n
from webui.common import TabHandlers, need_file, user_errors
from webui.i18n import label
from webui.jobs import codec
from webui.queues import MODEL_GROUP
from webui.tabs.inputs import audio_input, examples
from webui.views import figure_words, formatting

logger = logging.getLogger(__name__)


@dataclass
class EncodeHandlers(TabHandlers):
    """The tab's one event."""

    def encode(self, audio_path, request: gr.Request | None = None, progress=gr.Progress()):
        lang = i18n.language_of(request)
        source = need_file(audio_path, "what.audio", lang)
        with user_errors("action.encode", lang, self.workspace.root):
            out = codec.encode(
                self.engine,
                source,
                self.workspace.new_dir("encode"),
                self.limits,
                i18n.progress_in(lang, progress),
                figure_words.of(lang),
            )
        details = {"input": out.facts, "tokens": out.summary, "timing": out.timing}
        text = formatting.facts_markdown(out.facts, lang) + "\n\n" + formatting.tokens_markdown(out.summary, lang)
        return str(out.token_file), text, str(out.heatmap_png), details


def build(handlers: EncodeHandlers, examples_paths: tuple[Path, ...]) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            audio_in = audio_input("encode-input")
            examples(audio_in, examples_paths, "encode_example")
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
