"""The doctor's precision line points to the sweep (docs/parity.md), on a CPU and on a GPU."""

from __future__ import annotations

import pytest

from core.doctor import host


@pytest.mark.parametrize(
    "device,timings", [("cuda:0", None), ("cpu", None), ("cpu", {"float32": 0.3, "bfloat16": 0.1})]
)
def test_the_precision_line_names_the_sweep(device, timings):
    found = host.check_cpu_decode(device, "float32", "Some CPU", timings, 4)
    assert found.evidence.endswith("`python -m core precision CLIP`, or the Check a port tab (docs/parity.md)")
