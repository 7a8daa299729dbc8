"""core/nn/cpu_convs.py: each product gives the module's result channels-last, the rules pick the
product the module docstring says, weights are re-read when they change, and a live decode stream
with Winograd stays within its bound of the fp32 decode."""

from __future__ import annotations

import pytest
import torch

from core.nn import conv_layout, cpu_convs, fast_decode


def snr_db(ours: torch.Tensor, ref: torch.Tensor) -> float:
    ref = ref.double()
    return float(10 * torch.log10((ref**2).sum() / ((ours.double() - ref) ** 2).sum()))


def is_channels_last(x: torch.Tensor) -> bool:
    return x.stride(1) == 1 and x.stride(2) == x.shape[1]


@pytest.mark.parametrize(
    "cin,cout,kernel,stride,dilation,steps,path",
    [
        (1024, 1536, 7, 1, 1, 16, "gemm"),  # few steps, many weights: the decoder's first convolution
        (96, 96, 7, 1, 3, 500, "winograd"),  # a residual unit's convolution
        (96, 96, 7, 1, 1, 40, "gemm"),  # too few steps for Winograd's tiles to pay
        (32, 32, 7, 1, 1, 500, "onednn"),  # too few channels for Winograd, too many steps for one product
        (512, 1024, 16, 8, 1, 9, "gemm"),  # the encoder's strided downsampling
        (192, 192, 1, 1, 1, 640, "gemm"),  # a 1x1 convolution is a product already
        (64, 32, 3, 1, 1, 1000, "onednn"),
    ],
)
def test_each_path_gives_the_modules_result(cin, cout, kernel, stride, dilation, steps, path):
    torch.manual_seed(cin + kernel + steps)
    conv = torch.nn.Conv1d(cin, cout, kernel, stride=stride, dilation=dilation)
    x = torch.randn(1, cin, (steps - 1) * stride + (kernel - 1) * dilation + 1)
    convs = cpu_convs.CpuConvs()
    with torch.inference_mode():
        x_cl = conv_layout.channels_last(x)
        assert convs.path(conv, x_cl) == path
        ours = convs.conv(conv, x_cl)
        ref = torch.nn.functional.conv1d(x.double(), conv.weight.double(), conv.bias.double(), stride, 0, dilation)
    assert ours.shape == ref.shape == (1, cout, steps)
    assert is_channels_last(ours)
    assert snr_db(ours, ref) > (100 if path == "winograd" else 115)


def test_no_winograd_when_it_is_off_or_not_float32():
    conv = torch.nn.Conv1d(96, 96, 7)
    x = conv_layout.channels_last(torch.randn(1, 96, 600))
    assert cpu_convs.CpuConvs().path(conv, x) == "winograd"
    assert cpu_convs.CpuConvs(winograd_tile=None).path(conv, x) == "onednn"
    assert cpu_convs.CpuConvs(winograd_tile=0).path(conv, x) == "onednn"
    assert cpu_convs.CpuConvs().path(conv.to(torch.bfloat16), x.bfloat16()) == "onednn"
    assert cpu_convs.CpuConvs().path(torch.nn.Conv1d(96, 96, 7, groups=96), x) == "onednn"


@pytest.mark.parametrize("cin,cout,kernel,stride", [(1536, 768, 16, 8), (64, 48, 6, 3), (128, 128, 2, 2)])
def test_transposed_steps_are_the_modules_steps(cin, cout, kernel, stride):
    torch.manual_seed(stride)
    conv = torch.nn.ConvTranspose1d(cin, cout, kernel, stride=stride)
    overlap = -(-kernel // stride) - 1
    x = torch.randn(2, cin, overlap + 20)
    with torch.inference_mode():
        ours = cpu_convs.CpuConvs().transposed_steps(conv, conv_layout.channels_last(x), overlap)
        theirs = conv_layout.ChannelsLastConvs().transposed_steps(conv, conv_layout.channels_last(x), overlap)
        ref = torch.nn.functional.conv_transpose1d(x.double(), conv.weight.double(), conv.bias.double(), stride)
    ref = ref[..., overlap * stride : x.shape[-1] * stride]
    assert ours.shape == theirs.shape == ref.shape == (2, cout, 20 * stride)
    assert is_channels_last(ours)
    assert snr_db(ours, ref) > 115 and snr_db(theirs, ref) > 115


@pytest.mark.parametrize("shape", [(96, 96, 7, 500), (1024, 1536, 7, 20)])
def test_a_changed_weight_is_picked_up(shape):
    cin, cout, kernel, length = shape
    conv = torch.nn.Conv1d(cin, cout, kernel)
    x = conv_layout.channels_last(torch.randn(1, cin, length))
    convs = cpu_convs.CpuConvs()
    with torch.no_grad():
        before = convs.conv(conv, x)
        conv.weight.mul_(2.0)  # in place: the version counter moves
        after = convs.conv(conv, x)
        expected = conv(x)
    assert not torch.allclose(before, after)
    assert snr_db(after, expected) > 100


def test_a_live_stream_with_winograd_stays_within_its_bound(tiny_model, speech, whole_codes):
    """The tiny checkpoint's channels (64 down to 4) are below Winograd's threshold; lowered here so
    its residual units take F(6, 7): the streamed audio is not bit-identical (it did run) and stays
    within 70 dB of the direct fp32 stream."""
    codes = whole_codes(tiny_model, speech(2.0, seed=3)).T[None].contiguous()  # (1, 16, 25)
    direct = fast_decode.FastDecoder(tiny_model.decoder, fast_decode.DecodeOptions("float32"))
    fast = fast_decode.FastDecoder(tiny_model.decoder, fast_decode.DecodeOptions("float32"))
    fast._winograd_convs[6] = cpu_convs.CpuConvs(winograd_tile=6, winograd_min_channels=8)
    used = []
    original = cpu_convs.winograd.conv
    with torch.inference_mode():

        def counting(prepared, x):
            used.append(prepared.m)
            return original(prepared, x)

        cpu_convs.winograd.conv = counting
        try:
            a_stream, b_stream = direct.stream(1, 0), fast.stream(1, 6)
            a = torch.cat([direct.step(a_stream, codes[..., lo : lo + 4]) for lo in range(0, 24, 4)], -1)
            b = torch.cat([fast.step(b_stream, codes[..., lo : lo + 4]) for lo in range(0, 24, 4)], -1)
        finally:
            cpu_convs.winograd.conv = original
    assert used and set(used) == {6}
    assert not torch.equal(a, b)
    assert snr_db(b, a) > 70
