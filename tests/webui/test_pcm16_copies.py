"""Issue 29, item 4: what the listener hears is exactly what was measured, in ≈4× fewer bytes.
The round trip writes 16-bit PCM values (the metrics read those files); the player's FLAC copy
decodes to exactly those samples, block by block at the byte offsets the manifest gives."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from core.audio.files import load_audio, on_grid, write_pcm16, write_wav
from core.codec import SAMPLE_RATE
from tests.conftest import speechlike
from webui.jobs import lab, pcm16_copies
from webui.jobs.codec import measure, roundtrip
from webui.serving.workspace import PREFIX


def test_the_copy_decodes_to_exactly_the_measured_samples(tmp_path):
    folder = tmp_path / f"{PREFIX}x"
    folder.mkdir()
    x = on_grid(0.3 * speechlike(20.0))
    wav = write_pcm16(folder / "a.wav", x)
    copy = pcm16_copies.listening_copy(wav, load_audio(wav).samples)
    assert copy is not None and copy["frames"] == x.size
    assert len(copy["offsets"]) == 1 + -(-x.size // (pcm16_copies.BLOCK_S * SAMPLE_RATE))  # one stream per block
    assert np.array_equal(pcm16_copies.read_copy(copy), load_audio(wav).samples)
    assert sf.info(copy["path"]).subtype == "PCM_16"
    assert copy["offsets"][-1] * 3 < wav.stat().st_size  # speech: well under a third of the float WAV
    assert pcm16_copies.listening_copy(wav, x) == copy  # made once, reused


def test_no_copy_of_what_is_not_on_the_grid_or_not_a_request_file(tmp_path):
    folder = tmp_path / f"{PREFIX}y"
    folder.mkdir()
    x = (0.3 * speechlike(2.0)).astype(np.float32)
    assert pcm16_copies.listening_copy(write_wav(folder / "float.wav", x), x) is None  # the player reads the WAV
    elsewhere = write_pcm16(tmp_path / "example.wav", x)
    assert pcm16_copies.listening_copy(elsewhere, load_audio(elsewhere).samples) is None


def test_the_block_length_is_the_players(tmp_path):
    js = lab.__file__.rsplit("/jobs/", 1)[0] + "/static/player_audio.js"
    assert f"const CW_BLOCK_S = {pcm16_copies.BLOCK_S};" in open(js, encoding="utf-8").read()


def test_a_round_trip_measures_and_serves_the_same_samples(engine, tmp_path, clip):
    folder = tmp_path / f"{PREFIX}trip"
    folder.mkdir()
    out = roundtrip(engine, clip, folder, engine.settings.audio_limits())
    original, made = load_audio(out.original_wav).samples, load_audio(out.reconstruction_wav).samples
    assert np.array_equal(on_grid(made), made) and np.array_equal(on_grid(original), original)
    manifest = lab.first_manifest(out.original_wav, out.reconstruction_wav, engine.settings.audio_limits())
    assert manifest["prefetch"] == ["original", "reconstruction"]
    for path, samples in ((out.original_wav, original), (out.reconstruction_wav, made)):
        assert np.array_equal(pcm16_copies.read_copy(manifest["listen"][str(path)]), samples)
    metrics = {
        m["name"]: m["value"]
        for m in measure(out.original_wav, out.reconstruction_wav, engine.settings.audio_limits()).metrics
    }
    assert np.isfinite(metrics["SI-SDR"])
