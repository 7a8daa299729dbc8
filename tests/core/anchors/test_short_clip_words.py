"""Issue 31, finding 11: a clip one sample short of a codec anchor's minimum was told "needs at least
1 s ... on a 1.00 s clip" (0.99996 s rounded up); it is written with the digits that show it short."""

from __future__ import annotations

import numpy as np

from core.anchors.catalog import ANCHORS
from core.anchors.make import make_anchors
from core.codec import SAMPLE_RATE
from core.units import seconds_short_of
from webui.views.compare_view import problems_markdown


def test_a_clip_just_short_of_the_minimum_reads_short():
    codec = next(a for a in ANCHORS if a.kind == "codec")
    x = np.zeros(int(codec.min_seconds * SAMPLE_RATE) - 1, np.float32)
    (problem,) = make_anchors(x, [codec]).problems
    assert "on a 0.99996 s clip" in problem.message, problem.message
    page = problems_markdown([problem.to_dict()], "en", x.size / SAMPLE_RATE)
    assert "0.99996 s" in page and "1.00 s clip" not in page
    assert seconds_short_of(2.5, 1.0) == "2.50" and seconds_short_of(0.4, 1.0) == "0.40"
