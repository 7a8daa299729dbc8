"""The decoder family: checkpoints that share the 12 Hz tokenizer's encoder and codes and differ in the
decoder, and so in the rate they write.

The published decoder writes 24 kHz (decoder ``upsample_rates`` [8, 5, 4, 3], 1,920 samples a frame).
The community 48 kHz decoder appends one ×2 upsample block ([8, 5, 4, 3, 2]) and sets
``output_sample_rate`` 48000 and ``decode_upsample_rate`` 3840 in config.json; the official
``qwen_tts.Qwen3TTSTokenizer`` loads it unchanged and decodes 3,840 samples a frame.

- :func:`output_rate_of` reads a loaded model's :class:`core.codec.OutputRate` from its config and
  checks that the config and the decoder agree, or raises ``WeightsError`` with a sentence naming what
  the workbench cannot handle (never a silent wrong result);
- :func:`decoder_config_for_rate` is the recipe: a config whose decoder writes ``rate_hz`` (an integer
  multiple of 24 kHz: one more upsample block of that factor), for building checkpoints and fine-tunes.
"""

from __future__ import annotations

import copy
import math

from core.codec import CODEBOOK_SIZE, FRAME_RATE, NUM_CODEBOOKS, SAMPLE_RATE, SAMPLES_PER_FRAME, OutputRate
from core.errors import WeightsError

BASE_UPSAMPLE_RATES = (8, 5, 4, 3)  # the published decoder's blocks: 24 kHz


def decoder_samples_per_frame(decoder_config) -> int:
    """Output samples a decoder built from ``decoder_config`` makes per code frame (the product of its
    ``upsampling_ratios`` and ``upsample_rates``, as the official decoder's ``total_upsample``)."""
    return int(math.prod(list(decoder_config.upsampling_ratios) + list(decoder_config.upsample_rates)))


def family_problem(config) -> str | None:
    """Why a ``Qwen3TTSTokenizerV2Config`` is outside what the workbench handles, or None. Its encoder must
    be the 12 Hz tokenizer's (24 kHz in, 1,920 samples a frame, 16 × 2048 codes); its decoder may write
    any rate, as long as config.json's ``output_sample_rate`` and ``decode_upsample_rate`` say what the
    decoder's blocks really make."""
    decoder = config.decoder_config
    if int(config.input_sample_rate) != SAMPLE_RATE or int(config.encode_downsample_rate) != SAMPLES_PER_FRAME:
        return (
            f"its encoder reads {config.input_sample_rate} Hz in frames of {config.encode_downsample_rate} samples; "
            f"the workbench handles the 12 Hz tokenizer's encoder ({SAMPLE_RATE} Hz, {SAMPLES_PER_FRAME} samples a frame)"
        )
    if int(decoder.num_quantizers) != NUM_CODEBOOKS or int(decoder.codebook_size) != CODEBOOK_SIZE:
        return (
            f"its decoder reads {decoder.num_quantizers} codebooks of {decoder.codebook_size} entries; "
            f"the codes of this codec are {NUM_CODEBOOKS} × {CODEBOOK_SIZE}"
        )
    made = decoder_samples_per_frame(decoder)
    said = int(config.decode_upsample_rate)
    if made != said:
        return (
            f"config.json says decode_upsample_rate {said}, but the decoder's upsampling_ratios "
            f"{list(decoder.upsampling_ratios)} and upsample_rates {list(decoder.upsample_rates)} make {made} "
            "samples a frame (the official decode would cut or pad its audio); make decode_upsample_rate "
            f"{made} or fix the blocks"
        )
    rate = float(config.output_sample_rate)
    if rate != made * FRAME_RATE:
        return (
            f"config.json says output_sample_rate {config.output_sample_rate} Hz, but {made} samples a frame "
            f"at {FRAME_RATE:g} frames/s is {made * FRAME_RATE:g} Hz; make output_sample_rate {made * FRAME_RATE:g}"
        )
    return None


def output_rate_of(model) -> OutputRate:
    """The rate a loaded ``Qwen3TTSTokenizerV2Model`` writes, or ``WeightsError`` saying what is unsupported.
    The decoder module itself must agree with its config (a checkpoint edited by hand may not)."""
    config = model.config
    problem = family_problem(config)
    built = int(getattr(model.decoder, "total_upsample", config.decode_upsample_rate))
    if problem is None and built != int(config.decode_upsample_rate):
        problem = f"its decoder makes {built} samples a frame, its config says {config.decode_upsample_rate}"
    if problem:
        raise WeightsError(f"This checkpoint cannot be used here: {problem}.")
    return OutputRate(int(config.output_sample_rate), int(config.decode_upsample_rate))


def decoder_config_for_rate(config, rate_hz: int):
    """A copy of ``config`` (the published 24 kHz recipe) whose decoder writes ``rate_hz``: 24000 leaves it
    as it is; k × 24000 appends one ×k upsample block to ``upsample_rates`` and sets ``output_sample_rate``
    and ``decode_upsample_rate`` (48000: [8, 5, 4, 3, 2], 3,840 samples a frame, the community recipe).
    The encoder and the codes are unchanged. ValueError for any other rate, or a config not at 24 kHz."""
    rate_hz = int(rate_hz)
    if rate_hz <= 0 or rate_hz % SAMPLE_RATE:
        raise ValueError(f"an output rate must be a multiple of {SAMPLE_RATE} Hz (24000, 48000, ...), not {rate_hz}")
    out = copy.deepcopy(config)
    if int(out.output_sample_rate) != SAMPLE_RATE or tuple(out.decoder_config.upsample_rates) != BASE_UPSAMPLE_RATES:
        raise ValueError(
            f"start from the published 24 kHz decoder (upsample_rates {list(BASE_UPSAMPLE_RATES)}), not "
            f"{list(out.decoder_config.upsample_rates)} at {out.output_sample_rate} Hz"
        )
    factor = rate_hz // SAMPLE_RATE
    blocks = len(BASE_UPSAMPLE_RATES) + (factor > 1)
    if factor > 1 and int(out.decoder_config.decoder_dim) % 2**blocks:
        raise ValueError(f"decoder_dim {out.decoder_config.decoder_dim} cannot be halved {blocks} times")
    if factor > 1:
        out.decoder_config.upsample_rates = [*BASE_UPSAMPLE_RATES, factor]
    out.output_sample_rate = rate_hz
    out.decode_upsample_rate = SAMPLES_PER_FRAME * factor
    return out


def decoder_note(made_beside_hz: int | None, decoding_hz: int) -> str | None:
    """What to tell a user who decodes codes made beside a decoder of ``made_beside_hz`` (a token file's
    ``decoder_rate_hz``; None for a file that does not say) with one of ``decoding_hz``; None when they match."""
    if made_beside_hz is None or int(made_beside_hz) == int(decoding_hz):
        return None
    return (
        f"These codes were made with a checkpoint whose decoder writes {made_beside_hz / 1000:g} kHz; they are "
        f"decoded here with a {decoding_hz / 1000:g} kHz decoder (the codes are the same family's, so this works, "
        "but it is not the decoder they were made beside)."
    )
