"""Every chained step that runs "whatever happened" has a twin for failures. Gradio 6 runs a
``.then`` step only after its event succeeded (or was cancelled), never after an error: a step that
gives the page back (the button enabled again, the progress box put away) without a ``.failure``
twin left *Encode → Decode* disabled for good after one refused file. ``webui.common.afterwards``
wires both; a step that only follows a success is a ``.success``."""

from __future__ import annotations

import gradio as gr

from webui.app import build_app
from webui.common import afterwards
from webui.options import UiOptions


def then_without_failure_twin(demo: gr.Blocks) -> list[str]:
    """The api names of the ``.then`` steps whose event has no ``.failure`` step."""
    deps = demo.config["dependencies"]
    failed_after = {d["trigger_after"] for d in deps if d.get("trigger_only_on_failure")}
    return [
        f"{d.get('api_name')} (after {d['trigger_after']})"
        for d in deps
        if d.get("trigger_after") is not None
        and not d.get("trigger_only_on_success")
        and not d.get("trigger_only_on_failure")
        and d["trigger_after"] not in failed_after
    ]


def test_every_then_in_the_page_has_a_failure_twin(engine, tmp_path):
    demo = build_app(engine, UiOptions(temp_root=tmp_path / "work"))
    assert then_without_failure_twin(demo) == []
    names = {d.get("api_name") for d in demo.config["dependencies"]}
    assert {"roundtrip_clear_failed", "roundtrip_failed"} <= names  # the round trip's box and button come back


def test_the_check_finds_a_bare_then_and_afterwards_satisfies_it():
    with gr.Blocks() as bare:
        button = gr.Button()
        button.click(lambda: 1, outputs=[button], api_name="job").then(
            lambda: gr.Button(interactive=True), outputs=[button], api_name="give_back"
        )
    assert then_without_failure_twin(bare) == ["give_back (after 0)"]
    with gr.Blocks() as wired:
        button = gr.Button()
        job = button.click(lambda: 1, outputs=[button], api_name="job")
        afterwards(job, lambda: gr.Button(interactive=True), outputs=[button], api_name="give_back")
    assert then_without_failure_twin(wired) == []
    twin = [d for d in wired.config["dependencies"] if d.get("trigger_only_on_failure")]
    assert [d["api_name"] for d in twin] == ["give_back_failed"]


def once_after_repeating(demo: gr.Blocks) -> list[str]:
    """The api names of chained steps left at Gradio's default trigger mode "once" behind an event that
    can run again while they are still waiting ("always_last" or "multiple", and steps chained behind
    those). The browser skips a "once" step whose last run has not finished: the second of two quick
    anchor ticks was added, but the timeline after it never ran and the player never got it."""
    deps = demo.config["dependencies"]
    by_id = {d["id"]: d for d in deps}

    def repeats(dep) -> bool:
        while dep is not None:
            if dep.get("trigger_mode") in ("always_last", "multiple"):
                return True
            dep = by_id.get(dep.get("trigger_after"))
        return False

    return [
        f"{d.get('api_name') or d['id']} (after {by_id[d['trigger_after']].get('api_name')})"
        for d in deps
        if d.get("trigger_after") is not None
        and d.get("trigger_mode") == "once"
        and d.get("backend_fn")
        and repeats(by_id.get(d["trigger_after"]))
    ]


def test_no_step_behind_a_repeating_event_is_skipped_while_its_last_run_waits(engine, tmp_path):
    demo = build_app(engine, UiOptions(temp_root=tmp_path / "work"))
    assert once_after_repeating(demo) == []


def test_the_check_finds_a_once_step_behind_an_always_last_event():
    with gr.Blocks() as page:
        box = gr.CheckboxGroup(["a", "b"])
        out = gr.Textbox()
        added = box.input(lambda v: v, inputs=[box], outputs=[box], trigger_mode="always_last", api_name="add")
        added.success(lambda v: str(v), inputs=[box], outputs=[out], api_name="draw")
    assert once_after_repeating(page) == ["draw (after add)"]
