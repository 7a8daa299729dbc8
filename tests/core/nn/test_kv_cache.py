"""core/nn/kv_cache.py: attention over keys split in pieces, merged exactly."""

from __future__ import annotations

import torch

from core.nn import kv_cache


def test_merge_attention_is_exact_over_split_keys():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 20, 8), torch.randn(1, 2, 20, 8)
    parts = [
        kv_cache.attention_with_lse(q, k[:, :, a:b], v[:, :, a:b], 8**-0.5, False) for a, b in ((0, 7), (7, 8), (8, 20))
    ]
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(kv_cache.merge_attention(parts), expected, atol=1e-6, rtol=1e-5)
