"""Held-out evaluation: the same fixed clips decoded whole at step 0 (the base) and every
``eval_every`` steps, measured against their original audio, and kept as WAV files to listen to.

Metrics (ids, lower is better): ``mel_distance`` (the multi-resolution log-mel L1 of
:mod:`core.training.losses`, mean over the clips) and ``rms_error_db`` (|level difference| in dB).
Decoding runs in fp32 without gradients, whatever the training precision, so that before and after
are measured the same way.
"""

from __future__ import annotations

from pathlib import Path

import torch

from core.codec import SAMPLE_RATE
from core.training import decoder_pass
from core.training.losses import MultiResolutionMel, rms_distance

SAMPLE_CLIPS = 4  # held-out clips written as WAV at each evaluation (the first ones of the split)


@torch.no_grad()
def evaluate(
    trainable, quantizer, clips, read, device: str, mel: MultiResolutionMel, window: int, context: int
) -> tuple[dict, dict]:
    """({metric: value}, {clip id: decoded float32 array}) over ``clips`` (ids); ``read(id)`` → (codes, audio).
    The convolution half runs in windows of ``window`` frames with ``context`` frames of left context
    (exact: the context covers its receptive field), so a long clip needs no more memory than a short one."""
    was_training = trainable.training
    trainable.eval()
    mel_values, rms_values, decoded = [], [], {}
    try:
        for clip in clips:
            codes, audio = read(clip)
            codes_t = torch.as_tensor(codes.astype("int64")).T[None]
            target = torch.as_tensor(audio.copy())[None, None].to(device)
            hidden = trainable.low(decoder_pass.embed(quantizer, codes_t, device))
            wav = decoder_pass.high_in_windows(trainable, hidden, window, context)
            mel_values.append(float(mel(wav, target).mean()))
            rms_values.append(20.0 * float(rms_distance(wav, target).mean()))
            decoded[clip] = wav[0, 0].cpu().numpy()
    finally:
        trainable.train(was_training)
    n = max(len(mel_values), 1)
    return {"mel_distance": sum(mel_values) / n, "rms_error_db": sum(rms_values) / n}, decoded


def write_samples(
    folder: Path, name: str, decoded: dict, limit: int = SAMPLE_CLIPS, rate: int = SAMPLE_RATE
) -> list[tuple[str, Path]]:
    """The first ``limit`` decoded clips as 16-bit WAV files in ``folder/name/``: [(clip id, path)]."""
    import soundfile

    target = Path(folder) / name
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for clip in sorted(decoded)[:limit]:
        path = target / f"{clip}.wav"
        soundfile.write(path, decoded[clip], rate, subtype="PCM_16")
        written.append((clip, path))
    return written
