"""The losses a decoder is fine-tuned with, each a mean per sample (so that DDP's average over processes
equals the mean over their whole batch):

- multi-resolution log-mel L1: seven STFT sizes (32 … 2048 samples, hop a quarter) with mel bands
  growing with them; L1 between log10 mel magnitudes, averaged over the scales. The held-out metric
  ``mel_distance`` is the same function.
- loudness: L1 between the log10 RMS of each segment and of its target (a global level term).
- adversarial (least squares) and feature matching, from :mod:`core.training.discriminators`.

All are taken in fp32, whatever the precision of the decoder's pass.
"""

from __future__ import annotations

import torch
from torch import nn

from core.codec import SAMPLE_RATE

MEL_SCALES = tuple((32 << i, 8 << i, 5 << i) for i in range(7))  # (STFT size, hop, mel bands): 32 … 2k samples
LOG_FLOOR = 1e-5  # mel magnitudes below it count as it (log10: -5)
RMS_FLOOR = 1e-5


class MultiResolutionMel(nn.Module):
    """Multi-resolution log-mel L1 distance between two waveforms (B, 1, T) or (B, T): (B,) per sample."""

    def __init__(self, sample_rate: int = SAMPLE_RATE, scales=MEL_SCALES):
        super().__init__()
        import torchaudio

        self.scales = tuple(scales)
        for i, (size, _hop, mels) in enumerate(self.scales):
            bank = torchaudio.functional.melscale_fbanks(
                size // 2 + 1, 0.0, sample_rate / 2, mels, sample_rate, norm="slaney", mel_scale="slaney"
            )
            self.register_buffer(f"bank{i}", bank, persistent=False)
            self.register_buffer(f"window{i}", torch.hann_window(size), persistent=False)

    def log_mel(self, wav: torch.Tensor, i: int) -> torch.Tensor:
        size, hop, _ = self.scales[i]
        spec = torch.stft(wav, size, hop, window=getattr(self, f"window{i}"), return_complex=True, center=True)
        mel = torch.matmul(spec.abs().transpose(-1, -2), getattr(self, f"bank{i}"))
        return torch.log10(mel.clamp(min=LOG_FLOOR))

    def forward(self, fake: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        fake, real = fake.float().reshape(fake.shape[0], -1), real.float().reshape(real.shape[0], -1)
        total = fake.new_zeros(fake.shape[0])
        for i in range(len(self.scales)):
            total = total + (self.log_mel(fake, i) - self.log_mel(real, i)).abs().mean(dim=(1, 2))
        return total / len(self.scales)


def rms_distance(fake: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """|log10 RMS(fake) − log10 RMS(real)| per sample (B,)."""
    fake, real = fake.float().reshape(fake.shape[0], -1), real.float().reshape(real.shape[0], -1)
    level = lambda x: torch.log10(x.pow(2).mean(dim=1).sqrt().clamp(min=RMS_FLOOR))  # noqa: E731
    return (level(fake) - level(real)).abs()


def discriminator_loss(real_outputs, fake_outputs):
    """Least squares: real → 1, fake → 0, summed over the discriminators, mean over samples."""
    total = 0.0
    for (real, _), (fake, _) in zip(real_outputs, fake_outputs, strict=True):
        total = total + (real.float() - 1).pow(2).mean() + fake.float().pow(2).mean()
    return total


def generator_losses(real_outputs, fake_outputs):
    """(adversarial, feature matching): fake → 1; L1 between the discriminators' inner features of the
    target and of the decoder's output (the target's are constants), averaged over the layers."""
    adversarial, features, layers = 0.0, 0.0, 0
    for (_, real_features), (fake, fake_features) in zip(real_outputs, fake_outputs, strict=True):
        adversarial = adversarial + (fake.float() - 1).pow(2).mean()
        for r, f in zip(real_features, fake_features, strict=True):
            features = features + (r.detach().float() - f.float()).abs().mean()
            layers += 1
    return adversarial, features / max(layers, 1)
