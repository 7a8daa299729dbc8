"""The Fine-tune tab through ``gradio_client`` against a live app on the tiny checkpoint (CPU), with
the real trainer (``core.training``) in its own process: the plan, a run that starts, moves and
ends, and the exported model compared with its base in the lab (the second checkpoint's round
trip: codes equal to the base's, audio not). Refusals say why and leave the tab usable; a visitor
gets no controls and no run."""

from __future__ import annotations

import html
import os
import re
import time
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from core.judging import sources
from core.model import second
from tests.conftest import speechlike
from tests.ports import reserve_port
from webui.app import build_app
from webui.jobs import finetune as finetune_jobs
from webui.jobs import finetune_runs
from webui.options import UiOptions
from webui.server import ServerOptions, launch
from webui.serving.workspace import Workspace
from webui.tabs.finetune import FinetuneHandlers

VISITOR = gr.Request(headers={"accept-language": "en"}, client={"host": "203.0.113.7", "port": 40000})
STEPS = 12  # a short run: the tiny decoder on 2 CPU cores
RUN_TIMEOUT_S = 420  # the run's process imports torch and the trainer, prepares the clips, trains


def make_data(root: Path) -> Path:
    """A data root with one folder of four speech-like clips of 3 s (one is held out)."""
    folder = root / "voices" / "anna"
    folder.mkdir(parents=True)
    for n in range(4):
        sf.write(folder / f"clip{n}.wav", speechlike(3.0, seed=n), 24_000, subtype="PCM_16")
    (root / "one").mkdir()
    sf.write(root / "one" / "only.wav", speechlike(3.0), 24_000, subtype="PCM_16")
    (root / "broken").mkdir()  # two clips, one of them cut after 2,000 bytes: the plan passes, the run cannot
    sf.write(root / "broken" / "good.wav", speechlike(3.0), 24_000, subtype="PCM_16")
    sf.write(root / "broken" / "cut.wav", speechlike(3.0, seed=1), 24_000, subtype="PCM_16")
    os.truncate(root / "broken" / "cut.wav", 2044)
    return root


@pytest.fixture(scope="module")
def app(engine, tmp_path_factory):
    """A live server whose Fine-tune tab reads ``data/`` and writes ``runs/``: (url, client, runs folder)."""
    from gradio_client import Client

    base = tmp_path_factory.mktemp("finetune-page")
    ui = UiOptions(
        temp_root=base / "work",
        finetune_data_root=make_data(base / "data"),
        finetune_runs_dir=base / "runs",
    )
    demo = build_app(engine, ui)
    _app, url = launch(demo, engine, ui, ServerOptions(port=reserve_port()))
    yield url, Client(url, verbose=False), base / "runs"
    demo.close()
    second.unload_second(engine)  # the session engine as the other tests expect it


def _state(html: str) -> str:
    found = re.search(r"data-state='(\w+)'", html)
    return found.group(1) if found else ""


def _wait_for_end(client, seen: list[str]) -> tuple[str, str]:
    """Poll /finetune_progress until the run is no longer active; ``seen``: every line shown."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        status, curve, *_rest = client.predict(api_name="/finetune_progress")
        seen.append(status)
        if _state(status) not in ("running", "stopping"):
            return status, curve
        time.sleep(0.5)
    raise AssertionError(f"the run did not end in {RUN_TIMEOUT_S} s: {seen[-1][:300]}")


def test_the_plan_names_the_data_and_a_folder_outside_the_root_is_refused(app):
    _url, client, _runs = app
    plan = client.predict("voices/anna", STEPS, "auto", False, api_name="/finetune_plan")
    assert "The plan" in plan and "4 clips" in plan and "0:12 of audio" in plan, plan
    assert "estimated peak memory" in plan
    for outside in ("../..", "/etc", "voices/../../.."):
        refused = html.unescape(client.predict(outside, STEPS, "auto", False, api_name="/finetune_plan"))
        assert "cannot start" in refused and "not inside the server's data root" in refused, refused
    one = html.unescape(client.predict("one", STEPS, "auto", False, api_name="/finetune_plan"))
    assert "cannot start" in one and "at least 2 are needed" in one, one  # the trainer's refusal, before a run
    assert "3 clips to train on, 1 held out" in plan, plan  # held out by the trainer's own rule


@pytest.mark.slow
def test_start_progress_done_then_compare_with_the_base(app, engine):
    url, client, runs = app
    plan, status, curve, *_rest = client.predict("voices/anna", STEPS, "fp32", False, api_name="/finetune_start")
    assert "The plan" in plan and _state(status) in ("running", "done"), status
    seen: list[str] = [status]
    status, curve = _wait_for_end(client, seen)
    assert _state(status) == "done", status
    steps_shown = {int(m) for line in seen for m in re.findall(r"step (\d+) of", line)}
    assert len(steps_shown) >= 2, seen[-3:]  # the line moved while it ran
    points = int(re.search(r"data-points='(\d+)'", curve).group(1))
    assert points >= STEPS // 2 and "held-out" in curve, curve[:300]
    assert f"Done: {STEPS} steps" in status and "Random weights" in status  # figures with their warning
    run = sorted(p for p in runs.iterdir() if p.is_dir() and p.name.startswith("run-"))[-1]
    assert (run / finetune_runs.MODEL_FOLDER / "config.json").is_file()

    clip = client.predict(api_name="/finetune_compare")[0]  # the model beside its base
    assert second.ready_second(engine) is not None
    assert Path(clip).name.startswith("held_out_")
    from gradio_client import handle_file

    out = client.predict(handle_file(clip), [], True, api_name="/roundtrip")
    details = out[-1]
    checkpoint = next(s for s in details["compare"]["sources"] if s["id"] == sources.COMPARE_ID)
    assert checkpoint["label"] == run.name  # named by its run, not "final"
    agreement = [row["equal_share"] for row in details["compare"]["agreement"]]
    assert agreement and min(agreement) == 1.0  # the fine-tuned encoder is the base's: the same codes
    base_wav, _ = sf.read(out[1])
    tuned_wav, _ = sf.read(Path(checkpoint["wav"]) if Path(checkpoint["wav"]).is_file() else out[1])
    assert not np.array_equal(base_wav, tuned_wav)  # but the decoder learnt: other audio


def test_a_visitor_gets_no_controls_and_cannot_start(engine, tmp_path):
    roots = finetune_jobs.Roots(make_data(tmp_path / "data"), tmp_path / "runs")
    handlers = FinetuneHandlers(engine, Workspace(tmp_path / "work"), roots)
    controls, note, data, *_view = handlers.open(VISITOR)
    assert controls.visible is False and note.visible is True
    assert [value for _label, value in data.choices] == []  # no folder names for a visitor
    with pytest.raises(gr.Error, match="Only the operator"):
        handlers.start("voices/anna", STEPS, "auto", request=VISITOR)
    assert handlers.plan("voices/anna", STEPS, "auto", request=VISITOR) == ""
    assert not (tmp_path / "runs").exists()  # nothing was written


def test_bad_steps_and_a_missing_folder_are_refused_before_anything_runs(engine, tmp_path):
    roots = finetune_jobs.Roots(make_data(tmp_path / "data"), tmp_path / "runs")
    handlers = FinetuneHandlers(engine, Workspace(tmp_path / "work"), roots)
    for steps in (0, -5, "many", 10**9):
        with pytest.raises(gr.Error, match="whole number"):
            handlers.start("voices/anna", steps, "auto")
    with pytest.raises(gr.Error, match="no folder"):
        handlers.start("voices/bob", STEPS, "auto")
    with pytest.raises(gr.Error, match="not a precision"):
        handlers.start("voices/anna", STEPS, "fp8")
    view = handlers.view()
    assert view.start.interactive is True and view.timer.active is False  # the tab stays usable
    assert not any(p.name.startswith("run-") for p in (tmp_path / "runs").glob("*"))


@pytest.mark.slow
def test_a_run_that_fails_says_why_and_the_tab_stays_usable(app):
    _url, client, _runs = app
    client.predict("broken", STEPS, "auto", False, api_name="/finetune_start")  # one clip is cut short
    status, _curve = _wait_for_end(client, [])
    assert _state(status) == "failed" and "at least 2 are needed" in status, status
    assert "press Start again" in status
    plan = client.predict("voices/anna", STEPS, "auto", False, api_name="/finetune_plan")  # the next run can be planned
    assert "The plan" in plan


def test_the_plan_gives_the_precision_reason_in_the_readers_language():
    from core.training.precision import REASONS, choose
    from webui.i18n import text
    from webui.views.finetune_view import plan_html

    chosen = choose("auto", "cpu")
    plan = {"precision": chosen.name, "precision_reason": chosen.reason, "precision_why": chosen.why}
    zh = html.unescape(plan_html(plan, "zh-CN"))
    assert "在 CPU 上用 fp32" in zh and chosen.reason not in zh
    assert chosen.reason in html.unescape(plan_html(plan, "en"))
    for code, english in REASONS.items():  # the page's English is the CLI's, code by code
        assert text(f"finetune.precision_why.{code}", "en", device="{device}") == english
