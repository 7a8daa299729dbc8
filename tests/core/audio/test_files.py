"""core/audio: reading every accepted format, resampling, facts, bad inputs, writing WAV.

Input files are made here, in tmp_path, with soundfile and the ffmpeg command line; every
expected value is computed from the signal that was written, not copied from a past run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from core.audio.files import (
    Audio,
    audio_from_array,
    describe_formats,
    load_audio,
    resample,
    write_wav,
)
from core.codec import FRAME_RATE, SAMPLE_RATE, SAMPLES_PER_FRAME
from core.errors import AudioInputError, CodecError
from core.settings import AudioLimits

FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE  # seconds, one code frame (80 ms)

needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")


def signal(seconds: float, sample_rate: int, channels: int, seed: int = 0) -> np.ndarray:
    """Speech-like float32 audio of shape (n, channels), peak below 0.5: a gliding harmonic
    tone with a syllable envelope and a little noise. Each channel has its own pitch and
    level, so a wrong downmix (one channel, or a sum) shows."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    envelope = (0.5 + 0.5 * np.sin(2 * np.pi * 3.0 * t)) ** 2
    chans = []
    for c in range(channels):
        f0 = 120 + 25 * c + 30 * np.sin(2 * np.pi * 0.7 * t)
        phase = 2 * np.pi * np.cumsum(f0) / sample_rate
        voiced = sum(np.sin(k * phase) / k for k in range(1, 6))
        x = voiced * envelope + 0.02 * rng.standard_normal(t.size)
        chans.append(0.45 * (1.0 - 0.15 * c) * x / np.abs(x).max())
    return np.stack(chans, axis=1).astype(np.float32)


def write(path: Path, x: np.ndarray, sample_rate: int, subtype: str | None = None, **kw) -> Path:
    sf.write(path, x, sample_rate, subtype=subtype, **kw)
    return path


def encode(src: Path, dst: Path, *codec: str) -> Path:
    """Encode src with the ffmpeg command line (as a user's tools would)."""
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(src), *codec, str(dst)], check=True, timeout=60)
    return dst


def expected_warnings(sample_rate: int, channels: int) -> list[str]:
    out = []
    if sample_rate != SAMPLE_RATE:
        out.append(f"Resampled from {sample_rate} Hz to {SAMPLE_RATE} Hz.")
    if channels == 2:
        out.append("Stereo downmixed to mono.")
    elif channels > 2:
        out.append(f"{channels} channels downmixed to mono.")
    return out


def check_shape(audio: Audio, seconds: float) -> None:
    assert audio.samples.dtype == np.float32
    assert audio.samples.ndim == 1
    assert abs(audio.facts.duration_s - seconds) < FRAME_S
    assert abs(audio.samples.size - seconds * SAMPLE_RATE) < SAMPLES_PER_FRAME


def rms_db(x: np.ndarray) -> float:
    return 20 * np.log10(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


# ---------------------------------------------------------------------------------------
# Reading files


@pytest.mark.parametrize(
    "ext, subtype, sample_rate, channels",
    [
        ("wav", "PCM_16", 8000, 1),
        ("wav", "PCM_24", 44100, 2),
        ("wav", "FLOAT", 48000, 1),
        ("wav", "PCM_U8", 16000, 1),
        ("wav", "PCM_32", 24000, 2),
        ("flac", "PCM_16", 44100, 2),
        ("flac", "PCM_24", 16000, 1),
    ],
)
def test_lossless_files_decode_to_the_reference(tmp_path, ext, subtype, sample_rate, channels):
    path = write(tmp_path / f"in.{ext}", signal(1.3, sample_rate, channels), sample_rate, subtype)
    stored, _ = sf.read(path, dtype="float32", always_2d=True)  # what the file really holds

    audio = load_audio(path)

    check_shape(audio, 1.3)
    facts = audio.facts
    assert (facts.name, facts.format, facts.sample_rate, facts.channels) == (f"in.{ext}", ext, sample_rate, channels)
    assert list(facts.warnings) == expected_warnings(sample_rate, channels)
    reference = resample(stored.mean(axis=1), sample_rate)
    assert audio.samples.size == reference.size
    np.testing.assert_allclose(audio.samples, reference, atol=1e-5)
    assert facts.peak == pytest.approx(float(np.abs(reference).max()), rel=1e-5)
    assert facts.rms_dbfs == pytest.approx(rms_db(reference), abs=0.01)


def check_lossy(audio: Audio, source: np.ndarray, source_rate: int, seconds: float) -> None:
    """A lossy decode: right length, and loudness and waveform close to the source."""
    check_shape(audio, seconds)
    reference = resample(source.mean(axis=1), source_rate)
    n = min(reference.size, audio.samples.size)
    assert abs(audio.facts.rms_dbfs - rms_db(reference)) < 1.5
    corr = np.corrcoef(audio.samples[:n], reference[:n])[0, 1]
    assert corr > 0.9, f"decoded audio does not match the source (correlation {corr:.2f})"


@pytest.mark.parametrize(
    "subtype, sample_rate, channels, fmt",
    [
        ("VORBIS", 48000, 2, "ogg/vorbis"),
        ("OPUS", 16000, 1, "opus"),
    ],
)
def test_ogg_files_from_soundfile(tmp_path, subtype, sample_rate, channels, fmt):
    x = signal(1.5, sample_rate, channels)
    path = write(tmp_path / "in.ogg", x, sample_rate, subtype, format="OGG")

    audio = load_audio(path)

    assert (audio.facts.format, audio.facts.sample_rate, audio.facts.channels) == (fmt, sample_rate, channels)
    assert list(audio.facts.warnings) == expected_warnings(sample_rate, channels)
    check_lossy(audio, x, sample_rate, 1.5)


@needs_ffmpeg
@pytest.mark.parametrize(
    "ext, codec, sample_rate, channels, fmt, decoded_rate",
    [
        ("mp3", ["-c:a", "libmp3lame", "-b:a", "128k"], 44100, 2, "mp3", 44100),
        ("m4a", ["-c:a", "aac", "-b:a", "128k"], 44100, 2, "m4a/aac", 44100),
        ("m4a", ["-c:a", "aac", "-b:a", "64k"], 16000, 1, "m4a/aac", 16000),
        ("webm", ["-c:a", "libopus", "-b:a", "96k"], 48000, 2, "webm", 48000),
        ("opus", ["-c:a", "libopus", "-b:a", "96k"], 48000, 1, "opus", 48000),
        ("ogg", ["-c:a", "libvorbis", "-q:a", "6"], 22050, 1, "ogg/vorbis", 22050),
    ],
)
def test_files_from_ffmpeg(tmp_path, ext, codec, sample_rate, channels, fmt, decoded_rate):
    x = signal(2.0, sample_rate, channels)
    path = encode(write(tmp_path / "src.wav", x, sample_rate, "FLOAT"), tmp_path / f"in.{ext}", *codec)

    audio = load_audio(path)

    facts = audio.facts
    assert (facts.name, facts.format, facts.sample_rate, facts.channels) == (f"in.{ext}", fmt, decoded_rate, channels)
    assert list(facts.warnings) == expected_warnings(decoded_rate, channels)
    check_lossy(audio, x, sample_rate, 2.0)


def test_multichannel_file_is_averaged(tmp_path):
    x = signal(1.0, 48000, 6)
    path = write(tmp_path / "surround.wav", x, 48000, "FLOAT")

    audio = load_audio(path)

    assert audio.facts.channels == 6
    assert "6 channels downmixed to mono." in audio.facts.warnings
    np.testing.assert_allclose(audio.samples, resample(x.mean(axis=1), 48000), atol=1e-6)


def test_clipping_is_counted_before_downmix(tmp_path, speech):
    left = (speech(1.0) * 32767).astype(np.int16)
    right = np.zeros_like(left)
    left[1000:1037] = 32767  # 37 full-scale samples in one channel only
    path = write(tmp_path / "clipped.wav", np.stack([left, right], axis=1), SAMPLE_RATE)

    audio = load_audio(path)

    assert audio.facts.clipped_samples == 37
    assert "37 samples are clipped." in audio.facts.warnings
    assert audio.facts.peak < 0.51  # halved by the downmix: the mono signal itself is not clipped


def test_quiet_clip_is_flagged_and_facts_serialize(tmp_path, speech):
    x = speech(1.0)
    x = x * 10 ** (-72 / 20) / np.sqrt(np.mean(np.square(x, dtype=np.float64)))  # -72 dBFS
    path = write(tmp_path / "quiet.wav", x.astype(np.float32), SAMPLE_RATE, "FLOAT")

    facts = load_audio(path).facts

    assert facts.near_silent
    assert facts.rms_dbfs == pytest.approx(-72, abs=0.05)
    assert facts.warnings == ("The clip is nearly silent (-72 dBFS).",)
    d = json.loads(json.dumps(facts.to_dict()))
    assert d["name"] == "quiet.wav" and d["warnings"] == list(facts.warnings)
    assert d["sample_rate"] == SAMPLE_RATE and d["channels"] == 1


def test_digital_silence_is_near_silent_not_an_error(tmp_path):
    path = write(tmp_path / "zeros.wav", np.zeros(SAMPLE_RATE, np.float32), SAMPLE_RATE, "FLOAT")
    facts = load_audio(path).facts
    assert facts.near_silent and facts.peak == 0.0 and np.isfinite(facts.rms_dbfs)


# ---------------------------------------------------------------------------------------
# Resampling


def peak_hz(x: np.ndarray, sample_rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    return float(np.fft.rfftfreq(x.size, 1 / sample_rate)[np.argmax(spectrum)])


def test_resample_keeps_a_1khz_sine_at_1khz():
    t = np.arange(44100 * 2) / 44100
    x = (0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)

    y = resample(x, 44100, SAMPLE_RATE)

    assert y.dtype == np.float32 and y.size == 2 * SAMPLE_RATE
    assert abs(peak_hz(y, SAMPLE_RATE) - 1000) <= SAMPLE_RATE / y.size  # within one FFT bin
    middle = y[1000:-1000]  # away from the filter's edges
    assert np.abs(middle).max() == pytest.approx(0.5, abs=0.01)


def test_resample_removes_tones_above_the_new_nyquist():
    t = np.arange(44100) / 44100
    x = (0.5 * np.sin(2 * np.pi * 15_000 * t)).astype(np.float32)  # above 12 kHz
    y = resample(x, 44100, SAMPLE_RATE)
    assert rms_db(y[500:-500]) < rms_db(x) - 60  # filtered out, not aliased to 9 kHz


def test_loading_a_44k_sine_keeps_its_pitch(tmp_path):
    t = np.arange(44100) / 44100
    path = write(tmp_path / "sine.flac", 0.5 * np.sin(2 * np.pi * 1000 * t), 44100, "PCM_16")
    samples = load_audio(path).samples
    assert abs(peak_hz(samples, SAMPLE_RATE) - 1000) <= SAMPLE_RATE / samples.size


def test_resample_at_the_same_rate_is_exact(speech):
    x = speech(0.5)
    np.testing.assert_array_equal(resample(x, SAMPLE_RATE), x)


def test_frame_constants_agree():
    assert FRAME_RATE == SAMPLE_RATE / SAMPLES_PER_FRAME == 12.5


# ---------------------------------------------------------------------------------------
# Bad inputs: AudioInputError naming the file


def truncated(tmp_path: Path, ext: str, subtype: str) -> Path:
    full = write(tmp_path / f"full.{ext}", signal(2.0, 44100, 2), 44100, subtype)
    data = full.read_bytes()
    path = tmp_path / f"cut_off.{ext}"
    path.write_bytes(data[: len(data) // 2])
    return path


def float_wav_with(tmp_path: Path, value: float) -> Path:
    x = signal(1.0, 16000, 1)
    x[8000, 0] = value
    return write(tmp_path / "broken_values.wav", x, 16000, "FLOAT")


def file_with(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def folder(path: Path) -> Path:
    path.mkdir()
    return path


BAD_FILES = {
    "missing": (lambda d: d / "no_such_file.wav", "does not exist"),
    "empty": (lambda d: file_with(d / "empty.wav", b""), "empty"),
    "text": (lambda d: file_with(d / "notes.wav", b"not audio\n" * 50), "not an audio file"),
    "folder": (lambda d: folder(d / "folder.wav"), "folder"),
    "cut wav": (lambda d: truncated(d, "wav", "PCM_16"), "cut off"),
    "cut flac": (lambda d: truncated(d, "flac", "PCM_16"), "cut off"),
    "header only": (lambda d: truncated_to(d, 44), "cut off"),
    "no samples": (lambda d: write(d / "no_samples.wav", np.zeros((0, 1), np.float32), 16000), "no audio samples"),
    "short": (lambda d: write(d / "short.wav", signal(0.05, 16000, 1), 16000), "one frame"),
    "nan": (lambda d: float_wav_with(d, np.nan), "NaN"),
    "inf": (lambda d: float_wav_with(d, np.inf), "infinite"),
}


def truncated_to(tmp_path: Path, size: int) -> Path:
    full = write(tmp_path / "whole.wav", signal(1.0, 16000, 1), 16000, "PCM_16")
    path = tmp_path / "header_only.wav"
    path.write_bytes(full.read_bytes()[:size])
    return path


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_files_are_refused_by_name(tmp_path, case):
    make, words = BAD_FILES[case]
    path = make(tmp_path)
    with pytest.raises(AudioInputError, match=words) as e:
        load_audio(path)
    assert path.name in str(e.value)
    assert isinstance(e.value, CodecError)


@needs_ffmpeg
def test_cut_off_webm_is_refused(tmp_path):
    src = write(tmp_path / "src.wav", signal(3.0, 48000, 2), 48000, "FLOAT")
    full = encode(src, tmp_path / "full.webm", "-c:a", "libopus")
    path = tmp_path / "cut.webm"
    path.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    with pytest.raises(AudioInputError, match="cut off") as e:
        load_audio(path)
    assert "cut.webm" in str(e.value)


def test_file_over_the_size_limit(tmp_path):
    path = write(tmp_path / "big.wav", signal(1.0, 16000, 1), 16000)
    with pytest.raises(AudioInputError, match="limit") as e:
        load_audio(path, AudioLimits(max_file_bytes=10_000))
    assert "big.wav" in str(e.value)


@pytest.mark.parametrize("ext", ["wav", pytest.param("m4a", marks=needs_ffmpeg)])
def test_file_over_the_duration_limit(tmp_path, ext):
    path = write(tmp_path / "long.wav", signal(3.0, 16000, 1), 16000)
    if ext != "wav":
        path = encode(path, tmp_path / f"long.{ext}", "-c:a", "aac")
    with pytest.raises(AudioInputError, match="over the 2.0 s limit") as e:
        load_audio(path, AudioLimits(max_duration_s=2.0))
    assert path.name in str(e.value)
    assert load_audio(path, AudioLimits(max_duration_s=4.0)).facts.duration_s > 2.9


@needs_ffmpeg
def test_duration_limit_holds_without_a_duration_in_the_header(tmp_path):
    src = write(tmp_path / "src.wav", signal(3.0, 48000, 1), 48000)
    path = tmp_path / "streamed.webm"  # written to a pipe: the header cannot say how long
    with open(path, "wb") as out:
        subprocess.run(
            ["ffmpeg", "-nostdin", "-v", "error", "-i", str(src), "-c:a", "libopus", "-f", "webm", "pipe:1"],
            stdout=out,
            check=True,
            timeout=60,
        )
    with pytest.raises(AudioInputError, match="longer than the 2.0 s limit") as e:
        load_audio(path, AudioLimits(max_duration_s=2.0))
    assert "streamed.webm" in str(e.value)
    assert load_audio(path).facts.duration_s == pytest.approx(3.0, abs=FRAME_S)


def test_urls_are_not_fetched():
    with pytest.raises(AudioInputError, match="local files"):
        load_audio("https://example.com/speech.wav")


@needs_ffmpeg
def test_no_system_ffmpeg_is_needed(tmp_path, monkeypatch):
    # PyAV carries FFmpeg's libraries: M4A and WebM decode with no ffmpeg on the PATH
    src = write(tmp_path / "src.wav", signal(1.0, 16000, 1), 16000)
    path = encode(src, tmp_path / "phone.m4a", "-c:a", "aac")
    empty = tmp_path / "empty_bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # as on a machine without ffmpeg
    assert load_audio(path).facts.format == "m4a/aac"
    assert "ffmpeg" not in describe_formats()


def streamed(tmp_path: Path, name: str, *args: str, seconds: float = 3.0, rate: int = 24000) -> Path:
    """A file written by ffmpeg to a pipe, as a live recorder or a converter in a pipeline writes
    it: the container cannot go back and fill in its length."""
    src = write(tmp_path / "src.wav", signal(seconds, rate, 1), rate)
    path = tmp_path / name
    with open(path, "wb") as out:
        subprocess.run(
            ["ffmpeg", "-nostdin", "-v", "error", "-i", str(src), *args, "pipe:1"], stdout=out, check=True, timeout=60
        )
    return path


def vbr_mp3_without_xing(tmp_path: Path) -> Path:
    """A VBR MP3 without a Xing header that starts quiet: libsndfile guesses its length from the
    first frames' bitrate (40 s for these 8 s) and used to refuse it as cut off."""
    path = tmp_path / "vbr.mp3"
    quiet_then_loud = np.concatenate([np.zeros((4 * 24000, 1), np.float32), signal(4.0, 24000, 1) * 1.5])
    src = write(tmp_path / "src.wav", quiet_then_loud, 24000)
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-i",
            str(src),
            "-c:a",
            "libmp3lame",
            "-q:a",
            "0",
            "-write_xing",
            "0",
            str(path),
        ],
        check=True,
        timeout=60,
    )
    return path


UNKNOWN_LENGTH = {  # container -> (how it is made, its true length in seconds)
    "flac": (lambda d: streamed(d, "streamed.flac", "-f", "flac"), 3.0),  # STREAMINFO total samples = 0
    "ogg": (lambda d: streamed(d, "streamed.ogg", "-c:a", "libvorbis", "-f", "ogg"), 3.0),
    "opus": (lambda d: streamed(d, "streamed.opus", "-c:a", "libopus", "-f", "ogg"), 3.0),
    "mkv": (lambda d: streamed(d, "streamed.mka", "-c:a", "flac", "-f", "matroska"), 3.0),
    "webm": (lambda d: streamed(d, "streamed.webm", "-c:a", "libopus", "-f", "webm"), 3.0),
    "mp3": (lambda d: streamed(d, "streamed.mp3", "-c:a", "libmp3lame", "-write_xing", "0", "-f", "mp3"), 3.0),
    "vbr mp3": (vbr_mp3_without_xing, 8.0),
}


@needs_ffmpeg
@pytest.mark.parametrize("kind", list(UNKNOWN_LENGTH))
def test_a_length_the_header_does_not_state_is_unknown_not_huge(tmp_path, kind):
    # a streamed FLAC used to be "6405119470038.0 min long"; a VBR MP3 without a Xing header
    # "cut off" (or silently cut short to libsndfile's guess); the cap now holds while reading
    make, seconds = UNKNOWN_LENGTH[kind]
    path = make(tmp_path)
    audio = load_audio(path)
    assert audio.facts.duration_s == pytest.approx(seconds, abs=0.1)
    assert audio.samples.size == pytest.approx(seconds * SAMPLE_RATE, abs=0.1 * SAMPLE_RATE)
    with pytest.raises(AudioInputError, match=r"(longer than the|long, over the) 2\.0 s limit") as e:
        load_audio(path, AudioLimits(max_duration_s=2.0))
    assert path.name in str(e.value) and " min " not in str(e.value)


def test_describe_formats_is_one_line():
    line = describe_formats()
    assert "\n" not in line
    for name in ("WAV", "FLAC", "Vorbis", "Opus", "MP3", "M4A", "WebM"):
        assert name in line


# ---------------------------------------------------------------------------------------
# Arrays (Gradio's microphone input)


def test_int16_stereo_array_like_gradio_microphone(tmp_path):
    x = signal(1.2, 16000, 2)
    pcm = np.round(x * 30000).astype(np.int16)
    pcm[100:105, 1] = -32768  # 5 clipped samples in the right channel

    audio = audio_from_array(pcm, 16000, name="microphone")

    facts = audio.facts
    assert (facts.name, facts.format, facts.sample_rate, facts.channels) == ("microphone", "array/int16", 16000, 2)
    assert facts.clipped_samples == 5
    assert list(facts.warnings) == expected_warnings(16000, 2) + ["5 samples are clipped."]
    check_shape(audio, 1.2)
    reference = resample((pcm.astype(np.float64) / 32768).mean(axis=1), 16000)
    np.testing.assert_allclose(audio.samples, reference, atol=1e-6)


@pytest.mark.parametrize("dtype, scale", [(np.int32, 2**31), (np.float64, 1.0), (np.uint8, None)])
def test_other_array_types(dtype, scale, speech):
    x = speech(0.5).astype(np.float64)
    if scale is None:  # unsigned 8-bit: centred on 128
        arr = np.round(x * 127 + 128).astype(np.uint8)
        expected = (arr.astype(np.float64) - 128) / 128
    else:
        arr = (x * (scale - 1)).astype(dtype) if scale > 1 else x
        expected = arr / scale
    audio = audio_from_array(arr, SAMPLE_RATE)
    assert audio.facts.warnings == ()
    np.testing.assert_allclose(audio.samples, expected.astype(np.float32), atol=1e-7)


@pytest.mark.parametrize(
    "samples, rate, words",
    [
        (np.zeros(0, np.int16), 16000, "no audio samples"),
        (np.zeros((4, 4, 4), np.float32), 16000, "shape"),
        (np.array(["a", "b"]), 16000, "type"),
        (np.full(48000, np.inf, np.float32), 48000, "infinite"),
        (np.zeros(500, np.int16), 16000, "one frame"),
        (np.zeros(48000, np.int16), 0, "sample rate"),
        (np.zeros(16000 * 5, np.int16), 16000, "limit"),
        (None, 16000, "No audio"),
    ],
)
def test_bad_arrays_are_refused_by_name(samples, rate, words):
    with pytest.raises(AudioInputError, match=words) as e:
        audio_from_array(samples, rate, name="microphone", limits=AudioLimits(max_duration_s=4))
    assert "microphone" in str(e.value)


# ---------------------------------------------------------------------------------------
# Writing


def test_write_wav_round_trips_exactly(tmp_path):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(SAMPLE_RATE) * 0.8).astype(np.float32)
    x[:3] = [1.7, -2.5, 1e-30]  # beyond full scale and denormal-small: kept as they are

    path = write_wav(tmp_path / "out.wav", x)

    assert path == tmp_path / "out.wav"
    info = sf.info(path)
    assert (info.subtype, info.samplerate, info.channels) == ("FLOAT", SAMPLE_RATE, 1)
    back, _ = sf.read(path, dtype="float32")
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(load_audio(path).samples, x)  # 24 kHz mono passes untouched


def test_write_wav_never_overwrites(tmp_path, speech):
    path = write_wav(tmp_path / "mine.wav", speech(0.5, seed=1))
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        write_wav(path, speech(0.5, seed=2))
    assert path.read_bytes() == before


# ------------------------------------------------------------------ issue 19, finding 12: damaged MP3


def test_a_damaged_mp3_that_states_its_length_is_refused_with_the_truncation_rule(damaged_mp3):
    """Its Info frame states 1.5 s; the decoder stops with errors after 0.24 s. It was accepted
    as a 0.24 s clip without a word."""
    with pytest.raises(AudioInputError, match=r"header promises 1\.50 s .* holds only 0\.\d+ s.*decoder reported"):
        load_audio(damaged_mp3)


def test_an_undamaged_mp3_states_its_length_and_loads_whole(tmp_path, speech):
    from core.audio.readers import mp3_stated_frames
    from tests.conftest import write_mp3

    whole = write_mp3(tmp_path / "whole.mp3", speech(1.5))
    assert mp3_stated_frames(whole) == 65  # 1.5 s in 576-sample MPEG-2 frames, with the encoder's delay
    audio = load_audio(whole)
    assert audio.facts.duration_s == pytest.approx(1.5, abs=0.01) and audio.facts.warnings == ()


def test_a_damaged_mp3_that_states_no_length_is_used_with_a_warning(tmp_path, speech):
    from core.audio.readers import mp3_stated_frames
    from tests.conftest import write_mp3

    path = write_mp3(tmp_path / "no_info.mp3", speech(1.5), xing=False, damage_from=800)
    assert mp3_stated_frames(path) is None
    audio = load_audio(path)
    assert any("decoder reported damaged data" in w and "may have gaps" in w for w in audio.facts.warnings)
