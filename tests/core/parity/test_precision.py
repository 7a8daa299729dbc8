"""core/parity/precision.py: the sweep on the CPU (tiny checkpoint), its chunk checks and its recommendation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.codec import SAMPLES_PER_FRAME
from core.errors import CodecError
from core.model.engine import Engine
from core.parity import precision
from core.settings import Settings
from tests.conftest import speechlike


def test_the_sweep_measures_every_precision_against_fp32(engine):
    x = speechlike(2.5, seed=3)
    sweep = precision.sweep(engine, x)
    rows = {r.precision: r for r in sweep.rows}
    assert list(rows) == ["float32", "bfloat16", "float16"]
    fp32 = rows["float32"]
    assert fp32.agreement == [1.0] * 16 and fp32.snr_db == math.inf and not fp32.broken
    for name in ("bfloat16", "float16"):
        r = rows[name]
        assert r.error is None and r.encode_s > 0 and r.decode_s > 0
        assert len(r.agreement) == 16 and 0 <= min(r.agreement) and max(r.agreement) <= 1
        assert r.snr_db is not None and 0 < r.snr_db < 80  # measured, not exact: low precision differs
    assert rows["bfloat16"].codes_equal < 1.0  # with layer scales 1.0, bf16 encodes change codes
    codes = [n.code for n in sweep.recommendation]
    assert codes[0] in ("rec_decode_bf16", "rec_decode_fp32") and "rec_encode_fp32" in codes
    assert codes[-1] == "rec_random" and sweep.random_weights
    doc = sweep.to_dict()
    assert doc["rows"][0]["snr_db"] == "inf" and doc["device"] == "cpu"


def test_the_sweep_refuses_an_engine_not_in_fp32(tiny_checkpoint):
    bf16 = Engine(Settings(model=str(tiny_checkpoint), device="cpu", decode_dtype="bfloat16"))
    with pytest.raises(CodecError, match="--decode-dtype float32"):
        precision.sweep(bf16, np.zeros(100, np.float32))


def test_chunk_health_sees_nan_silence_and_full_scale():
    size = precision.CHUNK_FRAMES * SAMPLES_PER_FRAME
    ref = np.full(3 * size, 0.1, np.float32)
    wav = ref.copy()
    wav[10] = np.nan
    wav[size : 2 * size] = 0.0
    wav[2 * size :] = 1.0
    found = precision.health(wav, ref)
    assert [(c.nonfinite, c.silent, c.saturated) for c in found] == [
        (1, False, False),
        (0, True, False),
        (0, False, True),
    ]
    assert not any(c.broken for c in precision.health(ref, ref))


def row(name, decode_s, equal=1.0, broken=()):
    return precision.PrecisionRow(
        name, precision.LABELS[name], 1.0, decode_s, [equal] * 16, None if equal == 1 else 0, 20.0, 4, list(broken)
    )


def test_the_recommendation_follows_the_measured_times():
    fast = precision.recommend([row("float32", 4.0), row("bfloat16", 2.0, 0.6)], cuda=False)
    assert fast[0].code == "rec_decode_bf16" and fast[0].fields["speedup"] == 2.0
    slow = precision.recommend([row("float32", 4.0), row("bfloat16", 3.5, 0.6)], cuda=False)  # < 1.3x
    assert slow[0].code == "rec_decode_fp32"
    assert [n.code for n in slow][1] == "rec_encode_fp32" and "40.0% of the codes" in slow[1].english()
