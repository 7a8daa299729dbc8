"""The Live tab's work without Gradio or the socket: a session's blocks in and frames out
(:class:`LiveRun`), and a stopped session become a round-trip result.

``webui.serving.live_socket`` carries the messages; what a block may be, when a session must stop
(behind real time, its length limit) and what is saved is decided here. A reason to stop is a
:class:`LiveEnd` naming the sentence the page gets (a locale key, or the codec error it came from).

``save_result`` writes what ``webui.jobs.codec.roundtrip`` writes (the 24 kHz mono original, the
reconstruction, the token file, the spectrogram comparison) into the session's request folder, the
WAVs by the round trip's one writer (``core.judging.sources.write_sources``, the 16-bit grid), from
the session itself: the recording as the codec heard it and the audio streamed back while it ran
(whose codes equal the offline encode of the recording: tests/core/nn/test_streaming.py). The facts,
token summary and timing go into ``live.json`` beside them, so ``load_result`` can show the result
later from the folder alone (the WebSocket ends before the page asks for it).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import struct
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from core import tokens
from core.analysis import metrics
from core.audio.files import on_grid
from core.errors import CodecError, LiveSessionError
from core.judging import sources
from core.model.live import LiveResult
from webui.jobs.codec import RoundTripOutput

RESULT_FILE = "live.json"  # facts, token summary and timing of a stopped session, in its folder
STEM = "live"  # name stem of a session's files
RESULT_ID = re.compile(r"^req-live-[A-Za-z0-9_]{1,64}$")  # what a result id (its folder's name) may look like
MAX_BLOCK_S = 1.0  # longest block a page may send at once (pages send 20 ms)
MAX_CHANNELS = 8
MAX_BEHIND_S = 3.0  # s behind real time (clock minus audio received) at which a session stops, naming who was late
RATES = (8_000, 192_000)  # microphone rates accepted, Hz
HEADER_OUT = struct.Struct("<4d")  # page clock ms, compute ms, lock wait ms, first frame
HEADER_IN = 8  # bytes of the page's clock before the samples

logger = logging.getLogger(__name__)


class LiveEnd(Exception):
    """The session ends: the page gets the sentence of locale key ``key`` with ``params`` (or of
    ``cause``, the codec error it came from); ``keep``: what was said so far is saved first."""

    def __init__(self, key: str = "", cause: CodecError | None = None, keep: bool = False, **params):
        super().__init__(key or str(cause))
        self.key, self.cause, self.keep, self.params = key, cause, keep, params


def check_format(rate: int, channels: int) -> None:
    """Refuse a microphone format the session cannot take (before a slot is taken)."""
    if not RATES[0] <= rate <= RATES[1] or not 1 <= channels <= MAX_CHANNELS:
        raise LiveEnd("live.error.format", rate=rate, channels=channels)


class LiveRun:
    """One open live session's work: a page's block in, the frames it completed out."""

    def __init__(self, session, rate: int, channels: int, clock: Callable[[], float] = time.monotonic):
        self.session, self.rate, self.channels, self.clock = session, rate, channels, clock
        self.started = clock()
        self.frames_sent = 0
        self.max_bytes = HEADER_IN + int(MAX_BLOCK_S * rate) * channels * 4

    def push(self, data: bytes, arrived: float | None = None) -> bytes | None:
        """A page's binary message through the session; the reply (frames), or None before a frame.
        ``arrived``: when the socket received it (``time.monotonic``; the lateness verdict's split)."""
        if len(data) > self.max_bytes or (len(data) - HEADER_IN) % (4 * self.channels) or len(data) < HEADER_IN:
            raise LiveEnd("live.error.block", seconds=f"{MAX_BLOCK_S:g}")
        clock_ms = struct.unpack_from("<d", data)[0]
        block = np.frombuffer(data, dtype="<f4", offset=HEADER_IN).reshape(-1, self.channels)
        session = self.session
        try:
            step = session.push(block, arrived)
        except LiveSessionError as e:  # at the length limit: keep what was said
            raise LiveEnd(cause=e, keep=session.input.seconds + block.shape[0] / self.rate > session.max_s) from e
        except CodecError as e:
            raise LiveEnd(cause=e) from e
        # behind real time since this run began (trickled blocks count: no frame is needed), then who made it
        # late (the client, another job, or the server)
        late = None
        if self.clock() - self.started - session.input.seconds > MAX_BEHIND_S:
            late = session.lateness(MAX_BEHIND_S)
        if late is not None:
            compute_ms = 1000 * float(np.median(session.frame_compute_s)) if session.frame_compute_s else 0.0
            logger.warning("live session %.1f s behind real time (late: %s); stopping it", late.behind_s, late.who)
            raise LiveEnd(
                f"live.error.late_{late.who}",
                behind=f"{late.behind_s:.1f}",
                received=f"{session.input.seconds:.1f}",
                server=f"{late.server_s:.1f}",
                waited=f"{session.waited_job_s:.1f}",
                ms=f"{compute_ms:.0f}",
            )
        if not step.codes.shape[0]:
            return None
        header = HEADER_OUT.pack(clock_ms, step.compute_s * 1000, step.wait_s * 1000, self.frames_sent)
        self.frames_sent += step.codes.shape[0]
        return header + step.original.astype("<f4").tobytes() + step.samples.astype("<f4").tobytes()

    def finish(self, engine, folder: Path) -> dict:
        """Stop the session and save it as a round-trip result in ``folder``; the page's ``done`` message."""
        started = time.perf_counter()
        try:
            result = self.session.finish()
            save_result(engine, result, folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)  # no half-written result is left to be found by its id
            raise
        logger.info("live session saved to %s in %.2f s", folder.name, time.perf_counter() - started)
        return {"type": "done", "id": folder.name, "stats": result.stats}


def save_result(engine, result: LiveResult, folder: Path, latency: dict | None = None) -> RoundTripOutput:
    """Write a stopped session's files as a round trip does; return them as a RoundTripOutput."""
    start = time.perf_counter()
    recording = result.recording
    token_file = tokens.make_token_file(
        result.codes, recording.samples.size, engine.settings.model, decoder_rate_hz=engine.output_rate
    )
    rate = result.reconstruction_rate_hz  # both at the decoder's rate (core.audio.rates): the recording is 24 kHz
    heard = sources.original(recording.samples).at(rate, result.reconstruction.size)
    made = (heard, sources.codec(result.reconstruction, rate))
    written = sources.write_sources(made, lambda s: folder / sources.file_name(STEM, s.id))  # on the 16-bit grid
    original, reconstruction = written[sources.ORIGINAL_ID], written[sources.CODEC_ID]
    token_path = tokens.save_tokens(token_file, folder / f"{STEM}_tokens.npz")
    figure = metrics.spectrogram_figure(on_grid(heard.samples), on_grid(result.reconstruction), rate)
    png = metrics.figure_to_png(figure, folder / f"{STEM}_spectrogram.png")
    model_s = result.stats["compute_ms_median"] * result.stats["frames"] / 1000
    timing = {
        "encode_s": 0.0,
        "decode_s": 0.0,
        "model_s": model_s,
        "total_s": result.stats["seconds"],
        "ui_s": time.perf_counter() - start,
        "peak_gpu_mib": None,
        "warnings": [],
        "live": {**result.stats, **(latency or {})},
    }
    out = RoundTripOutput(
        original,
        reconstruction,
        token_path,
        png,
        recording.facts.to_dict(),
        token_file.summary(recording.facts.pcm_bps),
        timing,
    )
    record = {"facts": out.facts, "summary": out.summary, "timing": out.timing}
    with open(folder / RESULT_FILE, "x", encoding="utf-8") as f:
        json.dump(record, f)
    return out


def load_result(root: Path, result_id: str) -> RoundTripOutput | None:
    """The result a session left in ``root`` under ``result_id`` (its folder's name), or None when
    the id is malformed or the folder is gone (expired)."""
    if not RESULT_ID.match(result_id or ""):
        return None
    folder = Path(root) / result_id
    record_path = folder / RESULT_FILE
    if not record_path.is_file():
        return None
    record = json.loads(record_path.read_text(encoding="utf-8"))
    return RoundTripOutput(
        folder / f"{STEM}_24k_mono.wav",
        folder / f"{STEM}_reconstruction.wav",
        folder / f"{STEM}_tokens.npz",
        folder / f"{STEM}_spectrogram.png",
        record["facts"],
        record["summary"],
        record["timing"],
    )
