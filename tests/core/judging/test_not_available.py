"""Issue 31, finding 5 (the judging half): NaN is "not available" in every metric, MOS and verdict,
never a light; averages skip what is not available and count it. ``verdict.light("MOS drop", nan)``
fell through to amber ("Noticeably degraded") before, a 1e30 file gave a NaN log-mel distance, and
one such file turned a folder's averages into NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.analysis import catalog, metrics
from core.judging import averages, evaluate, per_source, verdict
from tests.conftest import speechlike

NAN = float("nan")


@pytest.mark.parametrize("signal", [m.id for m in catalog.VOTERS])
@pytest.mark.parametrize("value", [NAN, math.inf, -math.inf])
def test_a_value_that_is_not_a_number_has_no_light(signal, value):
    with pytest.raises(ValueError, match="not available"):
        verdict.light(signal, value)


def test_a_verdict_with_nan_signals_is_cannot_judge_never_amber():
    judged = verdict.combine({m.id: NAN for m in catalog.VOTERS}, NAN, NAN, random_weights=False)
    assert judged.level == "unknown" and "cannot judge" in judged.words and not judged.lights
    assert all(v is None for v in judged.values.values())


def test_metrics_of_audio_far_over_full_scale_are_not_available_never_nan():
    huge = (speechlike(2.0, 1) * 1e30).astype(np.float32), (speechlike(2.0, 2) * 1e30).astype(np.float32)
    for m in metrics.compare(*huge):
        assert m.value is None or math.isfinite(m.value), m
    mel = next(m for m in metrics.compare(*huge) if m.name == "Log-mel distance")
    assert mel.value is None and "not available" in mel.note


def test_a_mos_that_comes_out_nan_is_none():
    assert verdict.predictor().predict(np.full(24_000, 3.4e38, np.float32), 24_000) is None


def test_folder_averages_skip_what_is_not_available_and_count_it():
    rows = [
        {"file": "a", "error": "", catalog.PESQ_WB: 3.0, "duration_s": 1.0},
        {"file": "b", "error": "", catalog.PESQ_WB: NAN, "duration_s": 1.0},
        {"file": "c", "error": "", catalog.PESQ_WB: None, "duration_s": 1.0},
    ]
    line = next(r for r in evaluate.summary(rows) if r[0] == catalog.PESQ_WB)
    assert line[1:] == [1, 3.0, 3.0, 3.0, 3.0, 2]  # one file averaged, two left out and counted
    source = {f"codec: {m}": NAN for m in per_source.METRICS}
    header, table = per_source.summary([{"file": "x", "error": "", **source}, {"file": "y", "error": ""}], ["codec"])
    assert "not available" in header
    (codec,) = table
    assert all(v is None for v in codec[2 : 2 + len(per_source.METRICS)])
    assert codec[header.index("not available")] == len(per_source.METRICS)
    assert averages.column([{"v": True}], "v").values == []  # a bool is not a number
