"""Token files: lossless round trips, and a clear TokenFileError for every kind of bad file."""

from __future__ import annotations

import importlib.metadata
import json
from datetime import datetime

import numpy as np
import pytest

from core import tokens
from core.errors import CodecError, TokenFileError
from core.tokens import load_tokens, make_token_file, save_tokens

SOURCE = "Qwen/Qwen3-TTS-Tokenizer-12Hz"


def random_codes(frames: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2048, size=(frames, 16))


def valid_file(frames: int = 5, seed: int = 0) -> tokens.TokenFile:
    return make_token_file(random_codes(frames, seed), frames * 1920 - 7, SOURCE)


def write_raw(path, codes, drop=(), **overrides):
    """A token file written by hand, so that any part of it can be wrong. The checksum is
    correct for ``codes`` unless overridden."""
    good = valid_file()
    meta = good._metadata()
    codes = np.asarray(codes)
    if np.issubdtype(codes.dtype, np.integer) and codes.ndim == 2:
        meta["original_samples"] = codes.shape[0] * 1920
        meta["codes_sha256"] = tokens._checksum(codes)
    else:
        meta["codes_sha256"] = "0" * 64
    meta.update(overrides)
    for name in drop:
        del meta[name]
    np.savez(path, codes=codes, metadata=np.array(json.dumps(meta)))
    return path


@pytest.mark.parametrize("frames", [1, 2, 375, 4001])
def test_round_trip_is_lossless(tmp_path, frames):
    original = make_token_file(
        random_codes(frames, seed=frames), frames * 1920 - 100, SOURCE, versions={"qwen-tts": "9.9"}
    )
    path = save_tokens(original, tmp_path / "clip.npz")
    loaded = load_tokens(path)
    assert loaded == original
    assert np.array_equal(loaded.codes, original.codes)
    assert loaded.codes.dtype == np.int16 and loaded.codes.shape == (frames, 16)
    for name in ("sample_rate", "frame_rate", "original_samples", "model_source", "versions", "created"):
        assert getattr(loaded, name) == getattr(original, name), name
    assert loaded != valid_file(frames=frames, seed=frames + 1)


def test_extreme_code_values_survive(tmp_path):
    codes = np.zeros((3, 16), dtype=np.int64)
    codes[1] = 2047
    loaded = load_tokens(save_tokens(make_token_file(codes, 3 * 1920, SOURCE), tmp_path / "x.npz"))
    assert np.array_equal(loaded.codes, codes)


def test_codes_are_copied_and_read_only():
    codes = random_codes(4)
    token_file = make_token_file(codes, 4 * 1920, SOURCE)
    codes[0, 0] = (codes[0, 0] + 1) % 2048
    assert token_file.codes[0, 0] != codes[0, 0]
    with pytest.raises(ValueError):
        token_file.codes[0, 0] = 1


def test_make_fills_versions_and_time():
    token_file = make_token_file(random_codes(2), 3000, SOURCE, versions={"qwen-tts": "test"})
    assert set(tokens.PACKAGES) <= set(token_file.versions)
    assert token_file.versions["qwen-tts"] == "test"
    assert token_file.versions["torch"] == importlib.metadata.version("torch")
    created = datetime.fromisoformat(token_file.created)
    assert created.utcoffset().total_seconds() == 0


def test_make_accepts_tensors():
    torch = pytest.importorskip("torch")
    codes = torch.from_numpy(random_codes(3))
    assert np.array_equal(make_token_file(codes, 3 * 1920, SOURCE).codes, codes.numpy())


@pytest.mark.parametrize(
    "codes, samples, message",
    [
        (np.zeros((4, 8), dtype=int), 4 * 1920, "shape"),
        (np.zeros(16, dtype=int), 1920, "shape"),
        (np.zeros((0, 16), dtype=int), 1, "zero frames"),
        (np.full((2, 16), 2048), 2 * 1920, "0..2047"),
        (np.full((2, 16), -1), 2 * 1920, "0..2047"),
        (np.zeros((2, 16), dtype=float), 2 * 1920, "integers"),
        (np.zeros((2, 16), dtype=int), 1920, "does not fit"),
        (np.zeros((2, 16), dtype=int), 2 * 1920 + 1, "does not fit"),
    ],
)
def test_make_rejects_impossible_codes(codes, samples, message):
    with pytest.raises(ValueError, match=message):
        make_token_file(codes, samples, SOURCE)


def test_summary_numbers():
    token_file = make_token_file(random_codes(25), 25 * 1920, SOURCE)  # exactly 2 s
    info = token_file.summary(original_pcm_bps=44_100 * 16 * 2)
    assert token_file.duration_s == pytest.approx(2.0)
    assert info["frames"] == 25 and info["codebooks"] == 16
    assert info["tokens_per_second"] == 200
    assert info["bitrate_bps"] == pytest.approx(2200)
    assert info["compression_vs_pcm24k"] == pytest.approx(384_000 / 2200)
    assert info["compression_vs_original"] == pytest.approx(1_411_200 / 2200)
    padded = make_token_file(random_codes(25), 24 * 1920 + 1, SOURCE)
    assert padded.bitrate_bps > 2200  # the padded last frame costs bits
    assert "compression_vs_original" not in padded.summary()


def test_codes_summary():
    info = tokens.codes_summary(125)
    assert info["duration_s"] == pytest.approx(10.0)
    assert info["tokens"] == 2000 and info["bits"] == 22_000 and info["bytes"] == 2750


def test_refuses_to_overwrite(tmp_path):
    path = save_tokens(valid_file(seed=1), tmp_path / "clip.npz")
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="already exists"):
        save_tokens(valid_file(seed=2), path)
    assert path.read_bytes() == before
    assert np.array_equal(load_tokens(path).codes, valid_file(seed=1).codes)


def _not_zip(path, data: bytes):
    path.write_bytes(data)
    return path


def _npy(path, array):
    with open(path, "wb") as f:
        np.save(f, array)
    return path


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


CORRUPTIONS = {
    "empty file": (lambda p: _not_zip(p, b""), "empty"),
    "wav renamed": (lambda p: _not_zip(p, b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(64)), "WAV file"),
    "random bytes": (lambda p: _not_zip(p, np.random.default_rng(0).bytes(5000)), "not a .npz"),
    "bare npy": (lambda p: _npy(p, random_codes(2)), "single .npy"),
    "no metadata": (lambda p: _npz(p, codes=random_codes(2)), "lacks metadata"),
    "no codes": (lambda p: _npz(p, metadata=np.array("{}")), "lacks codes"),
    "metadata not json": (lambda p: _npz(p, codes=random_codes(2), metadata=np.array("not json {")), "not valid JSON"),
    "metadata a number array": (lambda p: _npz(p, codes=random_codes(2), metadata=np.arange(3)), "not a JSON string"),
    "metadata a json list": (
        lambda p: _npz(p, codes=random_codes(2), metadata=np.array("[1, 2]")),
        "not a JSON object",
    ),
    "wrong format name": (
        lambda p: write_raw(p, random_codes(2), format="other-tool"),
        "not a Codec Workbench token file",
    ),
    "newer version": (lambda p: write_raw(p, random_codes(2), format_version=2), "newer Codec Workbench.*Upgrade"),
    "bad version": (lambda p: write_raw(p, random_codes(2), format_version="1"), "not valid"),
    "missing field": (
        lambda p: write_raw(p, random_codes(2), drop=["original_samples"]),
        "lacks the field 'original_samples'",
    ),
    "field of wrong type": (
        lambda p: write_raw(p, random_codes(2), model_source=None),
        "'model_source' has the wrong type",
    ),
    "wrong sample rate": (lambda p: write_raw(p, random_codes(2), sample_rate=16_000), "24000 Hz"),
    "wrong frame rate": (lambda p: write_raw(p, random_codes(2), frame_rate=25.0), "frames/s"),
    "wrong codebook count": (lambda p: write_raw(p, random_codes(2), num_codebooks=8), "num_codebooks"),
    "codes 1-D": (lambda p: write_raw(p, np.arange(16)), r"shape \(frames, 16\)"),
    "codes 8 wide": (lambda p: write_raw(p, random_codes(4)[:, :8]), r"not \(4, 8\)"),
    "zero frames": (lambda p: write_raw(p, np.zeros((0, 16), dtype=np.int16)), "zero frames"),
    "float codes": (lambda p: write_raw(p, random_codes(2).astype(np.float32)), "integers"),
    "code too large": (lambda p: write_raw(p, np.full((2, 16), 2048)), "0..2047"),
    "negative code": (lambda p: write_raw(p, np.full((2, 16), -3)), "0..2047"),
    "length too short": (lambda p: write_raw(p, random_codes(3), original_samples=2 * 1920), "does not fit 3 frames"),
    "length too long": (
        lambda p: write_raw(p, random_codes(3), original_samples=3 * 1920 + 1),
        "does not fit 3 frames",
    ),
    "checksum mismatch": (lambda p: write_raw(p, random_codes(2), codes_sha256="ab" * 32), "checksum"),
}


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_corrupt_files_are_refused_clearly(tmp_path, kind):
    make, message = CORRUPTIONS[kind]
    path = make(tmp_path / "bad-file.npz")
    with pytest.raises(TokenFileError, match=message) as caught:
        load_tokens(path)
    assert "bad-file.npz" in str(caught.value)  # names the file
    assert isinstance(caught.value, CodecError)


def test_edited_code_fails_checksum(tmp_path):
    path = save_tokens(valid_file(), tmp_path / "clip.npz")
    with np.load(path) as npz:
        codes, metadata = npz["codes"].copy(), npz["metadata"]
    codes[2, 5] = (codes[2, 5] + 1) % 2048
    edited = tmp_path / "edited.npz"
    np.savez_compressed(edited, codes=codes, metadata=metadata)
    with pytest.raises(TokenFileError, match="checksum"):
        load_tokens(edited)


def test_truncated_file_is_refused(tmp_path):
    path = save_tokens(valid_file(frames=400), tmp_path / "clip.npz")
    data = path.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TokenFileError, match="cut.npz"):
        load_tokens(cut)


def test_pickled_object_array_is_refused(tmp_path):
    path = tmp_path / "pickle.npz"
    payload = np.array([{"codes": [1, 2, 3]}], dtype=object)
    np.savez(path, codes=payload, metadata=np.array("{}"))
    with pytest.raises(TokenFileError, match="cannot be read safely"):
        load_tokens(path)


def test_pickled_metadata_is_refused(tmp_path):
    path = tmp_path / "pickle-meta.npz"
    np.savez(path, codes=random_codes(2), metadata=np.array(["x", None], dtype=object))
    with pytest.raises(TokenFileError, match="cannot be read safely"):
        load_tokens(path)


def test_oversized_file_is_refused(tmp_path, monkeypatch):
    path = save_tokens(valid_file(frames=100), tmp_path / "big.npz")
    monkeypatch.setattr(tokens, "MAX_FILE_BYTES", path.stat().st_size - 1)
    with pytest.raises(TokenFileError, match="limit"):
        load_tokens(path)


def test_zip_bomb_is_refused(tmp_path, monkeypatch):
    path = save_tokens(valid_file(frames=100), tmp_path / "bomb.npz")
    monkeypatch.setattr(tokens, "MAX_UNCOMPRESSED_BYTES", 1000)
    with pytest.raises(TokenFileError, match="unpacks to over"):
        load_tokens(path)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(TokenFileError, match="nothing-here.npz"):
        load_tokens(tmp_path / "nothing-here.npz")


def test_a_folder_is_refused_clearly(tmp_path):
    # used to escape as IsADirectoryError (a traceback in the CLI)
    with pytest.raises(TokenFileError, match=tmp_path.name):
        load_tokens(tmp_path)


def test_extra_arrays_in_the_archive_are_ignored(tmp_path):
    good = valid_file()
    path = save_tokens(good, tmp_path / "codes.npz")
    import zipfile

    with zipfile.ZipFile(path, "a") as archive:
        with archive.open("extra.npy", "w") as f:
            np.lib.format.write_array(f, np.arange(3))
    assert load_tokens(path) == good


def test_a_giant_declared_shape_is_named_not_a_memory_error(tmp_path):
    """Issue 8, item 6: a few bytes of codes under a header that declares (10**12, 16). NumPy
    would allocate the declared shape before reading."""
    import io
    import zipfile

    path = write_raw(tmp_path / "giant.npz", random_codes(4))
    header = io.BytesIO()
    np.lib.format.write_array_header_2_0(header, {"descr": "<i2", "fortran_order": False, "shape": (10**12, 16)})
    with zipfile.ZipFile(path) as archive:
        metadata = archive.read("metadata.npy")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("codes.npy", header.getvalue() + b"\0" * 128)
        archive.writestr("metadata.npy", metadata)
    with pytest.raises(TokenFileError, match=r"declares shape \(1000000000000, 16\).*damaged or was crafted"):
        load_tokens(path)


def test_a_token_bomb_is_refused_from_its_header_before_anything_is_unpacked(token_bomb):
    """Issue 19, finding 4: 1 MB on disk, 256 MB of codes; refused at once, with no memory spent."""
    import time

    import psutil

    process = psutil.Process()
    before, started = process.memory_info().rss, time.monotonic()
    with pytest.raises(TokenFileError, match=r"bomb_tokens\.npz: These codes decode to .* over the 30\.0 min limit"):
        load_tokens(token_bomb)
    assert time.monotonic() - started < 1.0
    assert process.memory_info().rss - before < 100 * (1 << 20)
    with pytest.raises(
        TokenFileError, match=r"long\.npz: These codes decode to 60\.1 s of audio, over the 60\.0 s limit"
    ):  # the reader's own limit applies
        load_tokens(save_tokens(valid_file(frames=751), token_bomb.parent / "long.npz"), max_duration_s=60.0)
    assert load_tokens(save_tokens(valid_file(frames=750), token_bomb.parent / "ok.npz"), max_duration_s=60.0)
