"""The live encoder's eager frame step on a CPU: the SEANet streamed channels-last and the quantizer
with its codebooks prepared once.

``core.nn.streaming.StreamingEncoder`` runs a frame (or a packet of frames) without a CUDA graph
through these two objects; the codes equal the offline encode's (``tests/core/nn/test_encode_step.py``
on the tiny checkpoint with layer scales 1.0). What they save, per frame, on the 2-core CPU
(``python -m bench.live_cpu``, docs/live.md):

- :class:`ChannelsLastSEANet`: transformers' padding cache runs each convolution channels-first, and
  PyTorch sends a convolution with fewer than 20,480 input values (every layer after the first few, at
  one frame) to its native im2col + GEMM path: the 512→1,024 downsampling convolution (33 MB of
  weights, 2 output steps) took 12.7 ms there against 3.9 ms through oneDNN channels-last. Here every
  convolution runs channels-last through ``core.nn.conv_layout`` with its last inputs kept as its
  own state (what the padding cache keeps), so no layer reorders its activations.
- :class:`PreparedQuantizer`: ``torch.cdist`` (which Mimi's codebook search calls) squares and sums
  the 2,048 × 256 codebook and concatenates it with two columns on every call, 16 times a frame. The
  prepared quantizer builds those padded codebooks once and runs the same arithmetic on the frame's
  side only (``_euclidean_dist``'s operations in its order: the distances are bit-identical).
"""

from __future__ import annotations

import torch

from core.nn import conv_layout, cpu_convs


class ChannelsLastSEANet:
    """Mimi's SEANet encoder (``MimiEncoder``) streamed block by block, channels-last.

    Mirrors ``MimiEncoder.forward`` with a padding cache: each causal convolution sees its last
    ``padding_total`` inputs (zeros, or the first sample for "replicate" padding, before the first
    block) instead of padding. ``__call__`` takes (1, 1, samples), a whole number of frames, and returns
    the SEANet's steps (1, C, steps) channels-last (so ``transpose(1, 2)`` is contiguous)."""

    def __init__(self, seanet, convs: conv_layout.ChannelsLastConvs | None = None):
        self.seanet = seanet
        if convs is None:  # on a CPU the products of ``cpu_convs`` (no Winograd: the codes stay the offline ones)
            on_cpu = next(seanet.parameters()).device.type == "cpu"
            convs = cpu_convs.CpuConvs(winograd_tile=None) if on_cpu else conv_layout.ChannelsLastConvs()
        self.convs = convs
        self.state: dict[int, torch.Tensor] = {}

    def reset(self) -> None:
        self.state = {}

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        from transformers.models.mimi.modeling_mimi import MimiConv1d, MimiResnetBlock

        h = conv_layout.channels_last(x)
        for layer in self.seanet.layers:
            if isinstance(layer, MimiConv1d):
                h = self._conv(layer, h)
            elif isinstance(layer, MimiResnetBlock):
                residual = h
                for inner in layer.block:
                    h = self._conv(inner, h) if isinstance(inner, MimiConv1d) else inner(h)
                shortcut = layer.shortcut
                h = (self._conv(shortcut, residual) if isinstance(shortcut, MimiConv1d) else shortcut(residual)) + h
            else:
                h = layer(h)  # ELU: elementwise, keeps the layout
        return h

    def _conv(self, module, x: torch.Tensor) -> torch.Tensor:
        pad = int(module.padding_total)
        if pad > 0:
            prev = self.state.get(id(module))
            if prev is None:
                if module.pad_mode == "replicate":
                    prev = conv_layout.channels_last(x[..., :1].expand(-1, -1, pad))
                else:
                    prev = conv_layout.channels_last(x.new_zeros(x.shape[0], x.shape[1], pad))
            x = conv_layout.cat_time(prev, x)
            self.state[id(module)] = conv_layout.tail_of(x, pad)
        return self.convs.conv(module.conv, x)


class PreparedQuantizer:
    """``MimiSplitResidualVectorQuantizer.encode`` with each codebook's padded form built once.

    Only the first ``num_quantizers`` codebooks are prepared (2 MB each for the full model).
    ``encode(embeddings (1, C, frames), num_quantizers)`` returns codes (num_quantizers, 1, frames), as
    the module does. The nearest entry is found as ``torch.cdist`` finds it for a 2,048-entry
    codebook (``_euclidean_dist``: [-2x, |x|², 1] · [e, 1, |e|²]ᵀ, clamped at 0, square root, then
    argmin), with the codebook's side [e, 1, |e|²] made at construction."""

    def __init__(self, quantizer, num_quantizers: int):
        self.quantizer = quantizer
        self.num_semantic = int(quantizer.num_semantic_quantizers)
        self.semantic = _PreparedRVQ(quantizer.semantic_residual_vector_quantizer, self.num_semantic)
        self.acoustic = _PreparedRVQ(quantizer.acoustic_residual_vector_quantizer, num_quantizers - self.num_semantic)

    def encode(self, embeddings: torch.Tensor, num_quantizers: int) -> torch.Tensor:
        codes = self.semantic.encode(embeddings, self.semantic.size)
        if num_quantizers > self.num_semantic:
            codes = torch.cat([codes, self.acoustic.encode(embeddings, num_quantizers - self.num_semantic)], dim=0)
        return codes


class _PreparedRVQ:
    """One ``MimiResidualVectorQuantizer`` with its codebooks' padded forms."""

    def __init__(self, rvq, count: int):
        self.rvq = rvq
        self.size = max(0, min(count, len(rvq.layers)))
        self.embed = [layer.codebook.embed for layer in rvq.layers[: self.size]]
        self.padded = []
        for embed in self.embed:
            e = embed[None].float()  # as cdist is called: (1, entries, dim)
            norm = e.pow(2).sum(-1, True)
            self.padded.append(torch.cat([e, torch.ones_like(norm), norm], -1))

    def encode(self, embeddings: torch.Tensor, num_quantizers: int) -> torch.Tensor:
        if self.rvq.input_proj is not None:
            embeddings = self.rvq.input_proj(embeddings)
        residual = embeddings
        if num_quantizers > self.size:
            raise ValueError(f"{num_quantizers} codebooks asked of a quantizer prepared for {self.size}")
        out = []
        for embed, padded in zip(self.embed[:num_quantizers], self.padded[:num_quantizers], strict=True):
            hidden = residual.permute(0, 2, 1)
            shape = hidden.shape
            x = hidden.reshape(-1, shape[-1])[None].float()
            norm = x.pow(2).sum(-1, True)
            dists = torch.cat([x.mul(-2), norm, torch.ones_like(norm)], -1).matmul(padded.mT)
            indices = dists.clamp_min_(0).sqrt_()[0].argmin(dim=-1).view(*shape[:-1])
            residual = residual - torch.nn.functional.embedding(indices, embed).permute(0, 2, 1)
            out.append(indices)
        return torch.stack(out)
