"""Live sessions: a microphone's blocks through the one model, shared with every other job.

A :class:`LiveSession` owns a ``core.nn.streaming`` input, encoder and decoder, and does its model
work through ``Engine.model_work``: under the engine's lock, one frame at a time (encode, then decode
under each operation's backend flags), so another user's job waits for at most one frame's work.
:class:`LiveSessions` (``engine.live``) admits at most ``Settings.live_sessions`` at once and
refuses the next with a message that gives the count.

Bounds: a session takes at most ``min(live_max_s, max_duration_s)`` of audio, then refuses with a
message; it refuses input that runs ahead of real time by more than ``PACE_SLACK_S`` (a client that
sends faster than it speaks), so what it holds never grows faster than a microphone's output; its
encoder keys/values follow the engine's offload rule and are sized for the maximum length. A session
that nobody pushed to for ``IDLE_CLOSE_S`` is closed when the next one opens (transports close
theirs at once when the client goes; this is the net under them).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from core.audio.blocks import Audio
from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME
from core.errors import LiveBusy, LiveSessionError, OutOfMemory
from core.model import memory, planner
from core.nn.streaming import MicrophoneInput, StreamingDecoder, StreamingEncoder
from core.units import minutes

logger = logging.getLogger(__name__)

PACE_SLACK_S = 2.0  # input may run this far ahead of the wall clock (network bursts), then is refused
IDLE_CLOSE_S = 5.0  # a session with no input for this long is closed when another one opens
RESAMPLER_SLACK_SAMPLES = SAMPLES_PER_FRAME  # a resampler may emit a few samples more than rate x time
LOCK_YIELD_S = 0.0005  # pause between two frames of one block, so a job waiting for the lock gets it


@dataclass(frozen=True)
class LiveStep:
    """What one pushed block gave back."""

    codes: np.ndarray  # (frames, 16) the frames this block completed (often 0 or 1)
    samples: np.ndarray  # float32 24 kHz audio of those frames (frames * 1920 samples)
    original: np.ndarray  # the 24 kHz input of the same frames (zero-padded at the end): for A/B listening
    compute_s: float  # model work for this block, lock held (encode + decode)
    wait_s: float  # time spent waiting for the engine's lock (another user's job)
    received_s: float  # seconds of input received so far


@dataclass(frozen=True)
class LiveResult:
    """A stopped session: the recording as the codec heard it, its codes and the streamed audio."""

    recording: Audio  # 24 kHz mono with its facts (rate, channels, clipping, silence)
    codes: np.ndarray  # (frames, 16), equal to Engine.encode of ``recording.samples``
    reconstruction: np.ndarray  # float32, trimmed to the recording's length
    stats: dict = field(default_factory=dict)  # frames, compute per frame, real-time factor


class LiveSessions:
    """The engine's live sessions: admission (at most ``settings.live_sessions``) and cleanup."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self._sessions: set[LiveSession] = set()
        self._guard = threading.Lock()

    @property
    def limit(self) -> int:
        return int(self.engine.settings.live_sessions)

    @property
    def in_use(self) -> int:
        with self._guard:
            return len(self._sessions)

    def max_seconds(self) -> float:
        """Longest session: the live limit, never more than the audio limit of every other way in."""
        s = self.engine.settings
        return float(min(s.live_max_s, s.max_duration_s))

    def open(self, sample_rate: int, channels: int = 1, *, paced: bool = True, name: str = "microphone"):
        """A new session for a microphone at ``sample_rate`` with ``channels``; ``paced=False`` lets a
        local caller (the CLI) push faster than real time. LiveBusy when all are in use."""
        self._reap()
        with self._guard:
            if self.limit <= 0:
                raise LiveBusy("Live mode is off on this server (--live-sessions 0).")
            if len(self._sessions) >= self.limit:
                raise LiveBusy(
                    f"Live is busy: {len(self._sessions)} of {self.limit} sessions are in use. Try again in a moment."
                )
            session = LiveSession(self, sample_rate, channels, paced, name)
            self._sessions.add(session)
        try:
            session.start()
        except BaseException:
            session.close()
            raise
        return session

    def _release(self, session: LiveSession) -> None:
        with self._guard:
            self._sessions.discard(session)

    def _reap(self) -> None:
        now = time.monotonic()
        with self._guard:
            idle = [s for s in self._sessions if now - s.last_input > IDLE_CLOSE_S]
        for session in idle:
            logger.warning("closing a live session idle for %.1f s", now - session.last_input)
            session.close()

    def close_all(self) -> None:
        with self._guard:
            sessions = list(self._sessions)
        for session in sessions:
            session.close()


class LiveSession:
    """One microphone through the codec. Thread-safe: pushes from several threads run one at a time."""

    def __init__(self, owner: LiveSessions, sample_rate: int, channels: int, paced: bool, name: str):
        self.owner, self.engine = owner, owner.engine
        self.max_s = owner.max_seconds()
        self.paced = paced
        # the input's own cap sits past the session's: this class refuses first, with a live message
        limits = dataclasses.replace(self.engine.settings.audio_limits(), max_duration_s=self.max_s + 1.0)
        self.input = MicrophoneInput(sample_rate, channels, limits, name)
        self.encoder: StreamingEncoder | None = None
        self.decoder: StreamingDecoder | None = None
        self.codes: list[np.ndarray] = []
        self.audio: list[np.ndarray] = []
        self.frame_compute_s: list[float] = []  # model time per frame
        self._unmatched = np.zeros(0, np.float32)  # 24 kHz input not yet returned beside its frame's audio
        self.started = self.last_input = time.monotonic()
        self.closed = False
        self._push_lock = threading.Lock()

    def start(self) -> None:
        """Check the memory it may need and build its state (under the engine's lock)."""
        estimate = self.engine.estimate("roundtrip", seconds=self.max_s)  # the keys/values of a full session
        if not estimate.fits:
            raise OutOfMemory(f"A live session does not fit now: {estimate.message}")
        max_samples = int(self.max_s * SAMPLE_RATE) + RESAMPLER_SLACK_SAMPLES
        kv = planner.base_plan(self.engine.settings).kv_device_bytes  # the engine's offload rule
        with self.engine.model_work("encode") as (model, runner):
            self.encoder = StreamingEncoder(model, max_samples, kv)
            self.decoder = StreamingDecoder(runner)
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
    def push(self, block: np.ndarray) -> LiveStep:
        """Take a block of microphone samples; return the frames and audio it completed."""
        with self._push_lock:
            self._check_open()
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
                return self._run(self.input.push(block))
            finally:
                if self.closed:  # closed from another thread while this block ran
                    self._free()

    def finish(self) -> LiveResult:
        """Stop: encode and decode the last partial frame, close, and return the whole session."""
        with self._push_lock:
            self._check_open()
            try:
                self._run(self.input.end(), last=True)
                recording = self.input.recording()
            finally:
                self.closed = True
                self.owner._release(self)
                self._free()
        frames = sum(c.shape[0] for c in self.codes)
        codes = np.concatenate(self.codes) if frames else np.zeros((0, NUM_CODEBOOKS), np.int64)
        audio = np.concatenate(self.audio) if self.audio else np.zeros(0, np.float32)
        per_frame = np.array(self.frame_compute_s or [0.0])
        stats = {
            "frames": frames,
            "seconds": recording.samples.size / SAMPLE_RATE,
            "compute_ms_median": float(np.median(per_frame) * 1000),
            "compute_ms_p95": float(np.percentile(per_frame, 95) * 1000),
            "realtime_factor": float(per_frame.sum() / max(recording.samples.size / SAMPLE_RATE, 1e-9)),
        }
        return LiveResult(recording, codes, audio[: recording.samples.size], stats)

    def _run(self, samples: np.ndarray, last: bool = False) -> LiveStep:
        """Encode and decode, one frame's worth of samples per turn of the engine's lock."""
        enc, dec = self.encoder, self.decoder
        assert enc is not None and dec is not None
        codes_out, audio_out, compute, wait, offset = [], [], 0.0, 0.0, 0
        while True:
            room = (enc.frames_out + 1) * SAMPLES_PER_FRAME - enc.samples_in  # samples to the next frame's end
            piece = samples[offset : offset + room]
            offset += piece.size
            final = last and offset >= samples.size
            if piece.size == 0 and not final:
                break
            if not final and enc.samples_in + piece.size < (enc.frames_out + 1) * SAMPLES_PER_FRAME:
                enc.push(piece)  # completes no frame: buffered, no model work, no lock
                continue
            asked = time.perf_counter()
            try:
                with self.engine.model_work("encode"):
                    began = time.perf_counter()
                    codes = enc.push(piece)
                    if final:
                        codes = np.concatenate([codes, enc.finish()])
                if codes.shape[0]:
                    with self.engine.model_work("decode"):
                        audio_out.append(dec.push(codes))
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
            done = time.perf_counter()
            if codes.shape[0]:
                self.frame_compute_s.append(done - began)
            compute, wait = compute + done - began, wait + began - asked
            if final:
                break
            if offset < samples.size:
                time.sleep(LOCK_YIELD_S)  # Python's lock is not fair: without a pause this thread takes it again
        new_codes = np.concatenate(codes_out) if codes_out else np.zeros((0, NUM_CODEBOOKS), np.int64)
        new_audio = np.concatenate(audio_out) if audio_out else np.zeros(0, np.float32)
        self.codes.append(new_codes)
        self.audio.append(new_audio)
        return LiveStep(
            new_codes, new_audio, self._original(samples, new_audio.size), compute, wait, self.input.seconds
        )

    def _original(self, samples: np.ndarray, count: int) -> np.ndarray:
        """The next ``count`` samples of 24 kHz input (they line up with the frames just decoded)."""
        pending = np.concatenate([self._unmatched, samples]) if samples.size else self._unmatched
        out, self._unmatched = pending[:count], pending[count:]
        return out if out.size == count else np.pad(out, (0, count - out.size))

    def _check_open(self) -> None:
        if self.closed:
            raise LiveSessionError("This live session has ended; start a new one.")

    def close(self) -> None:
        """Give back the session's slot at once and free its state (idempotent; safe from any thread:
        a push in progress frees the state when it ends)."""
        if not self.closed:
            self.closed = True
            self.owner._release(self)
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
        self.encoder = self.decoder = None

    def __enter__(self) -> LiveSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
