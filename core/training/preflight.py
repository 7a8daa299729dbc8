"""The plan of a run, made before anything is trained: the data found, the precision chosen and why,
the peak memory estimated from the settings and checked against the device. :func:`plan_finetune`
is fast (no audio is decoded, no model is loaded); it raises :class:`core.errors.TrainingError`
with a sentence for every refusal.

The memory estimate: the trained parameters cost 16 bytes each (fp32 weight, gradient and AdamW's
two moments), the discriminators the same; the activations grow with the audio seconds in flight at
once (batch × segment, or batch × (window + left context) when training in windows) at a rate per
audio second that depends on the precision and the checkpointing, measured on one H200 with the
published architecture (docs/training.md) and scaled by the decoder's width.
"""

from __future__ import annotations

import json
from pathlib import Path

from core.codec import FRAME_RATE
from core.errors import TrainingError
from core.training import data, run_folder
from core.training.precision import choose
from core.units import GIB, MIB

FULL_DECODER_DIM = 1536  # the published decoder's width: the activation rates below were measured on it
FULL_TRAINED_PARAMS = 114_000_000  # ≈ the published decoder without its codebooks
# GiB of activations per audio second in flight, full-size decoder (issue table, one H200, batch 4 × 30 s
# and 16 × 10 s, same figure within 2 %): (precision, checkpointing) -> GiB/s
ACTIVATION_GIB_PER_S = {
    ("fp32", "none"): 0.68,
    ("bf16", "none"): 0.55,
    ("fp16", "none"): 0.55,
    ("fp32", "blocks"): 0.34,
    ("bf16", "blocks"): 0.27,
    ("fp16", "blocks"): 0.27,
}
DISCRIMINATOR_GIB_PER_S = 0.05  # their activations per audio second (the whole segment, after the decoder)
HEADROOM = 0.92  # share of the free memory a plan may use


def checkpointing_of(settings, device: str) -> str:
    if settings.checkpointing != "auto":
        return settings.checkpointing
    return "blocks" if device.startswith("cuda") else "none"


def read_config(model: str) -> dict | None:
    """The base's config.json when it is a local folder (None for a hub id not yet fetched)."""
    path = Path(str(model)).expanduser() / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def estimate_peak_bytes(settings, precision: str, checkpointing: str, config: dict | None) -> dict:
    decoder = (config or {}).get("decoder_config", {})
    dim = decoder.get("decoder_dim", FULL_DECODER_DIM)
    scale = dim / FULL_DECODER_DIM
    params = int(FULL_TRAINED_PARAMS * scale * scale)  # widths square into conv weights
    segment_s = settings.segment_frames / FRAME_RATE
    micro = settings.batch_size // settings.accumulate  # segments in flight at once
    in_flight_s = micro * segment_s
    if settings.window_frames:
        context_s = 1.0  # ≈ the convolutions' receptive field (13 frames at the published size)
        in_flight_s = micro * min(segment_s, settings.window_frames / FRAME_RATE + context_s)
    activations = ACTIVATION_GIB_PER_S[(precision, checkpointing)] * scale * in_flight_s * GIB
    discriminators = (DISCRIMINATOR_GIB_PER_S * settings.batch_size * segment_s * GIB) if settings.adversarial else 0.0
    weights = 16 * params * (1.35 if settings.adversarial else 1.0)
    total = weights + activations + discriminators
    return {
        "trained_params": params,
        "weights_and_optimizer_mib": weights / MIB,
        "activations_mib": activations / MIB,
        "discriminators_mib": discriminators / MIB,
        "peak_mib": total / MIB,
    }


def segment_s(settings) -> float:
    return settings.segment_frames / FRAME_RATE


def free_bytes(device: str) -> int | None:
    if device.startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def plan_finetune(settings, check_out: bool = True) -> dict:
    """The plan as a JSON-able dict, or a TrainingError that says what to change."""
    if check_out:
        run_folder.check_out(Path(settings.out), settings.resume)
    if settings.upsample_to == 48000:
        import importlib.util

        if importlib.util.find_spec("core.model.family") is None:
            raise TrainingError(
                "--upsample-to 48000 needs the decoder family (core.model.family), which this version lacks; "
                "fine-tune at 24 kHz (leave --upsample-to out)."
            )
    precision = choose(settings.precision, settings.device)
    checkpointing = checkpointing_of(settings, settings.device)
    config = read_config(settings.model)
    found = data.count_rows(settings)
    if found.get("rows") and found.get("length_unknown") == 0 and found.get("longest_s", 0) < segment_s(settings):
        raise TrainingError(
            f"Too little audio for a training segment: the longest clip is {found['longest_s']:.2f} s and a segment is "
            f"{segment_s(settings):.2f} s. Use a shorter --segment-s or longer clips."
        )
    if isinstance(found.get("rows"), int) and found["rows"] < 2:  # refused now, not after the run's start
        raise TrainingError(
            f"{settings.data} has {found['rows']} clip: at least 2 are needed (one to train on, one held out)."
        )
    memory = estimate_peak_bytes(settings, precision.name, checkpointing, config)
    free = free_bytes(settings.device)
    plan = {
        "data": str(settings.data),
        "found": found,
        "val_clips": data.held_out_count(found["rows"], settings) if isinstance(found.get("rows"), int) else None,
        "precision": precision.name,
        "precision_reason": precision.reason,
        "precision_why": precision.why,  # its code: the page says it in the reader's language
        "precision_device": precision.device,
        "checkpointing": checkpointing,
        "segment_frames": settings.segment_frames,
        "window_frames": settings.window_frames,
        "memory": memory,
        "free_mib": None if free is None else free / MIB,
        "device": settings.device,
        "steps": settings.steps,
        "losses": losses_text(settings),
    }
    if free is not None and memory["peak_mib"] * MIB > HEADROOM * free:
        raise TrainingError(
            f"This run needs about {memory['peak_mib'] / 1024:.1f} GiB on {settings.device}, which has "
            f"{free / GIB:.1f} GiB free: lower --batch-size or --segment-s, train in windows (--window-s 2), "
            "use bf16 or per-block checkpointing."
        )
    return plan


def losses_text(settings) -> str:
    parts = [f"multi-resolution log-mel L1 ×{settings.mel_weight:g}", f"loudness (RMS) ×{settings.rms_weight:g}"]
    if settings.adversarial:
        parts.append(
            f"adversarial (multi-period + multi-resolution STFT discriminators) ×{settings.adv_weight:g} and feature "
            f"matching ×{settings.feature_weight:g} after {settings.warmup_steps} mel-only steps"
        )
    return ", ".join(parts)
