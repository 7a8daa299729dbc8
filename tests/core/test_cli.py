"""The CLI as a user runs it: exit codes, one-line errors, files out.

The commands run in this process (the ``cli`` fixture calls ``core.cli.main.main``); two smoke tests
run ``python -m core`` as a real process for what only a process shows: stdout that is JSON and
nothing else (qwen_tts prints at import), and an error that ends the process with one line."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

ROOT = Path(__file__).resolve().parents[2]


def run(*args, timeout=180):
    """``python -m core ARGS`` as a real process (the smoke tests)."""
    return subprocess.run(
        [sys.executable, "-m", "core", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow  # a real process loading the model: ~20 s; make test runs it
def test_check_json_on_cpu(tiny_checkpoint):
    proc = run("check", "--json", "--model", tiny_checkpoint)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    assert [s["status"] for s in report["steps"]] == ["skipped", "pass", "pass"]
    assert report["engine"]["device"] == "cpu"


def test_check_without_weights_exits_1_and_says_how(tmp_path, cli):
    proc = cli("check", "--model", tmp_path / "none")
    assert proc.returncode == 1
    assert "NOT READY" in proc.stdout and "build-checkpoint" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_roundtrip_encode_decode_files(tiny_checkpoint, tmp_path, speech, cli):
    wav = tmp_path / "clip.wav"
    sf.write(wav, speech(1.5), 24_000)
    out = tmp_path / "out"
    proc = cli("roundtrip", wav, "-o", out, "--model", tiny_checkpoint, "--anchors", "none", "--no-mos")
    assert proc.returncode == 0, proc.stderr
    decoded, sr = sf.read(out / "clip.decoded.wav")
    assert sr == 24_000 and decoded.shape == (36_000,)
    proc = cli("decode", out / "clip.npz", "-o", tmp_path / "again", "--model", tiny_checkpoint)
    assert proc.returncode == 0, proc.stderr
    again, _ = sf.read(tmp_path / "again" / "clip.wav")
    np.testing.assert_allclose(again, decoded, atol=2**-16)  # the round trip's WAV is on the 16-bit grid


def test_existing_output_is_never_overwritten(tiny_checkpoint, tmp_path, speech, cli):
    wav = tmp_path / "clip.wav"
    sf.write(wav, speech(0.5), 24_000)
    (tmp_path / "clip.npz").write_bytes(b"precious")
    proc = cli("encode", wav, "-o", tmp_path, "--model", tiny_checkpoint)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("error:") and "already exists" in proc.stderr
    assert (tmp_path / "clip.npz").read_bytes() == b"precious"


@pytest.mark.parametrize("content, name", [(b"hello, not audio", "notes.wav"), (b"", "empty.flac")])
def test_bad_audio_is_one_line_error(tiny_checkpoint, tmp_path, content, name, cli):
    bad = tmp_path / name
    bad.write_bytes(content)
    proc = cli("encode", bad, "-o", tmp_path / "out", "--model", tiny_checkpoint)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert name in proc.stderr.strip().splitlines()[-1]


def test_bad_token_file_is_one_line_error(tiny_checkpoint, tmp_path, cli):
    bad = tmp_path / "codes.npz"
    bad.write_bytes(b"garbage")
    proc = cli("decode", bad, "-o", tmp_path / "out", "--model", tiny_checkpoint)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "codes.npz" in proc.stderr


def test_bad_flags_exit_2(cli):
    assert cli("encode").returncode == 2
    proc = cli("check", "--device", "auto")
    assert proc.returncode == 1 and "cuda:N" in proc.stderr


def test_build_tiny_checkpoint_refuses_a_non_empty_directory(tmp_path, cli):
    (tmp_path / "keep.txt").write_text("mine")
    proc = cli("build-checkpoint", "--tiny", tmp_path)
    assert proc.returncode == 1 and "not empty" in proc.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("command", ["encode", "roundtrip"])
def test_two_inputs_with_the_same_name_are_refused_before_any_work(tiny_checkpoint, tmp_path, speech, command, cli):
    for folder, seconds in (("b", 0.5), ("c", 0.7)):
        (tmp_path / folder).mkdir()
        sf.write(tmp_path / folder / "x.wav", speech(seconds), 24_000)
    out = tmp_path / "out"
    proc = cli(command, tmp_path / "b" / "x.wav", tmp_path / "c" / "x.wav", "-o", out, "--model", tiny_checkpoint)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "x.npz" in last and "same name" in last
    assert not out.exists() or not any(out.iterdir())  # nothing half-done


def test_roundtrip_leaves_nothing_behind_when_one_output_exists(tiny_checkpoint, tmp_path, speech, cli):
    sf.write(tmp_path / "clip.wav", speech(0.5), 24_000)
    out = tmp_path / "out"
    out.mkdir()
    (out / "clip.decoded.wav").write_bytes(b"precious")
    proc = cli("roundtrip", tmp_path / "clip.wav", "-o", out, "--model", tiny_checkpoint)
    assert proc.returncode == 1 and "already exists" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["clip.decoded.wav"]  # no orphan clip.npz
    assert (out / "clip.decoded.wav").read_bytes() == b"precious"


def test_decoding_a_folder_is_a_one_line_error(tiny_checkpoint, tmp_path, cli):
    folder = tmp_path / "codes.npz"
    folder.mkdir()
    proc = cli("decode", folder, "-o", tmp_path / "out", "--model", tiny_checkpoint)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "codes.npz" in proc.stderr.strip().splitlines()[-1]


def test_build_checkpoint_into_a_file_is_a_one_line_error(tmp_path, cli):
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    proc = cli("build-checkpoint", "--tiny", target)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "notes.txt" in proc.stderr.strip().splitlines()[-1]
    assert target.read_text() == "keep me"


def test_decode_applies_the_duration_limit_to_token_files(tiny_checkpoint, tmp_path, cli):
    """Issue 8, item 1: a small token file can hold hours of codes."""
    from core.tokens import make_token_file, save_tokens

    codes = np.random.default_rng(0).integers(0, 2048, size=(25, 16))  # 2 s
    path = save_tokens(make_token_file(codes, 25 * 1920, "test"), tmp_path / "two_seconds.npz")
    proc = cli("decode", path, "-o", tmp_path / "out", "--model", tiny_checkpoint, "--max-duration", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "over the 1.0 s limit" in proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.slow  # a real process: ~15 s; make test runs it
def test_an_error_in_a_real_process_is_one_line_and_exit_1(tiny_checkpoint, tmp_path):
    """The smoke test of failure: a real ``python -m core`` ends with exit 1 and one line, no traceback."""
    bad = tmp_path / "notes.wav"
    bad.write_bytes(b"hello, not audio")
    proc = run("encode", bad, "-o", tmp_path / "out", "--model", tiny_checkpoint)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "notes.wav" in last
