"""Model calls on whole clips: encode audio to codes, decode codes to audio.

These functions take the loaded ``Qwen3TTSTokenizerV2Model`` and tensors already on its
device, and run under the caller's ``torch.inference_mode()``. The engine owns locking,
device placement, OOM retries and timing.
"""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger(__name__)

SAMPLES_PER_FRAME = 1920  # 24 kHz samples per code frame
NUM_CODEBOOKS = 16  # codebooks the 12 Hz tokenizer keeps


def num_frames(num_samples: int) -> int:
    """Frames the encoder emits for ``num_samples`` samples: ceil(samples / 1920)."""
    return -(-num_samples // SAMPLES_PER_FRAME)


def encode(model, wav: torch.Tensor, chunk_samples: int | None = None) -> torch.Tensor:
    """Encode a mono 24 kHz waveform of shape (samples,) to codes of shape (frames, 16)."""
    return encode_batch(model, [wav])[0]


def encode_batch(model, wavs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Encode several waveforms in one padded batch, as the official tokenizer does."""
    lengths = [int(w.shape[-1]) for w in wavs]
    batch = torch.zeros(len(wavs), max(lengths), dtype=wavs[0].dtype, device=wavs[0].device)
    mask = torch.zeros(len(wavs), max(lengths), dtype=torch.long, device=wavs[0].device)
    for i, w in enumerate(wavs):
        batch[i, : lengths[i]] = w
        mask[i, : lengths[i]] = 1
    out = model.encode(batch, mask, return_dict=True)
    return [codes.to(torch.long) for codes in out.audio_codes]


def decode(model, codes: torch.Tensor, chunk_frames: int = 300) -> torch.Tensor:
    """Decode codes of shape (frames, 16) to a waveform of frames * 1920 samples."""
    wav = model.decoder.chunked_decode(codes.T[None], chunk_size=chunk_frames)
    return wav.reshape(-1)[: codes.shape[0] * SAMPLES_PER_FRAME]


def decode_batch(model, codes_list: list[torch.Tensor], chunk_frames: int = 300) -> list[torch.Tensor]:
    """Decode several code sequences; each result has frames * 1920 samples."""
    return [decode(model, c, chunk_frames) for c in codes_list]
