"""The "Check a port" tab: another implementation's WAV against the reference decode of the same codes
(``/parity_decode``), its codes against the reference encode (``/parity_encode``), its streamed decode
against the whole decode (``/parity_stream``), and the precision sweep on this machine (``/precision_sweep``). The work is in ``webui.jobs.parity``, the words in
``webui.views.parity_view``; docs/parity.md."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gradio as gr

from webui import i18n
from webui.common import TabHandlers, path_of, refusal, user_errors
from webui.jobs import parity
from webui.queues import MODEL_GROUP
from webui.views import parity_view

logger = logging.getLogger(__name__)

CODE_TYPES = [".npz", ".npy", ".json"]
MAX_PACKET_FRAMES = 125  # a packet of 10 s: as /decode/ws takes at most in one message


def _need(value, what: str, lang: str):
    """The uploaded file's path, or a gr.Error asking for it (``what``: a ``parity.what_*`` key)."""
    from pathlib import Path

    path = path_of(value)
    if not path or not Path(path).is_file():
        raise refusal(i18n.text("parity.missing", lang, what=i18n.text(what, lang)), lang)
    return Path(path)


@dataclass
class ParityHandlers(TabHandlers):
    """The tab's three events."""

    def decode(self, codes, wav, request: gr.Request | None = None, progress=gr.Progress()):
        lang = i18n.language_of(request)
        codes_path, wav_path = _need(codes, "parity.what_codes", lang), _need(wav, "parity.what_wav", lang)
        with user_errors("parity.action.decode", lang, self.workspace.root):
            out = parity.decode_check(
                self.engine,
                codes_path,
                wav_path,
                self.workspace.new_dir("parity"),
                parity_view.words(lang),
                parity_view.labels(lang),
                lang,
                i18n.progress_in(lang, progress),
            )
        details = out.result.to_dict() | {"seconds_total": round(out.seconds, 3)}
        return (
            parity_view.decode_markdown(out.result, lang, self.engine.random_weights),
            str(out.png),
            parity_view.measures_markdown(out.result, lang),
            str(out.html),
            details,
        )

    def encode(self, audio, codes, request: gr.Request | None = None, progress=gr.Progress()):
        lang = i18n.language_of(request)
        audio_path, codes_path = _need(audio, "parity.what_audio", lang), _need(codes, "parity.what_codes", lang)
        with user_errors("parity.action.encode", lang, self.workspace.root):
            result = parity.encode_check(self.engine, audio_path, codes_path, i18n.progress_in(lang, progress))
        return parity_view.encode_markdown(result, lang), result.to_dict()

    def stream(self, codes, wav, packet_frames, request: gr.Request | None = None, progress=gr.Progress()):
        lang = i18n.language_of(request)
        codes_path, wav_path = _need(codes, "parity.what_codes", lang), _need(wav, "parity.what_wav", lang)
        with user_errors("parity.action.stream", lang, self.workspace.root):
            frames = int(packet_frames or 0)
            if not 1 <= frames <= MAX_PACKET_FRAMES:
                raise refusal(i18n.text("parity.packet_range", lang, most=MAX_PACKET_FRAMES), lang)
            result = parity.stream_check_of(self.engine, codes_path, wav_path, frames, i18n.progress_in(lang, progress))
        return (
            parity_view.stream_verdict_markdown(result, lang, self.engine.random_weights),
            parity_view.stream_measures_markdown(result, lang),
            result.to_dict(),
        )

    def precision(self, clip, request: gr.Request | None = None, progress=gr.Progress()):
        lang = i18n.language_of(request)
        clip_path = _need(clip, "parity.what_clip", lang)
        with user_errors("parity.action.precision", lang, self.workspace.root):
            sweep = parity.precision_sweep(self.engine, clip_path, i18n.progress_in(lang, progress))
        return parity_view.sweep_markdown(sweep, lang), sweep.to_dict()


def build(handlers: ParityHandlers) -> None:
    """The tab's three checks (call inside a ``gr.Tab``)."""
    label = i18n.label
    gr.Markdown(label("parity.intro"), elem_id="parity-intro")
    gr.Markdown(label("parity.decode_title"))
    with gr.Row():
        codes = gr.File(label=label("parity.codes"), file_types=CODE_TYPES, elem_id="parity-codes", scale=2)
        wav = gr.File(label=label("parity.wav"), file_types=[".wav", ".flac"], elem_id="parity-wav", scale=2)
        run = gr.Button(label("parity.run_decode"), variant="primary", elem_id="parity-run", scale=1)
    verdict = gr.Markdown(elem_id="parity-verdict")
    gr.Markdown(
        label("parity.curve"), elem_id="parity-curve-caption"
    )  # above, not over the figure (Gradio's label chip covers its top)
    curve = gr.Image(type="filepath", interactive=False, show_label=False, elem_id="parity-curve")
    with gr.Row():
        measures = gr.Markdown(elem_id="parity-measures", elem_classes="cw-tables")
        report = gr.File(label=label("parity.report"), interactive=False, elem_id="parity-report")
    with gr.Accordion(label("common.raw_json"), open=False):
        details = gr.JSON()
    run.click(
        handlers.decode,
        inputs=[codes, wav],
        outputs=[verdict, curve, measures, report, details],
        api_name="parity_decode",
        **MODEL_GROUP,
    )
    gr.Markdown(label("parity.encode_title"))
    with gr.Row():
        audio = gr.File(label=label("parity.audio"), file_types=["audio"], elem_id="parity-audio", scale=2)
        their_codes = gr.File(
            label=label("parity.their_codes"), file_types=CODE_TYPES, elem_id="parity-their-codes", scale=2
        )
        run_encode = gr.Button(label("parity.run_encode"), elem_id="parity-run-encode", scale=1)
    encode_out = gr.Markdown(elem_id="parity-encode", elem_classes="cw-tables")
    encode_json = gr.JSON(visible=False)
    run_encode.click(
        handlers.encode,
        inputs=[audio, their_codes],
        outputs=[encode_out, encode_json],
        api_name="parity_encode",
        **MODEL_GROUP,
    )
    gr.Markdown(label("parity.stream_title"))
    with gr.Row():
        stream_codes = gr.File(
            label=label("parity.codes"), file_types=CODE_TYPES, elem_id="parity-stream-codes", scale=2
        )
        stream_wav = gr.File(
            label=label("parity.stream_wav"), file_types=[".wav", ".flac"], elem_id="parity-stream-wav", scale=2
        )
        with gr.Column(scale=1):
            packet = gr.Number(
                value=4, precision=0, minimum=1, maximum=MAX_PACKET_FRAMES, label=label("parity.packet_frames")
            )
            run_stream = gr.Button(label("parity.run_stream"), elem_id="parity-run-stream")
    stream_verdict = gr.Markdown(elem_id="parity-stream-verdict")
    stream_measures = gr.Markdown(elem_id="parity-stream-measures", elem_classes="cw-tables")
    stream_json = gr.JSON(visible=False)
    run_stream.click(
        handlers.stream,
        inputs=[stream_codes, stream_wav, packet],
        outputs=[stream_verdict, stream_measures, stream_json],
        api_name="parity_stream",
        **MODEL_GROUP,
    )
    gr.Markdown(label("parity.precision_title"))
    with gr.Row():
        clip = gr.File(label=label("parity.clip"), file_types=["audio"], elem_id="parity-clip", scale=4)
        run_sweep = gr.Button(label("parity.run_precision"), elem_id="parity-run-precision", scale=1)
    sweep_out = gr.Markdown(elem_id="parity-precision", elem_classes="cw-tables")
    sweep_json = gr.JSON(visible=False)
    run_sweep.click(
        handlers.precision, inputs=[clip], outputs=[sweep_out, sweep_json], api_name="precision_sweep", **MODEL_GROUP
    )
