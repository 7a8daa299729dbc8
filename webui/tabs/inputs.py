"""Input widgets that several tabs place: the audio input and the example clips."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from webui.i18n import label


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
            example_labels=[p.name for p in paths],
            label=label("input.examples"),
            api_name=api_name,
            api_visibility="private",
        )
        if then_focus and getattr(chosen, "load_input_event", None) is not None:
            chosen.load_input_event.then(
                None,
                js=f"() => {{ const b = document.getElementById({then_focus!r}); if (b) b.focus(); }}",
                api_name=f"{api_name}_focus",
                api_visibility="private",
                queue=False,
            )
