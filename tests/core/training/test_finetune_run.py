"""A short fine-tuning run on the tiny checkpoint (CPU) learns, writes its run folder, and exports a
checkpoint that encodes exactly as its base and that the official class decodes like the engine."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core.training import finetune, plan_finetune


@pytest.fixture(scope="module")
def run(tmp_path_factory, small):
    """One 12-step mel-only run (batch 2 × 0.64 s), shared by the tests of this file."""
    out = tmp_path_factory.mktemp("run") / "out"
    seen = []
    result = finetune(small(out, steps=12, eval_every=6, save_every=6), on_progress=seen.append)
    return out, result, seen


def test_the_run_learns_on_held_out_clips(run):
    """The held-out multi-resolution log-mel distance drops by at least 10 % against the base on the
    same clips (base: the tiny checkpoint's random decoder; the clips are never trained on)."""
    _out, result, _seen = run
    before, after = result["val_base"]["mel_distance"], result["val_final"]["mel_distance"]
    assert result["status"] == "done" and result["steps"] == 12
    assert after < 0.9 * before, (before, after)


def test_the_run_folder_holds_what_the_contract_says(run):
    out, result, seen = run
    split = json.loads((out / "split.json").read_text())
    assert split["val"] and split["train"] and not set(split["val"]) & set(split["train"])
    lines = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert lines == json.loads(json.dumps(seen))  # the callback got each line as written
    steps = [line["step"] for line in lines if line["kind"] == "step"]
    assert steps == list(range(1, 13))
    assert [line["step"] for line in lines if line["kind"] == "eval"] == [0, 6, 12]
    samples = [line for line in lines if line["kind"] == "sample"]
    assert samples and all((out / s["path"]).is_file() for s in samples)
    assert lines[-1]["kind"] == "done" and lines[-1]["status"] == "done"
    assert "loss/mel" in (out / "metrics.csv").read_text()
    assert list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert (out / "state" / "latest.pt").is_file()
    assert json.loads((out / "result.json").read_text())["model"] == "final"
    card = (out / "final" / "README.md").read_text()
    assert "random weights" in card and "mel_distance" in card
    assert json.loads((out / "settings.json").read_text())["settings"]["steps"] == 12


def test_the_export_encodes_the_base_codes_and_decodes_like_the_official_class(run, tiny_checkpoint, speech):
    """Codes stay compatible (the fine-tuned encode equals the base's bit for bit); the engine's decode
    of the fine-tuned folder equals the official class's decode of the same folder (≥ 80 dB); and the
    decoder really changed (the export is not the base)."""
    from qwen_tts import Qwen3TTSTokenizer

    from core.model.engine import Engine
    from core.settings import Settings

    out, _result, _seen = run
    final = out / "final"
    x = speech(3.0, seed=5)
    base_engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu"))
    tuned_engine = Engine(Settings(model=str(final), device="cpu"))
    assert base_engine.load() and tuned_engine.load(), tuned_engine.error
    codes = tuned_engine.encode_array(x).codes
    assert np.array_equal(codes, base_engine.encode_array(x).codes)
    ours = tuned_engine.decode(codes).samples
    official = Qwen3TTSTokenizer.from_pretrained(str(final), device_map="cpu", dtype=torch.float32)
    with torch.inference_mode():
        theirs = official.model.decode(torch.as_tensor(codes)[None]).audio_values[0].numpy()
    n = min(ours.size, theirs.size)
    noise = np.sum((ours[:n] - theirs[:n]) ** 2)
    snr = 10 * np.log10(np.sum(theirs[:n] ** 2) / max(noise, 1e-30))
    assert snr >= 80, snr
    base_wav = base_engine.decode(codes).samples
    assert np.abs(base_wav[:n] - ours[:n]).max() > 1e-3  # the decoder was trained


def test_the_plan_says_what_it_will_do(small, tmp_path):
    plan = plan_finetune(small(tmp_path / "new"))
    assert plan["precision"] == "fp32" and plan["precision_reason"].startswith("asked for")
    assert plan["found"]["rows"] >= 10 and plan["memory"]["peak_mib"] > 0
    assert plan["found"]["length_unknown"] == 0 and 1.1 < plan["found"]["longest_s"] < 1.3
    assert plan["found"]["audio_s"] == pytest.approx(1.2 * plan["found"]["rows"], rel=0.01)
    assert plan["checkpointing"] == "none"


def test_the_discriminators_join_after_the_warm_up(small, tmp_path):
    """Mel-only steps first; then the discriminators step and the adversarial and feature-matching terms
    join the decoder's losses; their state is saved for a resume."""
    out = tmp_path / "gan"
    seen: list = []
    finetune(small(out, steps=2, adversarial=True, gan_warmup_steps=1, disc_channels=4), on_progress=seen.append)
    losses = [line["loss"] for line in seen if line["kind"] == "step"]
    assert set(losses[0]) == {"mel", "rms", "total"}
    assert {"disc", "adv", "feature"} <= set(losses[1]) and all(v == v for v in losses[1].values())
    saved = torch.load(out / "state" / "latest.pt", map_location="cpu", weights_only=False)
    assert saved["disc"] and saved["optimizer_d"]["state"]
    assert "discriminators" in (out / "final" / "README.md").read_text()
