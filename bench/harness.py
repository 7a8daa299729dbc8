"""What every benchmark under ``bench/`` shares: a deterministic speech-like signal built on the
device, timing with device synchronisation and peak memory, full-fp32 switches, out-of-memory
tolerance, the official ``Qwen3TTSTokenizer`` encode and decode as the peer, token agreement and SNR,
the spread of a list of timings, the machine a figure was taken on (CPU, GPU, load average), peak RSS
and a run in a fresh process. Random weights: nothing measured with these says anything about audio
quality."""

from __future__ import annotations

import json
import logging
import math
import multiprocessing
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from core.codec import SAMPLE_RATE
from core.nn import decoding
from core.units import MIB

ROOT = Path(__file__).resolve().parent.parent  # the checkout (results and reference config paths)
log = logging.getLogger("bench.harness")


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


def snr_db(x: np.ndarray, ref: np.ndarray) -> float:
    """SNR of ``x`` against ``ref`` in dB (inf when they are identical)."""
    err = float(np.sum((x.astype(np.float64) - ref) ** 2))
    return float("inf") if err == 0 else float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / err))


def spread(values: list[float]) -> dict:
    """Median, 95th percentile and maximum of ``values`` (all 0 for an empty list)."""
    v = np.array(values or [0.0])
    return {"median": float(np.median(v)), "p95": float(np.percentile(v, 95)), "max": float(v.max())}


def cpu_names() -> list[str]:
    """The model name of every CPU /proc/cpuinfo lists (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            return [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    except OSError:
        return []


def cpu_name() -> str:
    names = cpu_names()
    return names[0] if names else platform.processor() or platform.machine()


def machine(device: str) -> dict:
    """Where a figure was taken: platform, torch, threads, GPU or CPU name and count, load average."""
    out = {"platform": platform.platform(), "torch": torch.__version__, "threads": torch.get_num_threads()}
    if device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name(torch.device(device))
    names = cpu_names()
    if names:
        out["cpu"], out["cpus"] = names[0], len(names)
    out["loadavg"] = os.getloadavg()
    return out


def provenance(script: str) -> dict:
    """Where a result came from: the command (``python SCRIPT`` and this run's arguments), the CPU and
    the UTC minute."""
    return {
        "command": f"python {script} " + " ".join(sys.argv[1:]),
        "cpu": cpu_name(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def summarize(values: list[float]) -> dict:
    """Median, minimum and maximum seconds of repeated runs, and how many."""
    return {"median_s": statistics.median(values), "min_s": min(values), "max_s": max(values), "n": len(values)}


def host(loadavg_before) -> dict:
    """The machine of a CPU-side figure: CPUs, Python, platform, the load average before the run
    (``loadavg_before``, taken by the caller) and after it (now)."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_before": loadavg_before,
        "loadavg_after": os.getloadavg(),
    }


def created() -> str:
    """This UTC second, ISO 8601 (a result's ``created``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load_text(load) -> str:
    """A load average (1, 5, 15 min) as a table cell: ``1.8, 1.5, 1.2``."""
    return ", ".join(f"{x:.1f}" for x in load)


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_fresh_process(target, *args, timeout_s: float = 3600):
    """What ``target(*args, queue)`` puts on ``queue``, run in a fresh (spawned) process so that its
    peak memory is its own."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=target, args=(*args, queue))
    child.start()
    result = queue.get(timeout=timeout_s)
    child.join()
    return result


def table(header: list[str], rows, right: int = 0) -> list[str]:
    """A Markdown table's lines: ``header``, its rule (the last ``right`` columns aligned right) and a
    line per row of cells."""
    rule = ["---"] * (len(header) - right) + ["---:"] * right
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def write_results(folder: Path, stem: str, result: dict, markdown: str) -> None:
    """``stem.json`` (the figures) and ``stem.md`` (the table a reader sees) under ``folder``; the
    table printed too."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / f"{stem}.md").write_text(markdown)
    print(markdown)


def ensure_checkpoint(path: Path) -> None:
    """The full-size random checkpoint of the reference config in ``path``, built when it is not there."""
    if not (path / "config.json").is_file():
        from core.model.checkpoints import build_full_checkpoint

        log.info("building the full-size random checkpoint in %s", path)
        build_full_checkpoint(path, reference=ROOT / "core" / "model" / "reference-config.json")


def ensure_scaled_checkpoint(path: Path, tiny: bool) -> None:
    """A tiny checkpoint, or a full-size random one with every layer scale 1.0 (context matters for the
    agreement checks), in ``path``, built when it is not there."""
    if not (path / "config.json").exists():
        from core.model.checkpoints import build_model, build_tiny_checkpoint, full_config, save_checkpoint

        if tiny:
            build_tiny_checkpoint(path)
        else:
            save_checkpoint(build_model(full_config(), seed=0, layer_scale=1.0), path, kind="full")
