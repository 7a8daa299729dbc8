"""Padded batch encodes whose codes equal each clip's lone encode, the last partial frame included.

The encoder's causal convolutions pad a lone clip's tail with zeros (the "extra padding" that
completes the last stride window). In a padded batch, a shorter clip's tail is followed by
computed features of the padding instead, so its last, partial frame could get other codes than
``python -m core encode`` gives it. Here every encoder convolution sees zeros past each clip's own
length at that layer (its lone output length, by the module's own ``_get_output_length``), which is
exactly what a lone clip's convolution sees (the downsample pads by repeating the last value: so
do we); attention is causal, so nothing past a clip's end
reaches its frames elsewhere. The mask is multiplied in place: values past a clip's end are never
read for its codes.
"""

from __future__ import annotations

import contextlib
import logging

import torch

logger = logging.getLogger(__name__)


def _encoder_convs(model) -> list[torch.nn.Module]:
    """Every causal conv on the encode path, in the order they run (SEANet, then the downsample)."""
    return [m for m in model.encoder.modules() if hasattr(m, "_get_output_length") and hasattr(m, "conv")]


@contextlib.contextmanager
def zero_past_each_clip(model, lengths: torch.Tensor):
    """While active, each encoder conv input is zeroed past each clip's length at that layer.
    ``lengths``: (batch,) int64 input samples per clip, on the model's device."""
    state = {"lengths": lengths}

    def before(module, args):
        x = args[0]
        lengths = state["lengths"]
        keep = (torch.arange(x.shape[-1], device=x.device)[None, :] < lengths[:, None])[:, None, :]
        if module.pad_mode == "replicate":  # the downsample repeats a lone clip's last value instead of zeros
            index = (lengths - 1).clamp(min=0)[:, None, None].expand(-1, x.shape[1], 1)
            torch.where(keep, x, x.gather(-1, index), out=x)
        else:
            x.mul_(keep.to(x.dtype))

    def after(module, args, output):
        state["lengths"] = module._get_output_length(state["lengths"])

    handles = []
    for conv in _encoder_convs(model):
        handles.append(conv.register_forward_pre_hook(before))
        handles.append(conv.register_forward_hook(after))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def encode_batch(model, wavs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Encode waveforms in one padded batch (as the official tokenizer does), each clip's codes
    equal to its lone encode."""
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    lengths = [int(w.shape[-1]) for w in wavs]
    batch = torch.zeros(len(wavs), max(lengths), dtype=dtype, device=device)
    mask = torch.zeros(len(wavs), max(lengths), dtype=torch.long, device=device)
    for i, w in enumerate(wavs):
        batch[i, : lengths[i]] = w.to(device=device, dtype=dtype)
        mask[i, : lengths[i]] = 1
    with zero_past_each_clip(model, torch.tensor(lengths, device=device)):
        out = model.encode(batch, mask, return_dict=True)
    return [codes.to(torch.long) for codes in out.audio_codes]
