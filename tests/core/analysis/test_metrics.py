"""Spectrograms, metrics and figures, checked against known signals."""

from __future__ import annotations

import numpy as np
import pytest

from core.analysis import catalog, signal_metrics
from core.analysis import metrics as analysis_metrics
from core.analysis.metrics import log_mel

SR = 24_000  # Hz
SIGNAL = catalog.ids(m for m in catalog.COMPARED if not m.judge)  # the rows no judging model computes


def compare(reference, degraded, **kwargs):
    """The signal metrics only: these tests do not pay for the speaker model (test_speaker does)."""
    return analysis_metrics.compare(reference, degraded, metrics=SIGNAL, **kwargs)


def by_name(metrics) -> dict:
    return {m.name: m for m in metrics}


def with_snr(x: np.ndarray, snr_db: float, seed: int = 1) -> np.ndarray:
    """x plus white noise at exactly ``snr_db`` (signal energy over noise energy)."""
    noise = np.random.default_rng(seed).standard_normal(x.size)
    noise *= np.sqrt((x.astype(np.float64) ** 2).sum() / (noise**2).sum() / 10 ** (snr_db / 10))
    return (x + noise).astype(np.float32)


# ---------------------------------------------------------------------------------- SI-SDR


def test_si_sdr_of_identical_signals_is_huge(speech):
    x = speech(2.0)
    assert by_name(compare(x, x))["SI-SDR"].value > 80


def test_si_sdr_ignores_scale(speech):
    x = speech(2.0)
    assert by_name(compare(x, 0.3 * x))["SI-SDR"].value > 80


@pytest.mark.parametrize("snr_db", [0.0, 10.0, 25.0])
def test_si_sdr_matches_snr_of_added_noise(speech, snr_db):
    x = speech(3.0)
    value = by_name(compare(x, with_snr(x, snr_db)))["SI-SDR"].value
    assert value == pytest.approx(snr_db, abs=0.5)


# ---------------------------------------------------------------------------- PESQ, STOI


def test_perceptual_metrics_of_identical_speech(speech):
    x = speech(3.0)
    metrics = by_name(compare(x, x))
    assert metrics["PESQ-WB"].value > 4.0
    assert metrics["PESQ-NB"].value > 4.0
    assert metrics["STOI"].value == pytest.approx(1.0, abs=0.01)
    assert metrics["Log-mel distance"].value == pytest.approx(0.0, abs=1e-4)
    assert all(m.note == "" for m in metrics.values() if m.name != "Log-mel distance")


def test_heavy_noise_scores_lower(speech):
    x = speech(3.0)
    clean, noisy = by_name(compare(x, x)), by_name(compare(x, with_snr(x, 0.0)))
    for name in ("PESQ-WB", "PESQ-NB", "STOI"):
        assert noisy[name].value < clean[name].value - 0.1, name
    assert noisy["PESQ-WB"].value < 2.5
    assert noisy["Log-mel distance"].value > 1.0


def test_metrics_describe_themselves(speech):
    x = speech(1.0)
    for metric in compare(x, x):
        assert metric.meaning and metric.better in ("higher", "lower")
    assert by_name(compare(x, x))["Log-mel distance"].better == "lower"


def test_silence_gives_none_with_a_note_not_an_exception(speech):
    silence = np.zeros(2 * SR, dtype=np.float32)
    metrics = by_name(compare(silence, speech(2.0)))
    for name in ("PESQ-WB", "PESQ-NB", "STOI", "SI-SDR"):
        assert metrics[name].value is None, name
        assert "silent" in metrics[name].note, name
    assert metrics["Log-mel distance"].value is not None


def test_too_short_for_pesq(speech):
    x = speech(0.1)
    metrics = by_name(compare(x, x))
    for name in ("PESQ-WB", "PESQ-NB"):
        assert metrics[name].value is None and "0.25 s" in metrics[name].note
    assert metrics["STOI"].value is None and "0.4 s" in metrics["STOI"].note
    assert metrics["SI-SDR"].value > 80


def test_one_failing_metric_does_not_stop_the_others(speech, monkeypatch):
    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(signal_metrics, "stoi", broken)
    x = speech(1.0)
    metrics = by_name(compare(x, x))
    assert metrics["STOI"].value is None and "boom" in metrics["STOI"].note
    assert metrics["PESQ-WB"].value > 4.0


def test_lengths_are_aligned_to_the_shorter(speech):
    x = speech(2.0)
    metrics = by_name(compare(x, x[:-500]))
    assert metrics["SI-SDR"].value > 80
    assert metrics["PESQ-WB"].value > 4.0


def test_window_limits_pesq_and_says_so(speech):
    x = speech(3.0)
    y = x.copy()
    y[2 * SR :] = with_snr(x[2 * SR :], -10.0)  # damage only after the window
    windowed = by_name(compare(x, y, max_seconds=1.5))
    whole = by_name(compare(x, y, max_seconds=None))
    assert "first 1.5 s of 3.0 s" in windowed["PESQ-WB"].note
    assert windowed["PESQ-WB"].value > 4.0 > whole["PESQ-WB"].value
    assert windowed["SI-SDR"].value == whole["SI-SDR"].value  # always the whole clip
    assert whole["PESQ-WB"].note == ""


def test_a_caller_asks_for_the_rows_it_shows_by_id_and_pays_for_no_other(speech, monkeypatch):
    from core.analysis import speaker

    def never(*args):
        raise AssertionError("speaker similarity was computed although nobody asked for it")

    monkeypatch.setattr(speaker, "ge2e_metric", never)
    x = speech(1.0)
    assert [m.name for m in analysis_metrics.compare(x, x, metrics=["STOI", "SI-SDR"])] == ["STOI", "SI-SDR"]
    assert [m.name for m in compare(x, x)] == list(SIGNAL)
    with pytest.raises(KeyError, match="unknown metric 'Speaker similarity'"):  # ids, never display text
        analysis_metrics.compare(x, x, metrics=["Speaker similarity"])
    asked = {m.name: m for m in analysis_metrics.compare(x, x, metrics=["SIM-GE2E", "STOI"])}  # asked for: computed
    assert "AssertionError" in asked["SIM-GE2E"].note and asked["STOI"].value is not None


def test_the_judges_pick_which_model_row_is_computed():
    from core.analysis.judges import Judges

    default = Judges()
    assert catalog.SIM_GE2E in catalog.ids(default.rows(catalog.COMPARED))
    assert not {catalog.SIM_WAVLM, *catalog.DWER} & set(catalog.ids(default.rows(catalog.COMPARED)))
    wavlm = Judges(speaker="/models/wavlm-base-plus-sv", asr="/models/whisper")
    chosen = set(catalog.ids(wavlm.rows(catalog.COMPARED)))
    assert catalog.SIM_WAVLM in chosen and catalog.SIM_GE2E not in chosen  # never both models in one column
    assert "dWER-Whisper" in chosen and "dWER-pocketsphinx" not in chosen
    assert "dWER-pocketsphinx" in catalog.ids(Judges(asr="PocketSphinx").rows(catalog.COMPARED))


# ---------------------------------------------------------------------------------- log-mel


@pytest.mark.parametrize("seconds", [0.01, 1.0, 2.5])
def test_log_mel_shape(speech, seconds):
    x = speech(seconds)
    mel = log_mel(x)
    assert mel.shape == (80, 1 + x.size // 256)
    assert mel.dtype == np.float32 and np.isfinite(mel).all()


def test_log_mel_time_axis_and_frequency(speech):
    t = np.arange(3 * SR) / SR
    x = np.where(t >= 1.0, 0.5 * np.sin(2 * np.pi * 1000 * t), 0.0).astype(np.float32)
    mel = log_mel(x)
    loudness = mel.max(axis=0)
    onset = int(np.argmax(loudness > loudness.max() - 20))
    assert abs(onset - 1.0 * SR / 256) <= 2  # frame i is at i * 256 / 24000 s
    band = int(np.argmax(mel[:, -50]))
    centres = htk_mel_centres_hz(SR, 80)
    assert abs(centres[band] - 1000) < centres[band + 1] - centres[band - 1]


def htk_mel_centres_hz(sample_rate: int, n_mels: int) -> np.ndarray:
    """Band centres of HTK mel filters from 0 Hz to Nyquist, from the formula."""
    top = 2595.0 * np.log10(1.0 + sample_rate / 2 / 700.0)
    return 700.0 * (10.0 ** (np.linspace(0, top, n_mels + 2) / 2595.0) - 1.0)[1:-1]


def htk_triangles(sample_rate: int, n_fft: int, n_mels: int) -> np.ndarray:
    """Unnormalised triangular HTK-mel filters written out (what the first release computed by hand)."""
    bin_hz = np.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    edges = np.concatenate([[0.0], htk_mel_centres_hz(sample_rate, n_mels), [sample_rate / 2]])
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    return np.clip(np.minimum((bin_hz - lower) / (centre - lower), (upper - bin_hz) / (upper - centre)), 0, None)


@pytest.mark.parametrize("sample_rate, n_fft, n_mels", [(SR, 1024, 80), (16_000, 512, 40)])
def test_mel_filterbank_is_the_htk_triangles(sample_rate, n_fft, n_mels):
    # torchaudio's melscale_fbanks replaced the hand-written filters: same numbers, pinned here
    ours = analysis_metrics._mel_filterbank(sample_rate, n_fft, n_mels)
    assert ours.shape == (n_mels, n_fft // 2 + 1)
    np.testing.assert_allclose(ours, htk_triangles(sample_rate, n_fft, n_mels), atol=1e-5)
    assert ours.max() <= 1.0 and (ours.sum(axis=0)[1:-1] > 0).all()  # unnormalised; every inner bin is covered


def test_khz_ticks_sit_where_the_formula_puts_them():
    ticks, labels = analysis_metrics._khz_ticks(SR, 80)
    assert labels == ["0.5", "1", "2", "4", "8"]
    centres = htk_mel_centres_hz(SR, 80)
    for tick, label in zip(ticks, labels, strict=True):
        exact = np.interp(float(label) * 1000, centres, np.arange(80) + 0.5)  # between centres, linear in Hz
        assert tick == pytest.approx(exact, abs=0.01)


def test_log_mel_level(speech):
    x = speech(1.0)
    assert log_mel(0.1 * x).max() == pytest.approx(log_mel(x).max() - 20, abs=0.01)


def test_stereo_is_refused(speech):
    with pytest.raises(ValueError, match="mono"):
        log_mel(np.stack([speech(0.5), speech(0.5)]))


# ---------------------------------------------------------------------------------- figures


def image_axes(fig):
    return [ax for ax in fig.axes if ax.images]


def test_spectrogram_figure(speech, tmp_path):
    x = speech(2.0)
    quieter = 0.1 * x  # on its own scale it would look the same; on the shared one, darker
    fig = analysis_metrics.spectrogram_figure(x, quieter)
    axes = image_axes(fig)
    assert len(axes) == 3
    (a,), (b,), (d,) = (ax.images for ax in axes)
    assert a.get_clim() == b.get_clim()
    assert a.get_clim()[1] == pytest.approx(float(log_mel(x).max()), abs=1e-3)
    low, high = d.get_clim()
    assert low == -high and d.get_cmap().name != a.get_cmap().name
    for ax in axes:
        assert ax.get_xlim() == pytest.approx((0.0, 2.0))
        assert ax.get_title()
    assert len(fig.axes) == 6  # one colourbar each
    assert np.ma.median(d.get_array()) < -10  # the reconstruction is 20 dB quieter
    png = analysis_metrics.figure_to_png(fig, tmp_path / "spec.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_spectrogram_figure_aligns_lengths(speech):
    x = speech(2.0)
    fig = analysis_metrics.spectrogram_figure(x, x[: int(1.5 * SR)])
    for ax in image_axes(fig):
        assert ax.get_xlim() == pytest.approx((0.0, 1.5))


def test_long_clip_is_pooled_but_spans_the_clip(speech):
    x = speech(40.0)
    fig = analysis_metrics.spectrogram_figure(x, x)
    for ax in image_axes(fig):
        assert ax.images[0].get_array().shape[1] <= analysis_metrics.MAX_IMAGE_COLUMNS
        assert ax.images[0].get_extent()[1] == pytest.approx(40.0, abs=0.02)
        assert ax.get_xlim() == pytest.approx((0.0, 40.0))


def test_single_spectrogram_figure(speech):
    fig = analysis_metrics.single_spectrogram_figure(speech(1.2), title="Input")
    (ax,) = image_axes(fig)
    assert ax.get_title() == "Input"
    assert ax.get_xlim() == pytest.approx((0.0, 1.2))
