"""The stream check (core.parity.stream_check) on a tiny checkpoint with every transformer layer scale
1.0: the workbench's own stream (float32 and 16-bit) is "ok"; a seam error injected at a packet
boundary, a 40 ms gap, samples dropped at a packet edge and windowed re-decoding with 25 frames of
context are each "failed", with the cause named; ``python -m core stream-parity`` says the same."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
import torch

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.parity.stream_check import check_stream, windowed_decode
from core.tokens import make_token_file, save_tokens
from tests.conftest import speechlike
from tests.strict_engine import strict_engine

pytestmark = pytest.mark.usefixtures("single_thread")

PACKET = 4


@pytest.fixture(scope="module")
def scaled_engine(tiny_checkpoint):
    with strict_engine(tiny_checkpoint) as engine:
        yield engine


@pytest.fixture(scope="module")
def codes(scaled_engine):
    return scaled_engine.encode_array(speechlike(7.0, seed=5)).codes  # 88 frames: 22 packets, past the 72-frame window


@pytest.fixture(scope="module")
def streamed(scaled_engine, codes):
    with scaled_engine.stream_decoder() as decoder:
        parts = [decoder.push(codes[low : low + PACKET]) for low in range(0, len(codes), PACKET)]
        parts.append(decoder.finish())
    return np.concatenate(parts)


def test_our_own_stream_is_ok_in_float32_and_16_bit(scaled_engine, codes, streamed):
    result = check_stream(scaled_engine, codes, streamed, PACKET)
    assert result.verdict == "ok", result.sentence
    assert result.max_lsb < 1.0 and result.drift_samples == 0 and not result.gaps
    pcm16 = np.round(np.clip(streamed, -1, 1) * 32767) / 32768
    result = check_stream(scaled_engine, codes, pcm16.astype(np.float32), PACKET)
    assert result.verdict == "ok", result.sentence
    assert result.packets == 22 and result.windowed_snr_db["25"] is not None


def test_a_seam_error_at_a_packet_boundary_fails_and_is_found(scaled_engine, codes, streamed):
    theirs = streamed.copy()
    at = 9 * PACKET * SAMPLES_PER_FRAME  # the boundary before packet 10
    theirs[at : at + 60] += 0.05  # a step of 1,600 16-bit steps for 2.5 ms
    result = check_stream(scaled_engine, codes, theirs, PACKET)
    assert result.verdict == "failed"
    assert result.likely_cause == "seams", result.sentence
    assert result.worst_seams[0].packet == 9 and result.worst_seams[0].clicks >= 1
    assert "packet 10" in result.sentence


def test_a_40_ms_gap_fails_and_is_measured(scaled_engine, codes, streamed):
    at = 40 * SAMPLES_PER_FRAME + 333
    assert np.sqrt(np.mean(streamed[at : at + 960] ** 2)) > 1e-3  # the reference is not silent there
    theirs = np.concatenate([streamed[:at], np.zeros(960, np.float32), streamed[at:]])
    result = check_stream(scaled_engine, codes, theirs, PACKET)
    assert result.verdict == "failed" and result.likely_cause == "gaps", result.sentence
    assert len(result.gaps) == 1 and result.gaps[0].ms == pytest.approx(40.0, abs=1.0)
    assert result.gaps[0].time_s == pytest.approx(at / SAMPLE_RATE, abs=0.002)
    assert result.drift_samples == 0 and result.max_lsb < 1.0  # the rest is compared where it belongs


def test_samples_dropped_at_a_packet_edge_are_drift(scaled_engine, codes, streamed):
    at = 5 * PACKET * SAMPLES_PER_FRAME
    theirs = np.concatenate([streamed[: at - 100], streamed[at:]])
    result = check_stream(scaled_engine, codes, theirs, PACKET)
    assert result.verdict == "failed" and result.likely_cause == "drift", result.sentence
    assert result.drift_samples == -100 and "100 samples" in result.sentence


def test_windowed_re_decoding_is_named_as_the_cause(scaled_engine, codes):
    with torch.inference_mode():
        theirs = windowed_decode(scaled_engine.model, codes, PACKET, 25)
    result = check_stream(scaled_engine, codes, theirs, PACKET)
    assert result.verdict == "failed" and result.likely_cause == "windowed-25", result.sentence
    assert result.windowed_snr_db["25"] is None or result.windowed_snr_db["25"] > 60


def test_the_cli_says_ok_and_failed(tiny_engine, codes, tiny_checkpoint, tmp_path, cli):
    """The CLI loads the checkpoint as it is: the stream it checks comes from the same weights."""
    with tiny_engine.stream_decoder() as decoder:
        streamed = np.concatenate([decoder.push(codes[low : low + 3]) for low in range(0, len(codes), 3)])
    token_path = tmp_path / "codes.npz"
    save_tokens(make_token_file(codes, codes.shape[0] * SAMPLES_PER_FRAME, str(tiny_checkpoint)), token_path)
    good, bad = tmp_path / "good.wav", tmp_path / "bad.wav"
    sf.write(good, streamed, SAMPLE_RATE, subtype="PCM_16")
    sf.write(bad, np.concatenate([streamed[:50_000], np.zeros(960, np.float32), streamed[50_000:]]), SAMPLE_RATE)
    model = ("--model", str(tiny_checkpoint))
    ok = cli("stream-parity", token_path, good, *model, "--packet-frames", "3")
    assert ok.returncode == 0 and ok.stdout.startswith("ok:"), ok.stdout + ok.stderr
    failed = cli("stream-parity", token_path, bad, *model, "--packet-frames", "3")
    assert failed.returncode == 1 and failed.stdout.startswith("failed:") and "gap at 2.083 s: 40 ms" in failed.stdout
    said = cli("stream-parity", token_path, bad, *model, "--packet-frames", "0")
    assert said.returncode == 1 and "--packet-frames" in said.stderr
