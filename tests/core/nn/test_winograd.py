"""core/nn/winograd.py: F(m, 7) against a float64 convolution, for every tile size, dilation and length."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from core.nn import conv_layout, winograd

# SNR bounds against float64 (dB): measured 122 / 115 / 108 for 64 channels; direct fp32 is ~128
BOUNDS = {2: 115.0, 4: 108.0, 6: 100.0}


def snr_db(ours: torch.Tensor, ref: torch.Tensor) -> float:
    ref = ref.double()
    return float(10 * torch.log10((ref**2).sum() / ((ours.double() - ref) ** 2).sum()))


def conv_module(channels: int, dilation: int, seed: int, out_channels: int | None = None, bias: bool = True):
    torch.manual_seed(seed)
    conv = torch.nn.Conv1d(channels, out_channels or channels, 7, dilation=dilation, bias=bias)
    with torch.no_grad():
        conv.weight.mul_(3.0)  # unit-ish outputs
    return conv


@pytest.mark.parametrize("m", [2, 4, 6])
@pytest.mark.parametrize("dilation", [1, 3, 9])
def test_each_tile_is_within_its_bound_of_float64(m, dilation):
    conv = conv_module(64, dilation, seed=m + dilation)
    x = torch.randn(2, 64, 301 + 6 * dilation)  # 301 outputs: no whole number of tiles per phase
    with torch.inference_mode():
        ours = winograd.conv(winograd.Prepared(conv, m), conv_layout.channels_last(x))
        ref = F.conv1d(x.double(), conv.weight.double(), conv.bias.double(), dilation=dilation)
        direct = conv(x)
    assert ours.shape == ref.shape == (2, 64, 301)
    assert ours.stride(1) == 1  # channels-last out, as in
    assert snr_db(ours, ref) > BOUNDS[m]
    assert snr_db(direct, ref) > snr_db(ours, ref)  # the direct fp32 sum rounds less (the bound means something)


def test_long_inputs_go_in_blocks_with_the_same_result(monkeypatch):
    conv = conv_module(64, 3, seed=5, out_channels=80)
    x = torch.randn(1, 64, 1000)
    with torch.inference_mode():
        whole = winograd.conv(winograd.Prepared(conv, 6), conv_layout.channels_last(x))
        monkeypatch.setattr(winograd, "BLOCK_STEPS", 37)  # many blocks, the last a partial one
        blocked = winograd.conv(winograd.Prepared(conv, 6), conv_layout.channels_last(x))
        ref = F.conv1d(x.double(), conv.weight.double(), conv.bias.double(), dilation=3)
    assert blocked.shape == whole.shape == (1, 80, 1000 - 18)
    # blocks start tiles elsewhere, so they round differently: both within the bound, and close
    assert snr_db(blocked, ref) > BOUNDS[6] and snr_db(whole, ref) > BOUNDS[6]
    torch.testing.assert_close(blocked, whole, atol=3e-4, rtol=0)


def test_no_bias_and_a_wrong_matrix_is_caught():
    conv = conv_module(64, 1, seed=9, bias=False)
    x = torch.randn(1, 64, 200)
    with torch.inference_mode():
        prepared = winograd.Prepared(conv, 4)
        ref = F.conv1d(x.double(), conv.weight.double())
        assert snr_db(winograd.conv(prepared, conv_layout.channels_last(x)), ref) > BOUNDS[4]
        prepared.bt = prepared.bt.flip(0)  # a transform out of order gives noise, not a near miss
        assert snr_db(winograd.conv(prepared, conv_layout.channels_last(x)), ref) < 10


def test_too_short_and_other_convolutions_are_refused():
    conv = conv_module(8, 9, seed=1)
    with pytest.raises(ValueError, match="needs more than 54 inputs"):
        winograd.conv(winograd.Prepared(conv, 2), conv_layout.channels_last(torch.randn(1, 8, 54)))
    for other in (torch.nn.Conv1d(8, 8, 5), torch.nn.Conv1d(8, 8, 7, stride=2), torch.nn.Conv1d(8, 8, 7, groups=8)):
        with pytest.raises(ValueError, match="kernel-7"):
            winograd.Prepared(other, 4)


def test_the_matrices_are_exact_on_integers():
    at, g, bt = winograd.matrices(6)
    d = torch.arange(12, dtype=torch.float64) - 5
    w = torch.tensor([1.0, -2, 3, 0, 1, 2, -1], dtype=torch.float64)
    y = at @ ((g @ w) * (bt @ d))
    expected = torch.tensor([sum(w[k] * d[i + k] for k in range(7)) for i in range(6)], dtype=torch.float64)
    torch.testing.assert_close(y, expected, atol=1e-9, rtol=0)
