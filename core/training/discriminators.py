"""The discriminators of adversarial fine-tuning, trained from scratch beside the decoder.

- :class:`PeriodDiscriminator` (one per period 2, 3, 5, 7, 11): the waveform folded into a 2-D
  (time / period, period) grid, strided 2-D convolutions along time; it sees periodic structure
  (pitch) that a 1-D view spreads out.
- :class:`SpectrogramDiscriminator` (three STFT resolutions): the complex spectrogram's real and
  imaginary parts as two channels, 2-D convolutions over (frequency, time); it sees the fine
  spectral texture that a mel loss averages away.

Each returns (scores, [inner feature maps]); feature matching compares the inner maps of the target
and of the decoder's output. Leaky ReLU (0.1) between layers; widths scale with ``channels``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

PERIODS = (2, 3, 5, 7, 11)
STFT_RESOLUTIONS = tuple((512 << i, 128 << i) for i in (2, 1, 0))  # (FFT size, hop) in samples: 2k, 1k, 512
SLOPE = 0.1  # leaky ReLU


class PeriodDiscriminator(nn.Module):
    def __init__(self, period: int, channels: int = 32):
        super().__init__()
        self.period = period
        widths = (1, channels, channels * 4, channels * 8, channels * 8)
        self.layers = nn.ModuleList(
            nn.Conv2d(a, b, (5, 1), (3, 1) if i < 3 else (1, 1), padding=(2, 0))
            for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True))
        )
        self.out = nn.Conv2d(widths[-1], 1, (3, 1), padding=(1, 0))

    def forward(self, wav: torch.Tensor):
        batch, _, length = wav.shape
        pad = (-length) % self.period
        x = F.pad(wav, (0, pad), mode="reflect" if pad < length else "constant")
        x = x.reshape(batch, 1, -1, self.period)
        features = []
        for layer in self.layers:
            x = F.leaky_relu(layer(x), SLOPE)
            features.append(x)
        return self.out(x), features


class SpectrogramDiscriminator(nn.Module):
    window: torch.Tensor

    def __init__(self, fft: int, hop: int, channels: int = 32):
        super().__init__()
        self.fft, self.hop = fft, hop
        self.register_buffer("window", torch.hann_window(fft), persistent=False)
        self.layers = nn.ModuleList(
            [
                nn.Conv2d(2, channels, (3, 9), padding=(1, 4)),
                nn.Conv2d(channels, channels, (3, 9), (1, 2), padding=(1, 4)),
                nn.Conv2d(channels, channels, (3, 9), (1, 2), padding=(1, 4)),
                nn.Conv2d(channels, channels, (3, 3), padding=(1, 1)),
            ]
        )
        self.out = nn.Conv2d(channels, 1, (3, 3), padding=(1, 1))

    def forward(self, wav: torch.Tensor):
        spec = torch.stft(wav.float()[:, 0], self.fft, self.hop, window=self.window, return_complex=True)
        x = torch.stack([spec.real, spec.imag], dim=1).transpose(2, 3)  # (B, 2, time, frequency)
        features = []
        for layer in self.layers:
            x = F.leaky_relu(layer(x), SLOPE)
            features.append(x)
        return self.out(x), features


class Discriminators(nn.Module):
    """All of them; ``forward(wav)`` → [(scores, features)] in a fixed order."""

    def __init__(self, channels: int = 32):
        super().__init__()
        self.members = nn.ModuleList(
            [PeriodDiscriminator(p, channels) for p in PERIODS]
            + [SpectrogramDiscriminator(fft, hop, channels) for fft, hop in STFT_RESOLUTIONS]
        )

    def forward(self, wav: torch.Tensor):
        wav = wav.float()
        return [member(wav) for member in self.members]
