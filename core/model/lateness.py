"""Why a live session fell behind real time: the server, another job, or the client.

``LiveSession.lateness`` asks :func:`judge_lateness`; the transports stop a session with the message
(webui/jobs/live.py), and the words name who was late, by how much, and what to do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Lateness:
    """Why a session fell behind real time (``LiveSession.lateness``)."""

    who: str  # "client" (sent audio late), "job" (another job held the model), "server" (model work)
    behind_s: float  # wall time since the session opened minus the audio received
    server_s: float  # the server's share: push time beyond the audio's length
    client_s: float  # the rest: time the client's audio came late
    message: str  # for the user: who was late, by how much, what to do


def judge_lateness(session, bound_s: float, now: float | None = None) -> Lateness | None:
    """Who made this session fall more than ``bound_s`` behind real time, or None while it keeps up.

    ``behind`` is the wall time since the session opened minus the audio received. Where the transport
    timed the last block's arrival (``LiveSession.last_arrival``), the client's share is how late that
    block arrived for the audio it completes (a slow network, a paused page, a microphone that
    stopped) and the rest, the time it then waited behind this server's work and was worked on, is
    the server's: blocks that queue in the socket behind a busy server are the server's lateness.
    Without it, the server's share is the time its pushes took beyond the audio's own length (pushes
    run one at a time, so while one runs nothing else of this session can) and the rest the client's.
    Within the server's share, the waits for another job's chunk and the model work are told apart.
    Unpaced sessions (the CLI) are never late."""
    if not session.paced:
        return None
    now = time.monotonic() if now is None else now
    received = session.input.seconds
    behind = now - session.started - received
    if behind <= bound_s:
        return None
    arrived = session.last_arrival
    if arrived is not None:
        client = min(behind, max(0.0, arrived - session.started - received))
        server = behind - client
    else:
        server = max(0.0, session.pushes_s - received)
        client = behind - server
    frames = len(session.frame_compute_s)
    compute_ms = 1000 * float(np.median(session.frame_compute_s)) if frames else 0.0
    if client >= server:
        who = "client"
        message = (
            f"Your audio arrives slower than real time: {behind:.1f} s behind the clock after "
            f"{received:.1f} s of audio (the server's work accounts for {server:.1f} s of it). "
            "Check the connection, keep the page in front, and start again."
        )
    elif session.waited_job_s >= server / 2:
        who = "job"
        message = (
            f"Another job held the model: this session waited {session.waited_job_s:.1f} s for it and "
            f"fell {behind:.1f} s behind real time. Start again when it is done."
        )
    else:
        who = "server"
        message = (
            f"The server fell {behind:.1f} s behind real time: model work per 80 ms frame is "
            f"{compute_ms:.0f} ms here ({session.owner.in_use} live session(s), {session.waited_live_s:.1f} s "
            "waiting for the others' frames). Try again with fewer sessions, or on a faster device."
        )
    return Lateness(who, behind, server, client, message)
