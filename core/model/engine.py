"""The engine: one object that owns the model, its lifecycle and all work on it.

States: unloaded -> loading -> ready | failed. One lock serialises every model call, so two
requests never interleave GPU work. Loading never raises: a failure puts the engine in
``failed`` with a message that says how to fix it, and the process keeps serving. Loading reads the
model without the lock (``core.model.loading``) and swaps it in under the lock in O(1), so a second
checkpoint loading beside the first (``core.model.second``) stops no job or live frame of the first.

Every job gets a chunk plan from ``core.model.planner``: the largest one whose pre-flight memory estimate
fits (``estimate``), or a refusal before any model work. A chunk that still runs out of memory makes the job retry
with half-size chunks down to ``min_chunk_s``, then fail with a clear ``OutOfMemory``
(``core.model.oom_retries``); the engine stays ready. Long clips go through ``core.nn.encoding`` and ``core.nn.decoding`` in chunks (codes equal
to a whole-clip encode, audio equal to a whole-utterance decode; see docs/performance.md).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import threading
from pathlib import Path

import numpy as np
import torch

from core.codec import NUM_CODEBOOKS, SAMPLES_PER_FRAME, OutputRate, Progress, check_codes, check_duration
from core.errors import CodecError, EngineNotReady
from core.model import calls as model_calls
from core.model import loading, memory, oom_retries, planner, preflight, readiness, torch_threads
from core.model.checkpoints import is_random_checkpoint
from core.model.live_sessions import LiveSessions
from core.model.planner import ChunkPlan, MemoryEstimate
from core.model.results import DecodeResult, EncodeResult, RoundTripResult
from core.model.stream_decoder import StreamDecoder, StreamDecoders
from core.model.turns import TurnLock
from core.nn import fast_decode, ladder
from core.settings import Settings
from core.units import MIB

logger = logging.getLogger(__name__)

# share of a round trip's progress that is the encode: decoding a second of audio costs ≈12x
# encoding it (62 against 5.3 GFLOP, docs/performance.md)
ROUNDTRIP_ENCODE_SHARE = 0.1


class EngineState(str, enum.Enum):  # noqa: UP042 - str() of a StrEnum differs; /health prints it
    UNLOADED = "unloaded"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


class Engine:
    """Owns the model. Every public method is thread-safe."""

    def __init__(self, settings: Settings, lock: TurnLock | None = None):  # lock: see core.model.second
        self.settings = settings
        self.state = EngineState.UNLOADED
        self.error: str | None = None  # why loading failed, in words for the user
        self.model_path: Path | None = None  # the local directory the weights came from
        self.last_report: readiness.ReadinessReport | None = None
        self.load_seconds: float | None = None
        self.random_weights = False  # a checkpoint this project built with random weights: no quality claims
        self.resident_mib: float | None = None  # the loaded weights' size, counted once at load
        self._tokenizer = None
        self._dims: planner.ModelDims | None = None  # read once at load, for the memory planner
        self._fast: fast_decode.FastDecoder | None = None  # decodes: precision, compiled graphs, bf16 guard
        self.output: OutputRate | None = None  # the rate the loaded decoder writes (core.model.family)
        self._lock = lock if lock is not None else TurnLock()  # jobs give it to live frames between chunks
        self._loading = threading.RLock()  # one load (or a second checkpoint's load) of this engine at a time
        self.loading_bytes = 0.0  # weights a load beside this model is reading now: not free for its jobs
        self.compare: Engine | None = None  # a second checkpoint beside this one, sharing the lock (core.model.second)
        self.live = LiveSessions(self)  # microphone sessions, at most settings.live_sessions (core.model.live)
        self.streams = StreamDecoders(self)  # code streams, at most settings.decode_streams (core.model.stream_decoder)

    # ---- lifecycle -------------------------------------------------------------------
    @property
    def device(self) -> str:
        return self.settings.device

    @property
    def device_label(self) -> str:
        return "GPU " + self.device if self.settings.is_cuda else "CPU (no GPU in use)"

    @property
    def ready(self) -> bool:
        return self.state == EngineState.READY

    @property
    def model(self):
        if self._tokenizer is None:
            raise EngineNotReady(self.not_ready_message())
        return self._tokenizer.model

    @property
    def output_rate(self) -> int:
        """Hz the loaded decoder writes (24000 published, 48000 for the 48 kHz decoder); read from its config."""
        return self._output().rate_hz

    @property
    def output_samples_per_frame(self) -> int:
        """Decoded samples per code frame (1,920 at 24 kHz, 3,840 at 48 kHz)."""
        return self._output().samples_per_frame

    def _output(self) -> OutputRate:
        if self.output is None:
            raise EngineNotReady(self.not_ready_message())
        return self.output

    @property
    def _runner(self) -> fast_decode.FastDecoder:
        """The decoder jobs run (``core.nn.fast_decode``)."""
        if self._fast is None:
            raise EngineNotReady(self.not_ready_message())
        return self._fast

    def not_ready_message(self) -> str:
        if self.state == EngineState.FAILED:
            return f"The model is not loaded: {self.error}"
        if self.state == EngineState.LOADING:
            return "The model is still loading; try again in a few seconds."
        return "The model is not loaded yet; load it first (the server does this at start)."

    def load(self) -> bool:
        """Load the weights on the configured device. Returns True when ready; never raises. The
        model is read without the lock (other engines sharing it keep working) and swapped in under
        it; loads of one engine wait for each other."""
        with self._loading:
            with self._lock:
                self._drop_model()
                self.state, self.error = EngineState.LOADING, None
                self.model_path, self.load_seconds, self.random_weights = None, None, False  # none survives a failure
            try:
                loaded = self._torch_call(loading.load_model, self.settings)
            except CodecError as e:
                return self._fail(str(e))
            except Exception as e:  # anything else still must not kill the server
                logger.exception("unexpected error while loading")
                return self._fail(f"{type(e).__name__}: {e}")
            resident_mib = round(readiness.model_bytes(loaded.tokenizer.model) / MIB, 1)  # every parameter, once
            with self._lock:  # the swap: a few references
                self._tokenizer, self._dims, self._fast = loaded.tokenizer, loaded.dims, loaded.fast
                self.output = loaded.output
                self.model_path, self.load_seconds, self.state = loaded.path, loaded.seconds, EngineState.READY
                self.random_weights, self.resident_mib = is_random_checkpoint(loaded.path), resident_mib
            logger.info("model loaded from %s in %.2f s", self.model_path, self.load_seconds)
            return True

    def unload(self) -> None:
        with self._loading, self._lock:
            self._drop_model()
            self.state, self.error = EngineState.UNLOADED, None

    def warm_up(self) -> readiness.ReadinessReport:
        """Load if needed, then run the readiness check (the round trip warms the kernels)."""
        with self._loading:
            if self.state != EngineState.READY:
                self.load()
            return self.check()

    def _fail(self, message: str) -> bool:
        with self._lock:
            self.state, self.error = EngineState.FAILED, message
        logger.error("model not loaded: %s", message)
        return False

    def _drop_model(self) -> None:
        self.live.close_all()  # their state belongs to the model that goes
        self.streams.close_all()
        self._tokenizer, self._dims, self._fast, self.resident_mib, self.output = None, None, None, None, None
        memory.release_cached(self.device)

    # ---- readiness ---------------------------------------------------------------------
    def _torch_call(self, fn, *args):
        """On a CPU in a thread that ends, so the caller keeps no OpenMP pool (``core.model.torch_threads``)."""
        return fn(*args) if self.settings.is_cuda else torch_threads.in_passing_thread(fn, *args)

    def check(self) -> readiness.ReadinessReport:
        """Run the three readiness steps and keep the report."""
        return self._torch_call(self._check)

    def _check(self) -> readiness.ReadinessReport:
        with self._lock:
            model = self._tokenizer.model if self._tokenizer is not None else None
            encode, decode = (lambda x: self.encode_array(x).codes), (lambda c: self.decode(c).samples)
            per_frame = self.output.samples_per_frame if self.output else SAMPLES_PER_FRAME
            self.last_report = report = readiness.run_checks(self.device, model, self.error, encode, decode, per_frame)
            logger.info("readiness: %s", ", ".join(f"{s.name}={s.status}" for s in report.steps))
            return report

    # ---- jobs --------------------------------------------------------------------------
    def encode(self, audio, progress: Progress | None = None) -> EncodeResult:
        """Encode a :class:`core.audio.files.Audio` (mono 24 kHz float32). ``progress(fraction)`` is
        called as long clips go through window by window."""
        return self.encode_array(audio.samples, progress)

    def encode_array(self, samples: np.ndarray, progress: Progress | None = None) -> EncodeResult:
        samples = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
        preflight.check_not_empty([samples])
        codes, seconds, peak = self._job(
            "encode",
            [samples.size],
            lambda plan: model_calls.encode_tensor(self.model, samples, plan, progress, self._lock.give_turn),
        )
        return EncodeResult(codes, int(samples.size), seconds, peak)

    def decode(
        self,
        codes,
        original_samples: int | None = None,
        progress: Progress | None = None,
        codebooks: int = NUM_CODEBOOKS,
    ) -> DecodeResult:
        """Decode codes (frames, 16) at the decoder's own rate; trim to the duration of ``original_samples``
        (24 kHz input samples) when given. ``progress(fraction)`` is called after each decoded chunk.
        ``codebooks`` < 16 decodes with the first k only (core.nn.ladder)."""
        codes = check_codes(codes, original_samples)
        check_duration([codes.shape[0]], self.settings.max_duration_s)  # before any model work

        # the ladder's hook changes the shared model: no other work may run between its chunks
        between = self._between(progress) if codebooks == NUM_CODEBOOKS else progress

        def work(plan):
            with ladder.codebook_depth(self.model, codebooks):  # inside the job: under the lock
                return model_calls.decode_tensor(self.model, self._runner, codes, plan, between)

        (wav, warnings), seconds, peak = self._job("decode", [codes.shape[0] * SAMPLES_PER_FRAME], work)
        output = self._output()
        if original_samples is not None:
            wav = wav[: output.samples_for(original_samples)]
        return DecodeResult(wav, output.rate_hz, seconds, peak, warnings)

    def roundtrip(self, audio, progress: Progress | None = None, codebooks: int = NUM_CODEBOOKS) -> RoundTripResult:
        """Encode then decode under one lock. ``progress(fraction)`` covers the whole trip: the
        encode up to ``ROUNDTRIP_ENCODE_SHARE``, the decode after it. ``codebooks`` < 16 decodes
        with the first k only (core.ladder; the blind test's lower levels)."""
        report, share = progress or _no_progress, ROUNDTRIP_ENCODE_SHARE
        with self._lock:
            self._refuse_if_too_big("roundtrip", [int(np.asarray(audio.samples).size)])
            encoded = self.encode(audio, lambda f: report(share * f))
            decoded = self.decode(
                encoded.codes,
                original_samples=encoded.original_samples,
                progress=lambda f: report(share + (1 - share) * f),
                codebooks=codebooks,
            )
        return RoundTripResult(encoded, decoded)

    def encode_batch(self, clips) -> list[EncodeResult]:
        """Encode several clips: short ones in padded batches, long ones chunked one by one."""
        arrays = [np.ascontiguousarray(c.samples, dtype=np.float32).reshape(-1) for c in clips]
        if not arrays:
            return []
        preflight.check_not_empty(arrays)
        codes_list, seconds, peak = self._job(
            "encode",
            [a.size for a in arrays],
            lambda plan: model_calls.encode_batch_tensors(self.model, self._dims, arrays, plan, self._lock.give_turn),
        )
        share = seconds / max(len(arrays), 1)
        return [EncodeResult(c, a.size, share, peak) for c, a in zip(codes_list, arrays, strict=True)]

    def decode_batch(self, codes_list) -> list[DecodeResult]:
        checked = [check_codes(c) for c in codes_list]
        if not checked:
            return []
        check_duration([c.shape[0] for c in checked], self.settings.max_duration_s)
        (wavs, warnings), seconds, peak = self._job(
            "decode",
            [c.shape[0] * SAMPLES_PER_FRAME for c in checked],
            lambda plan: model_calls.decode_batch_tensors(
                self.model, self._runner, checked, plan, self._lock.give_turn
            ),
        )
        share = seconds / max(len(checked), 1)
        return [DecodeResult(w, self._output().rate_hz, share, peak, warnings) for w in wavs]

    def _between(self, progress: Progress | None) -> Progress:
        """``progress`` that also hands the lock to waiting live frames (called between chunks)."""
        report = progress or _no_progress
        give = self._lock.give_turn

        def between(fraction: float) -> None:
            report(fraction)
            give()

        return between

    def stream_decoder(self) -> StreamDecoder:
        """A new incremental decoder: packets of codes in, the audio they complete out, equal to
        ``decode`` of all the codes at once (``core.model.stream_decoder``); ``LiveBusy`` when full."""
        return self.streams.open()

    @contextlib.contextmanager
    def model_work(self, operation: str):
        """(model, decoder runner) under the lock, with the backend flags of ``operation``'s jobs, for
        work done in small steps (a live session's frame); no plan and no retries."""
        with self.frame_work(operation) as (model, runner, _wait):
            yield model, runner

    @contextlib.contextmanager
    def frame_work(self, operation: str):
        """(model, decoder runner, (seconds waited, what held the lock)) for one live frame: a short
        turn of the lock (``core.model.turns``), which a running job hands over between its chunks."""
        with self._lock.turn() as waited:
            if self.state != EngineState.READY or self._tokenizer is None or self._fast is None:
                raise EngineNotReady(self.not_ready_message())
            with torch.inference_mode(), model_calls.backend_flags(self.settings, operation):
                yield self._tokenizer.model, self._fast, waited

    def live_pending(self, session: object, queued: bool) -> None:
        """A live session has input queued (or has caught up): a job hands the model over until it
        has caught up (``core.model.turns.TurnLock.pending``)."""
        self._lock.pending(session, queued)

    # ---- planning, estimates, OOM retries -------------------------------------------------
    def _plan(self, operation: str, lengths: list[int]) -> tuple[ChunkPlan | None, MemoryEstimate]:
        """The largest plan whose estimate fits now (``core.model.preflight``), and that estimate."""
        if self._dims is None:
            raise EngineNotReady(self.not_ready_message())
        return preflight.plan(self._dims, self.settings, operation, lengths, self.loading_bytes)

    def estimate(
        self,
        operation: str = "roundtrip",
        seconds: float | None = None,
        *,
        samples: int | None = None,
        frames: int | None = None,
        clips: int = 1,
    ) -> MemoryEstimate:
        """Pre-flight estimate of a job's peak device memory, and whether it fits now.

        Give the audio length as ``seconds``, ``samples`` or code ``frames`` (per clip; ``clips``
        equal clips). Does not take the engine's lock, so it answers while a job runs. Jobs that do
        not fit are refused with this estimate's message.
        """
        if operation not in planner.OPERATIONS:
            raise ValueError(f"operation must be encode, decode or roundtrip; got {operation!r}")
        samples = preflight.input_samples(seconds, samples, frames)
        if self.state != EngineState.READY or self._dims is None:
            raise EngineNotReady(self.not_ready_message())
        return self._plan(operation, [int(samples)] * max(1, int(clips)))[1]

    def _refuse_if_too_big(self, operation: str, lengths: list[int]) -> ChunkPlan:
        if self._dims is None:
            raise EngineNotReady(self.not_ready_message())
        return preflight.plan_or_refuse(self._dims, self.settings, operation, lengths, self.loading_bytes)

    def _job(self, operation: str, lengths: list[int], work):
        """Run ``work(plan)`` under the lock with a pre-flight check, timing, peak memory, OOM
        retries with smaller chunks (down to the floor, ``core.model.oom_retries``) and cleanup."""
        with self._lock:
            if self.state != EngineState.READY:
                raise EngineNotReady(self.not_ready_message())
            plan = self._refuse_if_too_big(operation, lengths)
            result, seconds, peak = oom_retries.run(self.settings, operation, lengths, plan, work)
            self._auto_cleanup()
            return result, seconds, peak

    # ---- memory ------------------------------------------------------------------------
    def _auto_cleanup(self) -> None:
        share = memory.reserved_share(self.device)
        if share > self.settings.cleanup_threshold:
            logger.info("reserved memory at %.0f%% of the card; clearing the cache", share * 100)
            memory.release_cached(self.device)

    def clear_vram(self) -> dict:
        """Free cached device memory; report allocated / reserved / free before and after."""
        with self._lock:
            return memory.clear_cached(self.device)

    def stats(self) -> dict:
        """System stats; never takes the lock, so it answers while a job runs."""
        return memory.system_stats(self.device)

    def info(self) -> dict:
        """What is loaded where (status bar, /health): fields read, none counted; one field: read it directly."""
        return {
            "state": self.state.value,
            "error": self.error,
            "model": self.settings.model,
            "model_path": str(self.model_path) if self.model_path else None,
            "device": self.device,
            "device_label": self.device_label,
            "dtype": self.settings.dtype,
            "decode_dtype": self.settings.decode_dtype or self.settings.dtype,
            "output_rate_hz": self.output.rate_hz if self.output else None,  # the loaded decoder's (core.model.family)
            "decoder_compiled": bool(self._fast and self._fast.warm_shapes),  # False until a background compile ends
            "resident_mib": self.resident_mib,
            "load_seconds": self.load_seconds,
            "random_weights": self.random_weights,
            "compare": self.compare.info() if self.compare else None,  # a second checkpoint (core.model.second)
        }


def _no_progress(fraction: float) -> None:
    return None
