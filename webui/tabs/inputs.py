"""Input widgets the tabs place: the audio input, the example clips, audio from a URL."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from core.units import MIB
from webui import i18n
from webui.i18n import label
from webui.queues import FETCH_GROUP
from webui.serving import url_input


def audio_input(elem_id: str) -> gr.Audio:
    return gr.Audio(sources=["upload", "microphone"], type="filepath", label=label("input.audio"), elem_id=elem_id)


def examples(inputs: gr.Audio, paths: tuple[Path, ...], api_name: str, then_focus: str | None = None) -> None:
    """The example clips, one click away; ``then_focus``: the element id the keyboard goes to once one
    is loaded (the round trip's *Encode → Decode*, a Tab or two away, not 22)."""
    if paths:
        chosen = gr.Examples(
            [[str(p)] for p in paths],
            inputs=[inputs],
            # the clips by name: Gradio 6.17 draws audio examples with the audio component's own view,
            # which throws a script error on load about one time in two (a race in its Dataset)
            example_labels=[example_label(p) for p in paths],
            label=label("input.examples"),
            api_name=api_name,
            api_visibility="private",
        )
        if then_focus and getattr(chosen, "load_input_event", None) is not None:
            chosen.load_input_event.success(
                None,
                js=f"() => {{ const b = document.getElementById({then_focus!r}); if (b) b.focus(); }}",
                api_name=f"{api_name}_focus",
                api_visibility="private",
                queue=False,
            )


def example_label(path: Path) -> str:
    """What a clip is, in words (``input.example.<file stem>``: "A man's voice · 7 s"), for the clips
    the workbench ships; any other clip by its file name. English: Gradio takes example labels as plain
    text, and the page's script puts the reader's language's words over them (webui/app.py, page.js)."""
    key = f"input.example.{path.stem}"
    return i18n.text(key, i18n.DEFAULT_LANGUAGE) if key in i18n.catalogues()[i18n.DEFAULT_LANGUAGE] else path.name


def url_row(fetch_url, audio_in: gr.Audio, policy: url_input.UrlPolicy) -> None:
    """A URL box and *Fetch* (``/fetch_url``): ``fetch_url(url)`` puts the download in ``audio_in``."""
    with gr.Row(equal_height=True):
        url = gr.Textbox(label=label("url.label", mib=f"{policy.max_bytes / MIB:g}"), scale=4, elem_id="url-input")
        fetch = gr.Button(label("url.fetch"), scale=1, elem_id="url-fetch")
    fetch.click(fetch_url, inputs=[url], outputs=[audio_in], api_name="fetch_url", **FETCH_GROUP)
