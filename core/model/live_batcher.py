"""Live sessions on a GPU through one batched step: the ready frames of every session in one turn.

:class:`FrameBatcher` owns a ``core.nn.live_batch.LiveBatch`` (slot pools, one CUDA graph per batch
size). A session's thread hands it one row (a frame of samples, or a last frame's codes) and waits;
whichever waiting thread finds no step running gathers every session's oldest waiting row (one per
session, so each session's frames stay in order) into one step, takes the engine's lock for that one
turn (``Engine.frame_work``: a long job hands it over between its chunks), and wakes the others.
While a step runs, the next rows gather, so N speakers cost one step of N rows, not N steps.

:class:`BatchedStream` is a session's side: 24 kHz samples in, frames cut on 1,920-sample boundaries,
the last ``context`` samples kept for the padded last frame (encoded eagerly on the slot's state).

Admission: the measured time of each batch size's step (a running mean per bucket) says how many
sessions keep real time: :meth:`FrameBatcher.capacity`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import numpy as np

from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME, SAMPLES_PER_STEP, ceil_div
from core.nn.live_batch import BUCKETS, LiveBatch, Row, bucket_for

logger = logging.getLogger(__name__)

COST_SMOOTHING = 0.05  # weight of the newest step in a bucket's running cost
RESAMPLER_SLACK_SAMPLES = SAMPLES_PER_FRAME  # a resampler may emit a few samples more than rate x time


def batch_wanted(settings) -> bool:
    """Sessions share the batched step on a GPU with graphs (``build_batcher`` may still say no)."""
    return bool(settings.live_graphs and settings.is_cuda)


def build_batcher(engine, model, runner, limit: int, max_s: float) -> FrameBatcher | None:
    """The batched step for ``limit`` sessions (slots: the bucket that holds them, at most the largest)
    of up to ``max_s`` seconds; None for a guarded bf16 decoder (its per-chunk check stays per session)
    or keys/values past the device budget (``--encode-kv-device-mib``: host offload is per session)."""
    from core.model import planner
    from core.model.calls import backend_flags
    from core.nn.kv_cache import kv_bytes_per_step

    if runner.guarded:
        return None
    settings = engine.settings
    slots = bucket_for(max(1, min(limit, BUCKETS[-1])))
    steps = ceil_div(int(max_s * SAMPLE_RATE) + RESAMPLER_SLACK_SAMPLES, SAMPLES_PER_STEP) + 2
    attn = model.encoder.encoder_transformer.layers[0].self_attn
    layers = len(model.encoder.encoder_transformer.layers)
    item = next(model.parameters()).element_size()
    cap = planner.base_plan(settings).kv_device_bytes  # the engine's offload rule, per session
    if cap is not None and steps * kv_bytes_per_step(layers, attn.num_key_value_heads, attn.head_dim, item) > cap:
        logger.info("live: a session's keys/values pass the device budget; a step per session instead")
        return None
    flags = lambda op: backend_flags(settings, op)  # noqa: E731
    batch = LiveBatch(model, runner.decoder, slots, steps, flags, capture=settings.is_cuda)
    logger.info("live: one batched step for up to %d sessions (%d key steps each)", slots, steps)
    return FrameBatcher(engine, batch)


@dataclass(frozen=True)
class FrameOut:
    """One frame through the batched step, as its session saw it."""

    codes: np.ndarray  # (16,)
    audio: np.ndarray  # (1920,) float32
    compute_s: float  # the step's model work (lock held), shared with the other rows of the step
    waited_s: float  # from hand-over to the step's start: other steps, and the engine's lock
    waited_job_s: float  # of that, waiting for the lock while another job (not a live frame) held it


class _Pending:
    __slots__ = ("row", "done", "result", "error", "submitted")

    def __init__(self, row: Row):
        self.row, self.done = row, False
        self.result: FrameOut | None = None
        self.error: BaseException | None = None
        self.submitted = time.perf_counter()


class FrameBatcher:
    """The batched step shared by every live session of an engine (see the module docstring)."""

    def __init__(self, engine, batch: LiveBatch):
        self.engine, self.batch = engine, batch
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._stepping = False
        self.cost_s: dict[int, float] = batch.measure()  # bucket size -> running step time (s)
        self.steps = 0

    # ---- slots -------------------------------------------------------------------------------------
    def open(self) -> int:
        """A reset slot, or ``LiveBusy`` when every slot is in use."""
        from core.errors import LiveBusy

        with self._cond:
            try:
                return self.batch.open()
            except IndexError:
                raise LiveBusy(
                    f"Live is busy: all {self.batch.slots} live slots of this server are in use. Try again in a moment."
                ) from None

    def close(self, slot: int) -> None:
        from core.errors import LiveSessionError

        with self._cond:
            for item in self._queue:
                if item.row.slot == slot:  # its thread gives up waiting
                    item.error, item.done = LiveSessionError("This live session has ended; start a new one."), True
            self._queue = [p for p in self._queue if p.row.slot != slot]
            self.batch.close(slot)
            self._cond.notify_all()

    # ---- admission ---------------------------------------------------------------------------------
    def step_cost_s(self, sessions: int) -> float | None:
        """Measured (or, from a smaller bucket, scaled up) time of a step for ``sessions`` rows."""
        size = bucket_for(max(1, sessions))
        if size in self.cost_s:
            return self.cost_s[size]
        smaller = [b for b in self.cost_s if b < size]
        if smaller:  # linear in the rows: an overestimate, batched rows cost far less than that
            base = max(smaller)
            return self.cost_s[base] * size / base
        return None

    def capacity(self, limit: int, budget_s: float) -> int:
        """Sessions whose batched step fits ``budget_s`` (per 80 ms frame), at most ``limit`` and the slots."""
        most = min(limit, self.batch.slots)
        if self.step_cost_s(1) is None:
            return most
        fits = 1
        for n in range(1, most + 1):
            cost = self.step_cost_s(n)
            if cost is None or cost > budget_s:
                break
            fits = n
        return fits

    # ---- the step ----------------------------------------------------------------------------------
    def run(self, row: Row) -> FrameOut:
        """Put ``row`` through the next step (run by this thread or another) and return its frame."""
        item = _Pending(row)
        with self._cond:
            self._queue.append(item)
            while not item.done:
                if self._stepping:
                    self._cond.wait()
                    continue
                self._stepping = True
                taken = self._take()
                self._cond.release()
                try:
                    self._step(taken)
                finally:
                    self._cond.acquire()
                    self._stepping = False
                    self._cond.notify_all()
        if item.error is not None:
            raise item.error
        assert item.result is not None
        return item.result

    def _take(self) -> list[_Pending]:
        taken: list[_Pending] = []
        rest: list[_Pending] = []
        seen: set[int] = set()
        for item in self._queue:
            if item.row.slot in seen or len(taken) >= BUCKETS[-1]:
                rest.append(item)
            else:
                seen.add(item.row.slot)
                taken.append(item)
        self._queue = rest
        return taken

    def _step(self, taken: list[_Pending]) -> None:
        began = time.perf_counter()
        try:
            with self.engine.frame_work("encode") as (_model, _runner, (waited, blocker)):
                start = time.perf_counter()
                codes, audio = self.batch.step([p.row for p in taken])
                compute = time.perf_counter() - start
        except BaseException as e:  # every row of the step gets the error, in its own thread
            for p in taken:
                p.error, p.done = e, True
            return
        size = bucket_for(len(taken))
        cost = self.cost_s.get(size)
        self.cost_s[size] = compute if cost is None else cost + COST_SMOOTHING * (compute - cost)
        self.steps += 1
        job = waited if blocker == "job" else 0.0
        for i, p in enumerate(taken):
            p.result = FrameOut(codes[i], audio[i], compute, max(0.0, began - p.submitted) + waited, job)
            p.done = True

    def last_frame(self, slot: int, window: np.ndarray, skip_samples: int, first: bool) -> np.ndarray:
        """Codes (16,) of a session's padded last frame (eager, under the engine's lock)."""
        with self.engine.model_work("encode"):
            return self.batch.last_frame(slot, window, skip_samples, first)


class BatchedStream:
    """A live session's samples through the batcher: whole frames as rows, the last one padded."""

    def __init__(self, batcher: FrameBatcher, context_samples: int, max_samples: int):
        self.batcher, self.context, self.max_samples = batcher, int(context_samples), int(max_samples)
        self.slot: int | None = batcher.open()
        self.buffer = np.zeros(0, np.float32)  # samples from ``buffer_start`` on
        self.buffer_start = 0
        self.samples_in = 0
        self.frames_out = 0
        self.finished = False

    def push(self, samples: np.ndarray) -> list[FrameOut]:
        """The frames these samples complete, through the batched step."""
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        if self.samples_in + samples.size > self.max_samples:
            from core.errors import AudioInputError

            raise AudioInputError("A live session took more samples than its slot holds; start a new session.")
        self.buffer = np.concatenate([self.buffer, samples]) if self.buffer.size else samples.copy()
        self.samples_in += samples.size
        out = []
        while (self.frames_out + 1) * SAMPLES_PER_FRAME <= self.samples_in:
            start = self.frames_out * SAMPLES_PER_FRAME - self.buffer_start
            frame = self.buffer[start : start + SAMPLES_PER_FRAME]
            out.append(self.batcher.run(Row(self._slot(), samples=frame)))
            self.frames_out += 1
            self._trim()
        return out

    def finish(self) -> list[FrameOut]:
        """The padded last frame, if samples are left after the whole frames."""
        if self.finished:
            return []
        self.finished = True
        start = self.frames_out * SAMPLES_PER_FRAME
        if self.samples_in <= start:
            return []
        low = max(self.buffer_start, start - self.context)
        window = self.buffer[low - self.buffer_start :]
        codes = self.batcher.last_frame(self._slot(), window, start - low, self.frames_out == 0)
        self.frames_out += 1
        return [self.batcher.run(Row(self._slot(), codes=codes.reshape(NUM_CODEBOOKS)))]

    def _trim(self) -> None:
        keep_from = max(0, self.frames_out * SAMPLES_PER_FRAME - self.context)
        if keep_from > self.buffer_start:
            self.buffer = self.buffer[keep_from - self.buffer_start :]
            self.buffer_start = keep_from

    def _slot(self) -> int:
        if self.slot is None:
            from core.errors import LiveSessionError

            raise LiveSessionError("This live session has ended; start a new one.")
        return self.slot

    def close(self) -> None:
        if self.slot is not None:
            self.batcher.close(self.slot)
            self.slot = None
