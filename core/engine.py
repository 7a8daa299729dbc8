"""The engine: one object that owns the model, its lifecycle and all work on it.

States: unloaded -> loading -> ready | failed. One lock serialises every model call, so two
requests never interleave GPU work. Loading never raises: a failure puts the engine in
``failed`` with a message that says how to fix it, and the process keeps serving.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import memory, readiness, streaming
from .errors import CodecError, EngineNotReady, OutOfMemory, SettingsError, TokenFileError
from .settings import Settings
from .weights import load_tokenizer

logger = logging.getLogger(__name__)

SAMPLE_RATE = 24_000  # Hz, codec input and output rate
SAMPLES_PER_FRAME = 1920  # samples per code frame
NUM_CODEBOOKS = 16  # codebooks per frame
CODEBOOK_SIZE = 2048  # entries per codebook
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


class EngineState(str, enum.Enum):
    UNLOADED = "unloaded"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True)
class EncodeResult:
    codes: np.ndarray  # (frames, 16) int64, values 0..2047
    original_samples: int  # samples of the 24 kHz input (decode can trim to this)
    seconds: float  # wall time of the model work
    peak_mib: float | None  # peak GPU memory during the job (None on CPU)


@dataclass(frozen=True)
class DecodeResult:
    samples: np.ndarray  # float32 mono at 24 kHz
    sample_rate: int  # always 24000
    seconds: float  # wall time of the model work
    peak_mib: float | None  # peak GPU memory during the job (None on CPU)


@dataclass(frozen=True)
class RoundTripResult:
    encoded: EncodeResult  # the codes
    decoded: DecodeResult  # the reconstruction, trimmed to the input's length


def validate_codes(codes) -> np.ndarray:
    """Codes as an int64 array of shape (frames, 16) with values in 0..2047, or TokenFileError."""
    array = np.asarray(codes)
    if array.ndim != 2 or array.shape[1] != NUM_CODEBOOKS or array.shape[0] == 0:
        raise TokenFileError(f"Codes must have shape (frames, {NUM_CODEBOOKS}) with frames >= 1; got {array.shape}.")
    if not np.issubdtype(array.dtype, np.integer):
        raise TokenFileError(f"Codes must be integers; got {array.dtype}.")
    if array.min() < 0 or array.max() >= CODEBOOK_SIZE:
        raise TokenFileError(f"Codes must lie in 0..{CODEBOOK_SIZE - 1}; got {array.min()}..{array.max()}.")
    return array.astype(np.int64)


class Engine:
    """Owns the model. Every public method is thread-safe."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.state = EngineState.UNLOADED
        self.error: str | None = None  # why loading failed, in words for the user
        self.model_path: Path | None = None  # the local directory the weights came from
        self.last_report: readiness.ReadinessReport | None = None
        self.load_seconds: float | None = None
        self._tokenizer = None
        self._lock = threading.RLock()

    # ---- lifecycle -------------------------------------------------------------------
    @property
    def device(self) -> str:
        return self.settings.device

    @property
    def ready(self) -> bool:
        return self.state == EngineState.READY

    @property
    def model(self):
        if self._tokenizer is None:
            raise EngineNotReady(self.not_ready_message())
        return self._tokenizer.model

    def not_ready_message(self) -> str:
        if self.state == EngineState.FAILED:
            return f"The model is not loaded: {self.error}"
        if self.state == EngineState.LOADING:
            return "The model is still loading; try again in a few seconds."
        return "The model is not loaded yet; load it first (the server does this at start)."

    def load(self) -> bool:
        """Load the weights on the configured device. Returns True when ready; never raises."""
        with self._lock:
            self._drop_model()
            self.state, self.error = EngineState.LOADING, None
            start = time.perf_counter()
            logger.info("loading %s on %s (%s)", self.settings.model, self.device, self.settings.dtype)
            try:
                self._check_device()
                self._tokenizer, self.model_path = load_tokenizer(
                    self.settings.model, self.device, TORCH_DTYPES[self.settings.dtype]
                )
            except CodecError as e:
                return self._fail(str(e))
            except Exception as e:  # anything else still must not kill the server
                logger.exception("unexpected error while loading")
                return self._fail(f"{type(e).__name__}: {e}")
            self.load_seconds = time.perf_counter() - start
            self.state = EngineState.READY
            logger.info("model loaded from %s in %.2f s", self.model_path, self.load_seconds)
            return True

    def unload(self) -> None:
        with self._lock:
            self._drop_model()
            self.state, self.error = EngineState.UNLOADED, None

    def reload(self) -> bool:
        return self.load()

    def warm_up(self) -> readiness.ReadinessReport:
        """Load if needed, then run the readiness check (the round trip warms the kernels)."""
        with self._lock:
            if self.state != EngineState.READY:
                self.load()
            return self.check()

    def _check_device(self) -> None:
        if self.settings.is_cuda:
            if not torch.cuda.is_available():
                raise SettingsError(f"{self.device} was requested but CUDA is not available; use --device cpu.")
            index = torch.device(self.device).index or 0
            if index >= torch.cuda.device_count():
                raise SettingsError(f"{self.device} does not exist: this machine has {torch.cuda.device_count()} GPU(s).")
            if self.settings.dtype == "bfloat16" and not torch.cuda.is_bf16_supported(including_emulation=False):
                raise SettingsError(f"{torch.cuda.get_device_name(index)} has no native bfloat16; use --dtype float32.")

    def _fail(self, message: str) -> bool:
        self.state, self.error = EngineState.FAILED, message
        logger.error("model not loaded: %s", message)
        return False

    def _drop_model(self) -> None:
        self._tokenizer = None
        memory.release_cached(self.device)

    # ---- readiness ---------------------------------------------------------------------
    def check(self) -> readiness.ReadinessReport:
        """Run the three readiness steps and keep the report."""
        with self._lock:
            cuda = readiness.check_cuda(self.device)
            if self._tokenizer is None:
                why = self.error or "model not loaded"
                steps = (cuda, readiness.Step("weights", "Weights resident", readiness.FAIL, why, 0.0),
                         readiness.skipped("roundtrip", "Test round trip", "skipped: no model"))
            else:
                weights = readiness.check_weights(self._tokenizer.model, self.device)
                trip = readiness.check_roundtrip(
                    lambda x: self.encode_array(x).codes, lambda c: self.decode(c).samples
                )
                steps = (cuda, weights, trip)
            self.last_report = readiness.ReadinessReport(steps, time.time())
            logger.info("readiness: %s", ", ".join(f"{s.name}={s.status}" for s in steps))
            return self.last_report

    # ---- jobs --------------------------------------------------------------------------
    def encode(self, audio) -> EncodeResult:
        """Encode a :class:`core.audio.Audio` (mono 24 kHz float32)."""
        return self.encode_array(audio.samples)

    def encode_array(self, samples: np.ndarray) -> EncodeResult:
        samples = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
        codes, seconds, peak = self._job(lambda: self._encode_tensor(samples))
        return EncodeResult(codes, int(samples.size), seconds, peak)

    def decode(self, codes, original_samples: int | None = None) -> DecodeResult:
        """Decode codes (frames, 16); trim to ``original_samples`` when given."""
        codes = validate_codes(codes)
        wav, seconds, peak = self._job(lambda: self._decode_tensor(codes))
        if original_samples is not None:
            wav = wav[: int(original_samples)]
        return DecodeResult(wav, SAMPLE_RATE, seconds, peak)

    def roundtrip(self, audio) -> RoundTripResult:
        with self._lock:
            encoded = self.encode(audio)
            decoded = self.decode(encoded.codes, original_samples=encoded.original_samples)
        return RoundTripResult(encoded, decoded)

    def encode_batch(self, clips) -> list[EncodeResult]:
        """Encode several clips in one padded batch (faster than one by one for short clips)."""
        arrays = [np.ascontiguousarray(c.samples, dtype=np.float32).reshape(-1) for c in clips]
        codes_list, seconds, peak = self._job(lambda: self._encode_batch_tensors(arrays))
        share = seconds / max(len(arrays), 1)
        return [EncodeResult(c, a.size, share, peak) for c, a in zip(codes_list, arrays)]

    def decode_batch(self, codes_list) -> list[DecodeResult]:
        checked = [validate_codes(c) for c in codes_list]
        wavs, seconds, peak = self._job(lambda: self._decode_batch_tensors(checked))
        share = seconds / max(len(checked), 1)
        return [DecodeResult(w, SAMPLE_RATE, share, peak) for w in wavs]

    # ---- model calls (run inside _job) -------------------------------------------------
    def _to_device(self, samples: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(samples).to(self.device, dtype=self.model.dtype)

    def _encode_tensor(self, samples: np.ndarray) -> np.ndarray:
        chunk = int(self.settings.encode_chunk_s * SAMPLE_RATE)
        return streaming.encode(self.model, self._to_device(samples), chunk).cpu().numpy()

    def _encode_batch_tensors(self, arrays) -> list[np.ndarray]:
        out = streaming.encode_batch(self.model, [self._to_device(a) for a in arrays])
        return [c.cpu().numpy() for c in out]

    def _decode_tensor(self, codes: np.ndarray) -> np.ndarray:
        tensor = torch.from_numpy(codes).to(self.device)
        wav = streaming.decode(self.model, tensor, self.settings.decode_chunk_frames)
        return wav.float().cpu().numpy()

    def _decode_batch_tensors(self, codes_list) -> list[np.ndarray]:
        tensors = [torch.from_numpy(c).to(self.device) for c in codes_list]
        wavs = streaming.decode_batch(self.model, tensors, self.settings.decode_chunk_frames)
        return [w.float().cpu().numpy() for w in wavs]

    def _job(self, work):
        """Run ``work`` under the lock with timing, peak memory, OOM handling and cleanup."""
        with self._lock:
            if self.state != EngineState.READY:
                raise EngineNotReady(self.not_ready_message())
            memory.reset_peak(self.device)
            start = time.perf_counter()
            try:
                with torch.inference_mode():
                    result = work()
                if self.settings.is_cuda:
                    torch.cuda.synchronize(torch.device(self.device))
            except Exception as e:
                if memory.is_out_of_memory(e):
                    memory.release_cached(self.device)
                    raise OutOfMemory(
                        f"The job ran out of memory on {self.device}: {e}. Try a shorter clip or clear VRAM."
                    ) from e
                raise
            seconds = time.perf_counter() - start
            peak = memory.peak_mib(self.device)
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
            before = memory.device_memory(self.device).to_dict()
            memory.release_cached(self.device)
            after = memory.device_memory(self.device).to_dict()
        logger.info("cleared VRAM: reserved %.0f -> %.0f MiB", before["reserved_mib"], after["reserved_mib"])
        return {"before": before, "after": after}

    def stats(self) -> dict:
        """System stats; never takes the lock, so it answers while a job runs."""
        return memory.system_stats(self.device)

    def info(self) -> dict:
        """What is loaded where: shown in the status bar and /health."""
        resident = None
        if self._tokenizer is not None:
            resident = round(readiness.model_bytes(self._tokenizer.model) / memory.MIB, 1)
        return {
            "state": self.state.value,
            "error": self.error,
            "model": self.settings.model,
            "model_path": str(self.model_path) if self.model_path else None,
            "device": self.device,
            "device_label": "GPU " + self.device if self.settings.is_cuda else "CPU (no GPU in use)",
            "dtype": self.settings.dtype,
            "resident_mib": resident,
            "load_seconds": self.load_seconds,
        }
