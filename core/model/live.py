"""A live session: a microphone's blocks through the one model, shared with every other job.

A :class:`LiveSession` owns a ``core.nn.streaming`` input, encoder and decoder, and does its model
work through ``Engine.frame_work``: under the engine's lock, one frame at a time (encode, then decode
under each operation's backend flags), so another user's job waits for at most one frame's work. On a
GPU the sessions share one batched step instead (``core.model.live_batcher``): each frame is a row
of it. A caller that reads input ahead of the session (a socket's unread blocks) says so with
:meth:`LiveSession.expect`, and a job then hands the model over until the session has caught up
(``core.model.turns``). ``core.model.live_sessions`` admits sessions (``engine.live``).

Bounds: a session takes at most ``min(live_max_s, max_duration_s)`` of audio, then refuses with a
message; it refuses input that runs ahead of real time by more than ``PACE_SLACK_S`` (a client that
sends faster than it speaks), so what it holds never grows faster than a microphone's output; its
encoder keys/values follow the engine's offload rule and are sized for the maximum length.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

import numpy as np

from core.codec import NUM_CODEBOOKS, SAMPLE_RATE
from core.errors import LiveSessionError, OutOfMemory
from core.model import memory, planner
from core.model.lateness import Lateness, judge_lateness
from core.model.live_batcher import RESAMPLER_SLACK_SAMPLES, BatchedStream
from core.model.live_results import LiveResult, LiveStep, heard_at, session_result
from core.nn.encoding import conv_context_samples
from core.nn.streaming import MicrophoneInput, StreamingDecoder, StreamingEncoder
from core.units import minutes

logger = logging.getLogger(__name__)

PACE_SLACK_S = 2.0  # input may run this far ahead of the wall clock (network bursts), then is refused
LOCK_YIELD_S = 0.0005  # pause between two frames of one block, so a job waiting for the lock gets it


class LiveSession:
    """One microphone through the codec; ``owner`` is the engine's ``core.model.live_sessions.LiveSessions``.
    Thread-safe: pushes from several threads run one at a time."""

    def __init__(self, owner, sample_rate: int, channels: int, paced: bool, name: str):
        self.owner, self.engine = owner, owner.engine
        self.max_s = owner.max_seconds()
        self.paced = paced
        # the input's own cap sits past the session's: this class refuses first, with a live message
        limits = dataclasses.replace(self.engine.settings.audio_limits(), max_duration_s=self.max_s + 1.0)
        self.input = MicrophoneInput(sample_rate, channels, limits, name)
        self.encoder: StreamingEncoder | None = None
        self.decoder: StreamingDecoder | None = None
        self.batched: BatchedStream | None = None  # the shared batched step instead of the two above
        self.codes: list[np.ndarray] = []
        self.audio: list[np.ndarray] = []
        self.frame_compute_s: list[float] = []  # model time per frame
        self.pushes_s = 0.0  # wall time spent inside push (model work and lock waits): the server's share
        self.compute_total_s = 0.0  # model work, lock held
        self.waited_job_s = 0.0  # waiting for the lock while another job (not a live frame) held it
        self.waited_live_s = 0.0  # waiting for the lock while other live sessions' frames held it
        self._unmatched = np.zeros(0, np.float32)  # 24 kHz input not yet returned beside its frame's audio
        self.started = self.last_input = time.monotonic()
        self.last_arrival: float | None = None  # when the transport got the last block (monotonic; None: untimed)
        self.closed = False
        self._push_lock = threading.Lock()

    def start(self) -> None:
        """Check the memory it may need and build its state (under the engine's lock)."""
        estimate = self.engine.estimate("roundtrip", seconds=self.max_s)  # the keys/values of a full session
        if not estimate.fits:
            raise OutOfMemory(f"A live session does not fit now: {estimate.message}")
        max_samples = int(self.max_s * SAMPLE_RATE) + RESAMPLER_SLACK_SAMPLES
        kv = planner.base_plan(self.engine.settings).kv_device_bytes  # the engine's offload rule
        graphs = self.engine.settings.live_graphs and self.engine.settings.is_cuda
        packet = self.owner.packet_frames()  # frames per step (CPU: one pass over the weights per packet)
        if self.owner.use_batch():
            with self.engine.model_work("encode") as (model, runner):  # captures under each operation's flags
                batcher = self.owner.batcher(model, runner)
            if batcher is not None:
                self.batched = BatchedStream(batcher, conv_context_samples(model), max_samples)
        if self.batched is None:
            with self.engine.model_work("encode") as (model, _runner):  # captured under each operation's flags
                self.encoder = StreamingEncoder(model, max_samples, kv, graphs, packet)
            with self.engine.model_work("decode") as (_model, runner):
                self.decoder = StreamingDecoder(runner, graphs, packet, self.engine.settings.live_winograd)
        self.started = self.last_input = time.monotonic()
        logger.info(
            "live session opened: %d Hz, %d ch, at most %s (%d of %d in use)",
            self.input.source.sample_rate,
            self.input.source.channels,
            minutes(self.max_s),
            self.owner.in_use,
            self.owner.limit,
        )

    # ---- input ----------------------------------------------------------------------------------
    def expect(self, queued: bool) -> None:
        """The caller has at least a frame of input for this session that it has not pushed yet (a
        socket's unread blocks), or has not: while it has, a job hands the model over to this session
        until it has caught up (``core.model.turns``; said after each push, it lasts ``PENDING_S``).
        Callers that cannot tell need not call it."""
        self.engine.live_pending(self, queued and not self.closed)

    def push(self, block: np.ndarray, arrived: float | None = None) -> LiveStep:
        """Take a block of microphone samples; return the frames it completed (``arrived``: ``lateness``)."""
        with self._push_lock:
            self._check_open()
            self.last_arrival = arrived
            block = np.asarray(block, dtype=np.float32)
            seconds = block.shape[0] / self.input.source.sample_rate
            received = self.input.seconds + seconds
            if received > self.max_s:
                raise LiveSessionError(
                    f"The live session reached its {minutes(self.max_s)} limit (--live-max-s); "
                    "stop it and start a new one."
                )
            ahead = received - (time.monotonic() - self.started)
            if self.paced and ahead > PACE_SLACK_S:
                raise LiveSessionError(
                    f"Audio arrives faster than real time ({ahead:.1f} s ahead of the clock); send it as it is spoken."
                )
            self.last_input = time.monotonic()
            try:
                return self.owner.on_model_thread(self._run, self.input.push(block))
            finally:
                if self.closed:  # closed from another thread while this block ran
                    self._free()

    def finish(self) -> LiveResult:
        """Stop: encode and decode the last partial frame, close, and return the whole session."""
        with self._push_lock:
            self._check_open()
            try:
                self.owner.on_model_thread(self._run, self.input.end(), True)
                recording = self.input.recording()
            finally:
                self.closed = True
                self.owner._release(self)
                self.expect(False)
                self._free()
        return session_result(self, recording)

    def _run(self, samples: np.ndarray, last: bool = False) -> LiveStep:
        """Encode and decode, one frame's worth of samples per short turn of the engine's lock."""
        if self.batched is not None:
            return self._run_batched(samples, last)
        enc, dec = self.encoder, self.decoder
        assert enc is not None and dec is not None
        codes_out, audio_out, compute, wait, offset = [], [], 0.0, 0.0, 0
        entered = time.perf_counter()
        while True:
            room = enc.next_end - enc.samples_in  # samples to the next packet's end
            piece = samples[offset : offset + room]
            offset += piece.size
            final = last and offset >= samples.size
            if piece.size == 0 and not final:
                break
            if not final and enc.samples_in + piece.size < enc.next_end:
                enc.push(piece)  # completes no frame: buffered, no model work, no lock
                continue
            began = time.perf_counter()
            try:
                with self.engine.frame_work("encode") as (_model, _runner, (waited, blocker)):
                    codes = enc.push(piece)
                    if final:
                        codes = np.concatenate([codes, enc.finish()])
                self._account_wait(waited, blocker)
                if codes.shape[0]:
                    with self.engine.frame_work("decode") as (_model, _runner, (waited_decode, blocker)):
                        audio_out.append(dec.push(codes))
                    self._account_wait(waited_decode, blocker)
                    waited += waited_decode
                    codes_out.append(codes)
            except Exception as e:
                if not memory.is_out_of_memory(e):
                    raise
                self.close()
                memory.release_cached(self.engine.device)
                raise OutOfMemory(
                    "The live session ran out of device memory and was stopped; free memory "
                    "(Clear VRAM, stop other GPU programs) and start again."
                ) from e
            frame_s = time.perf_counter() - began - waited  # model work of this frame, lock held
            if codes.shape[0]:  # a packet's work, shared by its frames (the admission's cost is per frame)
                self.frame_compute_s.extend([frame_s / codes.shape[0]] * codes.shape[0])
                self.engine.live.observe(frame_s / codes.shape[0])
            compute, wait = compute + frame_s, wait + waited
            if final:
                break
            if offset < samples.size:
                time.sleep(LOCK_YIELD_S)  # Python's lock is not fair: a job asking with ``with lock:`` gets a chance
        self.pushes_s += time.perf_counter() - entered
        self.compute_total_s += compute
        new_codes = np.concatenate(codes_out) if codes_out else np.zeros((0, NUM_CODEBOOKS), np.int64)
        new_audio = np.concatenate(audio_out) if audio_out else np.zeros(0, np.float32)
        self.codes.append(new_codes)
        self.audio.append(new_audio)
        return LiveStep(
            new_codes, new_audio, self._original(samples, new_audio.size), compute, wait, self.input.seconds
        )

    def _run_batched(self, samples: np.ndarray, last: bool) -> LiveStep:
        """The frames these samples complete, each a row of the shared batched step."""
        assert self.batched is not None
        entered = time.perf_counter()
        try:
            frames = self.batched.push(samples) + (self.batched.finish() if last else [])
        except Exception as e:
            if not memory.is_out_of_memory(e):
                raise
            self.close()
            raise OutOfMemory(
                "The live session ran out of device memory and was stopped; free memory and start again."
            ) from e
        compute = sum(f.compute_s for f in frames)
        wait = sum(f.waited_s for f in frames)
        for f in frames:
            self.frame_compute_s.append(f.compute_s)
            self.waited_job_s += f.waited_job_s
            self.waited_live_s += f.waited_s - f.waited_job_s
        self.pushes_s += time.perf_counter() - entered
        self.compute_total_s += compute
        codes = np.stack([f.codes for f in frames]) if frames else np.zeros((0, NUM_CODEBOOKS), np.int64)
        audio = np.concatenate([f.audio for f in frames]) if frames else np.zeros(0, np.float32)
        self.codes.append(codes)
        self.audio.append(audio)
        return LiveStep(codes, audio, self._original(samples, audio.size), compute, wait, self.input.seconds)

    def _account_wait(self, waited: float, blocker: str | None) -> None:
        if blocker == "job":
            self.waited_job_s += waited
        else:
            self.waited_live_s += waited

    # ---- lateness -------------------------------------------------------------------------------
    def lateness(self, bound_s: float, now: float | None = None) -> Lateness | None:
        """Who made this session fall more than ``bound_s`` behind real time, or None while it keeps up
        (``core.model.lateness``)."""
        return judge_lateness(self, bound_s, now)

    def check_pace(self, bound_s: float) -> None:
        """Raise ``LiveSessionError`` with :meth:`lateness`'s message when the session is late."""
        late = self.lateness(bound_s)
        if late is not None:
            logger.warning("live session %.1f s behind real time (late: %s)", late.behind_s, late.who)
            raise LiveSessionError(late.message)

    def _original(self, samples: np.ndarray, count: int) -> np.ndarray:
        """The 24 kHz input behind the ``count`` samples just decoded, at the decoder's rate (``heard_at``)."""
        pending = np.concatenate([self._unmatched, samples]) if samples.size else self._unmatched
        out, self._unmatched = heard_at(pending, count, self.engine.output_samples_per_frame)
        return out

    def _check_open(self) -> None:
        if self.closed:
            raise LiveSessionError("This live session has ended; start a new one.")

    def close(self) -> None:
        """Give back the session's slot at once and free its state (idempotent; safe from any thread:
        a push in progress frees the state when it ends)."""
        if not self.closed:
            self.closed = True
            self.owner._release(self)
            self.expect(False)
            logger.info("live session closed after %.1f s of audio", self.input.seconds)
        if self._push_lock.acquire(blocking=False):
            try:
                self._free()
            finally:
                self._push_lock.release()

    def _free(self) -> None:
        if self.encoder is not None:
            self.encoder.close()
        if self.decoder is not None:
            self.decoder.close()
        if self.batched is not None:
            self.batched.close()
        self.encoder = self.decoder = self.batched = None

    def __enter__(self) -> LiveSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
