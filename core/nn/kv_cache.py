"""Keys and values of every encoder step so far, and exact attention over them in pieces.

The chunked encode (``core.nn.encoding``) keeps every earlier step's keys and values, because the
encoder's transformer attends to all of them. The newest live on the device; beyond a budget
they move to pinned host memory and stream back in blocks, and the attention over each block is
merged with the others exactly through its log-sum-exp.
"""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F

logger = logging.getLogger(__name__)

HOST_BLOCK_STEPS = 8192  # encoder steps per block of host-resident keys/values streamed back (≈5.5 min)


def kv_bytes_per_step(layers: int, heads: int, head_dim: int, item_bytes: int) -> int:
    """Bytes of keys and values one encoder step adds across all layers (the one formula)."""
    return 2 * layers * heads * head_dim * item_bytes


def stage_bytes(heads: int, head_dim: int, item_bytes: int, block_steps: int = HOST_BLOCK_STEPS) -> int:
    """Bytes of the device staging buffers (one key block, one value block) host blocks stream through."""
    return kv_bytes_per_step(1, heads, head_dim, item_bytes) * block_steps


def _repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def attention_with_lse(q, k, v, scale: float, causal: bool):
    """Softmax attention and its log-sum-exp per query: (out (B,H,L,D), lse (B,H,L) float32).

    ``causal`` masks key j > query i (square blocks only). Uses the fused kernels that
    ``scaled_dot_product_attention`` dispatches to (memory-efficient on CUDA, flash on CPU) and
    falls back to plain matmuls where they do not apply.
    """
    length = q.shape[-2]
    try:
        if q.is_cuda:
            out, lse, *_ = torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, None, True, 0.0, causal, scale=scale
            )
            return out, lse[..., :length].float()
        if q.dtype == torch.float32:
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=scale)
            return out, lse.float()
    except RuntimeError as e:  # an unsupported shape or dtype: use plain matmuls
        if "out of memory" in str(e).lower():
            raise
        logger.debug("fused attention unavailable (%s); using matmuls", e)
    scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    if causal:
        scores.masked_fill_(torch.ones(length, k.shape[-2], dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.matmul(torch.exp(scores - lse[..., None]), v.float()).to(q.dtype)
    return out, lse


class KVStore:
    """Keys and values of every encoder step so far, per layer, in attention layout (B, H, T, D).

    The first ``device_steps`` steps live in preallocated device buffers; later ones in pinned
    host memory, streamed back ``HOST_BLOCK_STEPS`` at a time through one staging buffer.
    """

    def __init__(
        self,
        transformer,
        steps_total: int,
        device,
        dtype,
        device_bytes: int | None,
        host_block_steps: int = HOST_BLOCK_STEPS,
    ):
        attn = transformer.layers[0].self_attn
        self.layers = len(transformer.layers)
        self.heads, self.head_dim = attn.num_key_value_heads, attn.head_dim
        self.device, self.dtype = torch.device(device), dtype
        per_step = kv_bytes_per_step(
            self.layers, self.heads, self.head_dim, torch.empty((), dtype=dtype).element_size()
        )
        cap = steps_total if device_bytes is None else max(0, device_bytes // per_step)
        self.device_steps = min(steps_total, cap)
        self.host_steps = steps_total - self.device_steps
        shape = (1, self.heads, self.device_steps, self.head_dim)
        self.k = [torch.empty(shape, device=device, dtype=dtype) for _ in range(self.layers)]
        self.v = [torch.empty(shape, device=device, dtype=dtype) for _ in range(self.layers)]
        self.hk: list[torch.Tensor] = []  # host-resident keys per layer (empty: all on the device)
        self.hv: list[torch.Tensor] = []
        self.stage: list[torch.Tensor] = []  # device staging buffers (keys, values) for host blocks
        if self.host_steps:
            logger.info(
                "encoder keys/values: %d steps on %s, %d in pinned host memory",
                self.device_steps,
                device,
                self.host_steps,
            )
            hshape = (1, self.heads, self.host_steps, self.head_dim)
            pin = self.device.type == "cuda"
            self.hk = [torch.empty(hshape, dtype=dtype, pin_memory=pin) for _ in range(self.layers)]
            self.hv = [torch.empty(hshape, dtype=dtype, pin_memory=pin) for _ in range(self.layers)]
            block = max(1, min(host_block_steps, self.host_steps))
            self.stage = [
                torch.empty((1, self.heads, block, self.head_dim), device=device, dtype=dtype) for _ in range(2)
            ]
        self.filled = 0  # steps stored (all layers)

    def attend(self, layer: int, q, k_new, v_new, scale: float, groups: int) -> torch.Tensor:
        """Attention of the new steps' queries over every stored step plus the new steps (causal)."""
        if self.filled == 0:
            return F.scaled_dot_product_attention(
                q, _repeat_kv(k_new, groups), _repeat_kv(v_new, groups), is_causal=True, scale=scale
            )
        length = k_new.shape[2]
        if self.filled + length <= self.device_steps:
            # everything fits on the device: one fused kernel over [past | new] with the causal
            # diagonal aligned bottom-right, as the whole-clip pass attends (no partial merges)
            from torch.nn.attention.bias import causal_lower_right

            end = self.filled + length
            self.k[layer][:, :, self.filled : end].copy_(k_new)
            self.v[layer][:, :, self.filled : end].copy_(v_new)
            return F.scaled_dot_product_attention(
                q,
                _repeat_kv(self.k[layer][:, :, :end], groups),
                _repeat_kv(self.v[layer][:, :, :end], groups),
                attn_mask=causal_lower_right(q.shape[2], end),
                scale=scale,
            )
        parts = []
        on_device = min(self.filled, self.device_steps)
        if on_device:
            parts.append(
                attention_with_lse(
                    q,
                    _repeat_kv(self.k[layer][:, :, :on_device], groups),
                    _repeat_kv(self.v[layer][:, :, :on_device], groups),
                    scale,
                    False,
                )
            )
        on_host = max(0, self.filled - self.device_steps)
        for low in range(0, on_host, self.stage[0].shape[2] if on_host else 1):
            high = min(low + self.stage[0].shape[2], on_host)
            ks = self.stage[0][:, :, : high - low]
            vs = self.stage[1][:, :, : high - low]
            ks.copy_(self.hk[layer][:, :, low:high], non_blocking=True)
            vs.copy_(self.hv[layer][:, :, low:high], non_blocking=True)
            parts.append(attention_with_lse(q, _repeat_kv(ks, groups), _repeat_kv(vs, groups), scale, False))
        parts.append(attention_with_lse(q, _repeat_kv(k_new, groups), _repeat_kv(v_new, groups), scale, True))
        return merge_attention(parts)

    def append(self, layer: int, k, v) -> None:
        """Store the new steps' keys and values of ``layer`` (``advance`` moves the fill mark)."""
        start, length = self.filled, k.shape[2]
        split = max(0, min(length, self.device_steps - start))
        written = 0 < start and start + length <= self.device_steps  # ``attend`` stored them already
        if split and not written:
            self.k[layer][:, :, start : start + split].copy_(k[:, :, :split])
            self.v[layer][:, :, start : start + split].copy_(v[:, :, :split])
        if split < length:
            low = start + split - self.device_steps
            self.hk[layer][:, :, low : low + length - split].copy_(k[:, :, split:], non_blocking=True)
            self.hv[layer][:, :, low : low + length - split].copy_(v[:, :, split:], non_blocking=True)

    def advance(self, steps: int) -> None:
        self.filled += steps

    def close(self) -> None:
        if self.hk and self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()  # pending copies into pinned memory
        self.k, self.v, self.hk, self.hv, self.stage = [], [], [], [], []


def merge_attention(parts) -> torch.Tensor:
    """Exact softmax attention over the union of key sets from per-set (out, lse) pairs."""
    lse = torch.logsumexp(torch.stack([p[1] for p in parts]), dim=0)
    out = torch.zeros_like(parts[0][0], dtype=torch.float32)
    for part, part_lse in parts:
        out.add_(part.float() * torch.exp(part_lse - lse)[..., None])
    return out.to(parts[0][0].dtype)
