"""Live sessions: a microphone's blocks through the one model, shared with every other job.

A :class:`LiveSession` owns a ``core.nn.streaming`` input, encoder and decoder, and does its model
work through ``Engine.model_work``: under the engine's lock, one frame at a time (encode, then decode
under each operation's backend flags), so another user's job waits for at most one frame's work. On a
GPU the sessions share one batched step instead (``core.model.live_batcher``): each frame is a row
of it, and admission follows the measured cost of the step for that many sessions.
:class:`LiveSessions` (``engine.live``) admits at most ``Settings.live_sessions`` at once, refuses the
next with a message that gives the count, and lowers batch work's priority (``core.model.cpu_share``).

Bounds: a session takes at most ``min(live_max_s, max_duration_s)`` of audio, then refuses with a
message; it refuses input that runs ahead of real time by more than ``PACE_SLACK_S`` (a client that
sends faster than it speaks), so what it holds never grows faster than a microphone's output; its
encoder keys/values follow the engine's offload rule and are sized for the maximum length. A session
idle for ``IDLE_CLOSE_S`` is closed when the next one opens (the net under the transports' own close).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

import numpy as np

from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME
from core.errors import LiveBusy, LiveSessionError, OutOfMemory
from core.model import cpu_share, memory, planner, torch_threads
from core.model.lateness import Lateness, judge_lateness
from core.model.live_batcher import RESAMPLER_SLACK_SAMPLES, BatchedStream, FrameBatcher, batch_wanted, build_batcher
from core.model.live_results import LiveResult, LiveStep, heard_at, session_result
from core.nn.encoding import conv_context_samples
from core.nn.streaming import MicrophoneInput, StreamingDecoder, StreamingEncoder
from core.units import MIB, minutes

logger = logging.getLogger(__name__)

PACE_SLACK_S = 2.0  # input may run this far ahead of the wall clock (network bursts), then is refused
IDLE_CLOSE_S = 5.0  # a session with no input for this long is closed when another one opens
LOAD_SHARE = 0.75  # admit sessions while their measured frames fill at most this share of each 80 ms
COST_SMOOTHING = 0.05  # weight of the newest frame in the running per-frame cost
FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE  # 0.08 s: one frame of audio
AUTO_PACKET_CPU = 4  # ``--live-packet-frames 0`` on a CPU with a large model: one pass over the weights per 320 ms
AUTO_PACKET_MIN_WEIGHT_BYTES = 64 * MIB  # a model this large is bound by reading its weights at one frame per step
LOCK_YIELD_S = 0.0005  # pause between two frames of one block, so a job waiting for the lock gets it


class LiveSessions:
    """The engine's live sessions: admission (at most ``settings.live_sessions``) and cleanup."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self._sessions: set[LiveSession] = set()
        self._guard = threading.Lock()
        self.frame_cost_s: float | None = None  # running model work per frame (one session), measured
        self.batched: bool | None = None  # one batched step for all sessions; None: on a GPU with graphs
        self._batcher: FrameBatcher | None = None
        self.thread = torch_threads.OneThread("live-cpu")  # every session's model work on a CPU
        self.cpu = cpu_share.CpuShare(lambda: self.in_use)  # batch work yields the CPU to open sessions

    def observe(self, frame_s: float) -> None:
        """One frame's measured model work (the admission's cost)."""
        cost = self.frame_cost_s
        self.frame_cost_s = frame_s if cost is None else cost + COST_SMOOTHING * (frame_s - cost)

    def capacity(self) -> int:
        """Sessions the measured per-frame cost allows (``LOAD_SHARE`` of real time), at most ``--live-sessions``."""
        if self._batcher is not None and self.use_batch():  # the measured batched step for that many
            return self._batcher.capacity(self.limit, LOAD_SHARE * FRAME_S)
        cost = self.frame_cost_s
        if cost is None or cost <= 0:
            return self.limit
        return max(1, min(self.limit, int(LOAD_SHARE * FRAME_S / cost)))

    @property
    def limit(self) -> int:
        return int(self.engine.settings.live_sessions)

    def packet_frames(self) -> int:
        """Frames per step: ``--live-packet-frames``, or for 0 (auto) 4 on a CPU with a model past
        ``AUTO_PACKET_MIN_WEIGHT_BYTES`` (a frame there costs more than real time) and 1 elsewhere."""
        settings, dims = self.engine.settings, self.engine._dims
        if settings.live_packet_frames:
            return int(settings.live_packet_frames)
        large = dims is not None and dims.weight_bytes >= AUTO_PACKET_MIN_WEIGHT_BYTES
        return AUTO_PACKET_CPU if not settings.is_cuda and large else 1

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
            capacity = self.capacity()
            if len(self._sessions) >= capacity:
                cost = self._batcher.step_cost_s(len(self._sessions) + 1) if self._batcher else self.frame_cost_s
                cost_ms = 1000 * (cost or 0.0)
                raise LiveBusy(
                    f"Live is busy: {len(self._sessions)} sessions are in use and each 80 ms frame costs "
                    f"≈{cost_ms:.0f} ms of model work here, so this device keeps {capacity} in real time. "
                    "Try again in a moment."
                )
            session = LiveSession(self, sample_rate, channels, paced, name)
            self._sessions.add(session)
        self.cpu.live_opened()
        try:
            self.on_model_thread(session.start)
        except BaseException:
            session.close()
            raise
        return session

    def on_model_thread(self, fn, *args):
        """``fn(*args)``: on a CPU on the sessions' one thread (``core.model.torch_threads``); here on a
        GPU or with the batched step, which gathers the frames its callers' threads bring."""
        direct = self.engine.settings.is_cuda or self.use_batch()
        return fn(*args) if direct else self.thread.call(fn, *args)

    def use_batch(self) -> bool:
        """Whether sessions share the batched step (``batched``, else ``live_batcher.batch_wanted``)."""
        return batch_wanted(self.engine.settings) if self.batched is None else self.batched

    def batcher(self, model, runner) -> FrameBatcher | None:
        """The shared batched step (built at the first batched session), or None (a bf16 decoder)."""
        if self._batcher is None:
            self._batcher = build_batcher(self.engine, model, runner, self.limit, self.max_seconds())
        return self._batcher

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
        self._batcher = None  # its slot pools belong to the model


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
