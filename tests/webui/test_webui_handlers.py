"""Handlers called directly, with the tiny checkpoint: what each tab returns, and how each
failure reaches the user."""

from __future__ import annotations

import hashlib
import math
import shutil
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import soundfile as sf

from core.model.engine import Engine
from core.settings import Settings
from core.tokens import load_tokens
from tests.webui.tab_handlers import Tabs
from webui.options import ASSETS
from webui.serving.workspace import Workspace

METRICS_OUTPUTS = ("metrics", "metrics_details")


def _digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _roundtrip(tabs, path) -> dict:
    """The Round trip button: /roundtrip, then its /metrics follow-up on the two players."""
    out = tabs.roundtrip.roundtrip(str(path))._asdict()  # the outputs' names: webui.handlers.RoundTripView
    out.update(zip(METRICS_OUTPUTS, tabs.roundtrip.metrics(out["original"], out["reconstruction"]), strict=True))
    return out


def test_roundtrip_returns_players_facts_tokens_metrics_and_downloads(tabs):
    source = ASSETS / "speech_female_16k_stereo.wav"
    before = _digest(source)
    out = _roundtrip(tabs, source)

    original, _ = sf.read(out["original"], dtype="float32")
    reconstruction, rate = sf.read(out["reconstruction"], dtype="float32")
    assert rate == 24_000 and original.ndim == reconstruction.ndim == 1
    assert reconstruction.size == original.size == round(4.9395 * 24_000)
    assert "Resampled from 16000 Hz" in out["facts"] and "Stereo downmixed" in out["facts"]
    frames = math.ceil(original.size / 1920)
    assert f"{frames} × 16" in out["tokens"] and "12.5 frames/s" in out["tokens"]
    assert "Compression vs 16-bit PCM of the input" in out["tokens"]
    for name in ("PESQ-WB", "PESQ-NB", "STOI", "SI-SDR", "Log-mel distance"):
        assert name in out["metrics"]
    assert Path(out["spectrogram"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    token_path, wav_path = out["downloads"]
    assert load_tokens(token_path).frames == frames
    assert wav_path == out["reconstruction"]
    details = out["details"]
    assert [m["name"] for m in out["metrics_details"]["metrics"]] == [
        "PESQ-WB",
        "PESQ-NB",
        "STOI",
        "SI-SDR",
        "Log-mel distance",
        "SIM-GE2E",
    ]
    assert details["tokens"]["compression_vs_original"] == pytest.approx(
        16_000 * 2 * 16 / details["tokens"]["bitrate_bps"]
    )
    assert details["timing"]["ui_s"] >= 0 and details["timing"]["model_s"] > 0
    assert _digest(source) == before  # the user's file is untouched


def test_reconstruction_wav_holds_the_decoder_output_exactly(tabs, engine, clip):
    """Written by us as float WAV: not peak-normalized; the decoder's output on the 16-bit grid the
    lab plays and the metrics read (webui/jobs/pcm16_copies.py), nothing else changed."""
    from core.audio.files import on_grid

    out = _roundtrip(tabs, clip)
    codes = load_tokens(out["downloads"][0]).codes
    expected = on_grid(engine.decode(codes, original_samples=sf.info(clip).frames).samples)
    written, _ = sf.read(out["reconstruction"], dtype="float32")
    assert sf.info(out["reconstruction"]).subtype == "FLOAT"
    np.testing.assert_array_equal(written, expected)


def test_each_request_gets_its_own_folder(tabs, clip):
    first = _roundtrip(tabs, clip)
    second = _roundtrip(tabs, clip)
    assert Path(first["reconstruction"]).parent != Path(second["reconstruction"]).parent
    assert Path(first["reconstruction"]).exists() and Path(second["reconstruction"]).exists()
    assert Path(first["reconstruction"]).name == "speech_3s_reconstruction.wav"


def test_encode_then_decode(tabs, clip):
    token_path, summary, heatmap, details = tabs.encode.encode(str(clip))
    token_file = load_tokens(token_path)
    assert token_file.frames == math.ceil(3 * 24_000 / 1920) == details["tokens"]["frames"]
    assert "Tokens" in summary and "Input" in summary
    assert Path(heatmap).read_bytes()[:4] == b"\x89PNG"

    wav, meta, spectrogram, decoded = tabs.decode.decode(token_path)
    samples, rate = sf.read(wav, dtype="float32")
    assert (rate, samples.size) == (24_000, 3 * 24_000)
    assert "Made by model" in meta and decoded["token_file"]["model_source"] == token_file.model_source
    assert Path(spectrogram).read_bytes()[:4] == b"\x89PNG"


def test_metrics_compare_any_two_clips_and_identical_ones_score_perfectly(tabs, clip):
    text, raw = tabs.roundtrip.metrics(str(clip), str(clip))
    metrics = {m["name"]: m["value"] for m in raw["metrics"]}
    assert metrics["STOI"] == pytest.approx(1.0, abs=1e-3) and metrics["Log-mel distance"] == pytest.approx(0.0)
    assert metrics["PESQ-WB"] > 4.0 and "Computed in" in text


def test_metrics_are_cleared_while_a_new_round_trip_runs(tabs):
    metrics, details, box, button, timer = tabs.roundtrip.clear_metrics()
    assert (metrics, details) == ("", None)
    assert "cw-progress" in box.value and box.visible  # the progress box shows at once (issue 29)
    assert button.interactive is False and timer.active is True


def test_a_file_check_that_ends_after_the_click_leaves_the_progress_box_alone(tabs, clip):
    """The file check runs in its own queue: ending after *Encode → Decode* was pressed, it must
    not put the new job's box away (it did, and the box stayed hidden for the whole job)."""
    session = type("Request", (), {"session_hash": "one-browser", "headers": {}})()
    assert tabs.roundtrip.check_upload(str(clip), session).visible is False  # before the click: the box put away
    tabs.roundtrip.clear_metrics(session)
    assert tabs.roundtrip.check_upload(str(clip), session) == gr.skip()
    box, button, _timer = tabs.roundtrip.progress_end(session)  # the job refused before it ran: the box ends
    assert button.interactive is True
    assert tabs.roundtrip.check_upload(str(clip), session).visible is False


@pytest.mark.parametrize(
    "method, value, words",
    [
        ("roundtrip", None, "upload or record audio"),
        ("encode", None, "upload or record audio"),
        ("decode", None, "upload a .npz token file"),
        ("roundtrip", "/nonexistent/clip.wav", "upload it again"),
    ],
)
def test_missing_input_says_what_to_do(tabs, method, value, words):
    with pytest.raises(gr.Error, match=words):
        tabs.event(method)(value)


@pytest.mark.parametrize("method", ["roundtrip", "encode"])
def test_bad_audio_file_gives_a_clear_error(tabs, bad_audio, method):
    with pytest.raises(gr.Error) as info:
        tabs.event(method)(str(bad_audio))
    assert "not an audio file" in info.value.message and "WAV" in info.value.message


def test_bad_token_file_gives_a_clear_error(tabs, bad_tokens, bad_audio):
    with pytest.raises(gr.Error) as info:
        tabs.decode.decode(str(bad_tokens))
    assert "token file" in info.value.message.lower()
    with pytest.raises(gr.Error) as info:
        tabs.decode.decode(str(bad_audio))
    assert "token file" in info.value.message.lower()


def test_too_long_input_is_refused_with_the_limit(tiny_checkpoint, engine, tmp_path, speech):
    short_limit = Engine(Settings(model=str(tiny_checkpoint), device="cpu", max_duration_s=1.0))
    h = Tabs.of(short_limit, Workspace(tmp_path / "work"))
    path = tmp_path / "long.wav"
    sf.write(path, speech(2.0), 24_000)
    with pytest.raises(gr.Error, match="over the 1.0 s limit"):
        h.roundtrip.roundtrip(str(path))


class _BrokenEngine:
    """An engine whose jobs fail in a way nobody planned for."""

    compare = None  # no second checkpoint

    def __init__(self, engine):
        self.settings = engine.settings
        self.live = engine.live  # its live sessions and the CPU share of batch work
        self._engine = engine

    def info(self):
        return self._engine.info()

    def estimate(self, *args, **kwargs):
        return self._engine.estimate(*args, **kwargs)

    def encode(self, audio, progress=None):
        raise RuntimeError("kaboom in the kernel")

    def roundtrip(self, audio, progress=None):
        raise RuntimeError("kaboom in the kernel")


def test_unexpected_errors_become_a_generic_actionable_error(engine, tmp_path, clip, caplog):
    h = Tabs.of(_BrokenEngine(engine), Workspace(tmp_path / "work"))
    with pytest.raises(gr.Error) as info:
        h.roundtrip.roundtrip(str(clip))
    message = info.value.message
    assert "RuntimeError" in message and "try again" in message and "kaboom" not in message
    assert "kaboom in the kernel" in caplog.text  # the details go to the log


def test_missing_weights_status_says_how_to_provide_them(tmp_path, clip):
    engine = Engine(Settings(model=str(tmp_path / "no-weights-here"), device="cpu"))
    engine.warm_up()
    h = Tabs.of(engine, Workspace(tmp_path / "work"))
    html, raw = h.status.status()
    assert "huggingface-cli download" in html and "--model" in html and "Re-run checks" in html
    assert html.count('class="cw-step ') == 3 and "cw-step-fail" in html
    assert raw["readiness"]["ok"] is False
    with pytest.raises(gr.Error, match="not loaded"):
        h.roundtrip.roundtrip(str(clip))


def test_rerun_checks_loads_weights_provided_after_start(tmp_path, tiny_checkpoint):
    target = tmp_path / "weights"
    engine = Engine(Settings(model=str(target), device="cpu"))
    engine.warm_up()
    h = Tabs.of(engine, Workspace(tmp_path / "work"))
    assert "Not ready" in h.status.status()[0]
    shutil.copytree(tiny_checkpoint, target)
    html, raw = h.status.readiness()
    assert raw["readiness"]["ok"] is True and "Ready" in html and "cw-step-fail" not in html
    assert html.count("cw-step-pass") == 2  # weights and round trip; CUDA is skipped on CPU


def test_status_bar_shows_steps_model_device_dtype_and_memory(tabs, engine):
    html, raw = tabs.status.status()
    for title in ("CUDA present", "Weights resident", "Test round trip"):
        assert title in html
    assert engine.info()["model_path"] in html and "CPU" in html and "float32" in html
    assert f"{engine.info()['resident_mib']:.1f} MiB" in html


def test_stats_and_clear_vram(tabs):
    text, stats = tabs.system.stats()
    assert "Process RAM" in text and "System RAM" in text and "CPU" in text
    assert stats["process_rss_mib"] > 0
    text, result = tabs.system.clear_vram()
    assert set(result) == {"before", "after"} and "No GPU" in text


def test_url_input_is_off_unless_enabled(tabs):
    with pytest.raises(gr.Error, match="switched off"):
        tabs.roundtrip.fetch_url("https://example.com/a.wav")


def test_roundtrip_shows_the_memory_estimate_before_the_job(engine, tmp_path, clip):
    h = Tabs.of(engine, Workspace(tmp_path / "work"))
    seen = []
    h.roundtrip.roundtrip(str(clip), progress=lambda fraction, desc="": seen.append(desc))
    estimate_lines = [d for d in seen if "needs ≈" in d]
    assert estimate_lines and seen.index(estimate_lines[0]) < seen.index("Encoding")


def test_status_warns_when_the_weights_are_random(engine, tmp_path):
    html, raw = Tabs.of(engine, Workspace(tmp_path / "work")).status.status()
    assert raw["engine"]["random_weights"] is True
    assert "<b>random weights</b>" in html and "say nothing about the codec" in html
