"""The codebook-depth ladder: decode a clip's codes with only the first k of its 16 codebooks.

What "the first k" means for this model. The decoder's quantizer is split
(``SplitResidualVectorQuantizer`` in qwen-tts): codebook 1 is the semantic quantizer
(``rvq_first``) and codebooks 2..16 are the 15 acoustic residual quantizers (``rvq_rest``).
The decoder's input is the sum of the two parts, each a sum of per-codebook embeddings passed
through a bias-free 1x1 projection::

    hidden = P_first(e_1[c_1]) + P_rest(e_2[c_2] + ... + e_16[c_16])

The first k codebooks are codebook 1 plus the first k - 1 acoustic codebooks, in the order the
encoder quantised them (each acoustic codebook codes what the earlier ones left). Dropping a
codebook omits its embedding from that sum before the decoder runs; the projections are linear
without bias, so this is the same as omitting its projected contribution. k = 1 keeps the
semantic codebook alone. k = 16 changes nothing, so it is the ordinary decode, bit for bit.

The hook: while :func:`codebook_depth` is active, the dropped acoustic codebooks' ``decode``
returns zeros of its usual shape (adding exact zeros leaves the sum as if they were absent). It
changes the shared model, so it must only run under the engine's lock (``Engine.decode`` with
``codebooks=k`` does that). Each level is one ordinary decode: same chunking, memory checks and
duration limits as any other.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from core.codec import NUM_CODEBOOKS, SAMPLE_RATE, bitrate_bps, check_duration
from core.errors import SettingsError, TokenFileError

logger = logging.getLogger(__name__)

DEFAULT_LEVELS = (1, 2, 4, 8, NUM_CODEBOOKS)  # the ladder's rungs unless asked otherwise


def parse_levels(levels: Iterable | str | None) -> tuple[int, ...]:
    """Ladder levels as sorted unique ints in 1..16 ("1,2,4", [1, "8"], None for the default);
    SettingsError says what is wrong."""
    if levels is None:
        return DEFAULT_LEVELS
    items = levels.replace(",", " ").split() if isinstance(levels, str) else list(levels)
    chosen = set()
    for item in items:
        try:
            value = int(str(item).strip())
        except ValueError:
            raise SettingsError(
                f"Ladder level {item!r} is not a whole number; give numbers of codebooks "
                f"from 1 to {NUM_CODEBOOKS}, e.g. 1,2,4,8,16."
            ) from None
        if not 1 <= value <= NUM_CODEBOOKS:
            raise SettingsError(f"Ladder level {value} is out of range; keep 1 to {NUM_CODEBOOKS} codebooks.")
        chosen.add(value)
    if not chosen:
        raise SettingsError(f"Choose at least one ladder level (1 to {NUM_CODEBOOKS} codebooks).")
    return tuple(sorted(chosen))


def _acoustic_layers(model) -> list:
    """The acoustic codebooks' ``VectorQuantization`` modules, in code order (codebooks 2..16)."""
    quantizer = model.decoder.quantizer
    if quantizer.n_q_semantic != 1 or quantizer.max_n_q != NUM_CODEBOOKS:
        raise SettingsError(
            f"The ladder expects 1 semantic + {NUM_CODEBOOKS - 1} acoustic codebooks; this model "
            f"has {quantizer.n_q_semantic} + {quantizer.n_q_acoustic}."
        )
    return list(quantizer.rvq_rest.vq.layers)


def _silent(layer):
    """A ``decode`` for ``layer`` that returns exact zeros of the shape its own returns. qwen-tts builds
    these layers without an output projection (``project_out`` is the identity), so zeros add nothing."""
    if not isinstance(layer.project_out, torch.nn.Identity):
        raise SettingsError("The ladder expects codebooks without an output projection; this model has one.")
    width = int(layer._codebook.dim)

    def decode(codes: torch.Tensor) -> torch.Tensor:  # codes (batch, frames) -> (batch, dim, frames)
        dtype = layer._codebook.embedding_sum.dtype
        return torch.zeros(codes.shape[0], width, codes.shape[1], dtype=dtype, device=codes.device)

    return decode


@contextlib.contextmanager
def codebook_depth(model, codebooks: int):
    """Within this block, ``model`` decodes with only its first ``codebooks`` codebooks.

    Caller holds the engine's lock: the change is visible to every user of the model."""
    codebooks = parse_levels([codebooks])[0]
    dropped = _acoustic_layers(model)[codebooks - 1 :]
    for layer in dropped:
        layer.decode = _silent(layer)  # an instance attribute shadows the class's method
    try:
        yield
    finally:
        for layer in dropped:
            del layer.decode


@dataclass(frozen=True)
class Rung:
    codebooks: int  # k: the first k codebooks were kept
    bitrate_bps: float  # k x 137.5 bit/s
    samples: np.ndarray  # float32 mono at 24 kHz, trimmed to the clip's length
    seconds: float  # wall time of the model decode


def check_budget(levels: tuple[int, ...], seconds: float, max_audio_s: float) -> None:
    """One ladder request decodes ``len(levels)`` times the clip: refuse more than ``max_audio_s``
    of decoded audio in all (``Settings.ladder_max_audio_s``; 16 levels of a 10-minute clip held
    the model's queue for minutes and wrote 924 MB), before any model work."""
    total = len(levels) * seconds
    if total > max_audio_s:
        raise SettingsError(
            f"This ladder would decode {len(levels)} levels of {seconds:.0f} s, {total:.0f} s of audio in all; "
            f"one request may decode at most {max_audio_s:.0f} s (--ladder-max-audio-s / "
            "CODEC_LADDER_MAX_AUDIO_S). Choose fewer levels or a shorter clip."
        )


def check_same_clip(name: str, token_samples: int, audio_samples: int) -> None:
    """A token file given with an audio clip must hold that clip's codes (same length at least)."""
    if token_samples != audio_samples:
        raise TokenFileError(
            f"{name} holds codes of a {token_samples / SAMPLE_RATE:.2f} s clip, but the audio is "
            f"{audio_samples / SAMPLE_RATE:.2f} s: they belong to different clips. Give the token file of "
            "this clip, or none (the clip is then encoded again)."
        )


def decode_ladder(
    engine,
    codes,
    original_samples: int | None = None,
    levels=DEFAULT_LEVELS,
    progress: Callable[[float], None] | None = None,
) -> list[Rung]:
    """Decode ``codes`` once per level (first k codebooks), each an ordinary engine decode under
    its lock, memory checks and the server's duration cap. ``progress(fraction)`` over all levels."""
    levels = parse_levels(levels)
    check_duration([int(np.asarray(codes).shape[0])], engine.settings.max_duration_s)  # before the first level
    rungs = []
    for i, k in enumerate(levels):
        step = None if progress is None else (lambda f, i=i: progress((i + f) / len(levels)))
        decoded = engine.decode(codes, original_samples=original_samples, progress=step, codebooks=k)
        rungs.append(Rung(k, bitrate_bps(k), decoded.samples, decoded.seconds))
        logger.info("ladder level %d of %s: %.2f s", k, levels, decoded.seconds)
    return rungs
