"""core/parity/decode_parity.py: real decodes judged against the engine's reference decode of the same codes
(tiny checkpoint, layer scales 1.0: context matters, so a seam shows)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import soundfile as sf
import torch

from core import tokens
from core.audio.files import write_wav
from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME
from core.model.engine import Engine
from core.nn import decoding
from core.parity import decode_parity, report
from core.settings import Settings

pytestmark = pytest.mark.slow  # a 26 s clip (the 24 s seam) decoded several times: ≈1-2 min on 2 cores


@pytest.fixture(scope="module")
def clip(engine, speech):
    """25.95 s of speech-like audio (a partial last frame), its codes and the engine's decode (untrimmed)."""
    x = speech(25.95, seed=5)
    codes = engine.encode_array(x).codes
    return x, codes, engine.decode(codes).samples


@pytest.fixture(scope="module")
def speech():
    from tests.conftest import speechlike

    return speechlike


def token_file(tmp_path, codes, original_samples):
    return tokens.save_tokens(tokens.make_token_file(codes, original_samples, "tiny"), tmp_path / "codes.npz")


def check(engine, tmp_path, codes, samples, name="theirs.wav", subtype="FLOAT", original=None):
    path = tmp_path / name
    sf.write(path, samples, SAMPLE_RATE, subtype=subtype)
    if original is None:
        np.save(tmp_path / "codes.npy", codes)
        return decode_parity.check_decode(engine, tmp_path / "codes.npy", path)
    return decode_parity.check_decode(engine, token_file(tmp_path, codes, original), path)


def test_our_own_decode_is_identical(engine, clip, tmp_path):
    x, codes, _ours = clip
    trimmed = engine.decode(codes, original_samples=x.size).samples  # what Decode writes: trimmed to the clip
    wav = write_wav(tmp_path / "ours.wav", trimmed)
    result = decode_parity.check_decode(engine, token_file(tmp_path, codes, x.size), wav)
    v = result.verdict
    assert v.kind == "identical", v.sentence
    assert result.max_abs_lsb == 0.0 and result.alignment.offset_samples == 0 and result.trimmed
    assert v.sentence.startswith("Identical to the reference decode.")
    assert "original length" in v.sentence  # the trim is named, not counted as a difference


def test_our_decode_requantised_to_16_bit_is_rounding_within_1_lsb(engine, clip, tmp_path):
    _x, codes, ours = clip
    result = check(engine, tmp_path, codes, ours, subtype="PCM_16")
    v = result.verdict
    assert v.kind == "rounding" and v.level_lsb == 1, v.sentence
    assert 0.0 < result.max_abs_lsb <= 1.0
    assert "Rounding only: within 1 LSB" in v.sentence


def test_official_chunked_decode_with_1_frame_chunks_differs_from_a_seam(engine, speech, tmp_path):
    """The upstream bug: qwen_tts chunked_decode with 1-frame chunks and 25 frames of context cuts the
    history from frame 26 on; the check says "differs" from there and names the seam."""
    codes = engine.encode_array(speech(3.2, seed=7)).codes  # 40 frames
    with torch.inference_mode():
        official = decoding.decode_official(engine.model, torch.from_numpy(codes), 1, 25).numpy()
    result = check(engine, tmp_path, codes, official)
    v = result.verdict
    assert v.kind == "differs" and v.cause == "seam", v.sentence
    assert v.frame == 26 and result.first_difference_sample // SAMPLES_PER_FRAME == 26
    assert result.first_difference_sample % SAMPLES_PER_FRAME < SAMPLES_PER_FRAME // 8
    assert "t = 2.080 s (frame 26)" in v.sentence and "chunk seam" in v.sentence
    assert 26 in result.onsets
    assert result.max_abs_lsb > 100  # a real difference, not rounding


def test_a_bf16_decode_reports_its_measured_snr(tiny_checkpoint, engine, clip, tmp_path):
    _x, codes, ours = clip
    bf16 = Engine(Settings(model=str(tiny_checkpoint), device="cpu", decode_dtype="bfloat16"))
    assert bf16.load()
    theirs = bf16.decode(codes).samples
    ref, deg = ours.astype(np.float64), theirs.astype(np.float64)
    expected = 10 * math.log10(np.sum(ref**2) / np.sum((deg - ref) ** 2))
    result = check(engine, tmp_path, codes, theirs)
    assert result.snr_db == pytest.approx(expected, abs=0.01)
    v = result.verdict
    assert v.kind == "differs" and v.cause == "precision", v.sentence
    assert f"SNR {expected:.1f} dB" in v.sentence
    assert 5 < expected < 60


def test_a_wav_shifted_by_37_samples_is_found_and_aligned(engine, clip, tmp_path):
    _x, codes, ours = clip
    shifted = np.concatenate([np.zeros(37, np.float32), ours])
    result = check(engine, tmp_path, codes, shifted)
    assert result.alignment.offset_samples == 37
    assert result.verdict.kind == "identical", result.verdict.sentence
    assert "shifted by 37 samples (it starts late)" in result.verdict.sentence
    early = check(engine, tmp_path, codes, ours[37:], name="early.wav")
    assert early.alignment.offset_samples == -37


def test_a_click_at_24_s_is_found_at_24_s(engine, clip, tmp_path):
    _x, codes, ours = clip
    clicked = ours.copy()
    clicked[24 * SAMPLE_RATE] += 0.25
    result = check(engine, tmp_path, codes, clicked)
    assert [c.time_s for c in result.clicks] == [24.0]
    assert result.clicks[0].seam == "official"  # 24 s = frame 300, the official decoder's first seam
    assert result.verdict.kind == "differs" and result.verdict.time_s == 24.0
    clean = check(engine, tmp_path, codes, ours, name="clean.wav")
    assert clean.clicks == []


def test_a_delay_inside_a_file_of_the_same_length_is_an_offset_not_lost_samples(engine, clip, tmp_path):
    _x, codes, ours = clip
    delayed = np.concatenate([np.zeros(100, np.float32), ours[:-100]])  # a delay line: same length, tail cut
    result = check(engine, tmp_path, codes, delayed)
    v = result.verdict
    assert result.alignment.offset_samples == 100 and result.delay_cut_samples == 100
    assert v.kind == "identical", v.sentence
    assert "shifted by 100 samples (it starts late)" in v.sentence and "not compared" in v.sentence
    cut = check(
        engine, tmp_path, codes, delayed[:-500], name="short.wav"
    )  # a shorter file still is: its end is missing
    assert cut.verdict.cause == "length" and cut.delay_cut_samples == 0, cut.verdict.sentence


def test_a_click_between_frame_boundaries_is_named_a_click(engine, clip, tmp_path):
    _x, codes, ours = clip
    clicked = ours.copy()
    clicked[SAMPLE_RATE] += 0.6  # 1.000 s: frame 12.5, no seam
    result = check(engine, tmp_path, codes, clicked)
    v = result.verdict
    assert [c.time_s for c in result.clicks] == [1.0]
    assert v.kind == "differs" and v.cause == "click" and v.time_s == 1.0, v.sentence
    assert "likely a click (one sudden jump)" in v.sentence and "starts with a click at 1.000 s" in v.sentence
    from webui.views import parity_view

    table = parity_view.measures_markdown(result, "en")  # the clicks' *where* column says where it sits, never "–"
    assert "| 1.0000 | 19661 | inside a frame: no seam there |" in table, table
    assert "帧内部" in parity_view.measures_markdown(result, "zh-CN")
    from core.parity import report

    fig = report.curve_figure(result)  # the legend lies above the plot: inside it covered a click near the start
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    axes, legend = fig.axes[0].get_window_extent(renderer), fig.axes[0].get_legend().get_window_extent(renderer)
    assert legend.y0 >= axes.y1 - 1 and legend.y1 <= fig.bbox.y1 + 1, (legend, axes)


def test_lost_samples_part_way_are_named(engine, clip, tmp_path):
    _x, codes, ours = clip
    dropped = np.concatenate([ours[: 150 * SAMPLES_PER_FRAME], ours[150 * SAMPLES_PER_FRAME + 120 :]])
    result = check(engine, tmp_path, codes, dropped)
    v = result.verdict
    assert v.cause == "length" and result.length_difference == -120, v.sentence
    assert "samples were lost or added part-way" in v.sentence


def test_silent_output_is_named(engine, clip, tmp_path):
    _x, codes, ours = clip
    result = check(engine, tmp_path, codes, np.zeros_like(ours))
    assert result.verdict.cause == "silence" and "silent" in result.verdict.sentence


def test_nan_samples_are_counted_not_refused(engine, clip, tmp_path):
    _x, codes, ours = clip
    broken = ours.copy()
    broken[5 * SAMPLE_RATE : 5 * SAMPLE_RATE + 10] = np.nan
    result = check(engine, tmp_path, codes, broken)
    assert result.their.nonfinite == 10 and result.verdict.cause == "nonfinite"
    assert "10 NaN or infinite samples (the first at 5.000 s)" in result.verdict.sentence


def test_the_report_is_a_page_with_the_curve(engine, clip, tmp_path):
    _x, codes, ours = clip
    clicked = ours.copy()
    clicked[24 * SAMPLE_RATE] += 0.25
    result = check(engine, tmp_path, codes, clicked)
    png, page = report.write_report(result, tmp_path, "clip", random_weights=True)
    text = page.read_text(encoding="utf-8")
    assert png.stat().st_size > 10_000 and "data:image/png;base64," in text
    assert "Differs from t = 24.000 s" in text and "an official 300-frame seam" in text
    assert "Random-weight checkpoint" in text
    with pytest.raises(FileExistsError):
        report.write_report(result, tmp_path, "clip")
