"""Build Qwen3-TTS-Tokenizer-12Hz checkpoints with random weights.

The real weights cannot be downloaded on every machine, so tests and benchmarks build
checkpoints from the official architecture classes in ``qwen_tts.core``:

- ``tiny``: small dimensions, built in seconds, for tests and CI. Its transformer layer scales
  are set to 1.0 (not the 0.01 of a fresh init) so that context really changes codes and
  audio; a fidelity test on the stock init would pass approximate methods (docs/performance.md).
- ``full``: the published architecture (153.7 M parameters) from the reference config, for
  speed and memory work on a GPU. Random weights say nothing about audio quality.

Either at another output rate of the family (``output_rate_hz``: 48000 appends the community recipe's
×2 upsample block, ``core.model.family.decoder_config_for_rate``); the encoder and codes are the same.

Both are saved with ``save_pretrained`` plus a ``preprocessor_config.json`` so that they load
through the same ``Qwen3TTSTokenizer.from_pretrained`` path as the published checkpoint.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from core.codec import CODEBOOK_SIZE, FRAME_RATE, NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME
from core.model.family import decoder_config_for_rate

logger = logging.getLogger(__name__)

# the published model's config.json, committed in the repo (nothing outside the checkout is read)
REFERENCE_CONFIG = Path(__file__).resolve().parent / "reference-config.json"  # package data: the published config

PREPROCESSOR_CONFIG = {
    "feature_extractor_type": "EncodecFeatureExtractor",
    "feature_size": 1,
    "sampling_rate": SAMPLE_RATE,
    "padding_value": 0.0,
    "padding_side": "right",
    "return_attention_mask": True,
}

TINY_ENCODER = {
    "hidden_size": 32,  # width of the encoder transformer
    "num_filters": 4,  # channels of the first conv; doubles at each downsampling
    "num_hidden_layers": 2,
    "intermediate_size": 64,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "codebook_size": CODEBOOK_SIZE,  # entries per codebook, as published
    "codebook_dim": 16,
    "num_quantizers": NUM_CODEBOOKS,
    "vector_quantization_hidden_dimension": 16,
    "upsample_groups": 32,
    "frame_rate": FRAME_RATE,
}

TINY_DECODER = {
    "hidden_size": 32,
    "latent_dim": 32,
    "codebook_dim": 16,
    "codebook_size": CODEBOOK_SIZE,
    "decoder_dim": 64,  # halves at each of the 4 upsampling blocks
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 64,
    "num_quantizers": NUM_CODEBOOKS,
    "sliding_window": 72,
    "upsample_rates": [8, 5, 4, 3],
    "upsampling_ratios": [2, 2],
}


def tiny_config():
    """The config of the tiny debug checkpoint (same rates and code space as the real one)."""
    from core.model.weights import import_qwen_tts

    return import_qwen_tts().core.Qwen3TTSTokenizerV2Config(
        encoder_config=dict(TINY_ENCODER), decoder_config=dict(TINY_DECODER)
    )


def full_config(reference: Path = REFERENCE_CONFIG):
    """The published architecture, read from the reference config.json."""
    from core.model.weights import import_qwen_tts

    Qwen3TTSTokenizerV2Config = import_qwen_tts().core.Qwen3TTSTokenizerV2Config
    try:
        raw = json.loads(Path(reference).read_text())
    except OSError as e:
        raise FileNotFoundError(f"Reference config not found at {reference}; pass its path explicitly.") from e
    keep = {
        k: v
        for k, v in raw.items()
        if not k.startswith("_") and k not in ("facts", "preprocessor_config") and not k.startswith("published_")
    }
    return Qwen3TTSTokenizerV2Config(**keep)


def _randomize_codebooks(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Give every codebook distinct random centroids (a fresh init leaves them all zero)."""
    for name, tensor in list(model.named_buffers()) + list(model.named_parameters()):
        if name.endswith("embed_sum") or name.endswith("embedding_sum"):
            tensor.data.copy_(torch.randn(tensor.shape, generator=generator))
        elif name.endswith("cluster_usage"):
            tensor.data.fill_(1.0)


def _set_layer_scales(model: torch.nn.Module, value: float) -> None:
    for name, tensor in model.named_parameters():
        if name.endswith("layer_scale.scale"):
            tensor.data.fill_(value)


def _rescale_decoder_convs(model, generator: torch.Generator) -> None:
    """Variance-preserving init for the decoder convolutions.

    The stock init (std 0.02) shrinks the signal ~10x per block, so decoded audio would be
    near-silent; Kaiming-style scaling keeps it audible, then the output conv is scaled so
    decoded noise sits near an RMS of 0.1.
    """
    convs = [m for m in model.decoder.modules() if isinstance(m, (torch.nn.Conv1d, torch.nn.ConvTranspose1d))]
    for conv in convs:
        fan_in = (
            conv.weight.shape[1] * conv.weight.shape[2]
            if isinstance(conv, torch.nn.Conv1d)
            else (conv.weight.shape[0] * conv.weight.shape[2] // max(conv.stride[0], 1))
        )
        std = (1.0 / max(fan_in, 1)) ** 0.5
        conv.weight.data.copy_(torch.randn(conv.weight.shape, generator=generator) * std)
    noise = torch.randn(1, 10 * SAMPLES_PER_FRAME * 12, generator=generator) * 0.1
    codes = model.encode(noise, torch.ones_like(noise, dtype=torch.long)).audio_codes[0].T[None]
    for _ in range(4):  # the output is clamped to [-1, 1], so converge in a few steps
        rms = model.decoder(codes).float().pow(2).mean().sqrt().item()
        if rms > 0:
            convs[-1].weight.data.mul_(0.1 / rms)


def build_model(config, seed: int = 0, layer_scale: float | None = None):
    """Instantiate ``Qwen3TTSTokenizerV2Model`` with non-degenerate random weights."""
    from core.model.weights import import_qwen_tts

    Qwen3TTSTokenizerV2Model = import_qwen_tts().core.Qwen3TTSTokenizerV2Model
    torch.manual_seed(seed)
    model = Qwen3TTSTokenizerV2Model(config).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        _randomize_codebooks(model, generator)
        _rescale_decoder_convs(model, generator)
        if layer_scale is not None:
            _set_layer_scales(model, layer_scale)
    return model


MARKER_FILE = "codec_workbench_checkpoint.json"  # marks checkpoints we built with random weights


def save_checkpoint(model, directory: Path, kind: str = "random") -> Path:
    """Write the model and its preprocessor config so ``from_pretrained`` can load it, plus a
    marker that says the weights are random (the UI warns about it)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, safe_serialization=True)
    (directory / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR_CONFIG, indent=2))
    marker = {
        "random_weights": True,
        "kind": kind,
        "note": "Built by Codec Workbench with random weights: it says nothing about audio quality.",
    }
    (directory / MARKER_FILE).write_text(json.dumps(marker, indent=2))
    logger.info("wrote checkpoint to %s", directory)
    return directory


def build_tiny_checkpoint(directory: Path, seed: int = 0, output_rate_hz: int = SAMPLE_RATE) -> Path:
    """Tiny random checkpoint for tests (seconds to build, a few MB); ``output_rate_hz`` 48000 for the
    48 kHz recipe (same encoder, one more decoder block)."""
    config = decoder_config_for_rate(tiny_config(), output_rate_hz)
    return save_checkpoint(build_model(config, seed=seed, layer_scale=1.0), directory, kind="tiny")


def build_full_checkpoint(
    directory: Path,
    seed: int = 0,
    reference: Path = REFERENCE_CONFIG,
    layer_scale: float | None = None,
    output_rate_hz: int = SAMPLE_RATE,
) -> Path:
    """Full-size random checkpoint from the published architecture (≈682 MB on disk). ``layer_scale``
    1.0 sets every transformer layer scale (encoder and decoder) so context matters: for exactness
    checks (None keeps the fresh init's 0.01). ``output_rate_hz`` 48000: the 48 kHz recipe."""
    config = decoder_config_for_rate(full_config(reference), output_rate_hz)
    model = build_model(config, seed=seed, layer_scale=layer_scale)
    return save_checkpoint(model, directory, kind="full")


def is_random_checkpoint(directory: Path | None) -> bool:
    """True for checkpoints this project built with random weights."""
    return directory is not None and (Path(directory) / MARKER_FILE).is_file()
