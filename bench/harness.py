"""What every benchmark under ``bench/`` shares: a deterministic speech-like signal built on the
device, timing with device synchronisation and peak memory, full-fp32 switches, out-of-memory
tolerance, the official ``Qwen3TTSTokenizer`` encode and decode as the peer, and token agreement.
Random weights: nothing measured with these says anything about audio quality."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from core.codec import SAMPLE_RATE
from core.nn import decoding
from core.units import MIB

ROOT = Path(__file__).resolve().parent.parent  # the checkout (results and reference config paths)


def signal(seconds: float, seed: int, device: str) -> np.ndarray:
    """Deterministic speech-like test signal (gliding harmonics, syllable envelope, noise), built on
    ``device`` so an hour takes no CPU time; float32 numpy, peak 0.5."""
    n = int(round(seconds * SAMPLE_RATE))
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(seed)
    t = torch.arange(n, device=dev, dtype=torch.float64) / SAMPLE_RATE
    f0 = 140 + 40 * torch.sin(2 * math.pi * 0.7 * t) + 20 * torch.sin(2 * math.pi * 0.05 * t + seed)
    phase = 2 * math.pi * torch.cumsum(f0, 0) / SAMPLE_RATE
    voiced = sum(torch.sin(k * phase) / k for k in range(1, 8))
    envelope = 0.5 * (1 + torch.sin(2 * math.pi * 3.0 * t + seed)) ** 2 / 4
    x = (0.35 * voiced * envelope).float() + 0.01 * torch.randn(n, generator=g, device=dev)
    x = 0.5 * x / x.abs().max().clamp_min(1e-9)
    out = x.cpu().numpy()
    del t, f0, phase, voiced, envelope, x
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return out


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def timed(fn, device: str):
    """(result, wall seconds, peak allocated MiB or None) of ``fn()``."""
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        sync(device)
        torch.cuda.reset_peak_memory_stats(torch.device(device))
    start = time.perf_counter()
    out = fn()
    sync(device)
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated(torch.device(device)) / MIB if device.startswith("cuda") else None
    return out, seconds, peak


class full_fp32:
    """Convolutions and matmuls in full fp32 (PyTorch lets cuDNN use TF32 for fp32 convolutions by default)."""

    def __enter__(self):
        self.previous = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False

    def __exit__(self, *exc):
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = self.previous


def try_oom(fn):
    """``fn()``, or None when it runs out of device memory."""
    try:
        return fn()
    except Exception as e:
        if not is_oom(e):
            raise
        torch.cuda.empty_cache()
        return None


def is_oom(e: BaseException) -> bool:
    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower()


def official_encode(tok, x: np.ndarray) -> np.ndarray:
    enc = tok.encode(x, sr=SAMPLE_RATE)
    return enc.audio_codes[0].cpu().numpy()


def official_decode(tok, codes: np.ndarray) -> np.ndarray:
    wavs, _sr = tok.decode({"audio_codes": torch.from_numpy(codes)})
    return np.asarray(wavs[0], dtype=np.float32)


def whole_decode(model, codes: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return decoding.decode_whole(model, torch.from_numpy(codes)).float().cpu().numpy()


def error_stats(x: np.ndarray, ref: np.ndarray) -> dict:
    """Max abs difference and SNR (dB; None when identical) of ``x`` against ``ref``."""
    err = x.astype(np.float64) - ref.astype(np.float64)
    power = float(np.sum(err**2))
    snr = None if power == 0 else 10 * math.log10(max(float(np.sum(ref.astype(np.float64) ** 2)), 1e-30) / power)
    return {"max_abs": float(np.max(np.abs(err))) if err.size else 0.0, "snr_db": snr}


def agreement(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or a.shape != b.shape:
        return None
    return float(np.mean(a == b))


def set_layer_scales(model, value: float) -> int:
    count = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layer_scale.scale"):
                p.fill_(value)
                count += 1
    return count
