"""The model a run starts from when it trains a decoder for a higher output rate (``--upsample-to 48000``).

The community 48 kHz recipe (``core.model.family.decoder_config_for_rate``): the published decoder with
one more ×2 upsample block at its end (``upsample_rates`` [8, 5, 4, 3, 2]), ``output_sample_rate``
48000, 3,840 samples a frame. Every tensor of the base whose name and shape are unchanged is copied (the
encoder, the codebooks, the transformer and the four blocks: codes stay the base's); the base's last
activation becomes the new block's first; the new block and the output convolution (now half as wide)
start from a variance-preserving random init, the output scaled so that the new decoder's level matches
the base's on the same codes.
"""

from __future__ import annotations

import logging

import torch

from core.codec import NUM_CODEBOOKS
from core.errors import TrainingError

logger = logging.getLogger(__name__)


def start_model(base, rate_hz: int, seed: int = 0):
    """``base`` itself when it already writes ``rate_hz``; else a new model as the module docstring says."""
    if int(base.config.output_sample_rate) == int(rate_hz):
        return base
    from core.model.family import decoder_config_for_rate

    try:
        config = decoder_config_for_rate(base.config, rate_hz)
    except ValueError as e:
        raise TrainingError(f"--upsample-to {rate_hz} cannot start from this base: {e}.") from e
    torch.manual_seed(seed)
    model = type(base)(config).eval()
    theirs, ours = base.state_dict(), model.state_dict()
    blocks = len(base.decoder.decoder)  # [input conv, blocks..., activation, output conv]
    renamed = {
        f"decoder.decoder.{blocks - 2}.{n}": f"decoder.decoder.{blocks - 2}.block.0.{n}" for n in ("alpha", "beta")
    }
    kept = {renamed.get(k, k): v for k, v in theirs.items() if ours.get(renamed.get(k, k)) is not None}
    kept = {k: v for k, v in kept.items() if ours[k].shape == v.shape}
    model.load_state_dict(kept, strict=False)
    new = [m for m in list(model.decoder.decoder)[blocks - 2 :]]
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in new:
            for conv in [m for m in module.modules() if isinstance(m, torch.nn.Conv1d | torch.nn.ConvTranspose1d)]:
                k = conv.weight.shape[2]
                fan_in = (
                    conv.weight.shape[1] * k
                    if isinstance(conv, torch.nn.Conv1d)
                    else conv.weight.shape[0] * k // conv.stride[0]
                )
                conv.weight.copy_(torch.randn(conv.weight.shape, generator=generator) * (1.0 / max(fan_in, 1)) ** 0.5)
        _match_level(base, model, generator)
    logger.info("a %d Hz decoder from the base: %d tensors copied, %d new", rate_hz, len(kept), len(ours) - len(kept))
    return model


def _match_level(base, model, generator: torch.Generator) -> None:
    """Scale the new output convolution so the new decoder's RMS on random codes is the base's."""
    codes = torch.randint(0, base.config.decoder_config.codebook_size, (1, NUM_CODEBOOKS, 40), generator=generator)
    want = base.decoder(codes).float().pow(2).mean().sqrt()
    last = list(model.decoder.decoder)[-1].conv
    for _ in range(4):  # the output is clamped to [-1, 1]: a few rounds
        got = model.decoder(codes).float().pow(2).mean().sqrt()
        if got > 0 and want > 0:
            last.weight.mul_(want / got)
