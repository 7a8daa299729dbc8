"""The three-step readiness check: CUDA present -> weights resident -> a test round trip.

Each step reports pass / fail / skipped, a detail line and its duration; the report is
plain JSON-serializable data so the CLI, the web page and ``/health`` show the same thing.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from core.codec import CODEBOOK_SIZE, FRAME_RATE, NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME, num_frames
from core.units import MIB

PASS, FAIL, SKIPPED = "pass", "fail", "skipped"
STEP_TITLES = {"cuda": "CUDA present", "weights": "Weights resident", "roundtrip": "Test round trip"}  # in check order
TEST_SIGNAL_S = 1.0  # seconds of built-in test signal for the round trip


@dataclass(frozen=True)
class Step:
    name: str  # "cuda", "weights" or "roundtrip"
    title: str  # human title shown in the status bar
    status: str  # "pass", "fail" or "skipped"
    detail: str  # one line saying what was found
    seconds: float  # how long the step took
    data: dict = field(default_factory=dict)  # figures behind the detail (MiB, names, ...)


@dataclass(frozen=True)
class ReadinessReport:
    steps: tuple[Step, ...]  # in order: cuda, weights, roundtrip
    checked_at: float  # time.time() when the check finished

    @property
    def ok(self) -> bool:
        """Ready: no step failed and the round trip passed (CUDA is skipped on CPU by design)."""
        return all(s.status != FAIL for s in self.steps) and self.step("roundtrip").status == PASS

    def problems(self) -> list[str]:
        """Why the report is not ``ok``, one line per step at fault (empty when ok)."""
        return [
            f"{s.title}: {s.status} ({s.detail})"
            for s in self.steps
            if s.status == FAIL or (s.name == "roundtrip" and s.status != PASS)
        ]

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "checked_at": self.checked_at, "steps": [asdict(s) for s in self.steps]}

    def model_pace(self) -> float | None:
        """Model seconds per audio second of the passed round trip (encode + decode of the test
        signal), None when it did not pass."""
        trip = next((s for s in self.steps if s.name == "roundtrip"), None)
        if trip is None or trip.status != PASS or not trip.data.get("input_s"):
            return None
        return float(trip.data["seconds"]) / float(trip.data["input_s"])


def _timed(name: str, title: str, fn) -> Step:
    start = time.perf_counter()
    try:
        status, detail, data = fn()
    except Exception as e:  # a check must report, never raise
        status, detail, data = FAIL, f"{type(e).__name__}: {e}", {}
    return Step(name, title, status, detail, round(time.perf_counter() - start, 4), data)


def check_cuda(device: str) -> Step:
    """Step 1: is CUDA there, and what card is it?"""

    def run():
        if not torch.cuda.is_available():
            if device.startswith("cuda"):
                return FAIL, f"{device} was requested but CUDA is not available; use --device cpu.", {}
            return SKIPPED, "no CUDA — running on CPU", {"cuda": False}
        if not device.startswith("cuda"):
            return SKIPPED, f"CUDA present but the engine runs on {device} as configured", {"cuda": True}
        dev = torch.device(device)
        props = torch.cuda.get_device_properties(dev)
        free, total = torch.cuda.mem_get_info(dev)
        data = {
            "name": props.name,
            "capability": f"{props.major}.{props.minor}",
            "total_mib": round(total / MIB),
            "free_mib": round(free / MIB),
            "bf16": bool(torch.cuda.is_bf16_supported(including_emulation=False)),  # as the engine decides
        }
        detail = (
            f"{props.name}, compute {data['capability']}, {data['free_mib']} of "
            f"{data['total_mib']} MiB free, native bf16: {'yes' if data['bf16'] else 'no'}"
        )
        return PASS, detail, data

    return _timed("cuda", STEP_TITLES["cuda"], run)


def model_bytes(model: torch.nn.Module) -> int:
    """Bytes of every parameter and buffer of ``model``."""
    tensors = list(model.parameters()) + list(model.buffers())
    return sum(t.numel() * t.element_size() for t in tensors)


def check_weights(model: torch.nn.Module | None, device: str) -> Step:
    """Step 2: every parameter and buffer sits on the target device, and the bytes are there."""

    def run():
        if model is None:
            return FAIL, "no model loaded", {}
        target = torch.device(device)
        tensors = list(model.named_parameters()) + list(model.named_buffers())
        misplaced = [
            n
            for n, t in tensors
            if t.device.type != target.type or (target.index is not None and t.device.index != target.index)
        ]
        need = model_bytes(model)
        data = {
            "tensors": len(tensors),
            "bytes": need,
            "mib": round(need / MIB, 1),
            "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
        }
        if misplaced:
            return FAIL, f"{len(misplaced)} tensors are not on {device}, e.g. {misplaced[0]}", data
        if target.type == "cuda":
            allocated = torch.cuda.memory_allocated(target)
            data["allocated_mib"] = round(allocated / MIB, 1)
            if allocated < need:
                return (
                    FAIL,
                    f"only {allocated / MIB:.0f} MiB allocated on {device}, weights need {need / MIB:.0f} MiB",
                    data,
                )
        return (
            PASS,
            f"{data['mib']:.0f} MiB of weights resident on {device} ({data['dtype']}, {len(tensors)} tensors)",
            data,
        )

    return _timed("weights", STEP_TITLES["weights"], run)


def probe_signal(seconds: float = TEST_SIGNAL_S) -> np.ndarray:
    """A built-in test signal: a harmonic tone with a syllable envelope, peak 0.5."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    tone = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 6))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * 2 * t))
    x = tone * envelope
    return (0.5 * x / np.abs(x).max()).astype(np.float32)


def check_roundtrip(encode, decode, samples_per_frame: int = SAMPLES_PER_FRAME) -> Step:
    """Step 3: encode and decode the test signal; check shapes, ranges and finiteness (``samples_per_frame``:
    what the loaded decoder makes a frame)."""

    def run():
        x = probe_signal()
        start = time.perf_counter()
        codes = encode(x)
        audio = decode(codes)
        elapsed = time.perf_counter() - start
        frames = num_frames(x.size)
        problems = []
        if codes.shape != (frames, NUM_CODEBOOKS):
            problems.append(f"codes shape {tuple(codes.shape)} != ({frames}, {NUM_CODEBOOKS})")
        if codes.size and (codes.min() < 0 or codes.max() >= CODEBOOK_SIZE):
            problems.append(f"codes outside 0..{CODEBOOK_SIZE - 1}")
        if audio.shape[-1] != frames * samples_per_frame:
            problems.append(f"output {audio.shape[-1]} samples != {frames} x {samples_per_frame}")
        if not np.isfinite(audio).all():
            problems.append("output has NaN or inf samples")
        rate_hz = round(samples_per_frame * FRAME_RATE)
        data = {"frames": frames, "seconds": round(elapsed, 4), "input_s": TEST_SIGNAL_S, "output_rate_hz": rate_hz}
        if problems:
            return FAIL, "; ".join(problems), data
        return (
            PASS,
            f"{TEST_SIGNAL_S:.0f} s test signal -> {frames} x {NUM_CODEBOOKS} codes -> {rate_hz / 1000:g} kHz audio "
            f"in {elapsed * 1000:.0f} ms",
            data,
        )

    return _timed("roundtrip", STEP_TITLES["roundtrip"], run)


def unchecked(name: str, status: str, why: str) -> Step:
    """A step that did not run, with the reason (e.g. the weights failed: no model to check)."""
    return Step(name, STEP_TITLES[name], status, why, 0.0)


def run_checks(
    device: str,
    model: torch.nn.Module | None,
    why_not_loaded: str | None,
    encode,
    decode,
    samples_per_frame: int = SAMPLES_PER_FRAME,
) -> ReadinessReport:
    """The three steps in order: CUDA, then, with a model, its weights and a round trip through
    ``encode(samples) -> codes`` and ``decode(codes) -> samples``; without one, why not."""
    cuda = check_cuda(device)
    if model is None:
        steps = (
            cuda,
            unchecked("weights", FAIL, why_not_loaded or "model not loaded"),
            unchecked("roundtrip", SKIPPED, "skipped: no model"),
        )
    else:
        steps = (cuda, check_weights(model, device), check_roundtrip(encode, decode, samples_per_frame))
    return ReadinessReport(steps, time.time())
