"""Settings: one frozen dataclass, built once at the edge from CLI flags and environment.

Every entry point (``python -m core``, ``python -m webui``, supervisord) builds a
:class:`Settings` with :func:`settings_from_args` and hands it to the engine; nothing below
the edge reads the environment.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from dataclasses import dataclass
from typing import Mapping

from .codec import MIB
from .errors import SettingsError

DEFAULT_MODEL = "Qwen/Qwen3-TTS-Tokenizer-12Hz"  # hub id of the published checkpoint
DTYPES = ("float32", "bfloat16")  # float32 is the published dtype
_DEVICE_RE = re.compile(r"^(cpu|cuda:\d+)$")


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def default_device() -> str:
    """``cuda:0`` when CUDA is available, else ``cpu``."""
    return "cuda:0" if cuda_available() else "cpu"


@dataclass(frozen=True)
class Settings:
    model: str = DEFAULT_MODEL  # local checkpoint directory or hub id
    device: str = "cpu"  # one explicit device: "cpu" or "cuda:N" (never device_map="auto")
    dtype: str = "float32"  # "float32" (published) or "bfloat16" (GPUs with native bf16 only)
    max_duration_s: float = 1800.0  # longest input accepted, seconds (30 min)
    max_file_mb: float = 1024.0  # largest input file accepted, MiB
    cleanup_threshold: float = 0.8  # after a job, clear cached VRAM when reserved > this share of the card
    encode_chunk_s: float = 20.0  # audio seconds per encoder convolution window (sets encode activation memory)
    encode_span_s: float = 600.0  # audio seconds per encoder transformer span (attends to all earlier audio); clips up to 10 min run in one span, like the official encode
    encode_kv_device_mib: float = 640.0  # encoder keys/values kept on the GPU (≈20 min of audio); older ones go to pinned host RAM
    decode_chunk_frames: int = 300  # code frames per decode chunk (state carries across, so seams are exact)
    batch_audio_s: float = 60.0  # padded audio seconds per batched encode call (bounds batch memory)
    min_chunk_s: float = 5.0  # OOM retries halve the chunk down to this floor, then give up
    cudnn_benchmark: bool = False  # let cuDNN time conv algorithms per new shape (measured: no faster, more memory)
    strict_fp32_encode: bool = True  # fp32 encodes run convs in full fp32, not TF32, so chunked codes reproduce
    max_batch_memory_fraction: float = 0.9  # refuse jobs whose estimated peak exceeds this share of free memory
    decode_dtype: str | None = None  # decoder precision (None: ``dtype``); bf16 is guarded and runs on CPU too
    compile_decoder: bool = False  # torch.compile the decoder's convolution stack in the background after loading

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * MIB)

    @property
    def is_cuda(self) -> bool:
        return self.device.startswith("cuda")

    def validate(self) -> "Settings":
        """Check values that do not need the model; raise SettingsError saying what to change."""
        if self.device == "auto" or not _DEVICE_RE.match(self.device):
            raise SettingsError(
                f"Device {self.device!r} is not supported: use 'cpu' or 'cuda:N' (e.g. cuda:0)."
            )
        if self.dtype not in DTYPES:
            raise SettingsError(f"dtype {self.dtype!r} is not supported: use one of {', '.join(DTYPES)}.")
        if self.dtype == "bfloat16" and not self.is_cuda:
            raise SettingsError(
                "bfloat16 runs only on a GPU with native bf16 support; on CPU use --dtype float32 "
                "(--decode-dtype bfloat16 runs only the decoder in bf16, guarded)."
            )
        if self.decode_dtype is not None and self.decode_dtype not in DTYPES:
            raise SettingsError(f"decode dtype {self.decode_dtype!r} is not supported: use one of {', '.join(DTYPES)}.")
        if not 0.0 < self.cleanup_threshold <= 1.0:
            raise SettingsError("cleanup threshold must be in (0, 1], e.g. 0.8.")
        for name in ("max_duration_s", "max_file_mb", "encode_chunk_s", "encode_span_s", "batch_audio_s",
                     "min_chunk_s", "encode_kv_device_mib"):
            if not math.isfinite(getattr(self, name)):  # nan passes every comparison below
                raise SettingsError(f"{name} must be a finite number, not {getattr(self, name)!r}.")
        for name in ("max_duration_s", "max_file_mb", "encode_chunk_s", "encode_span_s", "batch_audio_s",
                     "min_chunk_s"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} must be positive.")
        if self.decode_chunk_frames < 1:
            raise SettingsError("decode_chunk_frames must be at least 1.")
        if self.encode_kv_device_mib < 0:
            raise SettingsError("encode_kv_device_mib must be zero or more.")
        if not 0.0 < self.max_batch_memory_fraction <= 1.0:
            raise SettingsError("max_batch_memory_fraction must be in (0, 1], e.g. 0.9.")
        return self

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def boolean(value: str) -> bool:
    """A boolean flag's text: 1/true/yes/on or 0/false/no/off."""
    lowered = str(value).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


# (flag, field, env var, type, help)
_OPTIONS = (
    ("--model", "model", "CODEC_MODEL", str, "checkpoint directory or hub id"),
    ("--device", "device", "CODEC_DEVICE", str, "cpu or cuda:N (default: cuda:0 if available)"),
    ("--dtype", "dtype", "CODEC_DTYPE", str, "float32 or bfloat16"),
    ("--max-duration", "max_duration_s", "CODEC_MAX_DURATION_S", float, "longest input, seconds"),
    ("--max-file-mb", "max_file_mb", "CODEC_MAX_FILE_MB", float, "largest input file, MiB"),
    ("--cleanup-threshold", "cleanup_threshold", "CODEC_CLEANUP_THRESHOLD", float,
     "clear cached VRAM after a job when reserved memory passes this share of the card"),
    ("--decode-dtype", "decode_dtype", "CODEC_DECODE_DTYPE", str,
     "decoder precision (float32 or bfloat16, default: as --dtype); bf16 chunks that break are redone in fp32"),
    ("--compile-decoder", "compile_decoder", "CODEC_COMPILE_DECODER", boolean,
     "1 to torch.compile the decoder in the background after loading (decodes stay eager until done)"),
)


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the engine's flags to an argument parser (defaults come from the environment)."""
    for flag, field, env, _type, help_text in _OPTIONS:
        parser.add_argument(flag, dest=field, default=None, help=f"{help_text} [env {env}]")


def settings_from_args(args: argparse.Namespace | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Flags win over environment variables, which win over defaults."""
    env = os.environ if env is None else env
    values: dict = {}
    for _flag, field, var, cast, _help in _OPTIONS:
        raw = getattr(args, field, None) if args is not None else None
        if raw is None:
            raw = env.get(var)
        if raw is None or raw == "":
            continue
        try:
            values[field] = cast(raw)
        except ValueError as e:
            raise SettingsError(f"{var} / {_flag}: {raw!r} is not a valid {cast.__name__}.") from e
    values.setdefault("device", default_device())
    return Settings(**values).validate()
