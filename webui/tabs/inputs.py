"""Input widgets that several tabs place: the audio input and the example clips."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from webui.i18n import label


def audio_input(elem_id: str) -> gr.Audio:
    return gr.Audio(sources=["upload", "microphone"], type="filepath", label=label("input.audio"), elem_id=elem_id)


def examples(inputs: gr.Audio, paths: tuple[Path, ...], api_name: str) -> None:
    if paths:
        gr.Examples(
            [[str(p)] for p in paths],
            inputs=[inputs],
            label=label("input.examples"),
            api_name=api_name,
            api_visibility="private",
        )
