"""The precision sweep: one clip through encode and decode in fp32, bf16 and fp16 (and, on a GPU,
fp32 with TF32 convolutions) on this device, against the workbench's strict-fp32 reference
(``Engine.encode_array`` / ``Engine.decode`` with TF32 off).

Each precision runs a copy of the loaded model cast to it, under the engine's lock: the official
whole-clip ``model.encode`` (codes: agreement per codebook with fp32, the first frame that differs)
and the streamed decode of the **fp32 codes** (``core.nn.decoding.DecoderStream``, the engine's own
decoder pass, unguarded), checked chunk by chunk for NaN / Inf / silence / full scale; decode SNR
against the fp32 decode; times. Unguarded on purpose: this is what a port in that precision gets
(the engine's bf16 decode redoes broken chunks in fp32, ``core.nn.fast_decode``).

The clip is cut to ``MAX_CLIP_S`` (said so): the whole-clip encode's memory grows with length.
Random weights say nothing about quality: on a random checkpoint the SNRs are those of random weights.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME
from core.doctor.host import BF16_WORTH_IT
from core.errors import CodecError
from core.model import memory
from core.nn import conv_layout
from core.nn.decoding import DecoderStream
from core.parity.words import Note

logger = logging.getLogger(__name__)

MAX_CLIP_S = 60.0  # seconds of the clip swept (longer ones are cut, and the result says so)
CHUNK_FRAMES = 300  # frames per decode chunk checked (the engine's default chunk)
SILENT_RMS = 1e-4  # a chunk below this RMS (-80 dBFS) where fp32's is above 100x it is "silent"
FULL_SCALE = 0.999  # |sample| counted as full scale
SATURATED_SHARE = 0.5  # a chunk with more of its samples at full scale is "saturated"
WARM_S = 1.0  # seconds of audio run once per precision before timing (kernel selection, first-call costs)
DTYPES = {"float32": torch.float32, "tf32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
LABELS = {"float32": "fp32", "tf32": "fp32 + TF32", "bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True)
class ChunkHealth:
    index: int
    start_s: float
    nonfinite: int  # NaN or infinite samples
    silent: bool
    saturated: bool

    @property
    def broken(self) -> bool:
        return bool(self.nonfinite) or self.silent or self.saturated


@dataclass(frozen=True)
class PrecisionRow:
    precision: str  # a key of DTYPES
    label: str
    encode_s: float | None
    decode_s: float | None
    agreement: list[float]  # per codebook, share of frames equal to the fp32 codes
    first_difference_frame: int | None  # first frame whose codes differ from fp32 (None: all equal)
    snr_db: float | None  # its decode of the fp32 codes against the fp32 decode (None: not available)
    chunks: int
    broken: list[ChunkHealth]  # the chunks that came out NaN / Inf / silent / saturated
    error: str | None = None  # why this precision could not run here

    @property
    def codes_equal(self) -> float:
        return float(np.mean(self.agreement)) if self.agreement else math.nan

    def to_dict(self) -> dict:
        out = asdict(self)
        out["codes_equal"] = None if math.isnan(self.codes_equal) else round(self.codes_equal, 6)
        out["snr_db"] = None if self.snr_db is None else ("inf" if math.isinf(self.snr_db) else round(self.snr_db, 2))
        return out


@dataclass(frozen=True)
class Sweep:
    device: str
    device_name: str
    clip_s: float
    cut_from_s: float | None  # the clip's own length when it was cut to MAX_CLIP_S
    rows: list[PrecisionRow]
    recommendation: tuple[Note, ...]
    random_weights: bool
    torch_version: str = field(default=torch.__version__)

    def to_dict(self) -> dict:
        return {
            "device": self.device,
            "device_name": self.device_name,
            "clip_s": self.clip_s,
            "cut_from_s": self.cut_from_s,
            "rows": [r.to_dict() for r in self.rows],
            "recommendation": [n.to_dict() for n in self.recommendation],
            "random_weights": self.random_weights,
            "torch": self.torch_version,
        }


@contextlib.contextmanager
def tf32(allowed: bool):
    """cuDNN convolutions and CUDA matmuls with TF32 ``allowed`` (restored after)."""
    previous = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = previous


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def default_precisions(device: str) -> tuple[str, ...]:
    return (
        ("float32", "tf32", "bfloat16", "float16") if device.startswith("cuda") else ("float32", "bfloat16", "float16")
    )


def health(wav: np.ndarray, reference: np.ndarray) -> list[ChunkHealth]:
    """Each ``CHUNK_FRAMES`` chunk of ``wav`` checked for NaN / Inf, silence (where ``reference`` is not
    silent) and full scale."""
    size = CHUNK_FRAMES * SAMPLES_PER_FRAME
    out = []
    for index, start in enumerate(range(0, wav.size, size)):
        chunk, ref = wav[start : start + size], reference[start : start + size]
        finite = np.isfinite(chunk)
        clean = np.where(finite, chunk, 0.0)
        rms, ref_rms = (
            float(np.sqrt(np.mean(np.square(clean, dtype=np.float64)))),
            float(np.sqrt(np.mean(np.square(ref, dtype=np.float64)))),
        )
        out.append(
            ChunkHealth(
                index,
                round(start / SAMPLE_RATE, 3),
                int(chunk.size - finite.sum()),
                rms < SILENT_RMS and ref_rms > 100 * SILENT_RMS,
                float(np.mean(np.abs(clean) >= FULL_SCALE)) > SATURATED_SHARE,
            )
        )
    return out


def snr_db(reference: np.ndarray, other: np.ndarray) -> float | None:
    n = min(reference.size, other.size)
    ref, x = (
        reference[:n].astype(np.float64),
        np.nan_to_num(other[:n].astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0),
    )
    error, signal = float(np.sum((x - ref) ** 2)), float(np.sum(ref**2))
    if signal == 0:
        return None
    return math.inf if error == 0 else 10 * math.log10(signal / error)


def _encode(model, clip: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    device = next(model.parameters()).device
    wav = torch.from_numpy(clip)[None].to(device=device, dtype=dtype)
    out = model.encode(wav, torch.ones_like(wav, dtype=torch.long), return_dict=True)
    return out.audio_codes[0].to(torch.long).cpu().numpy()


def _decode(model, codes: np.ndarray) -> np.ndarray:
    """The engine's decoder pass (``DecoderStream``, channels-last on a CPU as the engine runs it), unguarded."""
    device = next(model.parameters()).device
    convs = conv_layout.ChannelsLastConvs() if device.type == "cpu" else None
    stream = DecoderStream(model.decoder, 1, convs)
    whole = torch.from_numpy(codes).T[None].to(device)
    parts = []
    for start in range(0, codes.shape[0], CHUNK_FRAMES):
        parts.append(stream.step(whole[..., start : start + CHUNK_FRAMES])[0, 0].float().cpu())
    return torch.cat(parts).numpy()


def _timed(device: torch.device, work):
    _sync(device)
    started = time.perf_counter()
    out = work()
    _sync(device)
    return out, time.perf_counter() - started


def _row(engine, precision: str, clip: np.ndarray, ref_codes: np.ndarray, ref_wav: np.ndarray) -> PrecisionRow:
    dtype = DTYPES[precision]
    chunks = math.ceil(ref_codes.shape[0] / CHUNK_FRAMES)
    with engine.model_work("decode") as (model, _runner), tf32(precision == "tf32"):
        device = next(model.parameters()).device
        try:
            cast = copy.deepcopy(model).to(dtype)
            warm = clip[: int(WARM_S * SAMPLE_RATE)]
            _decode(cast, _encode(cast, warm, dtype))
            codes, encode_s = _timed(device, lambda: _encode(cast, clip, dtype))
            wav, decode_s = _timed(device, lambda: _decode(cast, ref_codes))
        except (RuntimeError, NotImplementedError, TypeError) as e:  # an operation this device has no kernel for
            logger.warning("%s on %s failed: %s", precision, device, e)
            return PrecisionRow(
                precision,
                LABELS[precision],
                None,
                None,
                [],
                None,
                None,
                chunks,
                [],
                f"{type(e).__name__}: {str(e).splitlines()[0][:200]}",
            )
        finally:
            cast = None
            memory.release_cached(str(device))
    n = min(codes.shape[0], ref_codes.shape[0])
    same = codes[:n] == ref_codes[:n]
    rows = np.flatnonzero(~same.all(axis=1))
    first = int(rows[0]) if rows.size else (n if codes.shape[0] != ref_codes.shape[0] else None)
    return PrecisionRow(
        precision,
        LABELS[precision],
        round(encode_s, 4),
        round(decode_s, 4),
        [round(float(v), 6) for v in same.mean(axis=0)],
        first,
        snr_db(ref_wav, wav),
        chunks,
        [c for c in health(wav, ref_wav) if c.broken],
    )


def sweep(engine, samples: np.ndarray, precisions: tuple[str, ...] | None = None, progress=None) -> Sweep:
    """The sweep of ``samples`` (mono 24 kHz float32) on the engine's device; ``progress(fraction)``
    after each precision."""
    s = engine.settings
    if (s.decode_dtype or s.dtype) != "float32" or s.dtype != "float32":
        raise CodecError(
            "The precision sweep compares with the fp32 encode and decode: run it with --dtype float32 "
            "--decode-dtype float32 (the model is then copied into each precision in turn)."
        )
    precisions = precisions or default_precisions(engine.device)
    unknown = [p for p in precisions if p not in DTYPES]
    if unknown:
        raise CodecError(f"Unknown precision(s) {', '.join(unknown)}: choose from {', '.join(DTYPES)}.")
    samples = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
    limit = int(MAX_CLIP_S * SAMPLE_RATE)
    cut_from = samples.size / SAMPLE_RATE if samples.size > limit else None
    clip = samples[:limit]
    with tf32(False):
        warm = clip[: int(WARM_S * SAMPLE_RATE)]
        engine.decode(engine.encode_array(warm).codes)
        encoded = engine.encode_array(clip)
        decoded = engine.decode(encoded.codes)
    ref_codes, ref_wav = encoded.codes, np.asarray(decoded.samples, dtype=np.float32)
    chunks = math.ceil(ref_codes.shape[0] / CHUNK_FRAMES)
    rows = [
        PrecisionRow(
            "float32",
            LABELS["float32"],
            round(encoded.seconds, 4),
            round(decoded.seconds, 4),
            [1.0] * NUM_CODEBOOKS,
            None,
            math.inf,
            chunks,
            [c for c in health(ref_wav, ref_wav) if c.broken],
        )
    ]
    wanted = [p for p in precisions if p != "float32"]
    for done, precision in enumerate(wanted, start=1):
        logger.info("precision sweep: %s", precision)
        rows.append(_row(engine, precision, clip, ref_codes, ref_wav))
        if progress is not None:
            progress(done / len(wanted))
    info = engine.info()
    name = torch.cuda.get_device_name(torch.device(engine.device)) if engine.settings.is_cuda else _cpu_name()
    random_weights = bool(info.get("random_weights"))
    notes = recommend(rows, engine.settings.is_cuda)
    if cut_from is not None:
        notes = (Note("sweep_cut", {"seconds": MAX_CLIP_S, "total": cut_from}), *notes)
    if random_weights:
        notes = (*notes, Note("rec_random"))
    return Sweep(engine.device, name, round(clip.size / SAMPLE_RATE, 3), cut_from, rows, notes, random_weights)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "CPU"


def recommend(rows: list[PrecisionRow], cuda: bool) -> tuple[Note, ...]:
    """What to run on this machine, from the measured rows: the decode precision (bf16 only when it is at
    least ``BF16_WORTH_IT`` times faster and came out whole), encodes in fp32 unless another precision
    gave the same codes, and what the measurements say to ports."""
    by = {r.precision: r for r in rows}
    fp32, bf16, fp16 = by["float32"], by.get("bfloat16"), by.get("float16")
    notes: list[Note] = []
    fp32_s = fp32.decode_s or 0.0
    bf16_s = bf16.decode_s if bf16 is not None and bf16.error is None else None
    if bf16 is not None and bf16_s and fp32_s and bf16_s * BF16_WORTH_IT <= fp32_s:
        notes.append(
            Note(
                "rec_decode_bf16",
                {
                    "speedup": fp32_s / bf16_s,
                    "snr": bf16.snr_db or 0.0,
                    "broken": len(bf16.broken),
                    "chunks": bf16.chunks,
                },
            )
        )
    elif bf16_s and fp32_s:
        notes.append(Note("rec_decode_fp32", {"ratio": bf16_s / fp32_s}))
    else:
        notes.append(Note("rec_decode_fp32_only"))
    lower = [r for r in rows if r.precision in ("bfloat16", "tf32") and r.error is None]
    if lower and all(r.first_difference_frame is None for r in lower):
        notes.append(Note("rec_encode_any"))
    elif lower:
        worst = min(lower, key=lambda r: r.codes_equal)
        notes.append(Note("rec_encode_fp32", {"label": worst.label, "changed": 1 - worst.codes_equal}))
    for r in rows:
        if r.broken:
            notes.append(Note("rec_broken", {"label": r.label, "broken": len(r.broken), "chunks": r.chunks}))
        if r.error:
            notes.append(Note("rec_unavailable", {"label": r.label, "error": r.error}))
    if fp16 is not None and fp16.error is None:
        notes.append(Note("rec_fp16"))
    if cuda and "tf32" in by and by["tf32"].error is None:
        notes.append(Note("rec_tf32", {"changed": 1 - by["tf32"].codes_equal, "snr": by["tf32"].snr_db or 0.0}))
    return tuple(notes)
