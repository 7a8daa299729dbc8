"""core/nn/conv_layout.py: channels-last convolutions give the modules' results, keep the layout, track weights."""

from __future__ import annotations

import pytest
import torch

from core.nn import conv_layout

DTYPES = pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)])


def is_channels_last(x: torch.Tensor) -> bool:
    return x.stride(1) == 1 and x.stride(2) == x.shape[1]


@DTYPES
@pytest.mark.parametrize("groups,dilation,kernel", [(1, 1, 7), (1, 9, 7), (1, 1, 1), (8, 1, 7)])
def test_conv_equals_the_module(dtype, tol, groups, dilation, kernel):
    torch.manual_seed(groups + dilation + kernel)
    conv = torch.nn.Conv1d(16, 24, kernel, dilation=dilation, groups=groups).to(dtype)
    x = torch.randn(2, 16, 300, dtype=dtype)
    convs = conv_layout.ChannelsLastConvs()
    with torch.inference_mode():
        ours = convs.conv(conv, conv_layout.channels_last(x))
        theirs = conv(x)
    assert ours.shape == theirs.shape and is_channels_last(ours)
    torch.testing.assert_close(ours.float(), theirs.float(), atol=tol, rtol=tol)


@DTYPES
@pytest.mark.parametrize("stride,kernel", [(2, 4), (5, 10), (3, 6), (4, 8)])
def test_transposed_conv_equals_the_module(dtype, tol, stride, kernel):
    torch.manual_seed(stride)
    conv = torch.nn.ConvTranspose1d(32, 16, kernel, stride=stride).to(dtype)
    x = torch.randn(1, 32, 50, dtype=dtype)
    convs = conv_layout.ChannelsLastConvs()
    with torch.inference_mode():
        ours = convs.conv_transpose(conv, conv_layout.channels_last(x))
        theirs = conv(x)
    assert ours.shape == theirs.shape and is_channels_last(ours)
    torch.testing.assert_close(ours.float(), theirs.float(), atol=tol, rtol=tol)


def test_a_changed_weight_is_picked_up():
    conv = torch.nn.Conv1d(4, 4, 3)
    x = conv_layout.channels_last(torch.randn(1, 4, 20))
    convs = conv_layout.ChannelsLastConvs()
    with torch.no_grad():
        before = convs.conv(conv, x)
        conv.weight.mul_(2.0)  # in place: same tensor, newer version
        after_in_place = convs.conv(conv, x)
        expected = conv(x)
    with torch.inference_mode():
        conv.weight = torch.nn.Parameter(torch.zeros_like(conv.weight))  # a new (inference) tensor
        after_new = convs.conv(conv, x)
    assert not torch.allclose(before, after_in_place)
    torch.testing.assert_close(after_in_place, expected)
    torch.testing.assert_close(after_new, conv.bias[None, :, None].expand_as(after_new))


def test_time_helpers_keep_the_layout_and_own_their_memory():
    prev = conv_layout.channels_last(torch.zeros(2, 8, 3))
    x = conv_layout.channels_last(torch.randn(2, 8, 10))
    joined = conv_layout.cat_time(prev, x)
    assert joined.shape == (2, 8, 13) and is_channels_last(joined)
    assert torch.equal(joined[..., 3:], x)
    tail = conv_layout.tail_of(joined, 3)
    assert torch.equal(tail, x[..., -3:]) and is_channels_last(tail)
    assert tail.untyped_storage().nbytes() == tail.numel() * tail.element_size()  # not a view of ``joined``
    with pytest.raises(ValueError, match="batch, channels, time"):
        conv_layout.channels_last(torch.zeros(8, 3))
