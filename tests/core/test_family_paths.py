"""A 48 kHz decoder of the family through every core path, against the official ``qwen_tts`` class on a tiny
checkpoint of the 48 kHz recipe (layer scales 1.0, so context matters): codes equal the official encode,
audio equals the official decode at 48 kHz and lasts as long as the clip."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
import torch

from core.audio.files import on_grid
from core.model.engine import Engine
from core.nn import decoding
from core.settings import Settings
from core.tokens import load_tokens


def snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    reference, other = np.asarray(reference, np.float64), np.asarray(other, np.float64)
    noise = np.sum((reference - other) ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(np.sum(reference**2) / noise))


@pytest.fixture(scope="module")
def official48(tiny_checkpoint_48k):
    from qwen_tts import Qwen3TTSTokenizer

    return Qwen3TTSTokenizer.from_pretrained(str(tiny_checkpoint_48k), device_map="cpu", dtype=torch.float32)


@pytest.fixture(scope="module")
def engine48(tiny_checkpoint_48k):
    engine = Engine(Settings(model=str(tiny_checkpoint_48k), device="cpu"))
    report = engine.warm_up()  # the readiness round trip checks 3,840 samples a frame
    assert report.ok, report.to_dict()
    return engine


def official_decode(official, codes: np.ndarray) -> np.ndarray:
    wavs, rate = official.decode({"audio_codes": torch.from_numpy(np.asarray(codes, np.int64))[None]})
    assert rate == 48_000
    return np.asarray(wavs[0], np.float32)


def test_engine_codes_and_audio_equal_the_official_class_at_48k(engine48, official48, speech, whole_codes):
    x = speech(3.3, seed=5)  # 3.3 s: the last frame is padded
    trip = engine48.roundtrip(engine48_audio(x))
    np.testing.assert_array_equal(trip.encoded.codes, whole_codes(official48.model, x).numpy())
    official = official_decode(official48, trip.encoded.codes)
    assert official.size == trip.encoded.codes.shape[0] * 3840
    assert trip.decoded.sample_rate == 48_000 == engine48.output_rate
    assert engine48.output_samples_per_frame == 3840
    assert trip.decoded.samples.size == 2 * x.size  # the clip's duration at 48 kHz
    assert snr_db(official[: 2 * x.size], trip.decoded.samples) >= 80


def engine48_audio(x):
    from core.audio.files import audio_from_array

    return audio_from_array(x, 24_000)


def test_streamed_decode_in_small_chunks_equals_the_whole_decode_at_48k(official48, speech, whole_codes):
    model = official48.model
    codes = whole_codes(model, speech(4.0, seed=7))  # 50 frames: seams at 7, 14, ... inside the 72-frame window
    with torch.inference_mode():
        whole = decoding.decode_whole(model, codes)
        streamed = decoding.decode(model, codes, chunk_frames=7)
        naive = torch.cat([decoding.decode_whole(model, codes[i : i + 7]) for i in range(0, codes.shape[0], 7)])
    assert streamed.shape == whole.shape == (codes.shape[0] * 3840,)
    assert snr_db(whole.numpy(), streamed.numpy()) >= 80
    assert snr_db(whole.numpy(), naive.numpy()) < 40  # context matters on this checkpoint


def test_cli_roundtrip_writes_48k_of_the_clips_duration_equal_to_the_official_decode(
    tiny_checkpoint_48k, official48, tmp_path, speech, cli
):
    x = speech(1.5, seed=3)
    sf.write(tmp_path / "clip.wav", x, 24_000, subtype="FLOAT")
    out = tmp_path / "out"
    proc = cli("roundtrip", tmp_path / "clip.wav", "-o", out, "--model", tiny_checkpoint_48k, "--anchors", "none")
    assert proc.returncode == 0, proc.stderr
    decoded, rate = sf.read(out / "clip.decoded.wav", dtype="float32")
    assert rate == 48_000 and decoded.size == 2 * x.size  # before: 24 kHz with the clip's 24 kHz sample count
    tokens = load_tokens(out / "clip.npz")
    assert tokens.decoder_rate_hz == 48_000
    official = official_decode(official48, tokens.codes)[: decoded.size]
    assert snr_db(on_grid(official), decoded) >= 80
    assert "compared at 48 kHz" in proc.stdout and "nothing above 12 kHz can be compared" in proc.stdout


def test_token_file_decode_writes_48k_and_another_decoder_says_so(
    tiny_checkpoint_48k, tiny_checkpoint, official48, tmp_path, speech, cli
):
    x = speech(1.0, seed=9)
    sf.write(tmp_path / "clip.wav", x, 24_000, subtype="FLOAT")
    assert cli("encode", tmp_path / "clip.wav", "-o", tmp_path, "--model", tiny_checkpoint_48k).returncode == 0
    proc = cli("decode", tmp_path / "clip.npz", "-o", tmp_path / "at48", "--model", tiny_checkpoint_48k)
    assert proc.returncode == 0 and "decoded here with" not in proc.stderr
    audio, rate = sf.read(tmp_path / "at48" / "clip.wav", dtype="float32")
    official = official_decode(official48, load_tokens(tmp_path / "clip.npz").codes)[: audio.size]
    assert rate == 48_000 and audio.size == 2 * x.size and snr_db(official, audio) >= 80
    proc = cli("decode", tmp_path / "clip.npz", "-o", tmp_path / "at24", "--model", tiny_checkpoint)
    assert proc.returncode == 0
    assert "writes 48 kHz" in proc.stderr and "decoded here with a 24 kHz decoder" in proc.stderr
    assert sf.info(tmp_path / "at24" / "clip.wav").samplerate == 24_000


def test_the_doctor_and_health_name_the_loaded_decoders_rate(engine48, tiny_checkpoint_48k):
    from core.doctor.run import _model

    found = _model(engine48)
    assert found.status == "pass" and "its decoder writes 48 kHz" in found.evidence
    assert engine48.info()["output_rate_hz"] == 48_000  # what /health's "engine" carries
    unloaded = Engine(Settings(model=str(tiny_checkpoint_48k), device="cpu"))
    assert "its decoder writes 48 kHz" in _model(unloaded).evidence  # --no-model: read from config.json
    assert "48 kHz audio" in engine48.last_report.step("roundtrip").detail  # the readiness round trip


def test_a_decoder_config_the_workbench_cannot_handle_fails_at_load_with_a_sentence(tiny_checkpoint_48k, tmp_path):
    import json
    import shutil

    edited = tmp_path / "edited"
    shutil.copytree(tiny_checkpoint_48k, edited)
    config = json.loads((edited / "config.json").read_text())
    config["decode_upsample_rate"] = 1920  # the decoder's blocks make 3,840: the official decode would cut it
    (edited / "config.json").write_text(json.dumps(config))
    engine = Engine(Settings(model=str(edited), device="cpu"))
    assert not engine.load()
    assert engine.state.value == "failed" and "cannot be used here" in engine.error
    assert "decode_upsample_rate 1920" in engine.error and "make 3840 samples a frame" in engine.error


def test_the_parity_lab_checks_a_48k_port_against_the_48k_reference(engine48, official48, speech, tmp_path):
    from core import tokens
    from core.parity import decode_parity

    x = speech(2.0, seed=11)
    codes = engine48.encode_array(x).codes
    token_path = tokens.save_tokens(tokens.make_token_file(codes, x.size, "tiny48"), tmp_path / "codes.npz")
    port = official_decode(official48, codes)  # their port: the official class, at 48 kHz
    sf.write(tmp_path / "port48.wav", port, 48_000, subtype="FLOAT")
    result = decode_parity.check_decode(engine48, token_path, tmp_path / "port48.wav")
    assert result.rate_hz == 48_000 and result.samples_per_frame == 3840
    assert result.verdict.kind in ("identical", "rounding"), result.verdict.sentence
    assert result.reference_samples == codes.shape[0] * 3840 and result.their.resampled is False
    sf.write(tmp_path / "cut24.wav", port[::2], 24_000, subtype="FLOAT")  # a port that writes 24 kHz
    cut = decode_parity.check_decode(engine48, token_path, tmp_path / "cut24.wav")
    assert cut.their.resampled and cut.verdict.kind == "differs"


def test_evaluate_judges_a_44k_file_at_48k_and_says_the_output_rate(engine48, tmp_path):
    import csv

    from core.judging.evaluate import evaluate_files
    from tests.conftest import speechlike

    t = np.arange(44_100 * 2) / 44_100
    low = np.interp(t, np.arange(48_000) / 24_000, speechlike(2.0, seed=6))
    x = (0.8 * low + 0.05 * np.sin(2 * np.pi * 16_000 * t)).astype(np.float32)
    sf.write(tmp_path / "in.wav", x, 44_100, subtype="PCM_16")
    files = [(tmp_path / "in.wav", "in.wav")]
    result = evaluate_files(engine48, files, tmp_path / "out", engine48.settings.audio_limits())
    (row,) = result.rows
    assert row["error"] is None and row["output_rate_hz"] == 48_000
    wav, rate = sf.read(tmp_path / "out" / row["reconstruction"], dtype="float32")
    assert rate == 48_000 and wav.size == 96_000
    with open(result.csv_path, newline="", encoding="utf-8") as f:
        (written,) = list(csv.DictReader(f))
    assert written["output_rate_hz"] == "48000"


def test_the_ladder_at_48k_writes_each_level_at_the_decoders_rate(tiny_checkpoint_48k, official48, tmp_path, cli):
    import json

    from tests.conftest import speechlike

    x = speechlike(1.2, seed=13)
    sf.write(tmp_path / "clip.wav", x, 24_000, subtype="FLOAT")
    proc = cli(
        "ladder", tmp_path / "clip.wav", "-o", tmp_path / "out", "--model", tiny_checkpoint_48k, "--levels", "4,16"
    )
    assert proc.returncode == 0, proc.stderr
    top, rate = sf.read(tmp_path / "out" / "clip.k16.wav", dtype="float32")
    assert rate == 48_000 and top.size == 2 * x.size
    codes = load_tokens_free_codes(official48, x)
    assert snr_db(official_decode(official48, codes)[: top.size], top) >= 80  # k = 16 is the official decode
    rows = json.loads((tmp_path / "out" / "clip.ladder.json").read_text())["levels"]
    assert [r["output_rate_hz"] for r in rows] == [48_000, 48_000] and rows[1]["SI-SDR"] is not None


def load_tokens_free_codes(official, x: np.ndarray) -> np.ndarray:
    """The official whole-clip encode of ``x`` (the codes the ladder decodes)."""
    with torch.inference_mode():
        wav = torch.from_numpy(x)[None]
        return official.model.encode(wav, torch.ones_like(wav, dtype=torch.long)).audio_codes[0].numpy()


def test_live_frames_of_a_48k_decoder_are_3840_samples_with_the_input_lined_up(engine48, speech, whole_codes):
    x = speech(1.0, seed=17)
    with engine48.live.open(24_000, 1, paced=False) as session:
        steps = [session.push(x[i : i + 4800]) for i in range(0, x.size, 4800)]
        result = session.finish()
    frames = sum(s.codes.shape[0] for s in steps)
    assert frames and sum(s.samples.size for s in steps) == frames * 3840
    assert all(s.original.size == s.samples.size for s in steps)  # the page plays both at the same moment
    heard = np.concatenate([s.original for s in steps])
    assert np.corrcoef(heard[::2][: frames * 1920], x[: frames * 1920])[0, 1] > 0.99  # the input, at 48 kHz
    assert result.reconstruction_rate_hz == 48_000 and result.reconstruction.size == 2 * x.size
    np.testing.assert_array_equal(result.codes, whole_codes(engine48, x).numpy())
