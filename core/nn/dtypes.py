"""The dtype names the settings use (``float32``, ``bfloat16``) and the torch dtypes they mean."""

from __future__ import annotations

import torch

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}  # Settings.dtype -> torch dtype
