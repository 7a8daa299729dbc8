"""Bad inputs to ``python -m core finetune`` are refused in words before any training, and leave
nothing half-made behind."""

from __future__ import annotations

import pytest

from core.errors import TrainingError
from core.training import FinetuneSettings, finetune


def test_an_empty_folder_is_refused(cli, tmp_path, tiny_checkpoint):
    (tmp_path / "empty").mkdir()
    result = cli("finetune", tmp_path / "empty", "-o", tmp_path / "out", "--model", tiny_checkpoint, "--device", "cpu")
    assert result.returncode == 1
    assert "holds no audio" in result.stderr and "Traceback" not in result.stderr


def test_zero_steps_is_refused(cli, tmp_path, speech_folder, tiny_checkpoint):
    result = cli("finetune", speech_folder, "-o", tmp_path / "out", "--model", tiny_checkpoint, "--steps", "0")
    assert result.returncode == 1 and "--steps must be at least 1" in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_unknown_precision_is_refused(tmp_path, speech_folder):
    with pytest.raises(TrainingError, match="Unknown precision 'fp8'"):
        FinetuneSettings(data=speech_folder, out=tmp_path / "out", precision="fp8")


def test_fp16_on_a_cpu_is_refused_in_words(small, tmp_path):
    with pytest.raises(TrainingError, match="fp16 is for CUDA GPUs"):
        finetune(small(tmp_path / "out", precision="fp16"))


def test_too_little_audio_for_a_segment_is_refused(small, tmp_path):
    with pytest.raises(TrainingError, match="Too little audio for a training segment"):
        finetune(small(tmp_path / "out", segment_s=5.0))  # the plan reads the files' headers: nothing is read
    assert not (tmp_path / "out").exists()


def test_a_refusal_after_the_data_was_read_leaves_the_folder_as_it_was(small, tmp_path, speech_folder):
    data = tmp_path / "one"
    data.mkdir()
    (data / "only.wav").write_bytes((speech_folder / "clip00.wav").read_bytes())
    (tmp_path / "out").mkdir()
    with pytest.raises(TrainingError, match="at least 2 are needed"):
        finetune(small(tmp_path / "out", data=data))
    assert not list((tmp_path / "out").iterdir())  # the clip it read is not left behind


def test_a_folder_that_is_not_empty_needs_resume(cli, tmp_path, speech_folder, tiny_checkpoint):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    result = cli("finetune", speech_folder, "-o", out, "--model", tiny_checkpoint, "--device", "cpu")
    assert result.returncode == 1 and "is not empty" in result.stderr and "--resume" in result.stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_resume_without_a_run_is_refused(small, tmp_path):
    with pytest.raises(TrainingError, match="holds no run to resume"):
        finetune(small(tmp_path / "out", resume=True))


def test_an_upsample_rate_other_than_48k_is_refused(tmp_path, speech_folder):
    with pytest.raises(TrainingError, match="--upsample-to takes 48000"):
        FinetuneSettings(data=speech_folder, out=tmp_path / "out", upsample_to=44100)


def test_a_run_that_would_not_fit_in_memory_is_refused_before_it_starts(small, tmp_path):
    from core.training import plan_finetune

    with pytest.raises(TrainingError, match=r"needs about .* GiB .* lower --batch-size"):
        plan_finetune(small(tmp_path / "out", batch_size=100_000, segment_s=1.2))


def test_a_bad_clip_is_a_line_and_the_run_goes_on(small, tmp_path, speech_folder):
    import json
    import shutil

    data = tmp_path / "data"
    shutil.copytree(speech_folder, data)
    (data / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot audio at all")
    out = tmp_path / "out"
    result = finetune(small(out, data=data, steps=1))
    assert result["status"] == "done"
    skipped = [json.loads(line) for line in (out / "prepared" / "skipped.jsonl").read_text().splitlines()]
    assert [s["clip"] for s in skipped] == ["broken.wav"] and skipped[0]["reason"]
