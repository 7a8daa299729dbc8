"""The live path warmed at server start (core.model.live_warm): one short unpaced session through the
same path a microphone takes, nothing left open, and admission as a fresh server's."""

from __future__ import annotations

import numpy as np
import pytest

from core.model import live_warm
from core.model.engine import Engine
from core.settings import Settings

pytestmark = pytest.mark.usefixtures("single_thread")  # see tests/conftest.py


def _engine(checkpoint, **settings) -> Engine:
    engine = Engine(Settings(model=str(checkpoint), device="cpu", **settings))
    assert engine.warm_up().ok, engine.error
    return engine


def test_the_warm_up_runs_the_live_decoder_and_leaves_the_server_as_it_was(tiny_checkpoint):
    engine = _engine(tiny_checkpoint, live_packet_frames=2, live_winograd=6)
    fast = engine._fast
    assert not fast._winograd_convs  # the readiness check decodes offline: the live products are not made yet
    seconds = live_warm.warm(engine)
    assert seconds is not None and seconds > 0
    convs = fast.stream_convs(6)
    assert convs is not fast.convs and convs._prepared  # the live decoder's weights, prepared once, are there
    assert engine.live.in_use == 0  # its session is closed
    assert engine.live.frame_cost_s is None  # the preparation is not a visitor's frame cost
    with engine.live.open(24_000, paced=False) as session:  # the next session runs as ever
        session.push(np.full(4 * 1920, live_warm.WARM_LEVEL, dtype=np.float32))
        assert session.finish().codes.shape[0] == 4


def test_nothing_is_warmed_with_live_off_or_without_a_model(tiny_checkpoint, tmp_path):
    assert live_warm.warm(_engine(tiny_checkpoint, live_sessions=0)) is None
    missing = Engine(Settings(model=str(tmp_path / "nowhere"), device="cpu"))
    assert not missing.warm_up().ok
    assert live_warm.warm(missing) is None
