"""A live session over ``/live/ws`` keeps real time beside another client's 10-minute round trip on a
CPU (tiny checkpoint), and the round trip's result is unchanged.

The server is the route on uvicorn over a real socket, in this process; the round trip runs in a
thread of it as a web worker runs it (``webui.jobs.codec.roundtrip``: reading and resampling a
44.1 kHz WAV, the default reference codecs, the encode and decode, the WAVs and the spectrogram).
The microphone is ``bench.live_pacer`` in a process of its own: 20 ms blocks at 48 kHz, each sent
when a microphone would have it, for as long as the trip runs. Before the batch work outside the
lock yielded the CPU (``core.model.cpu_share``) and the quantizer handed the lock over between
pieces, the session was stopped after a few seconds ("The server fell 3.1 s behind real time"); after
them, until a session with blocks queued held the job back (``core.model.turns.TurnLock.pending``),
still after 7 s ("waited 3.0 s for it and fell 3.1 s behind"): the job took the lock back between two
of the session's frames. ``python -m bench.live_beside_job`` runs the same and says where the session
waited (its results: ``bench/results/live_beside_job-after-pending10.md``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from bench import live_beside_job
from bench.live_pacer import speechlike
from core.audio.files import load_audio, on_grid
from core.model.engine import Engine
from core.settings import Settings
from webui.serving.workspace import Workspace

pytestmark = [pytest.mark.long, pytest.mark.alone]  # a 10-minute clip, twice, in real time, on the 2 cores

MINUTES = 10.0


def test_a_live_session_keeps_real_time_beside_another_clients_ten_minute_round_trip(tiny_checkpoint, tmp_path):
    engine = Engine(
        Settings(model=str(tiny_checkpoint), device="cpu", live_sessions=1), lock=live_beside_job.TimedLock()
    )
    assert engine.load(), engine.error
    wav = tmp_path / "long.wav"
    sf.write(wav, speechlike(MINUTES * 60, rate=44_100, seed=5), 44_100, subtype="PCM_16")
    alone = engine.roundtrip(load_audio(wav, engine.settings.audio_limits()))  # the reference: nothing beside it
    port, server = live_beside_job.serve(engine, Workspace(tmp_path / "work"))
    try:
        run = live_beside_job.one_run(engine, wav, tmp_path, False, port, MINUTES)
    finally:
        server.should_exit = True
    pacer, got = run["pacer"], run["_result"]
    why = {k: run[k] for k in ("live", "lock_holds", "cpu_s_by_thread", "phases")}
    print(json.dumps({"pacer": pacer, "job_s": run["job_s"], **why}))  # shown when it fails
    assert pacer["error"] is None and pacer["end"] == "done", (pacer, why)  # not stopped: saved as a result
    assert pacer["sent_s"] >= run["job_s"], (pacer, why)  # it ran the whole trip through, in real time
    np.testing.assert_array_equal(got["codes"], alone.encoded.codes)
    np.testing.assert_array_equal(got["samples"][1], on_grid(alone.decoded.samples))  # the WAV as written
    assert engine.live.in_use == 0
