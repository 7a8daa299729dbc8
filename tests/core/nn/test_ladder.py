"""The codebook-depth ladder on the tiny random checkpoint: k = 16 is the ordinary decode bit for
bit, k < 16 is qwen-tts's own quantizer given only the first k codebooks, and the hook never
outlives its decode."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from core.errors import SettingsError, TokenFileError
from core.nn import decoding, ladder


@pytest.fixture(scope="module")
def codes(tiny_engine, speechlike_2s):
    return tiny_engine.encode_array(speechlike_2s).codes


@pytest.fixture(scope="module")
def speechlike_2s():
    from tests.conftest import speechlike

    return speechlike(2.0, seed=5)


def _hooked(model) -> list[int]:
    return [i for i, layer in enumerate(model.decoder.quantizer.rvq_rest.vq.layers) if "decode" in vars(layer)]


@pytest.mark.parametrize("k", [1, 2, 5, 15, 16])
def test_first_k_is_the_quantizer_given_k_codebooks(tiny_engine, codes, k):
    """The hook's sum equals qwen-tts's SplitResidualVectorQuantizer fed only the first k rows."""
    quantizer = tiny_engine.model.decoder.quantizer
    batch = torch.from_numpy(codes).T[None]
    with torch.inference_mode():
        expected = quantizer.decode(batch[:, :k])
        with ladder.codebook_depth(tiny_engine.model, k):
            got = quantizer.decode(batch)
    assert torch.equal(got, expected)


def test_k16_is_the_full_decode_exactly_and_fewer_codebooks_change_it(tiny_engine, codes):
    full = tiny_engine.decode(codes).samples
    whole = decoding.decode_whole(tiny_engine.model, torch.from_numpy(codes))
    with torch.inference_mode(), ladder.codebook_depth(tiny_engine.model, 16):
        assert torch.equal(decoding.decode_whole(tiny_engine.model, torch.from_numpy(codes)), whole)
    np.testing.assert_array_equal(tiny_engine.decode(codes, codebooks=16).samples, full)
    outputs = {k: tiny_engine.decode(codes, codebooks=k).samples for k in (1, 4, 15)}
    for k, wav in outputs.items():
        assert wav.shape == full.shape
        assert not np.array_equal(wav, full), f"k={k} decoded the same audio as all 16 codebooks"
    assert not np.array_equal(outputs[1], outputs[4])
    assert _hooked(tiny_engine.model) == []


def test_hook_is_removed_after_an_error(tiny_engine):
    with pytest.raises(RuntimeError), ladder.codebook_depth(tiny_engine.model, 3):
        assert _hooked(tiny_engine.model) == list(range(2, 15))
        raise RuntimeError("boom")
    assert _hooked(tiny_engine.model) == []


def test_a_concurrent_plain_decode_never_sees_the_hook(tiny_engine, codes):
    """The hook changes the shared model; the engine's lock keeps other decodes out meanwhile."""
    full = tiny_engine.decode(codes).samples
    with ThreadPoolExecutor(max_workers=1) as pool:
        plain = pool.submit(lambda: [tiny_engine.decode(codes).samples for _ in range(4)])
        for _ in range(4):
            tiny_engine.decode(codes, codebooks=1)
        results = plain.result()
    assert all(np.array_equal(r, full) for r in results)


def test_decode_ladder_levels_bitrates_and_lengths(tiny_engine, codes):
    seen = []
    rungs = ladder.decode_ladder(tiny_engine, codes, original_samples=47_000, levels="8, 1,2", progress=seen.append)
    assert [r.codebooks for r in rungs] == [1, 2, 8]
    assert [r.bitrate_bps for r in rungs] == [137.5, 275.0, 1100.0]
    assert all(r.samples.shape == (47_000,) for r in rungs)
    assert seen[-1] == pytest.approx(1.0) and seen == sorted(seen)


@pytest.mark.parametrize("levels", ["0", "17", "two", [], "1,,x"])
def test_bad_levels_say_what_to_do(levels):
    with pytest.raises(SettingsError, match="1 to 16|codebooks"):
        ladder.parse_levels(levels)


def test_ladder_obeys_the_duration_cap(tiny_checkpoint):
    from core.model.engine import Engine
    from core.settings import Settings

    engine = Engine(Settings(model=str(tiny_checkpoint), device="cpu", max_duration_s=1.0))
    codes = np.zeros((50, 16), dtype=np.int64)  # 4 s of codes
    with pytest.raises(TokenFileError, match="over the 1.0 s limit"):
        ladder.decode_ladder(engine, codes)  # refused before any model work: the engine is not even loaded
