"""Find and load model weights: a local directory or a hub id, on one explicit device.

Loading goes through the official ``qwen_tts.Qwen3TTSTokenizer.from_pretrained`` with
``device_map=<device>`` (never ``"auto"``). A hub id is resolved to a local snapshot first:
from the Hugging Face cache, else by a download when the hub is reachable. After loading,
the checkpoint's tensor names are compared with the model's so a partial checkpoint fails
loudly instead of running with randomly initialised layers.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import torch

from core.errors import SettingsError, WeightsError

logger = logging.getLogger(__name__)

HUB_PROBE_TIMEOUT_S = 3.0  # seconds to wait for the hub before calling it unreachable
REQUIRED_FILES = ("config.json", "preprocessor_config.json")  # besides *.safetensors
WEIGHT_FILES = ("*.safetensors",)  # a checkpoint holds at least one file matching one of these

HOW_TO_PROVIDE = (
    "To provide weights: on a machine with internet access run "
    "`huggingface-cli download Qwen/Qwen3-TTS-Tokenizer-12Hz --local-dir DIR`, copy DIR here and "
    "start with `--model DIR` (or CODEC_MODEL=DIR). For a random-weight test checkpoint run "
    "`python -m core build-checkpoint --tiny DIR`."
)


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")  # owner/name


def is_hub_id(source: str) -> bool:
    return _HUB_ID.fullmatch(source) is not None and not Path(source).expanduser().exists()


def _hub_reachable() -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=HUB_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def resolve_source(source: str, required=REQUIRED_FILES, weight_files=WEIGHT_FILES, how: str = HOW_TO_PROVIDE) -> Path:
    """A local directory holding the checkpoint, or WeightsError saying where we looked. The codec's
    by default; the judging models (core.analysis) name their own files and how to provide them."""
    path = Path(source).expanduser()
    if path.is_dir():
        return _check_directory(path, required, weight_files, how)
    if not is_hub_id(source):
        raise WeightsError(f"Model directory {path} does not exist. {how}")
    from huggingface_hub import snapshot_download

    try:
        return _check_directory(Path(snapshot_download(source, local_files_only=True)), required, weight_files, how)
    except WeightsError:
        raise
    except Exception:
        logger.info("%s is not in the Hugging Face cache", source)
    if not _hub_reachable():
        raise WeightsError(
            f"Weights for {source!r} are not in the Hugging Face cache "
            f"({os.environ.get('HF_HOME', '~/.cache/huggingface')}) and the hub cannot be reached from "
            f"this machine. {how}"
        )
    try:
        return _check_directory(Path(snapshot_download(source)), required, weight_files, how)
    except Exception as e:
        raise WeightsError(f"Downloading {source!r} failed: {e}. {how}") from e


def _check_directory(path: Path, required=REQUIRED_FILES, weight_files=WEIGHT_FILES, how: str = HOW_TO_PROVIDE) -> Path:
    missing = [f for f in required if not (path / f).is_file()]
    if not any(next(path.glob(pattern), None) for pattern in weight_files):
        missing.append(" or ".join(weight_files))
    if missing:
        raise WeightsError(f"Checkpoint directory {path} lacks {', '.join(missing)}. {how}")
    try:
        json.loads((path / "config.json").read_text())
    except ValueError as e:
        raise WeightsError(f"{path / 'config.json'} is not valid JSON ({e}). Re-download the checkpoint.") from e
    return path


def checkpoint_tensor_names(path: Path) -> set[str]:
    from safetensors import safe_open

    names: set[str] = set()
    for file in sorted(path.glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="pt") as f:
                names.update(f.keys())
        except Exception as e:
            raise WeightsError(f"{file} is not a readable safetensors file ({e}). Re-download the checkpoint.") from e
    return names


def check_complete(model: torch.nn.Module, path: Path) -> None:
    """Every persistent tensor of the model must come from the checkpoint (strict load)."""
    expected = set(model.state_dict().keys())
    found = checkpoint_tensor_names(path)
    missing = sorted(expected - found)
    if missing:
        raise WeightsError(
            f"Checkpoint {path} is incomplete: {len(missing)} of {len(expected)} tensors are missing "
            f"(e.g. {missing[0]}), so those layers would be random. Re-download the checkpoint."
        )


def lighten_transformers_import() -> None:
    """Keep transformers from importing frameworks and libraries the tokenizer never uses.

    Measured with ``python -X importtime`` (``bench/results/cold_start-cuda.md``):
    - JAX/Flax and TensorFlow: transformers imports them when they are installed (its ``USE_FLAX`` and
      ``USE_TF`` default to "auto"); jax took 1.0 s on the H200 machine's image. ``USE_TORCH=1``,
      ``USE_TF=0`` and ``USE_FLAX=0`` are transformers' own switches; a value the user set is kept.
    - scikit-learn: ``transformers.generation.candidate_generator`` imports it (with scipy.stats and
      pandas) for assisted generation's ``roc_curve``; the tokenizer never generates. 1.7 of the 5.7 s
      that importing qwen_tts took on the 2-core machine.
    Does nothing once transformers is imported: another user of it came first and set it up.
    """
    if "transformers" in sys.modules:
        return
    for name, value in (("USE_TORCH", "1"), ("USE_TF", "0"), ("USE_FLAX", "0")):
        os.environ.setdefault(name, value)
    try:
        from transformers.utils import import_utils
    except Exception:  # transformers missing or broken: loading reports it
        return
    if hasattr(import_utils, "_sklearn_available"):
        import_utils._sklearn_available = False


def import_qwen_tts():
    """Import qwen_tts; its import prints a flash-attn notice to stdout, which we log instead
    so that ``--json`` output stays clean."""
    if "qwen_tts" not in sys.modules:
        lighten_transformers_import()
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        import qwen_tts
    if sink.getvalue().strip():
        logger.debug("qwen_tts said at import: %s", sink.getvalue().strip())
    return qwen_tts


def check_device(device: str, dtype: str) -> None:
    """The device exists here and runs ``dtype`` natively, or SettingsError saying what to use."""
    if not device.startswith("cuda"):
        return
    if not torch.cuda.is_available():
        raise SettingsError(f"{device} was requested but CUDA is not available; use --device cpu.")
    index = torch.device(device).index or 0
    if index >= torch.cuda.device_count():
        raise SettingsError(f"{device} does not exist: this machine has {torch.cuda.device_count()} GPU(s).")
    if dtype == "bfloat16" and not torch.cuda.is_bf16_supported(including_emulation=False):
        raise SettingsError(f"{torch.cuda.get_device_name(index)} has no native bfloat16; use --dtype float32.")


def load_tokenizer(source: str, device: str, dtype: torch.dtype):
    """Load the official tokenizer wrapper on ``device``; raise WeightsError on any failure."""
    start = time.perf_counter()
    Qwen3TTSTokenizer = import_qwen_tts().Qwen3TTSTokenizer
    logger.info("imported qwen_tts in %.2f s", time.perf_counter() - start)
    path = resolve_source(source)
    try:
        tokenizer = Qwen3TTSTokenizer.from_pretrained(str(path), device_map=device, dtype=dtype)
    except Exception as e:
        raise WeightsError(f"Loading the checkpoint in {path} failed: {type(e).__name__}: {e}. {HOW_TO_PROVIDE}") from e
    if tokenizer.model.get_model_type() != "qwen3_tts_tokenizer_12hz":
        raise WeightsError(f"{path} holds a {tokenizer.model.get_model_type()} model, not the 12 Hz tokenizer.")
    check_complete(tokenizer.model, path)
    tokenizer.model.eval()
    return tokenizer, path


SAFETENSORS_ITEM_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}
MAX_HEADER_BYTES = 64 * 1024 * 1024  # a safetensors header past this is not a checkpoint's (the published one: 90 KB)


def checkpoint_weight_bytes(path: Path, dtype: torch.dtype) -> int:
    """Bytes the checkpoint in ``path`` will hold once loaded in ``dtype``, read from the safetensors
    headers alone (no tensor is read): floating tensors at ``dtype``'s size, the rest as stored
    (the official ``from_pretrained(dtype=...)`` casts every floating parameter and buffer)."""
    item = torch.empty((), dtype=dtype).element_size()
    total = 0
    for file in sorted(Path(path).glob("*.safetensors")):
        for name, entry in _safetensors_header(file).items():
            if name == "__metadata__":
                continue
            numel = 1
            for size in entry.get("shape", []):
                numel *= int(size)
            kind = str(entry.get("dtype", ""))
            if kind not in SAFETENSORS_ITEM_BYTES:
                raise WeightsError(f"{file}: tensor {name} has dtype {kind!r}, which a checkpoint cannot hold.")
            total += numel * (item if kind.startswith(("F", "BF")) else SAFETENSORS_ITEM_BYTES[kind])
    return total


def _safetensors_header(file: Path) -> dict:
    try:
        with open(file, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if not 0 < size <= MAX_HEADER_BYTES:
                raise ValueError(f"a header of {size} bytes")
            return json.loads(f.read(size))
    except (OSError, ValueError) as e:
        raise WeightsError(f"{file} is not a readable safetensors file ({e}). Re-download the checkpoint.") from e
