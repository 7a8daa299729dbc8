"""The Decode tab: a token file -> audio, the token file's summary, a spectrogram (``/decode``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from webui import i18n
from webui.common import TabHandlers, need_file, user_errors
from webui.i18n import label
from webui.jobs import codec
from webui.queues import MODEL_GROUP
from webui.views import figure_words, formatting

logger = logging.getLogger(__name__)


@dataclass
class DecodeHandlers(TabHandlers):
    """The tab's one event."""

    def decode(self, token_path, request: gr.Request | None = None, progress=gr.Progress()):
        lang = i18n.language_of(request)
        source = need_file(token_path, "what.token_file", lang)
        with user_errors("action.decode", lang, self.workspace.root):
            out = codec.decode(
                self.engine,
                source,
                self.workspace.new_dir("decode"),
                i18n.progress_in(lang, progress),
                figure_words.of(lang),
            )
        details = {"token_file": out.meta, "tokens": out.summary, "timing": out.timing}
        return (
            str(out.wav),
            formatting.token_file_markdown(out.meta, out.summary, lang),
            str(out.spectrogram_png),
            details,
        )


def build(handlers: DecodeHandlers) -> None:
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
