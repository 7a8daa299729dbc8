"""Padded batch encodes whose codes equal each clip's lone encode, in bounded memory.

**Exact codes.** The encoder's causal convolutions pad a lone clip's tail to complete the last
stride window: with zeros, or at the downsample (``pad_mode="replicate"``) with its last value.
In a padded batch a shorter clip's tail is followed by computed features of the padding instead,
so its last, partial frame could get other codes than ``python -m core encode`` gives it. Only
strided convolutions read past a clip's end for its own outputs (a stride-1 causal conv pads on
the left alone), so before each strided conv every clip's positions past its length at that layer
(its lone length, by the module's own ``_get_output_length``) are set to what the lone conv pads
with. Attention is causal: nothing past a clip's end reaches its frames anywhere else.

**Bounded memory.** The full-rate SEANet front-end holds most of an encode's activations. Given
``window_samples``, it runs over time windows of the whole batch, each with the SEANet's
receptive field as left context (exact, as in ``core.nn.encoding``); the transformer, the
downsample and the quantizer then run once on the 25 Hz steps, which are small. Peak memory
follows batch size x window instead of batch size x longest clip, and the batch stays whole, so
the GPU sees as much work per call as the official one-call batch.
"""

from __future__ import annotations

import contextlib
import logging

import torch

from core.codec import NUM_CODEBOOKS, SAMPLES_PER_FRAME, SAMPLES_PER_STEP, ceil_div, num_frames
from core.nn.encoding import conv_context_samples

logger = logging.getLogger(__name__)


def _strided(convs) -> list[torch.nn.Module]:
    return [c for c in convs if int(c.stride) > 1]


@contextlib.contextmanager
def padded_like_lone_clips(convs, lengths: torch.Tensor):
    """While active, each strided conv in ``convs`` (run in order) sees each clip's positions past
    its own length as a lone encode pads them. ``lengths``: (batch,) samples at the first conv's input."""
    state = {"lengths": lengths}

    def before(module, args):
        x = args[0]
        keep = (torch.arange(x.shape[-1], device=x.device)[None, :] < state["lengths"][:, None])[:, None, :]
        if module.pad_mode == "replicate":
            last = (state["lengths"] - 1).clamp(0, x.shape[-1] - 1)[:, None, None].expand(-1, x.shape[1], 1)
            torch.where(keep, x, x.gather(-1, last), out=x)
        else:
            x.mul_(keep.to(x.dtype))

    def after(module, args, output):
        state["lengths"] = module._get_output_length(state["lengths"])

    handles = []
    for conv in _strided(convs):
        handles += [conv.register_forward_pre_hook(before), conv.register_forward_hook(after)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _seanet_convs(mimi) -> list[torch.nn.Module]:
    return [mimi.encoder.get_submodule(name) for name in mimi.encoder._mimiconv1d_layer_names]


def encode_batch(model, wavs: list[torch.Tensor], window_samples: int | None = None) -> list[torch.Tensor]:
    """Encode waveforms (24 kHz, each (samples,)) in one padded batch; each clip's codes (frames, 16)
    equal its lone encode. ``window_samples`` bounds the front-end's memory (None: one pass)."""
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    lengths = [int(w.shape[-1]) for w in wavs]
    batch = torch.zeros(len(wavs), max(lengths), dtype=dtype, device=device)
    for i, w in enumerate(wavs):
        batch[i, : lengths[i]] = w.to(device=device, dtype=dtype)
    lengths_t = torch.tensor(lengths, device=device)
    mimi = model.encoder
    steps = _front_end(model, batch, lengths_t, window_samples)
    hidden = mimi.encoder_transformer(steps.transpose(1, 2), return_dict=True)[0].transpose(1, 2)
    del steps
    at_steps = lengths_t
    for conv in _seanet_convs(mimi):
        at_steps = conv._get_output_length(at_steps)  # type: ignore[operator]
    with padded_like_lone_clips([mimi.downsample], at_steps):
        down = mimi.downsample(hidden)
    num_q = int(getattr(model, "encoder_valid_num_quantizers", NUM_CODEBOOKS))
    codes = mimi.quantizer.encode(down, num_q)[:num_q]  # (codebooks, batch, frames)
    return [codes[:, i, : num_frames(n)].T.to(torch.long) for i, n in enumerate(lengths)]


def _front_end(model, batch: torch.Tensor, lengths: torch.Tensor, window_samples: int | None) -> torch.Tensor:
    """SEANet features (batch, channels, 25 Hz steps) of the padded batch, window by window."""
    mimi = model.encoder
    convs = _seanet_convs(mimi)
    total = batch.shape[-1]
    if window_samples is None or total <= window_samples:
        with padded_like_lone_clips(convs, lengths):
            return mimi.encoder(batch[:, None])
    window = max(SAMPLES_PER_FRAME, window_samples // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME)
    context = conv_context_samples(model)
    # Every window after the first has one shape: the batch is padded to whole windows (positions past
    # each clip's length are set as a lone encode pads them anyway, and the steps they add are cut).
    # A tail window of odd length made cuDNN's heuristics pick, in strict fp32, an FFT plan with a
    # ≈75 GiB workspace (bench/results/tokenize_bench-strict-run1.md); fixed shapes also hit its plan cache.
    padded = ceil_div(total, window) * window
    if padded > total:
        batch = torch.nn.functional.pad(batch, (0, padded - total))
    pieces = []
    for start in range(0, padded, window):
        low = max(0, start - context)
        with padded_like_lone_clips(convs, lengths - low):
            embedded = mimi.encoder(batch[:, None, low : start + window])
        pieces.append(embedded[..., (start - low) // SAMPLES_PER_STEP :])
        del embedded
    return torch.cat(pieces, dim=-1)[..., : ceil_div(total, SAMPLES_PER_STEP)]
