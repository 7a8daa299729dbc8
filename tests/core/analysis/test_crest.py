import numpy as np

from core.analysis.metrics import compare


def test_crest_of_itself_is_zero():
    x = np.sin(np.arange(24000) / 10).astype(np.float32)
    assert {m.name: m for m in compare(x, x, metrics=["CREST"])}["CREST"].value < 1e-6
