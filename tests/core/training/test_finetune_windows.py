"""Training in windows with left context gives the gradient of whole-segment training (tiny checkpoint,
layer scales 1.0), and the left context it uses covers the convolutions' receptive field."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from core.codec import SAMPLES_PER_FRAME
from core.training import decoder_pass
from core.training.losses import MultiResolutionMel


def _gradient(trainable, embedded, target, window: int, context: int) -> torch.Tensor:
    mel = MultiResolutionMel()
    losses: Any = lambda wav: ((mel(wav, target).mean() + (wav - target).abs().mean()), {})  # noqa: E731
    trainable.zero_grad(set_to_none=True)
    if window:
        decoder_pass.windowed_backward(
            trainable, embedded, losses, lambda t: t.backward(), window, context, contextlib.nullcontext()
        )
    else:
        total, _ = losses(trainable("whole", embedded).float())
        total.backward()
    return torch.cat([p.grad.reshape(-1) for p in trainable.parameters() if p.grad is not None])


def test_windowed_gradient_equals_the_whole_segment_gradient(tiny_model, speech):
    torch.manual_seed(0)
    decoder = tiny_model.decoder
    trainable = decoder_pass.TrainableDecoder(decoder).train()
    frames = 40  # 3.2 s segments, windows of 8 frames: five windows each
    x = torch.as_tensor(speech(frames * SAMPLES_PER_FRAME / 24000, seed=3))[None]
    with torch.inference_mode():
        codes = tiny_model.encode(x, torch.ones_like(x, dtype=torch.long)).audio_codes[0].T[None].clone()
    codes = torch.cat([codes, codes.flip(-1)])  # a batch of two
    target = torch.cat([x, x.flip(-1)])[:, None]
    embedded = decoder_pass.embed(decoder.quantizer, codes, "cpu")
    context = decoder_pass.conv_context_frames(trainable)
    assert 1 <= context <= 20
    whole = _gradient(trainable, embedded, target, 0, 0)
    windowed = _gradient(trainable, embedded, target, 8, context)
    cosine = torch.nn.functional.cosine_similarity(whole, windowed, dim=0).item()
    assert cosine >= 0.999, cosine
    assert torch.allclose(whole, windowed, rtol=1e-3, atol=1e-6 * whole.abs().max().item())
    # without left context the windows see zeros for their history: the gradient is not the whole one
    blind = _gradient(trainable, embedded, target, 8, 0)
    assert not torch.allclose(whole, blind, rtol=1e-3, atol=1e-6 * whole.abs().max().item())
    trainable.zero_grad(set_to_none=True)
    trainable.eval()  # the session's model is shared


def test_the_context_covers_the_receptive_field(tiny_model):
    """A change of the hidden input at frame 0 changes no output sample beyond the computed context."""
    trainable = decoder_pass.TrainableDecoder(tiny_model.decoder).eval()
    context = decoder_pass.conv_context_frames(trainable)
    torch.manual_seed(1)
    hidden = torch.randn(1, tiny_model.decoder.config.latent_dim, context + 6)
    changed = hidden.clone()
    changed[..., 0] += 5.0
    with torch.no_grad():
        a, b = trainable.high(hidden), trainable.high(changed)
    differs = (a - b).abs()[0, 0] > 0
    last = int(differs.nonzero().max())
    assert last < context * SAMPLES_PER_FRAME  # reached, but within the context
    assert last > SAMPLES_PER_FRAME  # the field is more than a frame: the test can fail
