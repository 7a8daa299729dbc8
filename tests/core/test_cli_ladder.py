"""``python -m core ladder`` as a user runs it (in this process: the ``cli`` fixture): files out, one-line errors."""

import json

import numpy as np
import soundfile as sf

from core.tokens import make_token_file, save_tokens


def test_ladder_of_an_audio_file_and_of_a_token_file(tiny_checkpoint, tiny_engine, tmp_path, speech, cli):
    wav = tmp_path / "clip.wav"
    sf.write(wav, speech(1.5), 24_000, subtype="FLOAT")
    proc = cli("ladder", wav, "-o", tmp_path / "lad", "--levels", "16,1", "--model", tiny_checkpoint)
    assert proc.returncode == 0, proc.stderr
    encoded = tiny_engine.encode_array(sf.read(wav, dtype="float32")[0])
    full = tiny_engine.decode(encoded.codes, original_samples=encoded.original_samples).samples
    k16 = sf.read(tmp_path / "lad" / "clip.k16.wav", dtype="float32")[0]
    k1 = sf.read(tmp_path / "lad" / "clip.k01.wav", dtype="float32")[0]
    np.testing.assert_array_equal(k16, full)  # the full decode, exactly
    assert k1.shape == full.shape and not np.array_equal(k1, full)
    report = json.loads((tmp_path / "lad" / "clip.ladder.json").read_text())
    assert [(r["codebooks"], r["bitrate_bps"]) for r in report["levels"]] == [(1, 137.5), (16, 2200.0)]
    assert all("SI-SDR" in r and "Log-mel distance" in r for r in report["levels"])

    tokens = save_tokens(make_token_file(encoded.codes, encoded.original_samples, "x"), tmp_path / "clip.npz")
    proc = cli("ladder", tokens, "-o", tmp_path / "tok", "--levels", "3", "--model", tiny_checkpoint)
    assert proc.returncode == 0, proc.stderr
    k3 = sf.read(tmp_path / "tok" / "clip.k03.wav", dtype="float32")[0]
    np.testing.assert_array_equal(k3, tiny_engine.decode(encoded.codes, 36_000, codebooks=3).samples)


def test_ladder_errors_are_one_line(tiny_checkpoint, tmp_path, speech, cli):
    wav = tmp_path / "clip.wav"
    sf.write(wav, speech(1.5), 24_000)
    proc = cli("ladder", wav, "-o", tmp_path / "o", "--levels", "0,17", "--model", tiny_checkpoint)
    assert proc.returncode == 1 and proc.stderr.startswith("error: Ladder level") and "Traceback" not in proc.stderr
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "clip.k02.wav").write_bytes(b"mine")
    proc = cli("ladder", wav, "-o", tmp_path / "o", "--levels", "1,2", "--model", tiny_checkpoint)
    assert proc.returncode == 1 and "already exists" in proc.stderr
    assert not (tmp_path / "o" / "clip.k01.wav").exists()  # refused before any work
    assert (tmp_path / "o" / "clip.k02.wav").read_bytes() == b"mine"
    proc = cli("ladder", wav, "-o", tmp_path / "short", "--max-duration", "1", "--model", tiny_checkpoint)
    assert proc.returncode == 1 and "limit" in proc.stderr
