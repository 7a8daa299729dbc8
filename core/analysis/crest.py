"""Crest-factor change (scratch)."""

from __future__ import annotations

import numpy as np


def crest_metric(row, clip):
    from core.analysis.metrics import metric

    def crest(x):
        return 20 * np.log10(np.abs(x).max() / max(float(np.sqrt(np.mean(x**2))), 1e-9) + 1e-9)

    ref, deg, _ = clip.signals(row)
    return metric(row, abs(crest(ref) - crest(deg)))
