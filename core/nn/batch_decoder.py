"""The decoder's per-frame step for many live sessions at once, every session's state in a row of
preallocated slot pools (the same slots as ``core.nn.batch_encoder``; the last one is scratch).

:class:`BatchDecoderStream` is ``core.nn.decoding.DecoderStream`` with each causal convolution's left
state, each transposed convolution's previous frames and the transformer's 72-step sliding window
kept per slot: a step gathers the rows named by ``idx`` (B,), runs the ordinary stream's modules on
the batch and writes each row's new state back to its slot. Slots before their first frame hold
zeros (what a fresh stream starts from) and their window keys are masked by the slot's position.
Static shapes, no host reads: ``core.nn.live_batch`` captures one step per batch size.
"""

from __future__ import annotations

import torch

from core.nn import frame_conv
from core.nn.decoding import DecoderStream, run_transformer_layers
from core.nn.fast_decode import zero_state
from core.nn.frame_conv import conv1d, conv_transpose1d, transposed_weight


class BatchDecoderStream(DecoderStream):
    """One frame for each of B slots per :meth:`step_rows`; ``rows``: slots including scratch."""

    def __init__(self, decoder, rows: int):
        super().__init__(decoder, rows, None)
        param = next(decoder.parameters())
        device, dtype = param.device, param.dtype
        self.pool = zero_state(decoder, rows, dtype, device)
        tr = decoder.pre_transformer
        attn = tr.layers[0].self_attn
        heads, layers = int(attn.config.num_key_value_heads), int(tr.config.num_hidden_layers)
        shape = (rows, heads, self.window, int(attn.head_dim))
        self.keys = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(layers)]
        self.values = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(layers)]
        self.frames = torch.zeros(rows, dtype=torch.long, device=device)  # frames each slot decoded
        self.slots = torch.arange(self.window, device=device)
        self.cache = self  # type: ignore[assignment]  # the layers call update() on it
        self.idx = torch.zeros(1, dtype=torch.long, device=device)  # set by step_rows
        # each transposed convolution's weight as one matrix, made once (``core.nn.frame_conv``)
        self.transposed = {id(m): w for m in decoder.modules() if (w := transposed_weight(m)) is not None}

    def reset(self, slot: int) -> None:
        """The slot's state before a first frame."""
        for state in (*self.pool.values(), *self.keys, *self.values):
            state[slot].zero_()
        self.frames[slot] = 0

    def _with_state(self, module, x, width):
        state = self.pool[id(module)]
        joined = torch.cat([state.index_select(0, self.idx), x], dim=-1)
        state.index_copy_(0, self.idx, joined[..., joined.shape[-1] - width :])
        return joined

    def _conv(self, module, x):
        if int(module.stride) != 1:
            raise ValueError("streaming decode expects stride-1 causal convolutions")
        pad = int(module.padding)
        if pad > 0:
            x = self._with_state(module, x, pad)
        return conv1d(module.conv, x)  # one frame's few steps: a matmul, not cuDNN's implicit GEMM

    def _transposed(self, module, x):
        """``DecoderStream._transposed`` with one frame's few steps as a matmul (``core.nn.frame_conv``)."""
        conv = module.conv
        prepared = self.transposed.get(id(conv))
        stride = conv.stride[0]
        overlap = -(-conv.kernel_size[0] // stride) - 1
        if prepared is None or x.shape[0] * x.shape[-1] * stride > frame_conv.MATMUL_MAX_ROWS:
            return super()._transposed(module, x)
        x_in = self._with_state(module, x, overlap) if overlap > 0 else x
        out = conv_transpose1d(conv, x_in, prepared)
        assert out is not None  # the size was checked above
        return out

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        """The sliding window of each row after its new step (shift one out, the new one in)."""
        out = []
        for pool, new in ((self.keys[layer_idx], key_states), (self.values[layer_idx], value_states)):
            window = torch.cat([pool.index_select(0, self.idx)[:, :, 1:], new], dim=2)
            pool.index_copy_(0, self.idx, window)
            out.append(window)
        return out[0], out[1]

    def past(self, layer: int) -> int:  # DecoderStream's interface; the mask does the counting here
        return self.window - 1

    def _transformer(self, hidden):
        tr = self.decoder.pre_transformer
        x = tr.input_proj(hidden)
        positions = self._positions[:, None]  # (B, 1)
        # slot j of a row's window holds the step at position - (window - 1) + j: visible once it exists
        mask = (self.slots[None, :] + positions >= self.window - 1)[:, None, None, :]  # (B, 1, 1, window)
        return run_transformer_layers(tr, x, mask, positions, self)

    def step_rows(self, codes: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """Audio (B, 1920) of one frame per row: ``codes`` (B, 16), ``idx`` (B,) the rows' slots."""
        self.idx = idx
        self._positions = self.frames.index_select(0, idx)
        out = self.tail(self.head(codes[:, :, None]))
        self.frames.index_copy_(0, idx, self._positions + 1)
        return out[:, 0]
