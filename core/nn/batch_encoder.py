"""The encoder's per-frame step for many live sessions at once: one frame of each of B sessions in one
pass, every session's state in a row of preallocated slot pools.

A row is a session's slot: ``idx`` (B,) names the slot each row of the batch reads and writes, and
the last slot is scratch, where padding rows of a batch-size bucket go (their work touches no
session). Per frame and row the step runs what ``core.nn.streaming.StreamingEncoder`` runs eagerly:

- the SEANet streamed: every causal convolution gets its slot's last inputs (transformers' padding
  cache, zeros before the first frame, as the whole-clip pass pads), so a frame costs its 1,920
  samples of convolutions and the first frames need no eager path;
- the transformer's two new steps at the slot's absolute position, their keys and values written
  into the slot's row of the key/value pools, attention over the first ``span`` keys with the keys
  past each row's position masked out (a masked key adds an exact zero to the softmax sums);
- the stride-2 convolution with the slot's two-step tail, and the quantizer.

Rows never mix: convolutions, matmuls and the softmax run per batch row, and every state write goes
to the row's own slot (tests/core/nn/test_live_batch.py checks a row against other rows' contents,
and every session's codes against its offline encode). Static shapes and no host synchronisation,
so ``core.nn.live_batch`` captures it as a CUDA graph per batch size; on a CPU it runs eagerly.
The padded last frame of a session runs eagerly through ``EncoderState`` on the slot's own rows
(:meth:`BatchEncoder.last_frame`).
"""

from __future__ import annotations

import torch

from core.codec import NUM_CODEBOOKS, SAMPLES_PER_FRAME, SAMPLES_PER_STEP
from core.nn.encoding import EncoderState
from core.nn.frame_conv import conv1d
from core.nn.kv_cache import KVStore

STEPS_PER_FRAME = SAMPLES_PER_FRAME // SAMPLES_PER_STEP  # 2


class _SlotKV(KVStore):
    """One slot's rows of the key/value pools behind ``KVStore``'s interface (device only), so the
    eager last frame attends exactly as the eager live step does."""

    def __init__(self, pools: BatchEncoder, slot: int, filled: int):  # noqa: D107  (no allocation)
        self.layers, self.heads, self.head_dim = len(pools.k), pools.heads, pools.head_dim
        self.device, self.dtype = pools.k[0].device, pools.k[0].dtype
        self.device_steps, self.host_steps = pools.k[0].shape[2], 0
        self.k = [k[slot : slot + 1] for k in pools.k]
        self.v = [v[slot : slot + 1] for v in pools.v]
        self.hk, self.hv, self.stage = [], [], []
        self.filled = filled

    def close(self) -> None:  # the pools outlive a session
        return None


class BatchEncoder:
    """Slot pools of the encoder's streaming state and the batched frame step over them.

    ``rows``: slots including the scratch one; ``steps``: encoder steps a slot may hold (keys/values
    preallocated for the longest session)."""

    def __init__(self, model, rows: int, steps: int):
        from transformers.models.mimi.modeling_mimi import MimiConv1d

        self.model, self.mimi = model, model.encoder
        param = next(model.parameters())
        device, dtype = param.device, param.dtype
        self.num_q = int(getattr(model, "encoder_valid_num_quantizers", NUM_CODEBOOKS))
        self.convs: dict[int, int] = {}  # id(MimiConv1d) -> left padding (Python ints: no device reads)
        self.conv_state: dict[int, torch.Tensor] = {}
        for module in self.mimi.encoder.modules():
            if isinstance(module, MimiConv1d):
                if not module.causal or module.pad_mode != "constant":
                    raise ValueError("the batched live encoder needs causal, zero-padded convolutions")
                pad = int(module.padding_total)  # type: ignore[arg-type]  # a buffer
                self.convs[id(module)] = pad
                if pad:
                    self.conv_state[id(module)] = torch.zeros(
                        rows, module.conv.in_channels, pad, device=device, dtype=dtype
                    )
        tr = self.mimi.encoder_transformer
        attn = tr.layers[0].self_attn
        self.heads, self.head_dim = int(attn.num_key_value_heads), int(attn.head_dim)
        shape = (rows, self.heads, steps, self.head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in tr.layers]  # zeros: never NaN
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in tr.layers]
        channels = int(self.mimi.downsample.conv.in_channels)
        self.tail = torch.zeros(rows, channels, 2, device=device, dtype=dtype)
        down = self.mimi.downsample
        self.down_pad = int(down.padding_total)
        if not down.causal or down.pad_mode not in ("constant", "replicate") or self.down_pad != 2:
            raise ValueError(
                "the batched live encoder needs a causal stride-2 convolution with a two-step left padding"
            )
        self.replicate = down.pad_mode == "replicate"
        self.offsets = torch.arange(STEPS_PER_FRAME, device=device)
        self.keys = torch.arange(steps, device=device)

    @property
    def steps(self) -> int:
        return self.keys.numel()

    def reset(self, slot: int) -> None:
        """The slot's state before a first frame (keys/values are masked by position, left as they are)."""
        for state in self.conv_state.values():
            state[slot].zero_()
        self.tail[slot].zero_()

    # ---- the batched step (static shapes, no host reads: captured as a graph) ---------------------
    def step(self, frames: torch.Tensor, idx: torch.Tensor, position: torch.Tensor, span: int) -> torch.Tensor:
        """Codes (B, 16) of one frame per row: ``frames`` (B, 1920) samples, ``idx`` (B,) slots,
        ``position`` (B,) each row's first step; attention over the first ``span`` keys."""
        hidden = self._seanet(frames[:, None], idx).transpose(1, 2)  # (B, 2, C)
        hidden = self._transformer(hidden, idx, position, span).transpose(1, 2)  # (B, C, 2)
        tail = self.tail.index_select(0, idx)
        if self.replicate:  # before a slot's first frame the stride-2 conv pads with its first step
            tail = torch.where((position == 0)[:, None, None], hidden[..., :1].expand_as(tail), tail)
        joined = torch.cat([tail, hidden], dim=-1)
        self.tail.index_copy_(0, idx, hidden[..., -2:])
        conv = self.mimi.downsample.conv
        down = conv1d(conv, torch.nn.functional.pad(joined, (self.down_pad, 0)))[..., 1:]
        codes = self.mimi.quantizer.encode(down, self.num_q)[: self.num_q, :, 0].T  # (B, num_q)
        if self.num_q == NUM_CODEBOOKS:
            return codes
        return torch.nn.functional.pad(codes, (0, NUM_CODEBOOKS - self.num_q))

    def _conv(self, layer, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        pad = self.convs[id(layer)]
        if pad:
            if x.shape[-1] < pad:
                raise ValueError("a frame is shorter than a convolution's left state")
            state = self.conv_state[id(layer)]
            joined = torch.cat([state.index_select(0, idx), x], dim=-1)
            state.index_copy_(0, idx, x[..., x.shape[-1] - pad :])
            x = joined
        return conv1d(layer.conv, x)  # the deep layers' few steps: a matmul (``core.nn.frame_conv``)

    def _seanet(self, x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """transformers' ``MimiEncoder.forward`` with a padding cache, the cache in the slot pools."""
        from transformers.models.mimi.modeling_mimi import MimiConv1d, MimiResnetBlock

        for layer in self.mimi.encoder.layers:
            if isinstance(layer, MimiConv1d):
                x = self._conv(layer, x, idx)
            elif isinstance(layer, MimiResnetBlock):
                residual = x
                for inner in layer.block:
                    x = self._conv(inner, x, idx) if isinstance(inner, MimiConv1d) else inner(x)
                short = layer.shortcut
                residual = self._conv(short, residual, idx) if isinstance(short, MimiConv1d) else short(residual)
                x = residual + x
            else:
                x = layer(x)
        return x

    def _transformer(self, hidden, idx, position, span: int) -> torch.Tensor:
        from transformers.models.mimi.modeling_mimi import apply_rotary_pos_emb

        batch, length, _ = hidden.shape
        positions = position[:, None] + self.offsets[None]  # (B, 2) absolute steps
        visible = self.keys[:span][None, None, None, :] <= positions[:, None, :, None]  # (B, 1, 2, span)
        rows = idx[:, None]
        for index, layer in enumerate(self.mimi.encoder_transformer.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(hidden)
            q = attn.q_proj(x).view(batch, length, attn.num_heads, attn.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(batch, length, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(batch, length, attn.num_key_value_heads, attn.head_dim).transpose(1, 2)
            cos, sin = attn.rotary_emb(v, positions)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            self.k[index][rows, :, positions] = k.transpose(1, 2)  # (B, 2, H, D) into each row's slot
            self.v[index][rows, :, positions] = v.transpose(1, 2)
            keys = self.k[index][:, :, :span].index_select(0, idx)
            values = self.v[index][:, :, :span].index_select(0, idx)
            groups = attn.num_key_value_groups
            if groups > 1:
                keys, values = keys.repeat_interleave(groups, dim=1), values.repeat_interleave(groups, dim=1)
            scores = torch.matmul(q, keys.transpose(-1, -2)) * attn.scaling
            scores = scores.masked_fill(~visible, float("-inf"))
            out = torch.matmul(torch.softmax(scores, dim=-1), values)
            out = attn.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
            hidden = hidden + layer.self_attn_layer_scale(out)
            hidden = hidden + layer.mlp_layer_scale(layer.mlp(layer.post_attention_layernorm(hidden)))
        return hidden

    # ---- the padded last frame, eagerly ------------------------------------------------------------
    def last_frame(
        self, slot: int, window: torch.Tensor, skip_samples: int, position: int, first: bool
    ) -> torch.Tensor:
        """Codes (1, 16) of a session's padded last frame: ``window`` its samples after ``skip_samples``
        of left context (a whole number of frames), through ``EncoderState`` on the slot's own
        keys/values and tail (``first``: no frame came before it, so no tail)."""
        state = EncoderState(self.model, 1, None)
        state.kv = _SlotKV(self, slot, position)
        state.tail = None if first else self.tail[slot : slot + 1].clone()
        codes = state.frames(state.conv_steps(window, skip_samples), position)[:1]
        if codes.shape[1] < NUM_CODEBOOKS:
            codes = torch.nn.functional.pad(codes, (0, NUM_CODEBOOKS - codes.shape[1]))
        return codes
