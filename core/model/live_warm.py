"""One short live session at server start, so the first visitor's first packet is not the process's first.

A fresh CPU server with the published model size took 2.6 s for its first session's first 4-frame
packet against 0.3-0.5 s for every packet after it and for the next sessions' first packets, measured
through /live/ws (the Winograd and matmul weights a live decoder prepares once, the oneDNN primitives of
a packet's shapes, the first touch of its buffers). That stall put the first session past the 3 s
lateness bound before it had sent half a second of audio, and it was stopped as "late: server".
:func:`warm` runs the same path a microphone does, unpaced, on a quiet synthetic signal, and then
forgets the frame cost it measured, so admission starts as a fresh server's: from the cap until a
visitor's frames are measured.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from core.codec import SAMPLE_RATE, SAMPLES_PER_FRAME

logger = logging.getLogger(__name__)

WARM_PACKETS = 3  # the first pays the preparation; the next run as a visitor's will
WARM_LEVEL = 1e-3  # a quiet signal, not digital silence: every path runs as on speech


def warm(engine) -> float | None:
    """Seconds one unpaced session of ``WARM_PACKETS`` packets took through ``engine.live``, or None
    when live mode is off or the engine is not ready (nothing is warmed then)."""
    live = engine.live
    if live.limit <= 0 or not engine.ready:
        return None
    started = time.perf_counter()
    samples = WARM_PACKETS * live.packet_frames() * SAMPLES_PER_FRAME
    signal = (WARM_LEVEL * np.random.default_rng(0).standard_normal(samples)).astype(np.float32)
    session = live.open(SAMPLE_RATE, paced=False, name="warm-up")
    try:
        session.push(signal)
        session.finish()
    finally:
        session.close()
        live.frame_cost_s = None  # the preparation is not a visitor's frame cost
    seconds = time.perf_counter() - started
    logger.info("live path warmed in %.1f s (%d packets of %d frames)", seconds, WARM_PACKETS, live.packet_frames())
    return seconds
